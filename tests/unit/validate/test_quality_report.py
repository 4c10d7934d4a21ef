"""The Great Expectations report: suites pass on healthy data, say what broke on bad data,
never raise for a failed expectation, rebuild cleanly, and need no network to read.

Tables are small and built by hand (``tests/quality_tables.py``): ``valid_tables``
describes data that meets every expectation of both suites, and each breaking test changes
one thing about it.
"""

from __future__ import annotations

import html
import json
import logging
import re
from pathlib import Path

import pandas as pd
import pytest
from quality_tables import REPORT_PARAMS, Tables, broken_tables, valid_tables
from repo import REPO

from pipelines.common.paths import Paths
from pipelines.validate.pages import (
    OFFLINE_CSS,
    eval_set_line,
    offline_page,
    offline_stylesheet,
)
from pipelines.validate.report import QualityReportResult, build_report
from pipelines.validate.suites import (
    chunk_frame,
    chunks_suite,
    eval_frame,
    eval_set_suite,
    pair_frame,
    pairs_suite,
)
from pipelines.validate.summaries import describe_expected, describe_observed


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def build_logged(tables: Tables, root: Path) -> tuple[QualityReportResult, list[str]]:
    """Build the report; also return GX's warnings/errors (a renderer crash only logs)."""
    handler = _Records()
    logger = logging.getLogger("great_expectations")
    logger.addHandler(handler)
    try:
        result = build_report(tables, Paths(root), REPORT_PARAMS)
    finally:
        logger.removeHandler(handler)
    return result, [record.getMessage() for record in handler.records]


@pytest.fixture(scope="module")
def valid_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[QualityReportResult, Path]:
    root = tmp_path_factory.mktemp("valid")
    result, logged = build_logged(valid_tables(), root)
    assert logged == []
    return result, root


@pytest.fixture(scope="module")
def broken_report(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[QualityReportResult, Path, list[str]]:
    root = tmp_path_factory.mktemp("broken")
    result, logged = build_logged(broken_tables(), root)
    return result, root, logged


def site_files(root: Path, pattern: str) -> list[Path]:
    return sorted(Paths(root).data_quality_reports.rglob(pattern))


# --------------------------------------------------------------------------- healthy data


def test_valid_data_passes_every_expectation(
    valid_report: tuple[QualityReportResult, Path],
) -> None:
    result, root = valid_report
    assert result.success
    expected_counts = {
        "chunks": len(chunks_suite().expectations),
        "pairs": len(pairs_suite().expectations),
        "eval_set": len(eval_set_suite().expectations),
    }
    for name, summary in result.suites.items():
        assert summary.success, (name, summary.unexpected_failures)
        assert summary.evaluated == summary.successful == expected_counts[name]
        assert summary.unexpected_failures == []
    assert set(result.suites) == {"chunks", "pairs", "eval_set"}
    assert result.index_html == root / "reports" / "data_quality" / "index.html"


def test_files_land_under_the_given_root(valid_report: tuple[QualityReportResult, Path]) -> None:
    _, root = valid_report
    site = Paths(root).data_quality_reports
    assert (site / "index.html").is_file()
    assert [path.name for path in site_files(root, "*.html") if "expectations" in path.parts] == [
        "chunks.html",
        "eval_set.html",
        "pairs.html",
    ]
    validation_pages = [path for path in site_files(root, "*.html") if "validations" in path.parts]
    assert sorted(path.parts[-4] for path in validation_pages) == ["chunks", "eval_set", "pairs"]
    context = Paths(root).gx
    for committed in (
        "great_expectations.yml",
        "expectations/chunks.json",
        "expectations/pairs.json",
        "expectations/eval_set.json",
        "checkpoints/chunks.json",
        "checkpoints/pairs.json",
        "checkpoints/eval_set.json",
        "validation_definitions/chunks.json",
        "validation_definitions/pairs.json",
        "validation_definitions/eval_set.json",
        "plugins/custom_data_docs/styles/data_docs_custom_styles.css",
    ):
        assert (context / committed).is_file(), committed
    # GX writes its own .gitignore for the results store.
    assert (context / ".gitignore").read_text().split() == ["uncommitted/"]
    assert len(list((context / "uncommitted" / "validations").rglob("*.json"))) == 3


def test_index_shows_suites_counts_and_observed_values(
    valid_report: tuple[QualityReportResult, Path],
) -> None:
    result, _ = valid_report
    page = result.index_html.read_text(encoding="utf-8")
    assert "3 of 3 suites passed." in page
    for name, summary in result.suites.items():
        counts = f"{summary.successful} of {summary.evaluated}"
        assert re.search(rf'id="suite-{name}">.*?passed</td><td>{counts}</td>', page), name
        assert f"Suite {name}: passed, {summary.successful} of {summary.evaluated}" in page
    # Observed values: the median passage length and the number of categories.
    tables = valid_tables()
    median = f"{chunk_frame(tables['chunks'], tables['papers'])['text_chars'].median():.4g}"

    row = r'<code>{}</code><div class="notes">[^<]*</div></td><td>[^<]*</td><td>{}</td>'
    assert re.search(row.format(r"expect_column_median_to_be_between\(text_chars\)", median), page)
    assert re.search(
        row.format(r"expect_column_unique_value_count_to_be_between\(primary_category\)", 3),
        page,
    )
    # The eval set's shape, in words and in the eval_set suite's observed values.
    assert result.eval_set["queries"] == len(tables["queries"])
    assert html.escape(eval_set_line(result.eval_set), quote=True) in page
    assert "Evaluation set: 4 queries over 18 passages" in page
    assert "median 1.5, max 2 (11.11% of the corpus)" in page
    assert "in seen papers 5, in unseen papers 1." in page
    assert re.search(row.format(r"expect_table_row_count_to_be_between\(\)", 4), page)
    assert re.search(row.format(r"expect_column_median_to_be_between\(relevant\)", 1.5), page)
    # The links to GX's pages resolve.
    for link in re.findall(r'href="((?:validations|expectations)/[^"]+)"', page):
        assert (result.index_html.parent / link).is_file(), link


# --------------------------------------------------------------------------- broken data


def test_broken_data_fails_without_raising_and_names_each_failure(
    broken_report: tuple[QualityReportResult, Path, list[str]],
) -> None:
    result, _, _ = broken_report
    assert not result.success
    chunks, pairs = result.suites["chunks"], result.suites["pairs"]
    assert not chunks.success and not pairs.success
    failed_chunks = {item.split(":")[0] for item in chunks.unexpected_failures}
    assert failed_chunks == {
        "expect_column_values_to_be_unique(chunk_id)",
        "expect_column_value_lengths_to_be_between(text)",
        "expect_column_median_to_be_between(text_chars)",
        "expect_column_mean_to_be_between(text_chars)",
        "expect_column_values_to_not_be_null(primary_category)",
    }
    failed_pairs = {item.split(":")[0] for item in pairs.unexpected_failures}
    assert failed_pairs == {
        "expect_compound_columns_to_be_unique(anchor, positive)",
        "expect_column_unique_value_count_to_be_between(kind)",
        "expect_column_max_to_be_between(kind_share)",
    }
    assert chunks.evaluated == len(chunks_suite().expectations)
    assert chunks.successful == chunks.evaluated - len(failed_chunks)
    assert pairs.successful == pairs.evaluated - len(failed_pairs)
    # The observed value travels with each failure.
    assert "expect_column_max_to_be_between(kind_share): observed 1" in pairs.unexpected_failures
    assert "expect_column_unique_value_count_to_be_between(kind): observed 1" in (
        pairs.unexpected_failures
    )
    assert any(
        item.startswith("expect_column_values_to_not_be_null(primary_category): observed 1 of 19")
        for item in chunks.unexpected_failures
    )
    # The eval set: one query, relevant to every passage, without a defining passage.
    eval_set = result.suites["eval_set"]
    assert not eval_set.success
    assert {item.split(":")[0] for item in eval_set.unexpected_failures} == {
        "expect_table_row_count_to_be_between()",
        "expect_column_median_to_be_between(relevant)",
        "expect_column_max_to_be_between(relevant_share)",
        "expect_column_values_to_be_between(defining)",
    }
    assert "expect_table_row_count_to_be_between(): observed 1" in eval_set.unexpected_failures
    assert result.eval_set["relevant_per_query"]["max"] == 18


def test_broken_report_says_what_failed(
    broken_report: tuple[QualityReportResult, Path, list[str]],
) -> None:
    result, root, logged = broken_report
    page = result.index_html.read_text(encoding="utf-8")
    assert "0 of 3 suites passed." in page
    for name, summary in result.suites.items():
        assert f"Suite {name}: FAILED, {summary.successful} of {summary.evaluated}" in page
        for failure in summary.unexpected_failures:
            assert html.escape(failure, quote=True) in page
    # GX rendered every failed expectation: a renderer crash is only logged, as an error.
    assert not [message for message in logged if "rendering" in message], logged
    for page_path in site_files(root, "*.html"):
        if "validations" in page_path.parts:
            assert "Unsuccessful Expectations" in page_path.read_text(encoding="utf-8")


def test_no_expectation_errors_on_healthy_or_broken_data(
    valid_report: tuple[QualityReportResult, Path],
    broken_report: tuple[QualityReportResult, Path, list[str]],
) -> None:
    # An expectation that raised inside GX (e.g. a pandas warning turned into an error)
    # is reported as "observed error: ...".
    for result in (valid_report[0], broken_report[0]):
        for summary in result.suites.values():
            assert not [item for item in summary.unexpected_failures if "observed error" in item]


def test_empty_tables_give_a_failed_report_not_an_exception(tmp_path: Path) -> None:
    tables = valid_tables()
    empty = {name: frame.iloc[0:0] for name, frame in tables.items()}
    result = build_report(empty, Paths(tmp_path), REPORT_PARAMS)
    assert not result.success
    assert result.index_html.is_file()
    assert "0 of 3 suites passed." in result.index_html.read_text(encoding="utf-8")


def test_missing_table_or_column_is_a_clear_error(tmp_path: Path) -> None:
    tables = valid_tables()
    with pytest.raises(ValueError, match="needs the validated 'pairs' table"):
        build_report(
            {table: tables[table] for table in tables if table != "pairs"}, Paths(tmp_path)
        )
    with pytest.raises(ValueError, match=r"table 'chunks' lacks columns \['section'\]"):
        build_report(
            {**tables, "chunks": tables["chunks"].drop(columns="section")}, Paths(tmp_path)
        )
    assert not Paths(tmp_path).data_quality_reports.exists()


# --------------------------------------------------------------------------- re-runs


def context_files(root: Path) -> dict[str, bytes]:
    context = Paths(root).gx
    return {
        path.relative_to(context).as_posix(): path.read_bytes()
        for path in sorted(context.rglob("*"))
        if path.is_file() and "uncommitted" not in path.parts
    }


def test_rerun_replaces_the_report_and_keeps_the_context_stable(tmp_path: Path) -> None:
    first = build_report(broken_tables(), Paths(tmp_path), REPORT_PARAMS)
    assert not first.success
    config_after_first = context_files(tmp_path)
    second = build_report(valid_tables(), Paths(tmp_path), REPORT_PARAMS)
    assert second.success
    # Only this run's pages and results remain.
    validation_pages = [p for p in site_files(tmp_path, "*.html") if "validations" in p.parts]
    assert len(validation_pages) == 3
    results = list((Paths(tmp_path).gx / "uncommitted" / "validations").rglob("*.json"))
    assert len(results) == 3
    page = second.index_html.read_text(encoding="utf-8")
    assert "3 of 3 suites passed." in page and "FAILED" not in page
    # Suites, checkpoints and config are rewritten byte for byte: ids stay stable.
    assert context_files(tmp_path) == config_after_first


def test_committed_gx_context_matches_the_code(
    valid_report: tuple[QualityReportResult, Path],
) -> None:
    """The repository's gx/ is what build_report writes; a changed suite must be re-synced."""
    _, root = valid_report
    committed = REPO / "gx"
    if not (committed / "great_expectations.yml").is_file():
        pytest.fail(f"{committed} is missing: run the validate stage at the repository root")

    def without_ids(value: object) -> object:
        if isinstance(value, dict):
            return {key: without_ids(item) for key, item in value.items() if key != "id"}
        if isinstance(value, list):
            return [without_ids(item) for item in value]
        return value

    for folder in ("expectations", "checkpoints", "validation_definitions"):
        for built in sorted((Paths(root).gx / folder).glob("*.json")):
            in_repo = committed / folder / built.name
            assert in_repo.is_file(), f"{in_repo} missing: rerun validate and commit gx/"
            assert without_ids(json.loads(in_repo.read_text())) == without_ids(
                json.loads(built.read_text())
            ), f"{in_repo} is stale: rerun validate at the repository root and commit gx/"
    styles = "plugins/custom_data_docs/styles/data_docs_custom_styles.css"
    assert (committed / styles).read_text(encoding="utf-8") == OFFLINE_CSS


# --------------------------------------------------------------------------- offline pages

REMOTE_RESOURCE = re.compile(
    r"<script\b|<link\b[^>]*https?://|\bsrc\s*=\s*[\"']?https?://|url\(\s*[\"']?https?://",
    re.IGNORECASE,
)


def test_built_pages_load_nothing_from_the_network(
    valid_report: tuple[QualityReportResult, Path],
    broken_report: tuple[QualityReportResult, Path, list[str]],
) -> None:
    for root in (valid_report[1], broken_report[1]):
        pages = site_files(root, "*.html") + site_files(root, "*.css")
        assert len(pages) >= 5
        for page in pages:
            found = REMOTE_RESOURCE.findall(page.read_text(encoding="utf-8"))
            assert found == [], (page, found)
        for page in site_files(root, "*.html"):
            if "validations" in page.parts or "expectations" in page.parts:
                text = page.read_text(encoding="utf-8")
                assert "mathembed: offline styles" in text  # GX inlined our stylesheet
                logo = re.search(r'<img[^>]*src="([^"]+logo-long\.png)"', text)
                assert logo and (page.parent / logo[1]).is_file()


GX_LIKE_PAGE = """<html><head>
<link rel="stylesheet" href="https://maxcdn.bootstrapcdn.com/bootstrap/4.3.1/css/bootstrap.min.css"/>
<link rel='stylesheet' type="text/css" href='http://unpkg.com/x.css'>
<link rel="shortcut icon" href="./static/images/favicon.ico" type="image/x-icon"/>
<style>.a { background: url('https://cdn.example/full_logo_dark.png') 0 0; }
.b { background: url(local.png); }</style>
<script src="https://code.jquery.com/jquery-3.7.1.min.js"></script>
<SCRIPT src="https://stackpath.bootstrapcdn.com/bootstrap.min.js" integrity="sha384-x"
 crossorigin="anonymous"></SCRIPT>
<script>
  $('#t').bootstrapTable({data: [{"a": "<span>x</span>"}]});
</script>
</head><body>
<img class="NO-CACHE" src="https://assets.example/logo-long.png?d=1&id=2" alt="GX"/>
<img src="https://assets.example/tracker.gif">
<img src="static/images/favicon.ico">
<a href="https://greatexpectations.io">Great Expectations</a>
</body></html>"""


def test_offline_page_removes_each_kind_of_remote_resource() -> None:
    page = offline_page(GX_LIKE_PAGE, "../static/images", ["logo-long.png", "favicon.ico"])
    assert REMOTE_RESOURCE.findall(page) == []
    assert "<script" not in page.lower()
    assert "bootstrapTable" not in page
    assert '<img class="NO-CACHE" src="../static/images/logo-long.png" alt="GX"/>' in page
    assert "tracker.gif" not in page  # a remote image with no local copy is dropped
    assert '<img src="static/images/favicon.ico">' in page  # local ones stay
    assert 'href="./static/images/favicon.ico"' in page
    assert "url(local.png)" in page and "background: none 0 0" in page
    assert '<a href="https://greatexpectations.io">' in page  # a link, not a download
    assert offline_page(page, "../static/images", ["logo-long.png"]) == page  # idempotent


def test_offline_page_copies_what_it_keeps_as_written() -> None:
    page = (
        "<!DOCTYPE html><!-- built by GX --><p class=x data-a='1'>a &amp; b &#233;</p>"
        '<div style="background: url(//cdn.example/bg.png) no-repeat">x</div>'
        '<link rel="stylesheet" href="//cdn.example/protocol-relative.css">'
    )
    rewritten = offline_page(page, "static/images", [])
    assert rewritten == (
        "<!DOCTYPE html><!-- built by GX --><p class=x data-a='1'>a &amp; b &#233;</p>"
        '<div style="background: none no-repeat">x</div>'
    )
    assert offline_stylesheet("a { b: url('https://x/y.png') }") == "a { b: none }"


# --------------------------------------------------------------------------- pure helpers


def test_derived_columns() -> None:
    tables = valid_tables(n_papers=3, chunks_per_paper=2)
    papers = tables["papers"]
    chunks = pd.concat([tables["chunks"], tables["chunks"].iloc[:1]], ignore_index=True)
    chunks.loc[len(chunks) - 1, ["chunk_id", "paper_id"]] = ["2499.00001v1#c0000", "2499.00001"]
    frame = chunk_frame(chunks, papers)
    assert list(frame["text_chars"]) == [len(text) for text in chunks["text"]]
    assert list(frame["primary_category"].iloc[:6]) == [
        "math.CO", "math.CO", "math.NT", "math.NT", "math.AT", "math.AT",
    ]  # fmt: skip
    assert pd.isna(frame["primary_category"].iloc[6])  # orphan chunk
    assert list(frame["category_share"].iloc[:6]) == pytest.approx([2 / 7] * 6)
    assert pd.isna(frame["category_share"].iloc[6])
    assert list(frame["passages_per_paper"]) == [2, 2, 2, 2, 2, 2, 1]

    pairs = pd.DataFrame(
        {
            "anchor": ["a", "a", "a", "bb"],
            "positive": ["p1", "p2", "p3", "p4"],
            "kind": ["name", "name", "edge", "name"],
            "concept": ["a", "a", "a", "b"],
            "positive_id": ["c1", "c2", "c3", "c4"],
            "split": ["train"] * 4,
        }
    )
    frame = pair_frame(pairs)
    assert list(frame["pairs_per_anchor"]) == [3, 3, 3, 1]
    assert list(frame["kind_share"]) == [0.75, 0.75, 0.25, 0.75]
    assert list(frame["anchor_chars"]) == [1, 1, 1, 2]

    # The eval_set frame is the validate gate's own count (pipelines/validate/eval_shape.py).
    frame = eval_frame(tables["queries"], tables["qrels"], tables["chunks"])
    assert frame["relevant"].tolist() == [2, 1, 2, 1]
    assert frame["defining"].tolist() == [1, 1, 1, 1]
    assert frame["unseen"].tolist() == [0, 0, 0, 1]
    assert frame["seen"].tolist() == [2, 1, 2, 0]
    assert frame["relevant_share"].tolist() == pytest.approx([2 / 6, 1 / 6, 2 / 6, 1 / 6])


def test_describe_expected_and_observed() -> None:
    assert describe_expected("expect_column_values_to_be_unique", {"column": "x"}) == (
        "holds for every row"
    )
    assert (
        describe_expected(
            "expect_column_value_lengths_to_be_between",
            {"column": "t", "min_value": 100, "max_value": 2000, "mostly": 0.95},
        )
        == "between 100 and 2000; for at least 95% of rows"
    )
    assert describe_expected("expect_column_max_to_be_between", {"max_value": 0.85}) == "<= 0.85"
    assert describe_expected("expect_column_min_to_be_between", {"min_value": 1}) == ">= 1"
    assert (
        describe_expected("expect_column_values_to_not_be_in_set", {"value_set": [""]})
        == "not in {''}"
    )
    assert describe_expected("expect_column_values_to_be_in_set", {"value_set": ["a"]}) == (
        "in {'a'}"
    )

    assert describe_observed({"observed_value": 646.10514}, {}) == "646.1"
    assert describe_observed({"observed_value": 8}, {}) == "8"
    assert (
        describe_observed(
            {
                "unexpected_count": 3,
                "element_count": 10,
                "unexpected_percent": 30.0,
                "partial_unexpected_list": ["", "", "x" * 100],
            },
            {},
        )
        == "3 of 10 rows unexpected (30.0%); e.g. '', '" + "x" * 58 + "…"
    )
    assert describe_observed({"unexpected_count": 0, "element_count": 4}, {}) == (
        "0 of 4 rows unexpected"
    )
    assert describe_observed({}, {}) == "no value (empty column?)"
    assert (
        describe_observed(
            {}, {"raised_exception": True, "exception_message": "boom", "exception_traceback": ""}
        )
        == "error: boom"
    )
    nested = {"metric": {"raised_exception": True, "exception_message": "nested boom"}}
    assert describe_observed({}, nested) == "error: nested boom"
    assert describe_observed({"observed_value": 1}, {"raised_exception": False}) == "1"


def test_importing_the_module_does_not_import_great_expectations() -> None:
    import subprocess
    import sys

    code = "import sys, pipelines.validate.report; print('great_expectations' in sys.modules)"
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert completed.stdout.strip() == "False"
