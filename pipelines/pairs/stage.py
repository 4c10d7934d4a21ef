"""The ``pairs`` stage's shell: reads ``data/processed`` and ``data/graph``, builds the
training pairs and the evaluation set (:func:`pipelines.pairs.build.build_pairs`, pure; what
each pair kind is and how nothing leaks: :mod:`pipelines.pairs.build`; the queries and
qrels: :mod:`pipelines.pairs.evaluation`) and writes the three tables atomically plus
``metrics/data.json``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from pipelines.common import io
from pipelines.common.config import PairsParams
from pipelines.common.paths import Paths
from pipelines.common.tables import TABLES, write_table
from pipelines.pairs.build import build_pairs

REQUIRED_COLUMNS = {
    "papers": ["paper_id", "authors", "citing_sentences", "citing_labels"],
    "chunks": ["chunk_id", "paper_id", "chunk_index", "text"],
    "statements": [
        "statement_id",
        "paper_id",
        "kind",
        "name",
        "label",
        "text",
        "refs",
        "proof",
        "slogan",
    ],
    "concepts": ["name", "display_name", "description", "aliases", "papers", "statements"],
    "edges": ["source", "target", "relation"],
    "mentions": ["concept", "chunk_id", "paper_id", "evidence"],
}


@dataclass(frozen=True)
class PairsReport:
    pairs: int
    queries: int
    qrels: int
    held_out_concepts: int
    unseen_papers: int
    counts: dict[str, Any]


def _read_inputs(paths: Paths) -> dict[str, pd.DataFrame]:
    return {name: TABLES[name].read(paths, columns) for name, columns in REQUIRED_COLUMNS.items()}


def run_pairs(params: PairsParams, paths: Paths) -> PairsReport:
    """Build pairs and the evaluation set from ``paths`` and write them atomically."""
    result = build_pairs(**_read_inputs(paths), params=params)
    for name, frame in (
        ("pairs", result.pairs),
        ("queries", result.queries),
        ("qrels", result.qrels),
    ):
        write_table(TABLES[name].path(paths), frame, TABLES[name].schema)
    io.write_json(paths.metric_file("data"), result.counts)
    return PairsReport(
        pairs=len(result.pairs),
        queries=len(result.queries),
        qrels=len(result.qrels),
        held_out_concepts=len(result.held_out),
        unseen_papers=len(result.unseen_papers),
        counts=result.counts,
    )
