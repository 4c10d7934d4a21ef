"""The evaluation set: the validated corpus, the held-out queries and their judgments,
checked against each other and indexed by corpus row.

Subsets. ``all`` scores every query with a relevant chunk. ``seen`` and ``unseen`` score
the queries against only the relevant chunks from seen / unseen papers (the qrels'
``unseen`` flag: papers whose chunks were never training positives); the *other* side's
relevant chunks are removed from the ranking rather than counted as misses, because
ranking a relevant passage first is not an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from pipelines.common import io
from pipelines.common.paths import Paths
from pipelines.common.tables import TABLES

SUBSETS = ("seen", "unseen")
#: The validated tables an evaluation reads: the passages, the queries, their judgments.
EVAL_TABLES = ("chunks", "queries", "qrels")
REPRO_HINT = "run `make repro` (dvc repro validate) to rebuild data/validated/"


@dataclass(frozen=True)
class Subset:
    """Queries scored together: their rows in the eval set, qrels, and ids left out of ranking."""

    name: str
    rows: npt.NDArray[np.int64]
    qrels: list[dict[int, int]]
    excluded: list[frozenset[int]]


@dataclass(frozen=True)
class EvalSet:
    """The corpus, the queries with at least one relevant chunk, and their qrels.

    ``qrels[i]`` maps a corpus row index to a grade for query ``i``.
    """

    corpus_ids: list[str]
    corpus_texts: list[str]
    query_ids: list[str]
    query_texts: list[str]
    qrels: list[dict[int, int]]
    unseen_docs: list[frozenset[int]]
    queries_without_relevant: list[str]

    def subset(self, name: str) -> Subset:
        """``all``, or the queries scored only against ``seen`` / ``unseen`` relevant chunks."""
        if name == "all":
            rows = np.arange(len(self.query_ids), dtype=np.int64)
            return Subset(name, rows, list(self.qrels), [frozenset()] * len(rows))
        if name not in SUBSETS:
            raise ValueError(f"unknown subset {name!r}; expected 'all' or one of {SUBSETS}")
        keep_unseen = name == "unseen"
        rows_kept: list[int] = []
        qrels: list[dict[int, int]] = []
        excluded: list[frozenset[int]] = []
        for row, (judged, unseen) in enumerate(zip(self.qrels, self.unseen_docs, strict=True)):
            other_side = {d for d, g in judged.items() if g >= 1 and (d in unseen) != keep_unseen}
            if len(other_side) == sum(1 for g in judged.values() if g >= 1):
                continue  # no relevant chunk on this side
            rows_kept.append(row)
            qrels.append({doc: g for doc, g in judged.items() if doc not in other_side})
            excluded.append(frozenset(other_side))
        return Subset(name, np.asarray(rows_kept, dtype=np.int64), qrels, excluded)


def _require_columns(frame: pd.DataFrame, columns: Sequence[str], path: Path) -> None:
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise ValueError(
            f"{path}: missing column(s) {missing} (has {list(frame.columns)}); {REPRO_HINT}"
        )


def _examples(values: Sequence[Any], limit: int = 5) -> str:
    shown = ", ".join(repr(value) for value in list(values)[:limit])
    more = f" and {len(values) - limit} more" if len(values) > limit else ""
    return shown + more


def build_eval_set(
    chunks: pd.DataFrame,
    queries: pd.DataFrame,
    qrels: pd.DataFrame,
    *,
    sources: Mapping[str, Path] | None = None,
) -> EvalSet:
    """Check the three tables against each other and index the qrels by corpus row.

    ``sources`` names the files the tables came from, for the error messages. A query
    with no relevant (grade >= 1) chunk cannot be scored; it is left out and listed in
    ``queries_without_relevant`` so the counts add up.
    """
    names = {"chunks": Path("chunks"), "queries": Path("queries"), "qrels": Path("qrels")}
    names.update(sources or {})
    _require_columns(chunks, ["chunk_id", "text"], names["chunks"])
    _require_columns(queries, ["query_id", "text"], names["queries"])
    _require_columns(qrels, ["query_id", "chunk_id", "grade", "unseen"], names["qrels"])
    if chunks.empty:
        raise ValueError(f"{names['chunks']}: the corpus is empty; {REPRO_HINT}")
    if queries.empty:
        raise ValueError(
            f"{names['queries']}: no evaluation queries; the pairs stage needs held-out "
            f"concepts with enough papers (params.yaml pairs.held_out_fraction, "
            f"pairs.min_degree); {REPRO_HINT}"
        )
    for frame, column, key in ((chunks, "chunk_id", "chunks"), (queries, "query_id", "queries")):
        duplicated = frame.loc[frame[column].duplicated(), column].tolist()
        if duplicated:
            raise ValueError(
                f"{names[key]}: duplicate {column} {_examples(duplicated)}; {REPRO_HINT}"
            )

    corpus_ids = chunks["chunk_id"].astype(str).tolist()
    row_of_chunk = {chunk_id: row for row, chunk_id in enumerate(corpus_ids)}
    query_ids = queries["query_id"].astype(str).tolist()
    row_of_query = {query_id: row for row, query_id in enumerate(query_ids)}

    unknown_chunks = sorted(set(qrels["chunk_id"].astype(str)) - row_of_chunk.keys())
    if unknown_chunks:
        raise ValueError(
            f"{names['qrels']}: {len(unknown_chunks)} chunk_id(s) not in {names['chunks']}: "
            f"{_examples(unknown_chunks)}; qrels and corpus come from different runs — "
            f"{REPRO_HINT}"
        )
    unknown_queries = sorted(set(qrels["query_id"].astype(str)) - row_of_query.keys())
    if unknown_queries:
        raise ValueError(
            f"{names['qrels']}: {len(unknown_queries)} query_id(s) not in {names['queries']}: "
            f"{_examples(unknown_queries)}; {REPRO_HINT}"
        )
    pair = qrels[["query_id", "chunk_id"]].astype(str)
    duplicated_pairs = pair[pair.duplicated()].itertuples(index=False, name=None)
    duplicated_list = list(duplicated_pairs)
    if duplicated_list:
        raise ValueError(
            f"{names['qrels']}: (query_id, chunk_id) judged more than once: "
            f"{_examples(duplicated_list)}; {REPRO_HINT}"
        )

    judged: list[dict[int, int]] = [{} for _ in query_ids]
    unseen: list[set[int]] = [set() for _ in query_ids]
    for query_id, chunk_id, grade, is_unseen in zip(
        qrels["query_id"].astype(str),
        qrels["chunk_id"].astype(str),
        qrels["grade"],
        qrels["unseen"],
        strict=True,
    ):
        row, doc = row_of_query[query_id], row_of_chunk[chunk_id]
        judged[row][doc] = int(grade)
        if bool(is_unseen):
            unseen[row].add(doc)

    scorable = [row for row, docs in enumerate(judged) if any(g >= 1 for g in docs.values())]
    scorable_rows = set(scorable)
    if not scorable:
        raise ValueError(
            f"{names['qrels']}: none of the {len(query_ids)} queries in {names['queries']} "
            f"has a relevant (grade >= 1) chunk; {REPRO_HINT}"
        )
    query_texts = queries["text"].astype(str).tolist()
    return EvalSet(
        corpus_ids=corpus_ids,
        corpus_texts=chunks["text"].astype(str).tolist(),
        query_ids=[query_ids[row] for row in scorable],
        query_texts=[query_texts[row] for row in scorable],
        qrels=[judged[row] for row in scorable],
        unseen_docs=[frozenset(unseen[row]) for row in scorable],
        queries_without_relevant=[
            query_id for row, query_id in enumerate(query_ids) if row not in scorable_rows
        ],
    )


def load_eval_set(paths: Paths) -> EvalSet:
    """Read the validated corpus, queries and qrels (never the unvalidated tables)."""
    sources = {name: TABLES[name].validated_path(paths) for name in EVAL_TABLES}
    tables = {}
    for name, path in sources.items():
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found; {REPRO_HINT}")
        tables[name] = io.read_parquet(path)
    return build_eval_set(tables["chunks"], tables["queries"], tables["qrels"], sources=sources)
