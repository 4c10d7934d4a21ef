"""The search index: opened from the embedding store, exact below the threshold, ANN above.

The encoder is a small deterministic function that records what it was asked to embed, so
each test can say exactly which passages were embedded; the ANN tests build a real LanceDB
IVF-HNSW index over a few hundred passages (the threshold's lowest allowed value).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pipelines.common.config import SearchParams
from pipelines.common.vector_store import EmbeddingStore, StoreKey
from pipelines.search.index import AnnIndex, PassageIndex, open_search_index


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


EXACT = SearchParams(ann_threshold=10**6, ann_nprobes=1, ann_refine_factor=1)
ANN = SearchParams(ann_threshold=256, ann_nprobes=1, ann_refine_factor=10)
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
    from pipelines.common.vector_store import embed_stored

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


def passages(numbers: range) -> list[str]:
    return [f"passage {number}" for number in numbers]


@pytest.fixture(scope="module")
def ann_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ann")
    update = open_index(folder, RandomVectors(), passages(range(300)), ANN)
    assert isinstance(update.index, AnnIndex)
    return folder


def exact_top(texts: list[str], query: np.ndarray, k: int) -> list[int]:
    vectors = RandomVectors().encode(texts)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return PassageIndex(vectors).top(query, k)[0]


def test_above_the_threshold_an_ann_index_finds_what_exact_search_finds(
    ann_folder: Path,
) -> None:
    texts = passages(range(300))
    update = open_index(ann_folder, RandomVectors(), texts, ANN)
    assert isinstance(update.index, AnnIndex) and update.embedded == 0
    recalled = 0
    for number in range(20):
        query = RandomVectors().encode([f"query {1000 + number}"])[0]
        query /= np.linalg.norm(query)
        rows, scores = update.index.top(query, 10)
        assert scores == sorted(scores, reverse=True) and len(rows) == 10
        recalled += len(set(rows) & set(exact_top(texts, query, 10)))
    assert recalled / 200 >= 0.9


def test_the_ann_table_follows_the_corpus_incrementally(ann_folder: Path) -> None:
    texts = passages(range(10, 320))  # 10 passages gone, 20 new
    embed = RandomVectors()
    update = open_index(ann_folder, embed, texts, ANN)
    assert sorted(embed.embedded) == sorted(passages(range(300, 320)))  # only the new ones
    assert update.dropped == 10
    table = EmbeddingStore(ann_folder).vectors(StoreKey("fp", None, normalize=True)).table
    assert table.count_rows() == 310
    [index] = table.list_indices()
    # 20 new passages are more than REINDEX_SHARE of 290: the index was rebuilt over all.
    assert table.index_stats(index.name).num_unindexed_rows == 0
    query = RandomVectors().encode(["passage 315"])[0]
    rows, scores = update.index.top(query / np.linalg.norm(query), 1)
    assert texts[rows[0]] == "passage 315" and scores[0] == pytest.approx(1.0, abs=1e-3)


def test_a_few_new_passages_are_searched_beside_the_index_until_it_is_rebuilt(
    ann_folder: Path,
) -> None:
    texts = passages(range(10, 322))  # 2 more: below REINDEX_SHARE, not indexed yet
    update = open_index(ann_folder, RandomVectors(), texts, ANN)
    table = EmbeddingStore(ann_folder).vectors(StoreKey("fp", None, normalize=True)).table
    [index] = table.list_indices()
    assert table.index_stats(index.name).num_unindexed_rows == 2
    query = RandomVectors().encode(["passage 321"])[0]
    rows, _ = update.index.top(query / np.linalg.norm(query), 1)
    assert texts[rows[0]] == "passage 321"  # found all the same


def test_an_ann_index_asked_for_more_neighbours_than_it_holds_gives_all(
    ann_folder: Path,
) -> None:
    texts = passages(range(300))
    update = open_index(ann_folder, RandomVectors(), texts, ANN)
    query = np.ones(16, dtype=np.float32) / 4
    rows, _ = update.index.top(query, 1000)
    assert sorted(rows) == list(range(300))
