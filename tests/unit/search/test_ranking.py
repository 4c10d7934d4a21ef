"""How search orders hits (pipelines.retrieval.lexical: order, lexical_weight, weighted fusion)
and what a hit's score is (pipelines.search.engine): the cosine, whichever ranking orders."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pandas as pd
import pytest

from pipelines.common.config import SearchParams
from pipelines.retrieval.lexical import (
    NAME_LEXICAL_WEIGHT,
    NAME_WORDS,
    RANKINGS,
    SENTENCE_LEXICAL_WEIGHT,
    LexicalIndex,
    check_ranking,
    fuse,
    lexical_weight,
    order,
    query_words,
)
from pipelines.search.engine import ModelRef, SearchEngine
from pipelines.search.index import PassageIndex, best_rows
from pipelines.search.query import Corpus

# -- the order, pure ---------------------------------------------------------------------


def test_the_default_ranking_is_params_yamls_and_one_the_search_knows() -> None:
    assert check_ranking(SearchParams().ranking) == SearchParams().ranking
    assert set(RANKINGS) == {"dense", "hybrid", "adaptive"}


def test_a_querys_shape_is_its_bm25_words_stop_words_out() -> None:
    assert query_words("the snake lemma") == 2
    name = "fundamental theorem of Galois theory"
    assert query_words(name) == 4 <= NAME_WORDS
    sentence = "a finite extension is separable exactly when its trace form is nondegenerate"
    assert query_words(sentence) > NAME_WORDS
    assert lexical_weight("dense", name) == 0.0
    assert lexical_weight("hybrid", sentence) == 1.0
    assert lexical_weight("adaptive", name) == NAME_LEXICAL_WEIGHT
    assert lexical_weight("adaptive", sentence) == SENTENCE_LEXICAL_WEIGHT < NAME_LEXICAL_WEIGHT


def test_weighted_fusion_scales_each_lists_share() -> None:
    dense, words = [1, 2, 3], [3, 4]
    assert fuse([dense, words], 4, [1.0, 1.0]) == fuse([dense, words], 4)
    rows, scores = fuse([dense, words], 4, [1.0, 0.5])
    assert rows[0] == 3  # in both lists: 1/63 + 0.5/61 beats 1/61
    assert scores[rows.index(4)] == pytest.approx(0.5 / 62)
    with pytest.raises(ValueError, match="2 rankings but 1 weights"):
        fuse([dense, words], 4, [1.0])


SENTENCE = "every simplicial group satisfies the Kan extension condition"
NAME = "snake lemma"


def test_dense_orders_by_the_model_alone_and_hybrid_by_both() -> None:
    dense, words = [5, 6, 7, 8], [9, 8]
    assert order("dense", NAME, dense, words, 3) == [5, 6, 7]
    assert order("hybrid", NAME, dense, words, 3) == fuse([dense, words], 3)[0]
    assert order("hybrid", NAME, dense, [], 3) == [5, 6, 7]  # no word matched


def test_adaptive_fuses_a_name_like_hybrid_and_lets_bm25_move_a_sentence_less() -> None:
    dense, words = [*range(100, 129), 8], [8, 9]  # the model ranks 8 30th, BM25 first
    assert order("adaptive", NAME, dense, words, 4) == order("hybrid", NAME, dense, words, 4)
    # For a sentence BM25's first is worth a quarter of the model's: the model's first stays.
    hybrid = order("hybrid", SENTENCE, dense, words, 4)
    adaptive = order("adaptive", SENTENCE, dense, words, 4)
    assert hybrid[0] == 8 and adaptive[0] == 100


# -- the engine's scores -----------------------------------------------------------------

TEXTS = [
    "lattice alpha",
    "lattice beta",
    "prime gamma",
    "graph delta",
    "zeta only",  # a word the model below cannot see: only BM25 finds it
]
#: Unit vectors of the passages above; the query's vector is set per test.
VECTORS = np.asarray(
    [[1.0, 0.0, 0.0], [0.8, 0.6, 0.0], [0.0, 1.0, 0.0], [0.0, 0.6, 0.8], [0.0, 0.0, 1.0]],
    dtype=np.float32,
)


class ShortIndex:
    """An approximate index that only ever returns its ``reach`` best rows (as an ANN
    index gives no vector back for what it did not return)."""

    kind = "fake-ann"

    def __init__(self, vectors: npt.NDArray[np.float32], reach: int) -> None:
        self.vectors = vectors
        self.reach = reach

    def top(self, query_vector: npt.NDArray[np.float32], k: int) -> tuple[list[int], list[float]]:
        return best_rows(self.vectors @ query_vector.reshape(-1), min(k, self.reach))


class FixedQueryEngine(SearchEngine):
    """The engine with the model replaced by one fixed query vector."""

    query_vector = np.asarray([1.0, 0.0, 0.0], dtype=np.float32)

    def encode_query(self, query: str) -> npt.NDArray[np.float32]:
        return self.query_vector.reshape(1, -1)


def corpus() -> Corpus:
    chunks = pd.DataFrame(
        {
            "chunk_id": [f"p#c{row}" for row in range(len(TEXTS))],
            "paper_id": ["p"] * len(TEXTS),
            "text": TEXTS,
        }
    )
    return Corpus(chunks, {"p": "A paper"}, {"p": None})


def engine(
    index: object | None = None,
    *,
    ranking: str = "dense",
    miss_threshold: float = 0.5,
    passage_vectors: object | None = None,
) -> FixedQueryEngine:
    return FixedQueryEngine(
        model=None,  # type: ignore[arg-type]  # encode_query is replaced
        ref=ModelRef("math-embed", "1", "champion", "f" * 64),
        corpus=corpus(),
        index=index or PassageIndex(VECTORS),  # type: ignore[arg-type]
        lexical=LexicalIndex(TEXTS),
        ranking=ranking,
        miss_threshold=miss_threshold,
        passage_vectors=passage_vectors,  # type: ignore[arg-type]
    )


def cosines(rows: Sequence[int], query: npt.NDArray[np.float32]) -> list[float]:
    return (VECTORS[list(rows)] @ query.reshape(-1)).tolist()


@pytest.mark.parametrize("ranking", RANKINGS)
def test_every_rankings_scores_are_the_cosines_of_query_and_passage(ranking: str) -> None:
    searching = engine(ranking=ranking)
    hits = searching.search("zeta", 5)
    rows = [int(hit.chunk_id.split("#c")[1]) for hit in hits]
    expected = cosines(rows, FixedQueryEngine.query_vector)
    assert [hit.score for hit in hits] == pytest.approx(expected)
    if ranking == "dense":
        assert rows[:2] == [0, 1] and hits[0].score == pytest.approx(1.0)
    else:  # BM25 puts "zeta only" first; its score still says how far it is in meaning
        assert rows[0] == 4 and abs(hits[0].score) < 1e-6 < hits[1].score


def test_a_passage_only_bm25_brought_in_gets_its_cosine_from_the_stored_vectors() -> None:
    asked: list[list[int]] = []

    def stored(rows: Sequence[int]) -> npt.NDArray[np.float32]:
        asked.append(list(rows))
        return VECTORS[list(rows)]

    searching = engine(ShortIndex(VECTORS, reach=2), passage_vectors=stored)
    hits = searching.search("zeta", 3, "hybrid")
    by_id = {hit.chunk_id: hit.score for hit in hits}
    assert "p#c4" in by_id and by_id["p#c4"] == pytest.approx(0.0)
    assert [hit.chunk_id for hit in hits] == ["p#c0", "p#c4", "p#c1"]
    assert asked == [[4]]  # only the row the model's short list lacked
    assert [hit.chunk_id for hit in searching.search("zeta", 2, "dense")] == ["p#c0", "p#c1"]
    assert asked == [[4]]  # the model's own rows carry their cosine
    with pytest.raises(ValueError, match="needs passage_vectors"):
        engine(ShortIndex(VECTORS, reach=2))
