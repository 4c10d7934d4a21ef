"""pipelines.retrieval.vector_store: the per-passage embedding store (LanceDB), real tables on disk.

The encoder (:class:`fixtures_models.RecordingEncoder`) is a deterministic stand-in that
records every text it embeds, so each test can say exactly what a run embedded and what it
took from the store.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fixtures_models import RecordingEncoder

from pipelines.common.paths import Paths
from pipelines.retrieval import store_layout
from pipelines.retrieval.vector_store import (
    EmbeddingStore,
    StoreKey,
    embed_stored,
    models_to_evict,
    open_store,
    text_hash,
)

TEXTS = ["a group ring", "prime number theorem", "graph colouring", "random walk on a tree"]


def embed(encoder: RecordingEncoder, texts: list[str], store: EmbeddingStore | None, **kw: Any):
    options: dict[str, Any] = {"model_fingerprint": "fp", "batch_size": 8, **kw}
    return embed_stored(encoder, texts, store=store, **options)


def test_each_text_is_embedded_once_per_model_across_processes(tmp_path: Path) -> None:
    encoder = RecordingEncoder()
    first = embed(encoder, TEXTS, EmbeddingStore(tmp_path))
    store = EmbeddingStore(tmp_path)  # a new process, the same folder
    again = embed(encoder, TEXTS[::-1], store)
    assert encoder.embedded == TEXTS  # the second run embedded nothing
    np.testing.assert_array_equal(again, first[::-1])  # rows follow the texts asked for
    assert again.dtype == np.float32 and (store.embedded, store.reused) == (0, 4)

    # One new text (a new paper): only it is embedded, the rest comes from the store.
    encoder.embedded.clear()
    store = EmbeddingStore(tmp_path)
    embed(encoder, [*TEXTS, "a new passage"], store)
    assert encoder.embedded == ["a new passage"] and (store.embedded, store.reused) == (1, 4)

    # Another model (a new candidate) embeds everything; no store: always embeds.
    encoder.embedded.clear()
    embed(encoder, TEXTS, EmbeddingStore(tmp_path), model_fingerprint="another model")
    embed(encoder, TEXTS, None)
    assert encoder.embedded == TEXTS + TEXTS


def test_a_passage_whose_text_changed_under_the_same_id_is_embedded_again(
    tmp_path: Path,
) -> None:
    encoder = RecordingEncoder()
    embed(encoder, TEXTS, EmbeddingStore(tmp_path))
    edited = [*TEXTS[:-1], "random walk on a finite tree"]  # same chunk, edited text
    encoder.embedded.clear()
    vectors = embed(encoder, edited, EmbeddingStore(tmp_path))
    assert encoder.embedded == ["random walk on a finite tree"]
    expected = RecordingEncoder().encode(edited[-1:])[0].astype(np.float32)
    np.testing.assert_array_equal(vectors[-1], expected)


def test_a_few_new_texts_asked_of_a_large_table_leave_it_whole(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A lookup of a few texts in a table four times larger fetches them by key; when none
    of them is there (a new night's new queries), the empty read is no damage: nothing is
    rebuilt, only the new texts are embedded."""
    encoder = RecordingEncoder()
    corpus = [f"passage {number}" for number in range(40)]
    embed(encoder, corpus, EmbeddingStore(tmp_path))
    encoder.embedded.clear()
    store = EmbeddingStore(tmp_path)
    with caplog.at_level(logging.WARNING):
        embed(encoder, ["a new query", "another new query"], store)
        embed(encoder, corpus, store)
    assert encoder.embedded == ["a new query", "another new query"]
    assert store.rebuilt == 0 and "not trusted" not in caplog.text
    assert (store.embedded, store.reused) == (2, 40)


def test_repeated_texts_are_embedded_once(tmp_path: Path) -> None:
    encoder = RecordingEncoder()
    vectors = embed(encoder, ["x", "y", "x"], EmbeddingStore(tmp_path))
    assert encoder.embedded == ["x", "y"]
    np.testing.assert_array_equal(vectors[0], vectors[2])


def test_a_cut_normalised_key_is_derived_from_the_stored_full_vectors(tmp_path: Path) -> None:
    encoder = RecordingEncoder()
    full = embed(encoder, TEXTS, EmbeddingStore(tmp_path))
    cut = embed(encoder, TEXTS, EmbeddingStore(tmp_path), dim=3, normalize=True)
    assert encoder.embedded == TEXTS  # no second encode
    expected = full[:, :3] / np.linalg.norm(full[:, :3], axis=1, keepdims=True)
    np.testing.assert_allclose(cut, expected, rtol=1e-6)
    names = {path.name for path in tmp_path.glob("*.lance")}
    assert names == {
        f"{StoreKey('fp').table_name()}.lance",
        f"{StoreKey('fp', 3, True).table_name()}.lance",
    }


def test_a_broken_model_s_output_is_not_stored(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="NaN"):
        embed(RecordingEncoder(poison=0), TEXTS, EmbeddingStore(tmp_path))
    assert not list(tmp_path.glob("*.lance"))


# ------------------------------------------------------------------ stores not to trust


def largest_file(folder: Path) -> Path:
    return max((p for p in folder.rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)


def test_a_table_truncated_mid_write_is_rebuilt_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    encoder = RecordingEncoder()
    first = embed(encoder, TEXTS, EmbeddingStore(tmp_path))
    table = tmp_path / f"{StoreKey('fp').table_name()}.lance"
    victim = largest_file(table / "data")  # the vectors' data file
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    encoder.embedded.clear()
    store = EmbeddingStore(tmp_path)
    with caplog.at_level(logging.WARNING, logger="pipelines.retrieval.vector_store"):
        again = embed(encoder, TEXTS, store)
    assert encoder.embedded == TEXTS and store.rebuilt == 1  # not trusted: embedded again
    np.testing.assert_array_equal(again, first)
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "is not trusted" in warning and "rebuilding it" in warning
    encoder.embedded.clear()
    embed(encoder, TEXTS, EmbeddingStore(tmp_path))  # the rebuilt table reads back
    assert encoder.embedded == []


def test_a_table_with_a_missing_manifest_is_rebuilt(tmp_path: Path) -> None:
    embed(RecordingEncoder(), TEXTS, EmbeddingStore(tmp_path))
    table = tmp_path / f"{StoreKey('fp').table_name()}.lance"
    for manifest in (table / "_versions").iterdir():
        manifest.unlink()  # a crash before the first commit finished
    encoder = RecordingEncoder()
    store = EmbeddingStore(tmp_path)
    embed(encoder, TEXTS, store)
    assert encoder.embedded == TEXTS and store.rebuilt == 1


def test_a_table_of_another_store_format_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embed(RecordingEncoder(), TEXTS, EmbeddingStore(tmp_path))
    monkeypatch.setattr(store_layout, "STORE_FORMAT", "3")  # a later version of the layout
    encoder = RecordingEncoder()
    store = EmbeddingStore(tmp_path)
    embed(encoder, TEXTS, store)
    assert encoder.embedded == TEXTS and store.rebuilt == 1


def test_a_model_that_now_gives_another_dimension_replaces_its_table(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    embed(RecordingEncoder(dim=6), TEXTS, EmbeddingStore(tmp_path))
    wider = RecordingEncoder(dim=8)  # the same fingerprint, another width: not its vectors
    store = EmbeddingStore(tmp_path)
    with caplog.at_level(logging.WARNING, logger="pipelines.retrieval.vector_store"):
        vectors = embed(wider, [*TEXTS, "new"], store)
    assert vectors.shape == (5, 8) and store.rebuilt == 1
    assert "6-dim vectors, the model gives 8" in caplog.text
    again = embed(RecordingEncoder(dim=8), TEXTS, EmbeddingStore(tmp_path))
    np.testing.assert_array_equal(again, vectors[:4])


def test_text_hash_is_the_text_s_sha256() -> None:
    assert text_hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


# ---------------------------------------------------------------------------- the bound


def test_the_store_evicts_the_least_recently_used_model_but_never_a_kept_one(
    tmp_path: Path,
) -> None:
    encoder = RecordingEncoder()
    for fingerprint in ("hf:base/model", "a", "b"):
        embed(encoder, TEXTS, EmbeddingStore(tmp_path), model_fingerprint=fingerprint)
    for fingerprint, seconds in (("hf:base/model", 1000), ("a", 2000), ("b", 3000)):
        path = tmp_path / f"{StoreKey(fingerprint).table_name()}.lance"
        os.utime(path, (seconds, seconds))
    store = EmbeddingStore(tmp_path, max_models=3, keep=["hf:base/model"])
    embed(encoder, TEXTS, store, model_fingerprint="a")  # a use makes "a" recent
    embed(encoder, TEXTS, store, model_fingerprint="c")
    assert store.evicted == 1
    kept = {path.name for path in tmp_path.glob("*.lance")}
    expected = {f"{StoreKey(f).table_name()}.lance" for f in ("hf:base/model", "a", "c")}
    assert kept == expected  # "b", least recently used, went


def test_models_to_evict_is_least_recently_used_first_and_spares_kept_ones() -> None:
    last_used = {"base": 1, "old": 2, "mid": 3, "new": 4}
    assert models_to_evict(last_used, 2, keep={"base"}) == ["old", "mid"]
    assert models_to_evict(last_used, 4, keep=set()) == []
    # More kept models than the bound: the kept ones stay, everything else goes.
    assert models_to_evict(last_used, 1, keep={"base", "new"}) == ["old", "mid"]


def test_opening_the_project_store_removes_the_old_caches(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    for legacy in paths.legacy_embedding_caches:
        legacy.mkdir(parents=True)
        (legacy / "old.npz").write_bytes(b"old")
    store = open_store(paths)
    assert store.folder == tmp_path / "data" / "embeddings"
    assert not any(legacy.exists() for legacy in paths.legacy_embedding_caches)
