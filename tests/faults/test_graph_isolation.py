"""Issue 23, finding 1 (the graph stage): one paper whose per-paper work raises or runs too
long stopped the whole graph. Now each paper's extraction and mention scan run in a worker
process stopped past ``graph.paper_timeout_seconds``; a paper that fails is quarantined
with its reason, the graph is built from the others, and the next run tries it again.

The papers are :func:`consistent_tables`' (three), their statement made a definition of
the Durfee square; the failing one is a passage whose text is null (the rules extractor
raises on it), and "too long" is a budget no paper can meet (a microsecond), set in code.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest
from test_validate_faults import consistent_tables

from pipelines.common.config import GraphParams
from pipelines.common.io import quarantine_record_path, read_json
from pipelines.common.paths import Paths
from pipelines.common.tables import TABLES, write_table
from pipelines.graph.build import build_graph
from pipelines.graph.extractor import Chunk, PaperDocument
from pipelines.graph.rules import RulesExtractor
from pipelines.graph.stage import WORK_FAILED, documents_from_tables, run_graph

pytestmark = pytest.mark.usefixtures("bounded_in_time")

NO_TIME = 1e-6  # seconds: less than any paper takes


def corpus() -> dict[str, pd.DataFrame]:
    tables = consistent_tables()
    statements = tables["statements"]
    statements["kind"] = "definition"
    statements["text"] = "The Durfee square of a partition is the largest square in its diagram."
    statements["terms"] = [["Durfee square"]]
    return tables


def corpus_documents() -> list[PaperDocument]:
    tables = corpus()
    return documents_from_tables(tables["papers"], tables["chunks"], tables["statements"])


def test_a_paper_whose_extraction_raises_is_quarantined_and_the_graph_built() -> None:
    documents = corpus_documents()
    broken = PaperDocument("2401.09999", "A paper", "", (), (Chunk("2401.09999v1#c0000", None),))  # type: ignore[arg-type]
    alone, _report = build_graph(documents, RulesExtractor(), GraphParams(), disable_progress=True)
    graph, report = build_graph(
        [*documents, broken],
        RulesExtractor(),
        GraphParams(),
        paper_timeout_seconds=GraphParams().paper_timeout_seconds,
        disable_progress=True,
    )
    assert list(report.quarantined) == ["2401.09999"]
    assert "graph extraction raised AttributeError" in report.quarantined["2401.09999"]
    assert report.papers_skipped == 1
    assert "durfee square" in graph.concepts["name"].tolist()
    assert graph.concepts["name"].tolist() == alone.concepts["name"].tolist()


def processed(root: Path) -> Paths:
    paths = Paths(root)
    tables = corpus()
    for name in ("papers", "chunks", "statements"):
        write_table(TABLES[name].path(paths), tables[name], TABLES[name].schema)
    return paths


def test_papers_out_of_time_are_quarantined_then_tried_again(tmp_path: Path) -> None:
    paths = processed(tmp_path)
    papers = sorted(consistent_tables()["papers"]["paper_id"])
    no_time = dataclasses.replace(GraphParams(), paper_timeout_seconds=NO_TIME)

    starved = run_graph(no_time, paths, workers=1)
    assert sorted(starved.quarantined) == papers and starved.concepts == 0
    record = read_json(quarantine_record_path(paths.quarantine, "graph", papers[0]))
    assert "graph.paper_timeout_seconds" in record["reason"]
    assert record["details"][WORK_FAILED] is True

    again = run_graph(GraphParams(), paths, workers=1)  # nothing of the failures was cached
    assert again.quarantined == {} and again.concepts > 0
    assert again.cache_use["extraction_computed"] == len(papers)
    assert not any(
        quarantine_record_path(paths.quarantine, "graph", paper).exists() for paper in papers
    )
