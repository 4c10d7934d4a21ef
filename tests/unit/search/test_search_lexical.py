"""Hybrid search's parts (pipelines.retrieval.lexical): BM25 over the passages, reciprocal-rank
fusion, the ranking names; the tokens a changed corpus reuses and the saved index."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines.retrieval import lexical
from pipelines.retrieval.lexical import (
    RRF_K,
    LexicalIndex,
    check_ranking,
    corpus_digest,
    fuse,
    load_lexical_index,
    open_lexical_index,
    retokenized,
    save_lexical_index,
    tokenize,
)

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
    with pytest.raises(ValueError, match="ranking must be one of dense, hybrid, adaptive"):
        check_ranking(name)
    assert check_ranking("dense") == "dense"


# ------------------------------------------------------------- tokens, and the saved index

words = st.text(alphabet="abcxyz Ωé1_ -.", max_size=30)


@given(texts=st.lists(words, min_size=1, max_size=8), new=st.dictionaries(st.integers(0, 7), words))
def test_retokenizing_the_changed_rows_equals_tokenizing_the_changed_corpus(
    texts: list[str], new: dict[int, str]
) -> None:
    changed = {row: text for row, text in new.items() if row < len(texts)}
    whole = [changed.get(row, text) for row, text in enumerate(texts)]
    assert retokenized(tokenize(texts), changed) == tokenize(whole)


QUERIES = ["lattice", "abelian group", "chromatic polynomial graph", "open set lattice", "zeta"]


def answers(index: LexicalIndex) -> list[tuple[list[int], list[float]]]:
    return [index.top(query, 10) for query in QUERIES]


def test_an_index_from_tokens_is_the_index_of_the_texts() -> None:
    assert answers(LexicalIndex.from_tokens(tokenize(PASSAGES))) == answers(LexicalIndex(PASSAGES))


def test_the_saved_index_answers_as_the_built_one_and_is_memory_mapped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    built = LexicalIndex(PASSAGES)
    save_lexical_index(tmp_path, PASSAGES, built)
    assert [path.name for path in tmp_path.iterdir()] == [corpus_digest(PASSAGES)]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        loaded = load_lexical_index(tmp_path, PASSAGES)
    assert loaded is not None and not caplog.records
    assert isinstance(loaded._bm25.scores["data"], np.memmap)
    assert answers(loaded) == answers(built)  # the same rows and the same scores, exactly


def test_a_changed_corpus_is_never_served_the_saved_index(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    save_lexical_index(tmp_path, PASSAGES, LexicalIndex(PASSAGES))
    changed = [*PASSAGES[:3], "The zeta function of an abelian variety."]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert load_lexical_index(tmp_path, changed) is None
        index = open_lexical_index(tmp_path, changed)
    assert "built from other passages" in caplog.text
    assert index.top("zeta", 10)[0] == [3]  # the new text's word: a stale index has none
    assert answers(index) == answers(LexicalIndex(changed))
    # The new corpus's index replaced the old one: the next start loads it.
    assert [path.name for path in tmp_path.iterdir()] == [corpus_digest(changed)]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert load_lexical_index(tmp_path, changed) is not None
    assert not caplog.records
    # Same texts, other order: other rows, so another index.
    assert corpus_digest(PASSAGES[::-1]) != corpus_digest(PASSAGES)


def test_other_tokenizer_settings_make_another_key(monkeypatch: pytest.MonkeyPatch) -> None:
    before = corpus_digest(PASSAGES)
    monkeypatch.setitem(lexical.TOKENIZER, "stopwords", [])
    assert corpus_digest(PASSAGES) != before


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-4])


def _flip_last_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda folder: _truncate(folder / "data.csc.index.npy"), "bytes, not"),
        (lambda folder: _flip_last_byte(folder / "data.csc.index.npy"), "SHA-256"),
        (lambda folder: (folder / "vocab.index.json").unlink(), "vocab.index.json is missing"),
        (lambda folder: (folder / lexical.MANIFEST_FILE).write_text("{"), "manifest cannot"),
        (lambda folder: (folder / lexical.MANIFEST_FILE).unlink(), "manifest cannot"),
    ],
)
def test_a_corrupt_saved_index_is_rebuilt_with_a_warning(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    damage: Callable[[Path], None],
    reason: str,
) -> None:
    save_lexical_index(tmp_path, PASSAGES, LexicalIndex(PASSAGES))
    damage(tmp_path / corpus_digest(PASSAGES))
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        index = open_lexical_index(tmp_path, PASSAGES)
    assert reason in caplog.text and "building it" in caplog.text
    assert answers(index) == answers(LexicalIndex(PASSAGES))
    caplog.clear()
    with caplog.at_level(logging.WARNING):  # rebuilt and saved again: trusted next time
        assert load_lexical_index(tmp_path, PASSAGES) is not None
    assert not caplog.records


def test_none_saved_is_built_with_a_warning_and_an_unwritable_folder_is_no_failure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    with caplog.at_level(logging.WARNING):
        index = open_lexical_index(blocked / "bm25", PASSAGES)
    assert "none is saved" in caplog.text and "not saved" in caplog.text
    assert answers(index) == answers(LexicalIndex(PASSAGES))


def test_a_corpus_without_words_is_not_saved(tmp_path: Path) -> None:
    texts = ["$x$", "the of"]
    assert open_lexical_index(tmp_path / "bm25", texts).top("x", 5) == ([], [])
    assert not (tmp_path / "bm25").exists()
