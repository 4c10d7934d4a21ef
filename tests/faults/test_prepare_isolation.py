"""Issue 23, finding 1: one paper that never finishes cleaning stalled ``prepare``, and every
later night with it (no time budget; a stage exception was no quarantine). Now each paper
is cleaned in a worker process stopped at ``prepare.paper_timeout_seconds``: the paper is
quarantined with the budget it ran out of, the others are prepared, and a later run with a
larger budget cleans it again.

Issue 29, finding 10: those budgets added up without bound (sixty such papers, hours). Now
the cleaning stops starting papers once it has taken ``prepare.stage_budget_seconds``: the
papers left are deferred (counted, not quarantined) and the next run cleans them.

The paper that never finishes is built here without burning CPU: its ``source.tex`` is a
named pipe that gives its bytes once (to the stage's hashing, in this process) and then
blocks whoever opens it (the worker). :func:`hostile_work` covers the CPU-bound case (a
loop), a raise and a crash, through the pool itself.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
from repo import REPO

from pipelines.common.config import load_params
from pipelines.common.io import quarantine_record_path, read_json, safe_name
from pipelines.common.isolation import Deferred, Failure, StageBudget, run_isolated
from pipelines.common.paths import Paths
from pipelines.prepare.stage import STAGE, TIME_BUDGET, PrepareReport, run_prepare

pytestmark = pytest.mark.usefixtures("bounded_in_time")

PARAMS = load_params(REPO / "params.yaml").prepare
BUDGET = 1.0  # seconds: the papers here clean in milliseconds
HUNG_PAPER = "2403.00009"
PAPER = r"""\documentclass{article}
\begin{document}
\section{Partitions}
\begin{theorem}[%s]
Every partition of $n$ into distinct parts has a conjugate; this sentence makes the
passage long enough to keep.
\end{theorem}
\end{document}
"""


def hostile_work(item: str) -> str:
    """In a worker: loop forever, raise, or die, as ``item`` says; else echo it."""
    if item == "loop":
        while True:
            pass
    if item == "raise":
        raise ValueError("a bug in the cleaner")
    if item == "die":
        os._exit(3)
    return item.upper()


def test_a_loop_a_raise_and_a_crash_each_fail_alone_in_order() -> None:
    items = ["a", "loop", "b", "raise", "c", "die", "d"]
    results = list(run_isolated(hostile_work, items, workers=2, timeout_seconds=BUDGET))
    assert results[0::2] == ["A", "B", "C", "D"]
    failures = results[1::2]
    assert all(isinstance(failure, Failure) for failure in failures), failures
    assert [failure.kind for failure in failures] == ["timeout", "raised", "died"]  # type: ignore[union-attr]
    assert "ValueError: a bug in the cleaner" in failures[1].detail  # type: ignore[union-attr]


def write_paper(raw: Path, paper_id: str) -> Path:
    """A version folder with its meta.json; returns where ``source.tex`` goes."""
    folder = raw / safe_name(paper_id) / "v1"
    folder.mkdir(parents=True)
    meta = {
        "paper_id": paper_id,
        "version": 1,
        "title": f"Paper {paper_id}",
        "abstract": "We study partitions; this abstract is long enough to be a passage.",
        "authors": ["A. Author"],
        "categories": ["math.CO"],
        "primary_category": "math.CO",
        "published": "2024-03-01T10:00:00Z",
        "updated": "2024-03-01T10:00:00Z",
        "source_kind": "tex",
    }
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder / "source.tex"


def feed_once(fifo: Path, data: bytes) -> None:
    """Give ``data`` to the first reader of ``fifo``, then leave every later one waiting."""
    try:
        handle = os.open(fifo, os.O_WRONLY)  # waits for the stage's hashing to open it
        try:
            os.write(handle, data)
        finally:
            os.close(handle)
    except OSError:
        pass  # the test ended before anyone read it (see hung_store)


@pytest.fixture
def hung_store(tmp_path: Path) -> Iterator[Paths]:
    """Two ordinary papers and one whose source, once hashed, never finishes reading."""
    paths = Paths(tmp_path)
    for number in (1, 2):
        write_paper(paths.raw, f"2403.0000{number}").write_text(PAPER % f"Lemma {number}")
    fifo = write_paper(paths.raw, HUNG_PAPER)
    os.mkfifo(fifo)
    feeder = threading.Thread(target=feed_once, args=(fifo, (PAPER % "Hung").encode()))
    feeder.start()
    yield paths
    if feeder.is_alive():  # nobody opened the pipe: open it, so the feeder can end
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        feeder.join()
        os.close(reader)


def hung_record(paths: Paths) -> Path:
    return quarantine_record_path(paths.quarantine, STAGE, f"{HUNG_PAPER}v1")


def test_a_paper_that_never_finishes_is_quarantined_and_the_others_are_prepared(
    hung_store: Paths,
) -> None:
    params = dataclasses.replace(PARAMS, paper_timeout_seconds=BUDGET)
    report = run_prepare(params, hung_store, progress=False, workers=1)
    assert (report.prepared, report.quarantined) == (2, 1)
    record = read_json(hung_record(hung_store))
    assert f"params.yaml {TIME_BUDGET}" in record["reason"], record["reason"]
    assert record["details"]["limit"] == TIME_BUDGET
    assert record["details"]["limit_value"] == BUDGET


def test_a_larger_budget_cleans_it_again(hung_store: Paths) -> None:
    params = dataclasses.replace(PARAMS, paper_timeout_seconds=BUDGET)
    run_prepare(params, hung_store, progress=False, workers=1)
    # The same bytes in a file that reads at once: the same content hash as before.
    source = hung_store.raw / safe_name(HUNG_PAPER) / "v1" / "source.tex"
    source.unlink()
    source.write_text(PAPER % "Hung")

    same = run_prepare(params, hung_store, progress=False, workers=1)
    assert (same.prepared, same.quarantined) == (0, 1)  # the same budget: not tried again

    larger = dataclasses.replace(params, paper_timeout_seconds=2 * BUDGET)
    again = run_prepare(larger, hung_store, progress=False, workers=1)
    assert (again.prepared, again.reused, again.quarantined) == (1, 2, 0)
    assert not hung_record(hung_store).exists()


def test_items_past_the_stage_budget_are_deferred_in_order() -> None:
    now = [0.0]  # the budget's clock, moved by hand
    budget = StageBudget(10.0, clock=lambda: now[0])
    items = ["a", "b", "c", "d"]
    results = run_isolated(hostile_work, items, workers=1, timeout_seconds=BUDGET, budget=budget)
    assert next(results) == "A"  # "b" went out when "a" came back
    now[0] = 10.0
    rest = list(results)
    assert rest[0] == "B" and all(isinstance(result, Deferred) for result in rest[1:]), rest
    assert "10 s budget" in rest[1].detail  # type: ignore[union-attr]
    # A budget spent before a call starts nothing there (graph's second phase).
    later = list(
        run_isolated(hostile_work, ["loop"], workers=1, timeout_seconds=None, budget=budget)
    )
    assert [type(result) for result in later] == [Deferred]


def counts_add_up(report: PrepareReport) -> bool:
    parts = report.prepared + report.reused + report.quarantined + report.withdrawn
    return report.papers_in == parts + report.deferred


def test_papers_past_the_stage_budget_are_deferred_then_cleaned_next_run(
    hung_store: Paths,
) -> None:
    last = "2403.00010"  # after the hung paper
    write_paper(hung_store.raw, last).write_text(PAPER % "Lemma 10")
    # The hung paper runs out of its own budget after the stage's: nothing starts after it.
    params = dataclasses.replace(
        PARAMS, paper_timeout_seconds=2 * BUDGET, stage_budget_seconds=BUDGET
    )
    first = run_prepare(params, hung_store, progress=False, workers=1)
    assert (first.prepared, first.quarantined, first.deferred) == (2, 1, 1)
    assert counts_add_up(first) and first.papers_in == 4
    assert hung_record(hung_store).exists()
    assert not quarantine_record_path(hung_store.quarantine, STAGE, f"{last}v1").exists()
    papers = pq.read_table(hung_store.processed / "papers.parquet")
    assert last not in papers["paper_id"].to_pylist()

    source = hung_store.raw / safe_name(HUNG_PAPER) / "v1" / "source.tex"
    source.unlink()  # the same bytes in a file that reads at once (see above)
    source.write_text(PAPER % "Hung")
    again = run_prepare(params, hung_store, progress=False, workers=1)
    assert (again.prepared, again.reused, again.quarantined, again.deferred) == (1, 2, 1, 0)
    assert counts_add_up(again)
    papers = pq.read_table(hung_store.processed / "papers.parquet")
    assert last in papers["paper_id"].to_pylist()
