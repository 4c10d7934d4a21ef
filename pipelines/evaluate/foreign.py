"""The foreign corpus (transfer set ``transfer_corpus``): another project's held-out queries,
searched among that project's passages and this night's passages together.

A night trains on one corpus. A model that learned to prefer its corpus's style, or forgot
what its base knew of other mathematics, shows it here: every answer sits in text it never
trained on, among text it did. ``evaluate.foreign_corpora`` lists such folders; a night asks
the first whose papers it does not hold (the project ships ``corpora/blueprints-eval/``, from
a night on the Lean blueprints' research LaTeX, then ``corpora/stacks-eval/``, from Stacks
Project chapters the demo does not have; each built by
``pipelines/evaluate/build_foreign.py``). A folder holds four tables:

``passages.parquet``
    ``passage_id, paper_id, text``: each passage as that project's evaluation searched it,
    with the names of its named queries masked out.
``queries.parquet``
    ``query_id, text, set, exclude``: its named queries (``masked``: their passages no
    longer hold the name) and its described ones (a slogan or citing sentence people
    wrote); ``exclude`` lists passages not ranked for the query (a citing sentence's own).
``qrels.parquet``
    ``query_id, passage_id, grade``.
``papers.parquet``
    ``paper_id, content_hash``: a night on those same papers does not ask the set (its
    answers would be the night's own training text).

So each query is found by its meaning, in another corpus: the gate's meaning sets, moved.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from pipelines.common import io

#: The tables of a foreign corpus folder, and the columns each must have.
FOREIGN_TABLES: dict[str, tuple[str, ...]] = {
    "passages": ("passage_id", "paper_id", "text"),
    "queries": ("query_id", "text", "set", "exclude"),
    "qrels": ("query_id", "passage_id", "grade"),
    "papers": ("paper_id", "content_hash"),
}
#: The sets a foreign corpus's queries come from (its ``set`` column).
FOREIGN_QUERY_SETS = ("masked", "described")
#: Prefix of a foreign passage's or query's id beside this corpus's (none starts with it).
FOREIGN_PREFIX = "foreign:"
FIX_HINT = (
    "build it with `python -m pipelines.evaluate.build_foreign`, or take it out of "
    "evaluate.foreign_corpora in params.yaml"
)


@dataclass(frozen=True)
class ForeignCorpus:
    """A foreign corpus read and checked: passages by row, queries with their judgments by
    passage row, and the content hashes of its papers."""

    folder: Path
    passage_ids: list[str]
    texts: list[str]
    query_ids: list[str]
    query_texts: list[str]
    qrels: list[dict[int, int]]
    excluded: list[frozenset[int]]
    content_hashes: frozenset[str]


def folder_files(folder: Path) -> list[Path]:
    """The table files of a foreign corpus folder (what the evaluation data hash covers)."""
    return [folder / f"{name}.parquet" for name in FOREIGN_TABLES]


def read_foreign_corpus(folder: Path) -> ForeignCorpus:
    """Read and check the folder's tables; a missing, unreadable or inconsistent one is a
    ``ValueError`` naming the file and the fix."""
    if not folder.is_dir():
        raise ValueError(f"evaluate.foreign_corpora: {folder} is not a folder; {FIX_HINT}")
    tables: dict[str, pd.DataFrame] = {}
    for name, path in zip(FOREIGN_TABLES, folder_files(folder), strict=True):
        try:
            tables[name] = io.read_parquet(path)
        except (OSError, ValueError) as error:  # missing, or not Parquet (Arrow's errors)
            raise ValueError(f"foreign corpus {path}: unreadable ({error}); {FIX_HINT}") from error
    return foreign_corpus_from_tables(folder, tables)


def foreign_corpus_from_tables(folder: Path, tables: Mapping[str, pd.DataFrame]) -> ForeignCorpus:
    """The checks and the indexing of :func:`read_foreign_corpus`, on tables in memory."""

    def fail(table: str, problem: str) -> ValueError:
        return ValueError(f"foreign corpus {folder / table}.parquet: {problem}; {FIX_HINT}")

    for name, columns in FOREIGN_TABLES.items():
        missing = [column for column in columns if column not in tables[name].columns]
        if missing:
            raise fail(name, f"missing column(s) {missing}")
    passages, queries, qrels = tables["passages"], tables["queries"], tables["qrels"]
    passage_ids = passages["passage_id"].astype(str).tolist()
    query_ids = queries["query_id"].astype(str).tolist()
    for name, ids in (("passages", passage_ids), ("queries", query_ids)):
        if len(set(ids)) != len(ids):
            raise fail(name, "duplicate ids")
    unknown_sets = sorted(set(queries["set"].astype(str)) - set(FOREIGN_QUERY_SETS))
    if unknown_sets:
        raise fail("queries", f"unknown set(s) {unknown_sets}, expected {FOREIGN_QUERY_SETS}")
    row_of = {passage_id: row for row, passage_id in enumerate(passage_ids)}
    query_row = {query_id: row for row, query_id in enumerate(query_ids)}
    judged: list[dict[int, int]] = [{} for _ in query_ids]
    for query_id, passage_id, grade in zip(
        qrels["query_id"].astype(str),
        qrels["passage_id"].astype(str),
        qrels["grade"],
        strict=True,
    ):
        if query_id not in query_row or passage_id not in row_of:
            raise fail("qrels", f"judges ({query_id!r}, {passage_id!r}), not in its tables")
        try:
            judged[query_row[query_id]][row_of[passage_id]] = int(grade)
        except (TypeError, ValueError):
            raise fail("qrels", f"grade {grade!r} is no whole number") from None
    if not any(grade >= 1 for grades in judged for grade in grades.values()):
        raise fail("qrels", "no query has a relevant passage")
    excluded = [
        frozenset(row_of[str(passage)] for passage in ids if str(passage) in row_of)
        for ids in queries["exclude"].map(lambda value: () if value is None else value)
    ]
    return ForeignCorpus(
        folder=folder,
        passage_ids=passage_ids,
        texts=passages["text"].astype(str).tolist(),
        query_ids=query_ids,
        query_texts=queries["text"].astype(str).tolist(),
        qrels=judged,
        excluded=excluded,
        content_hashes=frozenset(tables["papers"]["content_hash"].astype(str)),
    )


def kept_passages(
    passage_ids: list[str], needed: set[int], max_passages: int, salt: str = "foreign"
) -> list[int]:
    """The rows a foreign corpus keeps: every ``needed`` row (a judged passage), then the
    others in a stable hash order up to ``max_passages`` in all; in row order."""
    others = sorted(
        (row for row in range(len(passage_ids)) if row not in needed),
        key=lambda row: io.sha256_hex(f"{salt}:{passage_ids[row]}".encode()),
    )
    room = max(0, max_passages - len(needed))
    return sorted([*needed, *others[:room]])
