"""An error page served with HTTP 200 is neither stored as a paper nor lost (issue 23,
finding 8).

Only a body opening with ``<html`` or ``<!doctype html`` used to be recognised, and then
quarantined for good; a byte-order mark, ``<head>`` first, JSON or plain text was stored
as a LaTeX paper and became searchable passages. Each page here is served over real HTTP
in place of one e-print: the paper is quarantined as retryable, the next night fetches
it again and, the page gone, stores the paper.
"""

from __future__ import annotations

import codecs
import gzip
from datetime import timedelta
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

from pipelines.common import io
from pipelines.common.paths import Paths
from pipelines.ingest.report import IngestReport
from pipelines.ingest.stage import run_ingest

GOOD = "2401.00001v1"
PAPER = "2401.00002v1"  # the one whose e-print request gets an error page
PAGE = b"<!DOCTYPE html><html><head><title>503</title></head><body>Busy</body></html>"


def harvest(eprint: Answer, paths: Paths, night: int) -> IngestReport:
    answers = {
        "/api/query": feed_answer(
            [
                atom_entry(GOOD, updated="2024-01-02T10:00:00Z"),
                atom_entry(PAPER, updated="2024-01-03T10:00:00Z"),
            ]
        ),
        f"/e-print/{GOOD}": tex_eprint(),
        f"/e-print/{PAPER}": eprint,
    }
    with hostile_arxiv(answers) as base_url, client_for(base_url) as client:
        now = NOW + timedelta(days=night)
        return run_ingest(PARAMS, paths, client=client, now=now, progress=False)


def served(body: bytes, content_type: str = "text/html; charset=utf-8") -> Answer:
    return Answer(200, (("Content-Type", content_type),), body)


@pytest.mark.parametrize(
    "page",
    [
        pytest.param(served(PAGE), id="html"),
        pytest.param(served(codecs.BOM_UTF8 + PAGE), id="utf-8-bom-first"),
        pytest.param(served(PAGE.decode().encode("utf-16")), id="utf-16-html"),
        pytest.param(served(b"<head><title>Error</title></head><body>x</body>"), id="head-first"),
        pytest.param(served(b"\n<!-- proxy -->\n" + PAGE), id="comment-first"),
        pytest.param(served(gzip.compress(PAGE), "application/x-eprint"), id="gzipped-html"),
        pytest.param(
            served(b'{"error": "rate limited", "retry_in": 30}', "application/json"), id="json"
        ),
        pytest.param(
            served(b"Service temporarily unavailable. Try again later.\n", "text/plain"),
            id="plain-text",
        ),
    ],
)
def test_an_error_page_is_retried_on_a_later_night(
    bounded_in_time: None, tmp_path: Path, page: Answer
) -> None:
    paths = Paths(tmp_path)
    first = harvest(page, paths, night=0)
    assert GOOD in first.stored and PAPER not in first.stored
    (record,) = io.quarantined(paths.quarantine, "ingest")
    assert record["id"] == PAPER and record["details"]["retryable"] is True
    assert "instead of an e-print" in record["reason"]

    second = harvest(tex_eprint("The real paper"), paths, night=1)
    assert second.stored == [PAPER]
    text = (paths.raw / "2401.00002" / "v1" / "source.tex").read_text(encoding="utf-8")
    assert "The real paper" in text
    assert io.quarantined(paths.quarantine, "ingest") == []


def test_a_paper_quoting_html_is_still_a_paper(bounded_in_time: None, tmp_path: Path) -> None:
    tex = (
        b"\\documentclass{article}\\begin{document}\\begin{verbatim}"
        b"<html><head><title>x</title></head></html>\\end{verbatim}\\end{document}\n"
    )
    report = harvest(served(gzip.compress(tex), "application/x-eprint"), Paths(tmp_path), 0)
    assert PAPER in report.stored
