"""A harvest says how far it is in the logs (issue 13, item 6)."""

from __future__ import annotations

import itertools
import json
import logging
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipelines.common.config import IngestParams
from pipelines.common.paths import Paths
from pipelines.ingest.arxiv.client import ArxivClient
from pipelines.ingest.progress import (
    HarvestProgress,
    harvest_target,
    progress_line,
    time_left,
)
from pipelines.ingest.stage import run_ingest
from pipelines.mirror.corpora.synthetic import generate_mirror
from pipelines.mirror.server import MirrorServer

N_PAPERS = 20  # the generator's minimum


def test_progress_line_reads_as_the_issue_asks() -> None:
    # 120 papers in 4 min 20 s: 380 more at that pace take about 13 min 43 s.
    assert progress_line(120, 500, 3, elapsed_seconds=260.0) == (
        "harvested 120/500 papers, 3 quarantined, ~14 min left"
    )
    assert time_left(0.0, 0, 500) == ""  # no pace yet
    assert time_left(10.0, 10, 12) == "<1 min left"
    assert time_left(60.0, 1, 100) == "~1 h 39 min left"
    assert progress_line(0, 10, 0, 5.0) == "harvested 0/10 papers, 0 quarantined"


def test_the_cap_bounds_the_target_and_skipped_papers_do_not_count() -> None:
    assert harvest_target(listed_total=500, skipped=0, max_papers=1000) == 500
    assert harvest_target(listed_total=500, skipped=0, max_papers=100) == 100
    assert harvest_target(listed_total=500, skipped=40, max_papers=100) == 140


def test_a_line_at_most_every_interval_and_none_at_the_end() -> None:
    moments = iter([0.0, 10.0, 31.0, 40.0, 62.0, 95.0])
    progress = HarvestProgress(every_seconds=30.0, clock=lambda: next(moments))
    said = [progress.update(done, 10, 0) for done in (1, 2, 3, 4, 10)]
    assert said == [
        None,  # 10 s: too soon
        "harvested 2/10 papers, 0 quarantined, ~3 min left",  # 31 s: 8 more at 15.5 s each
        None,  # 40 s: 9 s after the last line
        "harvested 4/10 papers, 0 quarantined, ~2 min left",  # 62 s
        None,  # done: the end line says the rest
    ]


def test_a_slow_harvest_logs_its_progress(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    mirror = tmp_path / "mirror"
    generate_mirror(mirror, N_PAPERS, seed=7)
    entries = (mirror / "entries.jsonl").read_text(encoding="utf-8").splitlines()
    categories = tuple(sorted({cat for line in entries for cat in json.loads(line)["categories"]}))
    params = IngestParams(
        source="sample",
        categories=categories,
        from_date="2000-01-01",
        page_size=7,
        delay_seconds=0.0,
        timeout_seconds=5.0,
        max_retries=0,
        max_archive_bytes=5_000_000,
    )
    # Each reading of the clock is 10 s later: a harvest as slow as arXiv's 3 s per request.
    ticks = itertools.count(0.0, 10.0)
    with (
        MirrorServer(mirror) as server,
        ArxivClient.from_params(params, base_url=server.base_url) as client,
        caplog.at_level(logging.INFO, logger="pipelines.ingest"),
    ):
        report = run_ingest(
            params,
            Paths(tmp_path / "root"),
            client=client,
            now=datetime(2024, 6, 1, tzinfo=UTC),
            progress=False,
            clock=lambda: next(ticks),
        )
    listed = report.counts["listed"]
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("harvested ")]
    assert lines, caplog.text
    assert all(f"/{listed} papers" in line and "min left" in line for line in lines), lines
    assert len(lines) < listed  # at intervals, not one per paper
    assert any(r.getMessage().startswith(f"listing: {listed} papers") for r in caplog.records)
