"""The search index: opened from the embedding store, exact below the threshold, ANN above.

The encoder is a small deterministic function that records what it was asked to embed, so
each test can say exactly which passages were embedded; the ANN tests build a real faiss
IVF,SQ8 index over a few hundred passages (the threshold's lowest allowed value).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pipelines.common.config import SearchParams
from pipelines.retrieval.vector_store import EmbeddingStore, StoreKey, text_hash
from pipelines.search.ann import (
    AnnIndex,
    held_ids,
    index_path,
    list_count,
    passage_id,
    read_index,
    write_index,
)
from pipelines.search.index import PassageIndex, open_search_index


class LetterCounts:
    """Embeds a text as its counts of a..z; remembers every text it embedded."""

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def encode(self, texts: list[str], **kwargs: Any) -> np.ndarray:
        self.embedded.extend(texts)
        rows = np.zeros((len(texts), 26), dtype=np.float32)
        for row, text in enumerate(texts):
            for letter in text.lower():
                if "a" <= letter <= "z":
                    rows[row, ord(letter) - ord("a")] += 1
        return rows


class RandomVectors(LetterCounts):
    """16 seeded dimensions per text: a corpus of distinct directions for the ANN tests."""

    def encode(self, texts: list[str], **kwargs: Any) -> np.ndarray:
        self.embedded.extend(texts)
        return np.stack(
            [np.random.default_rng(int(t.split()[-1])).normal(size=16) for t in texts]
        ).astype(np.float32)


EXACT = SearchParams(ann_threshold=10**6, ann_nprobes=1)
# Uniform random directions have no clusters for IVF's lists to follow: 3 of the 4 lists
# are probed for recall@10 >= 0.9 (real embeddings cluster; the benchmark probes 4 of 1024).
ANN = SearchParams(ann_threshold=256, ann_nprobes=3)
CORPUS = ["aaa", "bbb", "abc"]


def open_index(folder: Path, model: Any, texts: list[str], params: SearchParams) -> Any:
    store = EmbeddingStore(folder)
    return open_search_index(store, model, "fp", texts, params=params, batch_size=8)


def test_the_index_is_built_once_and_reused_across_restarts(tmp_path: Path) -> None:
    embed = LetterCounts()
    first = open_index(tmp_path, embed, CORPUS, EXACT)
    assert (first.embedded, first.reused, first.dropped) == (3, 0, 0)
    assert isinstance(first.index, PassageIndex) and embed.embedded == CORPUS
    norms = np.linalg.norm(first.index.vectors, axis=1)
    np.testing.assert_allclose(norms, 1.0, rtol=1e-6)  # unit rows: a dot product is cosine

    again = open_index(tmp_path, LetterCounts(), CORPUS, EXACT)
    assert (again.embedded, again.reused) == (0, 3)
    np.testing.assert_array_equal(again.index.vectors, first.index.vectors)


def test_evaluate_s_vectors_serve_search_without_embedding(tmp_path: Path) -> None:
    from pipelines.retrieval.vector_store import embed_stored

    # What evaluate stores (full, raw vectors of the corpus) is what search starts from.
    embed_stored(
        LetterCounts(), CORPUS, model_fingerprint="fp", store=EmbeddingStore(tmp_path), batch_size=8
    )
    embed = LetterCounts()
    update = open_index(tmp_path, embed, CORPUS, EXACT)
    assert embed.embedded == [] and update.reused == 3


def test_new_and_edited_passages_are_embedded_alone(tmp_path: Path) -> None:
    open_index(tmp_path, LetterCounts(), CORPUS, EXACT)
    changed = ["abc", "ccc", "bbbb"]  # "aaa" gone, "bbb" edited to "bbbb", "ccc" new
    embed = LetterCounts()
    update = open_index(tmp_path, embed, changed, EXACT)
    assert sorted(embed.embedded) == ["bbbb", "ccc"]
    assert (update.embedded, update.reused) == (2, 1)
    rows, scores = update.index.top(np.eye(26, dtype=np.float32)[2], 1)
    assert rows == [1] and scores[0] == pytest.approx(1.0)  # "ccc" is exactly along c


def test_top_ranks_by_cosine_best_first_with_ties_by_row() -> None:
    vectors = np.array([[1, 0], [0, 1], [1, 0], [0.6, 0.8]], dtype=np.float32)
    index = PassageIndex(vectors)
    rows, scores = index.top(np.array([1, 0], dtype=np.float32), 3)
    assert rows == [0, 2, 3] and scores == [1.0, 1.0, np.float32(0.6)]


def test_an_exact_index_asked_for_more_neighbours_than_it_holds_gives_all() -> None:
    index = PassageIndex(np.array([[1, 0], [0, 1], [0.6, 0.8]], dtype=np.float32))
    assert index.top(np.array([0, 1], dtype=np.float32), 10)[0] == [1, 2, 0]
    assert PassageIndex(np.zeros((0, 2), dtype=np.float32)).top(np.ones(2, np.float32), 3) == (
        [],
        [],
    )


# ------------------------------------------------------------------------------- ANN

ANN_KEY = StoreKey("fp", None, normalize=True)


def passages(numbers: range) -> list[str]:
    return [f"passage {number}" for number in numbers]


def unit(text: str) -> np.ndarray:
    vector = RandomVectors().encode([text])[0]
    return vector / np.linalg.norm(vector)


def file_ids(folder: Path) -> set[int]:
    index, _ = read_index(index_path(EmbeddingStore(folder), ANN_KEY), "fp", 16)
    return held_ids(index)


def ids_of(texts: list[str]) -> set[int]:
    return {passage_id(text_hash(text)) for text in texts}


@pytest.fixture
def ann_folder(tmp_path: Path) -> Path:
    update = open_index(tmp_path, RandomVectors(), passages(range(300)), ANN)
    assert isinstance(update.index, AnnIndex) and update.embedded == 300
    return tmp_path


def exact_top(texts: list[str], query: np.ndarray, k: int) -> list[int]:
    vectors = RandomVectors().encode(texts)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return PassageIndex(vectors).top(query, k)[0]


def test_list_count_is_the_power_of_two_nearest_the_square_root_that_can_train() -> None:
    assert list_count(10**6) == 1024 and list_count(10**5) == 256 and list_count(10**7) == 4096
    assert list_count(300) == 4  # sqrt gives 16, but 300 vectors train 7 lists at most
    assert list_count(1) == 1
    assert all(math.log2(list_count(n)).is_integer() for n in (2, 50, 999, 123_456))


def test_above_the_threshold_an_ann_index_finds_what_exact_search_finds(
    ann_folder: Path,
) -> None:
    texts = passages(range(300))
    embed = RandomVectors()
    update = open_index(ann_folder, embed, texts, ANN)
    assert isinstance(update.index, AnnIndex) and embed.embedded == [] and update.embedded == 0
    recalled = 0
    for number in range(20):
        query = unit(f"query {1000 + number}")
        rows, scores = update.index.top(query, 10)
        assert scores == sorted(scores, reverse=True) and len(rows) == 10
        recalled += len(set(rows) & set(exact_top(texts, query, 10)))
    assert recalled / 200 >= 0.9


def test_a_night_adds_only_the_new_passages_and_removes_the_departed(ann_folder: Path) -> None:
    path = index_path(EmbeddingStore(ann_folder), ANN_KEY)
    _, before = read_index(path, "fp", 16)
    texts = passages(range(3, 306))  # 1 % new (6 passages), 3 departed
    embed = RandomVectors()
    update = open_index(ann_folder, embed, texts, ANN)
    assert sorted(embed.embedded) == sorted(passages(range(300, 306)))  # only the new ones
    assert update.dropped == 3 and update.embedded == 6
    assert isinstance(update.index, AnnIndex) and update.index.index.ntotal == 303
    _, after = read_index(path, "fp", 16)
    assert after.trained_on == before.trained_on == 300  # added to, not trained again
    assert file_ids(ann_folder) == ids_of(texts)  # the departed are gone from the file
    rows, scores = update.index.top(unit("passage 305"), 1)
    assert texts[rows[0]] == "passage 305" and scores[0] == pytest.approx(1.0, abs=2e-2)
    gone, _ = update.index.top(unit("passage 1"), 303)
    assert len(gone) == 303 and all(texts[row] != "passage 1" for row in gone)


def test_an_edited_passage_is_a_new_vector_and_its_old_text_leaves(ann_folder: Path) -> None:
    texts = passages(range(300))
    texts[7] = "passage 7007"  # the same row (passage id), another text
    embed = RandomVectors()
    update = open_index(ann_folder, embed, texts, ANN)
    assert embed.embedded == ["passage 7007"] and update.dropped == 1
    assert file_ids(ann_folder) == ids_of(texts)
    assert update.index.top(unit("passage 7007"), 1)[0] == [7]


def test_the_index_is_trained_again_when_the_corpus_grew_four_fold(
    ann_folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    texts = passages(range(1200))
    with caplog.at_level(logging.INFO, logger="pipelines.search.ann"):
        update = open_index(ann_folder, RandomVectors(), texts, ANN)
    assert any("training it again" in record.getMessage() for record in caplog.records)
    _, header = read_index(index_path(EmbeddingStore(ann_folder), ANN_KEY), "fp", 16)
    assert header.trained_on == 1200 and update.embedded == 900
    assert file_ids(ann_folder) == ids_of(texts)


def corrupt_by_truncation(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def corrupt_by_flipping_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-100] ^= 0xFF
    path.write_bytes(bytes(data))


def foreign_by_model(path: Path) -> None:
    index, header = read_index(path, "fp", 16)
    write_index(path, index, "another model", header.trained_on)


def foreign_by_dim(path: Path) -> None:
    import faiss

    other = faiss.IndexIVFScalarQuantizer(
        faiss.IndexFlatIP(8), 8, 1, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
    )
    other.train(np.eye(8, dtype=np.float32))
    write_index(path, other, "fp", 300)


@pytest.mark.parametrize(
    ("spoil", "why"),
    [
        (corrupt_by_truncation, "bytes"),
        (corrupt_by_flipping_a_byte, "checksum"),
        (foreign_by_model, "built for model 'another mode'"),
        (foreign_by_dim, "8-dim vectors"),
        (lambda path: path.write_bytes(b"not an index"), "not a mathembed faiss index"),
    ],
)
def test_an_untrusted_index_file_is_rebuilt_with_a_warning(
    ann_folder: Path, caplog: pytest.LogCaptureFixture, spoil: Any, why: str
) -> None:
    spoil(index_path(EmbeddingStore(ann_folder), ANN_KEY))
    texts = passages(range(300))
    embed = RandomVectors()
    with caplog.at_level(logging.WARNING, logger="pipelines.search.ann"):
        update = open_index(ann_folder, embed, texts, ANN)
    [message] = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert "is not trusted" in message and why in message and message.endswith("rebuilding it")
    assert embed.embedded == []  # rebuilt from the store's vectors, nothing embedded
    assert file_ids(ann_folder) == ids_of(texts)
    assert texts[update.index.top(unit("passage 42"), 1)[0][0]] == "passage 42"


def test_an_index_file_whose_model_left_the_store_is_deleted(ann_folder: Path) -> None:
    orphan = ann_folder / f"{StoreKey('evicted', None, normalize=True).table_name()}.faiss"
    orphan.write_bytes(b"an index of a model the store evicted")
    open_index(ann_folder, RandomVectors(), passages(range(300)), ANN)
    assert not orphan.exists() and index_path(EmbeddingStore(ann_folder), ANN_KEY).exists()


def test_the_lancedb_index_of_earlier_versions_is_dropped(ann_folder: Path) -> None:
    from lancedb.index import IvfHnswSq

    table = EmbeddingStore(ann_folder).vectors(ANN_KEY).table
    table.create_index("vector", config=IvfHnswSq(distance_type="dot", num_partitions=1))
    open_index(ann_folder, RandomVectors(), passages(range(300)), ANN)
    assert EmbeddingStore(ann_folder).vectors(ANN_KEY).table.list_indices() == []


def test_an_ann_index_asked_for_more_neighbours_than_it_holds_gives_all(
    ann_folder: Path,
) -> None:
    texts = passages(range(300))
    update = open_index(ann_folder, RandomVectors(), texts, ANN)
    query = np.ones(16, dtype=np.float32) / 4
    rows, _ = update.index.top(query, 1000)
    assert sorted(rows) == list(range(300))
    duplicated = [*texts, "passage 5"]  # one text in two rows: both come back
    update = open_index(ann_folder, RandomVectors(), duplicated, ANN)
    rows, _ = update.index.top(unit("passage 5"), 2)
    assert rows == [5, 300]
