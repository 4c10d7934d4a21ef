"""Issue 23, finding 1 (the graph stage): one paper whose per-paper work raises or runs too
long stopped the whole graph. Now each paper's extraction and mention scan run in a worker
process stopped past ``graph.paper_timeout_seconds``; a paper that fails is quarantined
with its reason, the graph is built from the others, and a later run tries it again.

Issue 29, finding 10: nothing bounded the sum of those budgets, and every quarantined paper
was retried every night. Now the per-paper work stops starting papers once it has taken
``graph.stage_budget_seconds`` (the rest are deferred to the next run, counted, not
quarantined), and a paper that failed is retried 1, 2, 4, ... nights later, at most
``graph.max_paper_retries`` times, then only once its budget grows (or the code, the params
or the paper change).

The papers are :func:`consistent_tables`' (three), their statement made a definition of
the Durfee square; the failing one is a passage whose text is null (the rules extractor
raises on it), and "too long" is a paper made slow on purpose: one of its passages never
finishes reaching a worker (:class:`SlowText`), so its work runs until the paper's budget
stops it. A budget no paper can meet (a microsecond) is not enough alone: a result already
back when the stage looks is kept, however late
(:func:`~pipelines.common.isolation.run_isolated`), and a loaded machine may look late:
a fast paper's extraction may go through and be cached.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from datetime import date, timedelta
from pathlib import Path
from typing import Any, NoReturn

import pandas as pd
import pytest
from test_validate_faults import consistent_tables

from pipelines.common.config import GraphParams
from pipelines.common.io import quarantine_record_path, read_json
from pipelines.common.paths import Paths
from pipelines.common.tables import TABLES, write_table
from pipelines.graph import stage
from pipelines.graph.build import GraphReport, build_graph
from pipelines.graph.extractor import Chunk, PaperDocument
from pipelines.graph.retries import WORK_FAILED
from pipelines.graph.rules import RulesExtractor
from pipelines.graph.stage import documents_from_tables, run_graph

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


# -- papers made slow on purpose --------------------------------------------------------


def spin_forever(text: str) -> NoReturn:
    """In a worker, unpickling a :class:`SlowText`: never returns."""
    while True:
        pass


class SlowText(str):
    """A passage whose unpickling spins: the work of its paper in a worker never ends."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (spin_forever, (str(self),))


def with_slow_papers(monkeypatch: pytest.MonkeyPatch, slow: Collection[str]) -> None:
    """The stage reads the first passage of each paper in ``slow`` as a :class:`SlowText`."""
    real = stage.documents_from_tables

    def slowed(*tables: pd.DataFrame) -> list[PaperDocument]:
        documents = real(*tables)
        for index, document in enumerate(documents):
            if document.paper_id in slow:
                first, *rest = document.chunks
                chunks = (Chunk(first.chunk_id, SlowText(first.text)), *rest)
                documents[index] = dataclasses.replace(document, chunks=chunks)
        return documents

    monkeypatch.setattr(stage, "documents_from_tables", slowed)


def test_papers_out_of_time_are_quarantined_then_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = processed(tmp_path)
    papers = sorted(consistent_tables()["papers"]["paper_id"])
    no_time = dataclasses.replace(GraphParams(), paper_timeout_seconds=NO_TIME)

    with monkeypatch.context() as patch:  # every paper slow: none can come back in time
        with_slow_papers(patch, papers)
        starved = run_graph(no_time, paths, workers=1)
    assert sorted(starved.quarantined) == papers and starved.concepts == 0
    record = read_json(quarantine_record_path(paths.quarantine, "graph", papers[0]))
    assert "graph.paper_timeout_seconds" in record["reason"]
    assert record["details"][WORK_FAILED] is True

    # The papers as they are, with the usual budget: nothing of the failures was cached.
    again = run_graph(GraphParams(), paths, workers=1)
    assert again.quarantined == {} and again.concepts > 0
    assert again.cache_use["extraction_computed"] == len(papers)
    assert not any(
        quarantine_record_path(paths.quarantine, "graph", paper).exists() for paper in papers
    )


# -- a paper made slow on purpose (issue 29, finding 10) -------------------------------

FAST_FIRST, SLOW, FAST_LAST = sorted(consistent_tables()["papers"]["paper_id"])
PAPER_BUDGET = 2.0  # seconds: the fast papers take milliseconds; the slow one, forever
NIGHT = date(2024, 3, 1)


def counts_add_up(report: GraphReport) -> bool:
    return report.papers == report.papers_kept + len(report.quarantined) + len(report.deferred)


def papers_in_graph(paths: Paths) -> set[str]:
    mentions = pd.read_parquet(TABLES["mentions"].path(paths))
    concepts = pd.read_parquet(TABLES["concepts"].path(paths))
    return set(mentions["paper_id"]) | {paper for papers in concepts["papers"] for paper in papers}


def test_past_the_stage_budget_papers_are_deferred_then_done_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = processed(tmp_path)
    with_slow_papers(monkeypatch, {SLOW})
    # The slow paper runs out of its own budget after the stage's: nothing starts after it.
    params = dataclasses.replace(
        GraphParams(), paper_timeout_seconds=PAPER_BUDGET, stage_budget_seconds=PAPER_BUDGET / 2
    )

    first = run_graph(params, paths, workers=1, today=NIGHT)
    assert counts_add_up(first) and first.papers == 3
    assert list(first.quarantined) == [SLOW]
    assert "graph.paper_timeout_seconds" in first.quarantined[SLOW]
    # The last paper was not started; the first was extracted but not scanned.
    assert sorted(first.deferred) == [FAST_FIRST, FAST_LAST]
    assert "graph.stage_budget_seconds" in first.deferred[FAST_LAST]
    assert "extraction" in first.deferred[FAST_LAST] and "scan" in first.deferred[FAST_FIRST]
    assert first.papers_kept == 0
    # Deferred papers are not quarantined; what was processed is in the graph, nothing else.
    assert not quarantine_record_path(paths.quarantine, "graph", FAST_LAST).exists()
    assert not quarantine_record_path(paths.quarantine, "graph", FAST_FIRST).exists()
    assert papers_in_graph(paths) <= {FAST_FIRST}

    again = run_graph(params, paths, workers=1, today=NIGHT)
    assert counts_add_up(again)
    assert (again.papers_kept, list(again.quarantined), again.deferred) == (2, [SLOW], {})
    assert "tried again on 2024-03-02" in again.quarantined[SLOW]  # not tonight: held
    # The deferred papers' work, and only theirs: the first one's extraction was kept.
    assert again.cache_use["extraction_computed"] == 1
    assert again.cache_use["extraction_reused"] == 1
    assert again.cache_use["scan_computed"] == 2
    documents = {document.paper_id: document for document in corpus_documents()}
    scratch, _report = build_graph(
        [documents[FAST_FIRST], documents[FAST_LAST]],
        RulesExtractor(),
        params,
        disable_progress=True,
    )
    for table in ("concepts", "edges", "mentions"):
        written = pd.read_parquet(TABLES[table].path(paths))
        pd.testing.assert_frame_equal(written, getattr(scratch, table), check_dtype=False)


def test_a_slow_paper_is_retried_with_backoff_then_held_until_its_budget_grows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = processed(tmp_path)
    with_slow_papers(monkeypatch, {SLOW})
    params = dataclasses.replace(
        GraphParams(), paper_timeout_seconds=PAPER_BUDGET / 2, max_paper_retries=1
    )
    record_path = quarantine_record_path(paths.quarantine, "graph", SLOW)

    def night(offset: int, run_params: GraphParams = params) -> GraphReport:
        report = run_graph(run_params, paths, workers=1, today=NIGHT + timedelta(days=offset))
        assert counts_add_up(report) and report.deferred == {}
        assert (report.papers_kept, list(report.quarantined)) == (2, [SLOW])
        return report

    def tried(report: GraphReport) -> bool:
        return report.cache_use["extraction_computed"] == 1  # the two others are cached

    assert night(0).cache_use["extraction_computed"] == 3
    assert read_json(record_path)["details"]["failures"] == 1
    assert not tried(night(0))  # the same night: not again
    assert tried(night(1))  # one night later: its one retry, in vain
    assert read_json(record_path)["details"]["failures"] == 2
    held = night(30)
    assert not tried(held)
    assert "retries used up" in held.quarantined[SLOW]
    assert "retries used up" in read_json(record_path)["reason"]

    larger = dataclasses.replace(params, paper_timeout_seconds=PAPER_BUDGET)
    retried = night(30, larger)
    assert tried(retried)  # a larger budget: tried again, with a fresh count
    assert read_json(record_path)["details"]["failures"] == 1
    assert "tried again on 2024-04-01" in retried.quarantined[SLOW]
