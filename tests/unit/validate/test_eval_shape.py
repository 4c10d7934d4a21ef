"""The eval set's shape (pipelines/validate/eval_shape.py): per-query counts, the figures,
and both blocking checks at their boundaries, with messages that say what to change."""

from __future__ import annotations

import pandas as pd
import pytest

from pipelines.validate import eval_shape


def eval_set(relevant: dict[str, list[tuple[str, int, bool]]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Queries ``q<concept>`` and their qrels ``(chunk_id, grade, unseen)``."""
    queries = pd.DataFrame(
        {
            "query_id": [f"q{concept}" for concept in relevant],
            "concept": list(relevant),
            "text": list(relevant),
        }
    )
    qrels = pd.DataFrame(
        [
            {"query_id": f"q{concept}", "chunk_id": chunk, "grade": grade, "unseen": unseen}
            for concept, rows in relevant.items()
            for chunk, grade, unseen in rows
        ],
        columns=["query_id", "chunk_id", "grade", "unseen"],
    )
    return queries, qrels


def n_queries(n: int, relevant_each: int = 1) -> pd.DataFrame:
    queries, qrels = eval_set(
        {
            f"concept {i}": [(f"c{i}-{k}", 2 if k == 0 else 1, False) for k in range(relevant_each)]
            for i in range(n)
        }
    )
    return eval_shape.query_frame(queries, qrels, passages=1000)


def test_query_frame_counts_relevant_defining_seen_and_unseen() -> None:
    queries, qrels = eval_set(
        {
            "durfee square": [("a", 2, False), ("b", 1, True), ("c", 1, False), ("c", 1, False)],
            "partition": [("a", 1, False)],
            "orphan": [],
        }
    )
    frame = eval_shape.query_frame(queries, qrels, passages=100)
    assert list(frame.columns) == list(eval_shape.COLUMNS)
    rows = frame.set_index("concept")
    # A chunk listed twice for one query counts once.
    assert rows.loc["durfee square", ["relevant", "defining", "seen", "unseen"]].tolist() == [
        3,
        1,
        2,
        1,
    ]
    assert rows.loc["durfee square", "relevant_share"] == pytest.approx(0.03)
    assert rows.loc["partition", ["relevant", "defining"]].tolist() == [1, 0]
    assert rows.loc["orphan", ["relevant", "defining", "seen", "unseen"]].tolist() == [0, 0, 0, 0]

    figures = eval_shape.figures(frame, passages=100)
    assert figures == {
        "queries": 3,
        "queries_with_relevant": 2,
        "queries_with_defining": 1,
        "passages": 100,
        "relevant_per_query": {"median": 2.0, "mean": 2.0, "max": 3},
        "max_relevant_share": 0.03,
        "relevant_seen": 3,
        "relevant_unseen": 1,
    }


def test_figures_of_an_empty_set() -> None:
    queries, qrels = eval_set({})
    frame = eval_shape.query_frame(queries, qrels, passages=0)
    assert frame.empty and list(frame.columns) == list(eval_shape.COLUMNS)
    figures = eval_shape.figures(frame, passages=0)
    assert figures["queries"] == 0 and figures["relevant_per_query"]["max"] == 0
    assert "only 0 named queries" in eval_shape.too_few_queries(frame, 1)


def test_too_few_queries_at_the_boundary() -> None:
    frame = n_queries(100)
    assert eval_shape.too_few_queries(frame, 100) == ""
    note = eval_shape.too_few_queries(frame, 101)
    assert "only 100 named queries have a relevant passage" in note
    assert "fewer than validate.min_queries (101)" in note
    assert "pairs.held_out_fraction" in note and "rerun" in note
    described = eval_shape.too_few_queries(frame, 101, "described")
    assert "only 100 described queries" in described
    assert "validate.min_described_queries (101)" in described
    assert "pairs.held_out_statement_fraction" in described


def test_queries_without_a_relevant_passage_do_not_count() -> None:
    queries, qrels = eval_set({"a": [("x", 2, False)], "b": []})
    frame = eval_shape.query_frame(queries, qrels, passages=10)
    assert eval_shape.too_few_queries(frame, 1) == ""
    assert "only 1 named query has a relevant passage" in eval_shape.too_few_queries(frame, 2)


@pytest.mark.parametrize(
    ("passages", "share", "allowed"),
    [(3000, 0.01, 30), (1000, 0.01, 10), (99, 0.01, 1), (10, 0.01, 1), (10, 1.0, 10)],
)
def test_max_relevant_is_the_share_and_never_below_one(
    passages: int, share: float, allowed: int
) -> None:
    assert eval_shape.max_relevant(passages, share) == allowed


def test_crowded_queries_at_the_boundary_worst_first() -> None:
    queries, qrels = eval_set(
        {
            "at the bound": [(f"a{k}", 1, False) for k in range(10)],
            "one over": [(f"b{k}", 1, False) for k in range(11)],
            "worst": [(f"c{k}", 1, True) for k in range(40)],
        }
    )
    frame = eval_shape.query_frame(queries, qrels, passages=1000)
    crowded = eval_shape.crowded_queries(frame, 1000, 0.01)
    assert crowded["concept"].tolist() == ["worst", "one over"]
    examples, note = eval_shape.describe_crowded(crowded, 1000, 0.01)
    assert examples == (
        "query qworst ('worst'): 40 of 1,000 passages relevant (4.0%)",
        "query qone over ('one over'): 11 of 1,000 passages relevant (1.1%)",
    )
    assert note.startswith("2 queries have more than validate.max_query_relevant_share (1.0%")
    assert "at most 10 passages" in note
    for knob in ("pairs.max_relevant_share", "pairs.qrels_scope", "pairs.held_out_fraction"):
        assert knob in note
    assert "rerun mathembed pairs and mathembed validate" in note
    assert eval_shape.crowded_queries(frame, 1000, 0.04).empty


def test_one_relevant_passage_is_never_too_broad() -> None:
    queries, qrels = eval_set({"small corpus": [("a", 2, False)]})
    frame = eval_shape.query_frame(queries, qrels, passages=5)
    assert eval_shape.crowded_queries(frame, 5, 0.01).empty
    queries, qrels = eval_set({"small corpus": [("a", 2, False), ("b", 1, False)]})
    frame = eval_shape.query_frame(queries, qrels, passages=5)
    crowded = eval_shape.crowded_queries(frame, 5, 0.01)
    _, note = eval_shape.describe_crowded(crowded, 5, 0.01)
    assert note.startswith("1 query has more than")


def test_only_the_worst_few_are_listed() -> None:
    frame = n_queries(eval_shape.WORST_SHOWN + 3, relevant_each=20)
    crowded = eval_shape.crowded_queries(frame, 1000, 0.01)
    examples, note = eval_shape.describe_crowded(crowded, 1000, 0.01)
    assert len(examples) == eval_shape.WORST_SHOWN
    assert note.startswith(f"{eval_shape.WORST_SHOWN + 3} queries")
