"""Search through Qdrant (search.engine: qdrant), tested against qdrant-client's embedded
mode: the same client calls a server gets, on a collection in a temporary folder.

The store holds a small random corpus's unit vectors; the exact index over the same vectors
is the reference for what the collection must answer.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from canned_http import answering
from qdrant_client import QdrantClient, models

from pipelines.common.config import SearchParams
from pipelines.retrieval.stored_vectors import StoredVectors
from pipelines.retrieval.vector_store import MAX_STORED_MODELS, EmbeddingStore, StoreKey, text_hash
from pipelines.search.ann import passage_id
from pipelines.search.index import PassageIndex, open_search_index
from pipelines.search.remote_index import (
    COLLECTION_PREFIX,
    EngineUnreachableError,
    RemoteIndex,
    collection_metadata,
    collection_name,
    held_ids,
    sync_qdrant_index,
)

WIDTH = 16


def passages(numbers: range | list[int]) -> list[str]:
    return [f"passage {number}" for number in numbers]


def unit(text: str) -> np.ndarray:
    """A seeded random direction per text: a corpus without clusters or ties."""
    vector = np.random.default_rng(int(text.split()[-1])).normal(size=WIDTH)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def store_texts(stored: StoredVectors, texts: list[str]) -> list[str]:
    """Put ``texts``' unit vectors in the store (as search does first); their keys."""
    keys = [text_hash(text) for text in texts]
    stored.add(keys, np.stack([unit(text) for text in texts]))
    return keys


@pytest.fixture
def store(tmp_path: Path) -> EmbeddingStore:
    return EmbeddingStore(tmp_path / "embeddings")


@pytest.fixture
def client() -> Iterator[QdrantClient]:
    """In memory; on disk (``path=``) where a test needs a second process to see it."""
    opened = QdrantClient(":memory:")
    yield opened
    opened.close()


def unit_table(store: EmbeddingStore, fingerprint: str = "fp") -> StoredVectors:
    return store.vectors(StoreKey(fingerprint, None, normalize=True))


def test_the_collection_answers_what_the_exact_index_answers(
    store: EmbeddingStore, client: QdrantClient
) -> None:
    texts = passages(range(300))
    index = sync_qdrant_index(client, unit_table(store), store_texts(unit_table(store), texts))
    exact = PassageIndex(np.stack([unit(text) for text in texts]))
    assert (index.kind, index.added, index.removed) == ("qdrant", 300, 0)
    queries = np.random.default_rng(7).normal(size=(20, WIDTH)).astype(np.float32)
    for query in queries / np.linalg.norm(queries, axis=1, keepdims=True):
        for k in (1, 10, 100):
            rows, scores = index.top(query, k)
            exact_rows, exact_scores = exact.top(query, k)
            assert rows == exact_rows
            np.testing.assert_allclose(scores, exact_scores, atol=1e-5)


def test_a_night_sends_only_the_new_passages_and_deletes_the_departed(
    store: EmbeddingStore, tmp_path: Path
) -> None:
    stored = unit_table(store)
    first = passages(range(60))
    with closing(QdrantClient(path=str(tmp_path / "qdrant"))) as client:
        sync_qdrant_index(client, stored, store_texts(stored, first))
    # The next night, in a new process: 10 papers' passages left, 15 arrived.
    night = passages([*range(10, 60), *range(500, 515)])
    with closing(QdrantClient(path=str(tmp_path / "qdrant"))) as client:
        index = sync_qdrant_index(client, stored, store_texts(stored, night))
        assert (index.added, index.removed) == (15, 10)
        assert held_ids(client, index.name) == {passage_id(text_hash(t)) for t in night}
        rows, _ = index.top(unit("passage 507"), 1)
        assert rows == [night.index("passage 507")]
        again = sync_qdrant_index(client, stored, [text_hash(text) for text in night])
        assert (again.added, again.removed) == (0, 0)


def test_an_edited_passage_is_a_new_point_and_its_old_text_leaves(
    store: EmbeddingStore, client: QdrantClient
) -> None:
    stored = unit_table(store)
    texts = passages(range(50))
    sync_qdrant_index(client, stored, store_texts(stored, texts))
    edited = [*texts[:3], "passage 900", *texts[4:]]  # row 3's text changed under its id
    index = sync_qdrant_index(client, stored, store_texts(stored, edited))
    assert (index.added, index.removed) == (1, 1)
    assert passage_id(text_hash(texts[3])) not in held_ids(client, index.name)
    rows, scores = index.top(unit("passage 900"), 1)
    assert rows == [3] and scores[0] == pytest.approx(1.0, abs=1e-5)
    rows, _ = index.top(unit(texts[3]), 50)
    assert len(rows) == 50 and rows[0] != 3  # the old text is found nowhere


def test_more_neighbours_than_it_holds_gives_every_passage(
    store: EmbeddingStore, client: QdrantClient
) -> None:
    stored = unit_table(store)
    texts = [*passages(range(12)), "passage 4"]  # two rows share one text: one point
    index = sync_qdrant_index(client, stored, store_texts(stored, texts))
    assert len(held_ids(client, index.name)) == 12
    rows, scores = index.top(unit("passage 4"), 1000)
    assert sorted(rows) == list(range(13))
    assert rows[:2] == [4, 12]  # the shared text's rows, tied, by row
    assert scores == sorted(scores, reverse=True)
    exact = PassageIndex(np.stack([unit(text) for text in texts]))
    assert rows == exact.top(unit("passage 4"), 1000)[0]
    assert index.top(unit("passage 4"), 0) == ([], [])


def create_foreign(
    client: QdrantClient, name: str, size: int, metadata: dict[str, Any] | None
) -> None:
    client.create_collection(
        name,
        vectors_config=models.VectorParams(size=size, distance=models.Distance.DOT),
        metadata=metadata,
    )
    vector = np.ones(size, dtype=np.float32) / np.sqrt(size)
    client.upsert(name, points=models.Batch(ids=[1, 2], vectors=[vector.tolist()] * 2))


@pytest.mark.parametrize(
    ("size", "overrides", "why"),
    [
        (8, {}, "it holds 8-dim vectors, the store 16"),
        (WIDTH, {"mathembed.fingerprint": "another model"}, "mathembed.fingerprint is 'another"),
        (WIDTH, None, "mathembed.fingerprint is None"),
        (WIDTH, {"mathembed.collection_format": "0"}, "mathembed.collection_format is '0'"),
    ],
    ids=["another-width", "another-model", "no-metadata", "older-layout"],
)
def test_a_collection_written_for_another_model_or_width_is_rebuilt_with_a_warning(
    store: EmbeddingStore,
    client: QdrantClient,
    caplog: pytest.LogCaptureFixture,
    size: int,
    overrides: dict[str, Any] | None,
    why: str,
) -> None:
    """A collection under this model's name that says (or shows) it holds something else."""
    stored = unit_table(store)
    keys = store_texts(stored, passages(range(30)))
    name = collection_name(stored.key, WIDTH)
    found = None if overrides is None else {**collection_metadata(stored.key, WIDTH), **overrides}
    create_foreign(client, name, size, found)
    with caplog.at_level(logging.WARNING, logger="pipelines.search.remote_index"):
        index = sync_qdrant_index(client, stored, keys)
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert f"qdrant collection {name} is not trusted: {why}" in warning
    assert "rebuilding it" in warning
    assert (index.added, index.removed) == (30, 0)  # the foreign points 1 and 2 went with it
    assert held_ids(client, name) == {passage_id(key) for key in keys}
    assert client.get_collection(name).config.params.vectors.size == WIDTH


def test_other_models_past_the_bound_and_this_model_s_other_width_are_deleted(
    store: EmbeddingStore, client: QdrantClient
) -> None:
    stranger = "someone-else"  # not ours: never touched
    client.create_collection(stranger, vectors_config=models.VectorParams(size=4, distance="Dot"))
    names = []
    for number in range(MAX_STORED_MODELS + 1):
        stored = unit_table(store, f"model {number}")
        names.append(
            sync_qdrant_index(client, stored, store_texts(stored, passages(range(5)))).name
        )
    ours = {c.name for c in client.get_collections().collections} - {stranger}
    assert ours == set(names[1:])  # the least recently synced model went
    stale = f"{COLLECTION_PREFIX}m{unit_table(store, 'model 4').key.model_id}-d8"
    client.create_collection(stale, vectors_config=models.VectorParams(size=8, distance="Dot"))
    stored = unit_table(store, "model 4")
    sync_qdrant_index(client, stored, [text_hash(text) for text in passages(range(5))])
    assert not client.collection_exists(stale)
    assert client.collection_exists(stranger)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class RecordingEncoder:
    def __init__(self) -> None:
        self.embedded: list[str] = []

    def encode(self, texts: list[str], **kwargs: Any) -> np.ndarray:
        self.embedded.extend(texts)
        return np.stack([unit(text) for text in texts])


def test_an_unreachable_server_is_one_line_naming_the_url_and_the_knob_before_embedding(
    store: EmbeddingStore,
) -> None:
    url = f"http://reader:s3cret@127.0.0.1:{free_port()}"
    params = replace(SearchParams(), engine="qdrant", engine_url=url)
    model = RecordingEncoder()
    with pytest.raises(EngineUnreachableError) as raised:
        open_search_index(store, model, "fp", passages(range(5)), params=params, batch_size=8)
    message = str(raised.value)
    assert "\n" not in message
    assert "no Qdrant server answers at http://***@127.0.0.1:" in message
    assert "(search.engine_url)" in message and "search.engine: embedded" in message
    assert "s3cret" not in message and "reader" not in message
    assert model.embedded == []  # nothing embedded for a server that is not there


def test_an_http_server_that_is_not_qdrant_is_named_so(store: EmbeddingStore) -> None:
    with answering(501) as url:
        params = replace(SearchParams(), engine="qdrant", engine_url=url)
        with pytest.raises(EngineUnreachableError, match=r"answered HTTP 501 .*not as a Qdrant"):
            open_search_index(
                store, RecordingEncoder(), "fp", passages(range(5)), params=params, batch_size=8
            )


def test_the_embedded_engine_below_the_threshold_stays_exact(store: EmbeddingStore) -> None:
    update = open_search_index(
        store, RecordingEncoder(), "fp", passages(range(5)), params=SearchParams(), batch_size=8
    )
    assert SearchParams().engine == "embedded"  # the default: behaviour unchanged
    assert isinstance(update.index, PassageIndex)
    assert not isinstance(update.index, RemoteIndex)


def test_a_collection_whose_points_differ_from_the_store_is_rebuilt(
    store: EmbeddingStore, client: QdrantClient, caplog: pytest.LogCaptureFixture
) -> None:
    texts = passages(range(120))
    stored = unit_table(store)
    keys = store_texts(stored, texts)
    index = sync_qdrant_index(client, stored, keys)
    # The server's copy goes stale (a snapshot restored from another night): three points
    # answer with other vectors under their ids.
    stale = [passage_id(keys[n]) for n in (3, 50, 99)]
    others = np.stack([unit(f"passage {900 + n}") for n in range(3)]).tolist()
    client.upsert(index.name, points=models.Batch(ids=stale, vectors=others), wait=True)
    with caplog.at_level(logging.WARNING, logger="pipelines.search.remote_index"):
        again = sync_qdrant_index(client, stored, keys)
    assert (again.added, again.removed) == (120, 0)  # rebuilt whole
    assert any(
        "not trusted: 3 of 120 points checked differ" in record.message for record in caplog.records
    )
    rows, _ = again.top(unit("passage 50"), 1)
    assert rows == [50]
    quiet = sync_qdrant_index(client, stored, keys)  # sound now: nothing sent
    assert (quiet.added, quiet.removed) == (0, 0)
