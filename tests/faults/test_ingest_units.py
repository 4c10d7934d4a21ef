"""One odd upstream answer never aborts a harvest (issue 23, finding 2).

Each listed entry and each e-print is a unit: a redirect loop, a redirect to
``file:///etc/passwd``, a ``Content-Length`` that ``str.isdigit`` accepts and ``int``
refuses, an unreadable id or date, a 300-character id, a date in 2099 — each quarantines
its own entry with the reason, the other papers are stored, and the watermark never
moves to a date after the run's window. A listing that fails the same way is reported by
the command as a network problem, not as a disk one. Everything is served over real HTTP
on 127.0.0.1 by :mod:`hostile_arxiv`.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hostile_arxiv import (
    NOW,
    PARAMS,
    Answer,
    atom_entry,
    client_for,
    feed_answer,
    hostile_arxiv,
    tex_eprint,
)
from typer.testing import CliRunner

from pipelines import cli
from pipelines.common import io
from pipelines.common.paths import Paths
from pipelines.ingest.raw_store import read_watermark
from pipelines.ingest.report import IngestReport
from pipelines.ingest.stage import run_ingest

GOOD = ("2401.00001v1", "2401.00002v1")
GOOD_UPDATED = "2024-01-03T10:00:00Z"  # the later of the good entries
HOSTILE = "2401.00009v1"


def harvest(answers: dict[str, Answer], paths: Paths, now: datetime = NOW) -> IngestReport:
    with hostile_arxiv(answers) as base_url, client_for(base_url) as client:
        return run_ingest(PARAMS, paths, client=client, now=now, progress=False)


def good_answers(*hostile_entries: str) -> dict[str, Answer]:
    """The feed (the good entries first, then ``hostile_entries``) and the good e-prints."""
    entries = [
        atom_entry(GOOD[0], updated="2024-01-02T10:00:00Z"),
        atom_entry(GOOD[1], updated=GOOD_UPDATED),
        *hostile_entries,
    ]
    answers = {"/api/query": feed_answer(entries)}
    answers |= {f"/e-print/{paper}": tex_eprint(paper) for paper in GOOD}
    return answers


def records(paths: Paths) -> dict[str, dict[str, object]]:
    return {str(record["id"]): record for record in io.quarantined(paths.quarantine, "ingest")}


def assert_good_papers_stored(report: IngestReport) -> None:
    assert set(GOOD) <= set(report.stored)


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        pytest.param(
            Answer(302, (("Location", f"/e-print/{HOSTILE}"),)),
            "TooManyRedirects",
            id="redirect-loop",
        ),
        pytest.param(
            Answer(302, (("Location", "file:///etc/passwd"),)),
            "InvalidSchema",
            id="redirect-to-file",
        ),
        pytest.param(
            Answer(
                200,
                (("Content-Length", "236\u00b2"), ("Connection", "close")),
                b"\\documentclass{article}" + b"x" * 213,
            ),
            "Content-Length",
            id="superscript-content-length",
        ),
    ],
)
def test_an_eprint_the_client_cannot_use_quarantines_that_paper_alone(
    bounded_in_time: None, tmp_path: Path, answer: Answer, reason: str
) -> None:
    paths = Paths(tmp_path)
    answers = good_answers(atom_entry(HOSTILE, updated="2024-01-04T10:00:00Z"))
    answers[f"/e-print/{HOSTILE}"] = answer
    report = harvest(answers, paths)
    assert_good_papers_stored(report)
    record = records(paths)[HOSTILE]
    assert reason in str(record["reason"])
    assert record["details"]["retryable"] is True  # type: ignore[index]  # a later night tries again
    assert report.counts["fetch_failed"] == 1
    assert read_watermark(paths.raw) == GOOD_UPDATED  # not past the paper to retry


def test_an_entry_dated_after_the_window_is_refused_and_never_the_watermark(
    bounded_in_time: None, tmp_path: Path
) -> None:
    paths = Paths(tmp_path)
    answers = good_answers(atom_entry(HOSTILE, updated="2099-01-01T00:00:00Z"))
    answers[f"/e-print/{HOSTILE}"] = tex_eprint()
    report = harvest(answers, paths)
    assert_good_papers_stored(report)
    assert HOSTILE not in report.stored
    assert "after this run's window ends" in str(records(paths)[HOSTILE]["reason"])
    assert read_watermark(paths.raw) == GOOD_UPDATED
    # The next night starts where this one stopped instead of failing on its window.
    again = harvest(answers, paths, now=NOW + timedelta(days=1))
    assert again.watermark_after == GOOD_UPDATED and HOSTILE not in again.stored


@pytest.mark.parametrize(
    "hostile_entry",
    [
        pytest.param(atom_entry("9" * 300), id="300-character-unreadable-id"),
        pytest.param(atom_entry("a" * 300 + "/0501001v1"), id="300-character-old-style-id"),
        pytest.param(atom_entry("not-an-id"), id="bad-id"),
        pytest.param(atom_entry(HOSTILE, updated="2024-13-45T99:00:00Z"), id="bad-date"),
    ],
)
def test_an_unusual_entry_never_stops_the_harvest(
    bounded_in_time: None, tmp_path: Path, hostile_entry: str
) -> None:
    paths = Paths(tmp_path)
    answers = good_answers(hostile_entry)
    answers["/e-print/" + "a" * 300 + "/0501001v1"] = tex_eprint()
    report = harvest(answers, paths)
    assert_good_papers_stored(report)
    assert report.counts["listed"] == 3
    assert report.counts["tex"] + report.counts["quarantined"] == 3
    for path in [*paths.raw.rglob("*"), *paths.quarantine.rglob("*")]:
        assert len(path.name) <= 255


def test_a_listing_the_client_cannot_use_is_reported_as_a_network_problem(
    bounded_in_time: None, tmp_path: Path
) -> None:
    answers = {"/api/query": Answer(302, (("Location", "/api/query"),))}
    params_file = tmp_path / "params.yaml"
    with hostile_arxiv(answers) as base_url:
        section = dataclasses.asdict(dataclasses.replace(PARAMS, base_url=base_url))
        section["categories"] = list(PARAMS.categories)
        params_file.write_text(json.dumps({"ingest": section}), encoding="utf-8")
        result = CliRunner().invoke(
            cli.app,
            ["ingest", "--params", str(params_file), "--root", str(tmp_path), "--no-progress"],
        )
    assert result.exit_code == 1
    assert "TooManyRedirects" in result.stderr and "network" in result.stderr
    assert "cannot write or read" not in result.stderr
