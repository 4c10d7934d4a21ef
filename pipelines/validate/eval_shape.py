"""The evaluation set's shape: enough queries, and no query relevant to much of the corpus.

Every qrel can be valid on its own while the set as a whole is not: a concept whose
"relevant" passages are a third of the corpus (every passage that mentions a common word)
makes every model look alike, and twenty queries cannot separate two models. Both are
structural (validate stops): a gate run on such a set compares models on noise.
:func:`query_frame` is also the per-query frame the data-quality report describes
(:mod:`pipelines.validate.suites`), so the gate and the report count the same way.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

MIN_QUERIES_CHECK = "min_queries"
SHARE_CHECK = "query_relevant_share"
CHECKS = (MIN_QUERIES_CHECK, SHARE_CHECK)
WORST_SHOWN = 5
DEFINING_GRADE = 2  # the passage that defines or states the query's concept

#: The columns of :func:`query_frame`, in order.
COLUMNS = (
    "query_id",
    "concept",
    "relevant",  # distinct relevant passages
    "defining",  # of them, grade-2 (defining) passages
    "relevant_share",  # relevant / passages in the corpus
    "seen",  # relevant passages of papers training sees
    "unseen",  # relevant passages of papers held out of training
)


def query_frame(queries: pd.DataFrame, qrels: pd.DataFrame, passages: int) -> pd.DataFrame:
    """One row per query: its relevant passages, how many define it, their share of the
    ``passages`` of the corpus, and how many are in seen and unseen papers."""
    relevant = qrels.drop_duplicates(["query_id", "chunk_id"])
    by_query = relevant.assign(
        defining=relevant["grade"] == DEFINING_GRADE, unseen=relevant["unseen"].astype(bool)
    ).groupby("query_id")
    counts = {
        "relevant": by_query.size(),
        "defining": by_query["defining"].sum(),
        "unseen": by_query["unseen"].sum(),
    }
    frame = queries.loc[:, ["query_id", "concept"]].drop_duplicates("query_id")
    for column, per_query in counts.items():
        frame[column] = frame["query_id"].map(per_query).fillna(0).astype("int64")
    frame["relevant_share"] = (frame["relevant"] / max(passages, 1)).astype("float64")
    frame["seen"] = (frame["relevant"] - frame["unseen"]).astype("int64")
    return frame.loc[:, list(COLUMNS)].reset_index(drop=True)


def figures(frame: pd.DataFrame, passages: int) -> dict[str, Any]:
    """The set's shape in numbers (``metrics/data_quality.json``, the report's summary)."""
    answered = frame[frame["relevant"] > 0]
    relevant = answered["relevant"]
    return {
        "queries": int(len(frame)),
        "queries_with_relevant": int(len(answered)),
        "queries_with_defining": int((frame["defining"] > 0).sum()),
        "passages": int(passages),
        "relevant_per_query": {
            "median": float(relevant.median()) if len(relevant) else 0.0,
            "mean": round(float(relevant.mean()), 3) if len(relevant) else 0.0,
            "max": int(relevant.max()) if len(relevant) else 0,
        },
        "max_relevant_share": round(float(frame["relevant_share"].max()), 6) if len(frame) else 0.0,
        "relevant_seen": int(frame["seen"].sum()),
        "relevant_unseen": int(frame["unseen"].sum()),
    }


#: Each stored query set and the knob that says how many queries it needs.
MIN_QUERIES_KNOBS = {"named": "min_queries", "described": "min_described_queries"}


def of_set(queries: pd.DataFrame, query_set: str) -> pd.DataFrame:
    """The queries of one stored set (a table without sets holds named queries only)."""
    if "set" not in queries:
        return queries if query_set == "named" else queries.iloc[0:0]
    return queries[queries["set"] == query_set]


def too_few_queries(frame: pd.DataFrame, min_queries: int, query_set: str = "named") -> str:
    """The note of a failed query-count check, or "" when at least ``min_queries`` queries
    of ``query_set`` have a relevant passage."""
    answered = int((frame["relevant"] > 0).sum())
    if answered >= min_queries:
        return ""
    knob = MIN_QUERIES_KNOBS[query_set]
    return (
        f"only {answered} {query_set} quer{'y has' if answered == 1 else 'ies have'} a "
        f"relevant passage, fewer than validate.{knob} "
        f"({min_queries}): a gate on so few queries cannot tell two models apart. Add papers "
        "(sample.corpus, ingest.max_papers), raise pairs.held_out_fraction (named) or "
        f"pairs.held_out_statement_fraction (described), or (a small test corpus) lower "
        f"validate.{knob}; then rerun the pipeline"
    )


def max_relevant(passages: int, max_share: float) -> int:
    """The most relevant passages a query may have: ``max_share`` of the corpus, and never
    fewer than one (one passage is never too broad, however small the corpus). The same
    bound the pairs stage leaves too-broad queries out by (``pairs.max_relevant_share``)."""
    return max(1, int(max_share * passages))


def crowded_queries(frame: pd.DataFrame, passages: int, max_share: float) -> pd.DataFrame:
    """The queries with more than :func:`max_relevant` passages relevant, worst first."""
    crowded = frame[frame["relevant"] > max_relevant(passages, max_share)]
    return crowded.sort_values(["relevant_share", "query_id"], ascending=[False, True])


def describe_crowded(
    crowded: pd.DataFrame, passages: int, max_share: float
) -> tuple[tuple[str, ...], str]:
    """Examples (the worst queries, one line each) and the note of a failed share check."""
    examples = tuple(
        f"query {row.query_id} ({row.concept!r}): {row.relevant:,} of {passages:,} passages "
        f"relevant ({row.relevant_share:.1%})"
        for row in crowded.head(WORST_SHOWN).itertuples()
    )
    note = (
        f"{len(crowded)} quer{'y has' if len(crowded) == 1 else 'ies have'} more than "
        f"validate.max_query_relevant_share ({max_share:.1%}, at most "
        f"{max_relevant(passages, max_share):,} passages) of the corpus relevant: such a query "
        "rewards any model. Set pairs.max_relevant_share no higher (pairs then leaves such "
        "queries out), or pairs.qrels_scope: defining (the narrowest relevance); "
        "pairs.held_out_fraction decides how many concepts become queries. Then rerun "
        "mathembed pairs and mathembed validate"
    )
    return examples, note
