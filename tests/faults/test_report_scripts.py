"""A paper's passage never runs in the data-quality report (issue 23, finding 3).

Passages are anyone's text. Each hostile passage below tries one way to run script when
the report is opened; every one that runs renames the page (``document.title``), so the
title headless Chromium reports after loading says whether anything ran. Two lines of
defence, each tested alone: the values GX shows are escaped (the passage reads as the
text it is), and the offline rewriter plus the page's Content-Security-Policy keep a page
that GX rendered raw inert all the same.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from browser import render
from quality_tables import REPORT_PARAMS, valid_tables

from pipelines.common.paths import Paths
from pipelines.validate.pages import CONTENT_SECURITY_POLICY, offline_page
from pipelines.validate.report import QualityReportResult, build_report

#: Each passage renames the page if its markup runs: a handler, a URL, an embedded
#: document, a refresh, a plain script.
HOSTILE_PASSAGES = (
    "<img src=x onerror=\"document.title='ran: onerror'\">",
    "<svg onload=\"document.title='ran: svg onload'\"></svg>",
    "<iframe srcdoc=\"<script>parent.document.title='ran: srcdoc'</script>\"></iframe>",
    "<object data=\"data:text/html,<script>parent.document.title='ran: data'</script>\">",
    '<meta http-equiv="refresh" content="0;url=javascript:document.title=\'ran: refresh\'">',
    "<script>document.title='ran: script'</script>",
    "<style>body { display: none }</style>",
)
TITLE = re.compile(r"<title>([^<]*)</title>")


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory: pytest.TempPathFactory) -> QualityReportResult:
    """The report of a corpus whose first passages are hostile, each one twice: the
    uniqueness expectation fails and GX lists them as unexpected values."""
    tables = valid_tables(n_papers=8)
    chunks = tables["chunks"]
    for number, passage in enumerate(HOSTILE_PASSAGES):
        text = f"A passage about {passage} and nothing else."
        chunks.loc[2 * number, "text"] = text
        chunks.loc[2 * number + 1, "text"] = text
    return build_report(tables, Paths(tmp_path_factory.mktemp("root")), REPORT_PARAMS)


def titles(dom: str) -> list[str]:
    return TITLE.findall(dom)


class Tags(HTMLParser):
    """Every start tag of a page with its attributes, as a browser's parser sees them."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def test_hostile_passages_show_as_text_and_run_nothing_in_the_gx_page(
    hostile_report: QualityReportResult, tmp_path: Path, bounded_in_time: None
) -> None:
    site = hostile_report.index_html.parent
    page = next(path for path in (site / "validations").rglob("*.html") if "chunks" in path.parts)
    assert not hostile_report.suites["chunks"].success  # the duplicates are listed
    dom = render(page.as_uri(), tmp_path / "profile")

    assert not any(title.startswith("ran") for title in titles(dom)), titles(dom)
    assert titles(dom)[0] == "Data documentation compiled by Great Expectations"
    # Escaped where GX shows them: each passage is text in the DOM, not an element.
    for passage in HOSTILE_PASSAGES:
        assert passage.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in dom
    assert "<iframe" not in dom and "<object" not in dom and "<svg onload" not in dom
    assert f'content="{CONTENT_SECURITY_POLICY}"' in page.read_text(encoding="utf-8")


def test_the_index_page_runs_nothing_either(
    hostile_report: QualityReportResult, tmp_path: Path, bounded_in_time: None
) -> None:
    dom = render(hostile_report.index_html.as_uri(), tmp_path / "profile")
    assert titles(dom) == ["mathembed data quality"]
    assert CONTENT_SECURITY_POLICY in hostile_report.index_html.read_text(encoding="utf-8")


def test_a_page_with_raw_hostile_markup_is_inert_once_rewritten(
    tmp_path: Path, bounded_in_time: None
) -> None:
    """The rewriter alone: a page as GX rendered it before the values were escaped."""
    raw = (
        "<!doctype html><html><head><title>report</title></head><body><table><tr><td>"
        + "</td></tr><tr><td>".join(HOSTILE_PASSAGES[:5])
        + "<a href=' JaVa&#x09;ScRiPt:document.title=1'>a link</a>"
        + "<form action='javascript:1'><button formaction='javascript:1'>b</button></form>"
        + "</td></tr></table><p id='after'>still here</p></body></html>"
    )
    rewritten = offline_page(raw, "static/images", [])
    tags = Tags(rewritten).tags
    attributes = [(name, value or "") for _, attrs in tags for name, value in attrs.items()]
    assert [name for name, _ in attributes if name.startswith("on")] == []
    assert [value for _, value in attributes if re.search(r"(?i)script:|data:", value)] == []
    assert {"iframe", "object", "script"}.isdisjoint(tag for tag, _ in tags)
    metas = [attrs for tag, attrs in tags if tag == "meta"]
    assert metas == [{"http-equiv": "Content-Security-Policy", "content": CONTENT_SECURITY_POLICY}]
    assert offline_page(rewritten, "static/images", []) == rewritten  # idempotent

    page = tmp_path / "page.html"
    page.write_text(rewritten, encoding="utf-8")
    dom = render(page.as_uri(), tmp_path / "profile")
    assert titles(dom) == ["report"]
    assert "still here" in dom
