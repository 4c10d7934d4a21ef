"""Hybrid search's parts (pipelines.common.lexical): BM25 over the passages, reciprocal-rank
fusion, the ranking names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines.common.lexical import RRF_K, LexicalIndex, check_ranking, fuse

PASSAGES = [
    "A lattice is a discrete subgroup of a real vector space.",
    "The chromatic polynomial of a graph counts its proper colourings.",
    "Every lattice has a fundamental domain; a lattice lattice lattice.",
    "An abelian presheaf assigns an abelian group to each open set.",
]


def test_bm25_ranks_the_passages_that_share_a_word_best_first() -> None:
    index = LexicalIndex(PASSAGES)
    rows, scores = index.top("lattice", 10)
    assert rows == [2, 0]  # the passage that says it most first; the others do not match
    assert scores[0] > scores[1] > 0
    rows, _ = index.top("Abelian PRESHEAF", 10)  # case does not matter
    assert rows == [3]
    assert index.top("lattice", 1)[0] == [2]  # depth caps the list


@pytest.mark.parametrize("query", ["", "   ", "the of a", "zzz unheardof", "∫ Σ $"])
def test_a_query_without_a_known_word_matches_nothing(query: str) -> None:
    assert LexicalIndex(PASSAGES).top(query, 10) == ([], [])


@pytest.mark.parametrize("passages", [[], ["$x$", "the of"]])
def test_a_corpus_without_words_matches_nothing(passages: list[str]) -> None:
    assert LexicalIndex(passages).top("lattice", 10) == ([], [])


def test_equal_bm25_scores_keep_row_order() -> None:
    index = LexicalIndex(["prime gaps", "unrelated words", "prime gaps"])
    assert index.top("prime", 10)[0] == [0, 2]


def test_fusion_puts_what_both_rankings_place_high_first() -> None:
    dense = [5, 1, 2]
    lexical = [2, 7]
    rows, scores = fuse([dense, lexical], 10)
    assert rows == [2, 5, 1, 7]
    assert scores[0] == pytest.approx(1 / (RRF_K + 3) + 1 / (RRF_K + 1))
    assert scores[1] == pytest.approx(1 / (RRF_K + 1))
    # 1 and 7 are both second in one list: the first list's (the model's) wins the tie.
    assert scores[2] == pytest.approx(scores[3])
    assert fuse([dense, lexical], 2) == (rows[:2], scores[:2])


def test_fusion_with_nothing_lexical_is_the_first_ranking() -> None:
    assert fuse([[4, 3, 9], []], 2)[0] == [4, 3]
    assert fuse([], 5) == ([], [])


rankings = st.lists(st.integers(0, 30), unique=True, max_size=20)


@given(first=rankings, second=rankings, limit=st.integers(1, 40))
def test_fusion_returns_each_row_once_best_first(
    first: list[int], second: list[int], limit: int
) -> None:
    rows, scores = fuse([first, second], limit)
    assert len(rows) == len(set(rows)) == min(limit, len(set(first) | set(second)))
    assert set(rows) <= set(first) | set(second)
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("name", ["Dense", "bm25", "", "hybrid "])
def test_an_unknown_ranking_is_refused_with_the_choices(name: str) -> None:
    with pytest.raises(ValueError, match="ranking must be one of hybrid, dense"):
        check_ranking(name)
    assert check_ranking("dense") == "dense"
