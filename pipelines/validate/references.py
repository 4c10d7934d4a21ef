"""The links between tables: every chunk's paper exists, both ends of an edge are concepts,
every qrel points at a chunk and a query, every query has a qrel, ...

:data:`REFERENCES` is cross-table integrity. A dangling row is a structural failure of the
pipeline's output; when validate quarantines rows, the rows left pointing at them are
quarantined with them (:func:`pipelines.validate.stage.validate_tables`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd
import pyarrow  # type: ignore[import-untyped]  # pyarrow ships no type information
import pyarrow.compute  # type: ignore[import-untyped]

from pipelines.common.tables import STATEMENT_PAIR_KINDS

_KEY_SEPARATOR = "\x1f"  # joins the columns of a composite key; never in an id or name


def joined(frame: pd.DataFrame, columns: Sequence[str]) -> pd.Series:
    """The values of ``columns`` as one string per row (a composite key)."""
    key = frame[columns[0]].astype("str")
    for column in columns[1:]:
        key = key + _KEY_SEPARATOR + frame[column].astype("str")
    return key


def isin(values: pd.Series, candidates: pd.Series) -> pd.Series:
    """``values.isin(candidates)`` for strings, hashed in Arrow.

    pandas' own ``isin`` on Arrow strings turns the candidates into a Python list first:
    some 40x slower on the 200,000 mentions of a 10,000-paper corpus.
    """
    found = pyarrow.compute.is_in(
        pyarrow.array(values.astype("str")),
        value_set=pyarrow.array(candidates.astype("str")),
    )
    mask = pyarrow.compute.fill_null(found, False).to_numpy(zero_copy_only=False)
    return pd.Series(mask, index=values.index, dtype=bool)


@dataclass(frozen=True)
class Reference:
    """Rows of ``table`` must find their ``columns`` among ``parent``'s ``parent_columns``.

    ``rows`` restricts the rule to some rows of ``table`` (a boolean mask), when a column
    points at different tables depending on another (a pair's positive).
    """

    name: str
    table: str
    columns: tuple[str, ...]
    parent: str
    parent_columns: tuple[str, ...]
    rows: Callable[[pd.DataFrame], pd.Series] | None = None

    def dangling(self, child: pd.DataFrame, parent: pd.DataFrame) -> pd.Series:
        """A mask over ``child``: rows whose key is missing from ``parent``."""
        missing = ~isin(joined(child, self.columns), joined(parent, self.parent_columns))
        if self.rows is not None:
            missing &= self.rows(child)
        return missing


def _statement_pairs(pairs: pd.DataFrame) -> pd.Series:
    return pairs["kind"].isin(STATEMENT_PAIR_KINDS)


def _chunk_pairs(pairs: pd.DataFrame) -> pd.Series:
    return ~pairs["kind"].isin(STATEMENT_PAIR_KINDS)


def _described_queries(queries: pd.DataFrame) -> pd.Series:
    """A described query's ``concept`` is the statement it describes."""
    return queries["set"] == "described"


def _named_queries(queries: pd.DataFrame) -> pd.Series:
    return ~_described_queries(queries)


#: Every link between the tables.
REFERENCES: tuple[Reference, ...] = (
    Reference("paper_exists", "chunks", ("paper_id", "version"), "papers", ("paper_id", "version")),
    Reference(
        "paper_exists", "statements", ("paper_id", "version"), "papers", ("paper_id", "version")
    ),
    Reference("source_is_concept", "edges", ("source",), "concepts", ("name",)),
    Reference("target_is_concept", "edges", ("target",), "concepts", ("name",)),
    Reference("concept_exists", "mentions", ("concept",), "concepts", ("name",)),
    Reference(
        "chunk_exists", "mentions", ("chunk_id", "paper_id"), "chunks", ("chunk_id", "paper_id")
    ),
    Reference(
        "positive_chunk_exists", "pairs", ("positive_id",), "chunks", ("chunk_id",), _chunk_pairs
    ),
    Reference(
        "positive_statement_exists",
        "pairs",
        ("positive_id",),
        "statements",
        ("statement_id",),
        _statement_pairs,
    ),
    Reference("concept_exists", "queries", ("concept",), "concepts", ("name",), _named_queries),
    Reference(
        "statement_exists",
        "queries",
        ("concept",),
        "statements",
        ("statement_id",),
        _described_queries,
    ),
    Reference("query_exists", "qrels", ("query_id",), "queries", ("query_id",)),
    Reference("chunk_exists", "qrels", ("chunk_id",), "chunks", ("chunk_id",)),
    Reference("has_qrels", "queries", ("query_id",), "qrels", ("query_id",)),
)
