"""The transfer sets: plain windows, the papers' questions, the named queries over the
windows, and what cannot be asked (issue 27)."""

from __future__ import annotations

import pandas as pd
import pytest

from pipelines.common.windows import plain_windows
from pipelines.evaluate.eval_set import build_eval_set
from pipelines.evaluate.transfer import (
    TRANSFER_NAMED,
    TRANSFER_PAPERS,
    transfer_queries,
    words_outside_maths,
)


def chunks_of(papers: dict[str, list[str]]) -> pd.DataFrame:
    rows = [
        {"chunk_id": f"{paper}#c{index:04d}", "paper_id": paper, "chunk_index": index, "text": text}
        for paper, texts in papers.items()
        for index, text in enumerate(texts)
    ]
    return pd.DataFrame(rows)


def words(n: int, word: str = "ring") -> str:
    return " ".join([word] * n)


def test_windows_are_cut_at_a_space_and_know_the_passages_in_them() -> None:
    # Passages given out of order: the windows follow chunk_index.
    chunks = chunks_of({"p1": [words(30), words(30, "field")], "p2": [words(10, "sheaf")]})
    chunks = chunks.iloc[::-1].reset_index(drop=True)
    windows = plain_windows(chunks, size=100)
    assert all(len(text) <= 100 for text in windows.texts)
    assert all(not text.startswith(" ") and not text.endswith(" ") for text in windows.texts)
    assert windows.texts[0].startswith("ring ring")  # p1's first passage first
    assert (
        " ".join(windows.texts[: windows.papers.count("p1")]).split()
        == (words(30) + " " + words(30, "field")).split()
    )  # nothing lost or repeated at a cut, no word split
    assert windows.ids[0] == "p1#w0000" and windows.papers[-1] == "p2"
    # A passage maps to every window its text falls in, and to no other.
    for chunk_id, rows in windows.of_chunk.items():
        word = {"p1#c0000": "ring", "p1#c0001": "field", "p2#c0000": "sheaf"}[chunk_id]
        assert rows and all(word in windows.texts[row] for row in rows)
        others = set(range(len(windows.ids))) - set(rows)
        assert not any(windows.texts[row].split() == [word] * 5 for row in others)
    assert len(windows.of_chunk["p1#c0000"]) >= 2  # 149 characters: two windows


def test_a_word_longer_than_a_window_is_cut_all_the_same() -> None:
    windows = plain_windows(chunks_of({"p1": ["x" * 250]}), size=100)
    assert [len(text) for text in windows.texts] == [100, 100, 50]


def papers_table(rows: list[dict[str, object]]) -> pd.DataFrame:
    return pd.DataFrame(rows)


def test_papers_questions_find_their_paper_and_a_copied_sentence_is_not_ranked() -> None:
    chunks = chunks_of(
        {
            "p1": ["We prove the snake lemma for abelian categories. " + words(20)],
            "p2": [words(20, "prime") + " numbers."],
        }
    )
    windows = plain_windows(chunks, size=100)
    papers = papers_table(
        [
            {
                "paper_id": "p1",
                "title": "Snake lemmas",
                "abstract": "We prove the snake lemma for abelian categories. It is old.",
            },
            {"paper_id": "p2", "title": "$\\mathbb{Z}_p$", "abstract": float("nan")},
            {"paper_id": "p3", "title": "A paper with no passage", "abstract": "Gone."},
        ]
    )
    asked = transfer_queries(papers, windows, named=[])
    by_id = dict(zip(asked.ids, range(len(asked.ids)), strict=True))
    assert set(by_id) == {"title:p1", "abstract0:p1", "abstract1:p1"}
    p1_rows = {row for row, paper in enumerate(windows.papers) if paper == "p1"}
    for row in by_id.values():
        assert asked.sets[row] == TRANSFER_PAPERS
        assert set(asked.qrels[row]) == p1_rows
    copied = asked.excluded[by_id["abstract0:p1"]]
    assert copied and copied <= p1_rows  # the body repeats it: that window is not ranked
    assert not asked.excluded[by_id["title:p1"]]  # a title is a name, not a copy
    assert asked.skipped == {"no abstract": 1, "title all maths": 1}


def test_a_single_paper_cannot_be_told_apart_and_the_named_queries_remain() -> None:
    chunks = chunks_of({"p1": [words(30), words(30, "field")]})
    windows = plain_windows(chunks, size=100)
    papers = papers_table([{"paper_id": "p1", "title": "Rings", "abstract": "About rings."}])
    named = [("q1", "field", {"p1#c0001": 2}), ("q2", "ring", {"p1#c0000": 1, "p1#c0001": 2})]
    asked = transfer_queries(papers, windows, named)
    assert asked.sets == [TRANSFER_NAMED, TRANSFER_NAMED]
    assert asked.skipped == {"one paper: nothing to tell apart": 1}
    field_rows = set(windows.of_chunk["p1#c0001"])
    assert asked.qrels[0] == dict.fromkeys(field_rows, 2)
    # a window holding both passages takes the higher grade
    both = set(windows.of_chunk["p1#c0000"]) & field_rows
    assert all(asked.qrels[1][row] == 2 for row in both)


def test_words_outside_maths() -> None:
    assert words_outside_maths("$\\mathbb{Z}_p$-extensions of $K$") == 2
    assert words_outside_maths("$x^2 + y^2$ and $z$") == 1
    assert words_outside_maths("$\\mathrm{GL}_n(\\mathbb{F}_q)$ 12") == 0


def test_the_eval_set_holds_the_transfer_sets_over_windows() -> None:
    chunks = chunks_of({"p1": ["A ring is a set. " + words(10)], "p2": ["A field. " + words(10)]})
    queries = pd.DataFrame({"query_id": ["q1"], "text": ["ring"], "set": ["named"]})
    qrels = pd.DataFrame(
        {"query_id": ["q1"], "chunk_id": ["p1#c0000"], "grade": [2], "unseen": [False]}
    )
    papers = papers_table(
        [
            {"paper_id": "p1", "title": "Rings", "abstract": "Rings are studied."},
            {"paper_id": "p2", "title": "Fields", "abstract": ""},
        ]
    )
    eval_set = build_eval_set(chunks, queries, qrels, papers=papers)
    transfer = eval_set.holding(TRANSFER_NAMED)
    assert transfer is eval_set.transfer and eval_set.holding("named") is eval_set
    assert transfer.corpus_ids == ["p1#w0000", "p2#w0000"]
    assert transfer.rows_of(TRANSFER_NAMED) == [3] and transfer.query_texts[3] == "ring"
    assert transfer.subset(TRANSFER_PAPERS).qrels == [{0: 1}, {0: 1}, {1: 1}]
    assert eval_set.transfer_record == {
        "window_chars": 1500,
        "windows": 2,
        "papers": 2,
        "queries": {TRANSFER_PAPERS: 3, TRANSFER_NAMED: 1},
        "skipped": {"no abstract": 1},
    }
    assert build_eval_set(chunks, queries, qrels).transfer is None  # no papers: no transfer


def test_papers_without_an_id_column_name_the_file_and_the_fix() -> None:
    chunks = chunks_of({"p1": ["A ring is a set."]})
    queries = pd.DataFrame({"query_id": ["q1"], "text": ["ring"]})
    qrels = pd.DataFrame(
        {"query_id": ["q1"], "chunk_id": ["p1#c0000"], "grade": [2], "unseen": [False]}
    )
    with pytest.raises(ValueError, match=r"papers: missing column\(s\) \['paper_id'\].*repro"):
        build_eval_set(chunks, queries, qrels, papers=pd.DataFrame({"title": ["Rings"]}))
