"""A real browser reads the Data Docs from disk with the network cut off.

Headless Chromium (Debian's ``chromium`` package) opens the built ``index.html`` and one
of GX's validation pages through ``file://``; the assertions are on the text the browser
rendered (``--dump-dom`` serialises the DOM after scripts ran), and a screenshot of the
index is saved under the test's temporary folder. ``--host-resolver-rules`` makes every
host name unresolvable, so the pages are proven readable offline even on a machine
that has a network.
"""

from __future__ import annotations

import re
import struct
from html.parser import HTMLParser
from pathlib import Path

import pytest
from browser import render
from quality_tables import REPORT_PARAMS, broken_tables, valid_tables

from pipelines.common.paths import Paths
from pipelines.validate.report import QualityReportResult, build_report


class _VisibleText(HTMLParser):
    """Text a reader sees: everything outside <head>, <style> and <script>."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden_depth = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("head", "style", "script"):
            self.hidden_depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("head", "style", "script"):
            self.hidden_depth -= 1

    def handle_data(self, data: str) -> None:
        if self.hidden_depth == 0:
            self.parts.append(data)


def visible_text(dom: str) -> str:
    parser = _VisibleText()
    parser.feed(dom)
    return " ".join(" ".join(parser.parts).split())


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", header[16:24])
    return width, height


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> QualityReportResult:
    """chunks and eval_set healthy, pairs broken: the page must tell a passed and a failed
    suite apart."""
    tables = valid_tables()
    tables["pairs"] = broken_tables()["pairs"]
    return build_report(tables, Paths(tmp_path_factory.mktemp("root")), REPORT_PARAMS)


def test_index_renders_suites_and_counts_offline(
    report: QualityReportResult, tmp_path: Path
) -> None:
    screenshot = tmp_path / "report.png"
    text = visible_text(render(report.index_html.as_uri(), tmp_path / "profile", screenshot))

    chunks, pairs = report.suites["chunks"], report.suites["pairs"]
    eval_set = report.suites["eval_set"]
    assert chunks.success and eval_set.success and not pairs.success
    assert "mathembed data quality" in text
    assert "2 of 3 suites passed." in text
    # The eval set's shape, under the verdict.
    assert (
        "Evaluation set: 4 queries over 18 passages; relevant passages per query: median 1.5, "
        "max 2 (11.11% of the corpus)"
    ) in text
    assert "relevant passages in seen papers 5, in unseen papers 1." in text
    assert f"eval_set passed {eval_set.successful} of {eval_set.evaluated}" in text
    # The summary table, row by row: suite, status, passed count.
    assert f"chunks passed {chunks.successful} of {chunks.evaluated}" in text
    assert f"pairs FAILED {pairs.successful} of {pairs.evaluated}" in text
    assert f"Suite pairs: FAILED, {pairs.successful} of {pairs.evaluated} expectations passed" in (
        text
    )
    for failure in pairs.unexpected_failures:
        assert failure in text
    # An observed value in the expectation table: the kind mix collapsed to one kind.
    assert re.search(r"expect_column_max_to_be_between\(kind_share\).*?<= 0\.7 1\b", text)

    assert screenshot.is_file()
    assert png_size(screenshot) == (1280, 2000)
    # A blank or unstyled-error page compresses to a few KB; the report is text-dense.
    assert screenshot.stat().st_size > 30_000


def test_gx_validation_page_renders_offline(report: QualityReportResult, tmp_path: Path) -> None:
    pages = sorted((report.index_html.parent / "validations").rglob("*.html"))
    pairs_page = next(page for page in pages if "pairs" in page.parts)
    text = visible_text(render(pairs_page.as_uri(), tmp_path / "profile"))

    pairs = report.suites["pairs"]
    assert "Expectation Validation Result" in text
    assert f"Evaluated Expectations {pairs.evaluated}" in text
    assert f"Successful Expectations {pairs.successful}" in text
    assert f"Unsuccessful Expectations {pairs.evaluated - pairs.successful}" in text
    assert "Expectation Suite: pairs" in text
    assert "Status: Failed" in text


def test_expected_failures_show_their_reason_and_unexpected_ones_stand_out(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """Issue 30: one category and one book's authors (the demo corpus's facts) explain the
    category failures; passages cut short are no fact of the corpus and stand out."""
    tables = valid_tables()
    tables["papers"] = tables["papers"].assign(
        primary_category="math.AG", authors=[["The Stacks project authors"]] * 6
    )
    tables["chunks"] = tables["chunks"].assign(text=tables["chunks"]["text"].str.slice(0, 150))
    built = build_report(tables, Paths(tmp_path_factory.mktemp("book")), REPORT_PARAMS)
    text = visible_text(render(built.index_html.as_uri(), tmp_path / "profile"))

    unexpected = len(built.record["failed_unexpectedly"])
    assert unexpected >= 2  # the median and mean passage length
    assert (
        f"2 expectations failed as expected for this corpus (reasons below); {unexpected} "
        "failed unexpectedly."
    ) in text
    reason = (
        "Expected for this corpus: one category: all 6 papers are math.AG, so every passage "
        "is in it (the suite expects a harvest of several categories)"
    )
    # Each expected row carries its reason, right after its own expectation and notes.
    assert re.search(
        r"expect_column_unique_value_count_to_be_between\(primary_category\).{0,300}"
        + re.escape(reason),
        text,
    )
    assert re.search(
        r"expect_column_max_to_be_between\(category_share\).{0,300}" + re.escape(reason), text
    )
    # The short passages: marked unexpected on their row and listed as such in the summary.
    assert re.search(
        r"expect_column_median_to_be_between\(text_chars\).{0,300}"
        r"Unexpected: no known reason of this corpus",
        text,
    )
    assert "unexpected: expect_column_median_to_be_between(text_chars): observed 150" in text
    assert "chunks FAILED" in text
