"""Expected failures explained (issue 30): which failed data-quality expectations a fact of
the corpus explains, with which reason, and that every other failure stands out.

The decision is pure (:mod:`pipelines.validate.expected`); the last tests run it through
the real report on a corpus of one category whose passages are also too short: the
category failures carry their reason, the short passages are unexpected, in the result,
in ``metrics/data_quality.json``'s record and in ``mathembed report``'s lines.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from quality_tables import REPORT_PARAMS, Tables, valid_tables

from pipelines.common.paths import Paths
from pipelines.validate.expected import CorpusFacts, corpus_facts, expected_failure
from pipelines.validate.report import QualityReportResult, build_report
from pipelines.validate.summaries import quality_lines, read_quality_record

UNIQUE_COUNT = "expect_column_unique_value_count_to_be_between"
MAX = "expect_column_max_to_be_between"
MIN = "expect_column_min_to_be_between"
MEDIAN = "expect_column_median_to_be_between"

#: The demo corpus as measured: 16 chapters of the Stacks Project, all math.AG.
BOOK = CorpusFacts(
    papers=16,
    categories=("math.AG",),
    shared_authors=("The Stacks project authors",),
    statements=2504,
    named_statements=26,
    kind_shares={"citing": 0.457, "name": 0.187, "statement": 0.006},
)
#: A harvest of arXiv papers: several categories, authors of their own, named results.
HARVEST = CorpusFacts(
    papers=500,
    categories=("math.AG", "math.CO", "math.NT"),
    shared_authors=(),
    statements=9000,
    named_statements=900,
    kind_shares={"citing": 0.5, "name": 0.3, "statement": 0.004},
)


# -- the pure decision ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("suite", "expectation", "kwargs", "observed", "starts"),
    [
        ("chunks", UNIQUE_COUNT, {"column": "primary_category", "min_value": 2}, 1, "one category"),
        ("chunks", MAX, {"column": "category_share", "max_value": 0.85}, 1.0, "one category"),
        (
            "chunks",
            MEDIAN,
            {"column": "passages_per_paper", "min_value": 1, "max_value": 200},
            304,
            "book chapters",
        ),
        ("pairs", MIN, {"column": "kind_share", "min_value": 0.01}, 0.006, "results rarely named"),
    ],
)
def test_each_known_reason_explains_its_failure_on_the_book(
    suite: str, expectation: str, kwargs: dict[str, object], observed: float, starts: str
) -> None:
    reason = expected_failure(suite, expectation, kwargs, observed, BOOK)
    assert reason is not None and reason.startswith(starts)
    # ... and not on a harvest, whose facts differ: there the same failure stands out.
    assert expected_failure(suite, expectation, kwargs, observed, HARVEST) is None


def test_reasons_name_the_measured_facts() -> None:
    category = expected_failure(
        "chunks", MAX, {"column": "category_share", "max_value": 0.85}, 1.0, BOOK
    )
    assert category == (
        "one category: all 16 papers are math.AG, so every passage is in it (the suite "
        "expects a harvest of several categories)"
    )
    chapters = expected_failure(
        "chunks", MEDIAN, {"column": "passages_per_paper", "max_value": 200}, 304, BOOK
    )
    assert chapters is not None and "all 16 papers are by The Stacks project authors" in chapters
    named = expected_failure("pairs", MIN, {"column": "kind_share", "min_value": 0.01}, 0.006, BOOK)
    assert named is not None and "names 26 of its 2504 statements (1.0%)" in named


def test_the_other_side_of_a_bound_is_never_expected() -> None:
    """A book explains too many passages per paper, not too few (a shredding chunker)."""
    kwargs = {"column": "passages_per_paper", "min_value": 5, "max_value": 200}
    assert expected_failure("chunks", MEDIAN, kwargs, 2, BOOK) is None


def test_other_expectations_values_and_suites_are_not_expected() -> None:
    short = {"column": "text_chars", "min_value": 300, "max_value": 1500}
    assert expected_failure("chunks", MEDIAN, short, 120, BOOK) is None  # no reason for it
    assert (
        expected_failure("pairs", MAX, {"column": "category_share", "max_value": 0.85}, 1, BOOK)
        is None
    )
    assert expected_failure("chunks", MAX, {"column": "category_share"}, "n/a", BOOK) is None
    within = {"column": "category_share", "max_value": 0.85}
    assert expected_failure("chunks", MAX, within, 0.5, BOOK) is None  # it did not fail


def test_a_rare_kind_other_than_named_statements_stands_out() -> None:
    """The relation mix losing edges or descriptions is what the expectation is for."""
    kwargs = {"column": "kind_share", "min_value": 0.01}
    no_edges = CorpusFacts(**{**BOOK.__dict__, "kind_shares": {"statement": 0.006, "edge": 0.002}})
    assert expected_failure("pairs", MIN, kwargs, 0.002, no_edges) is None
    named_often = CorpusFacts(**{**BOOK.__dict__, "named_statements": 100})  # 4%
    assert expected_failure("pairs", MIN, kwargs, 0.006, named_often) is None


def test_corpus_facts_are_measured_from_the_tables() -> None:
    tables = valid_tables()
    facts = corpus_facts(tables["papers"], tables["chunks"], tables["statements"], tables["pairs"])
    assert facts.papers == 6
    assert facts.categories == ("math.AT", "math.CO", "math.NT")
    assert facts.shared_authors == () and not facts.one_book
    assert (facts.statements, facts.named_statements) == (6, 3)
    assert sum(facts.kind_shares.values()) == pytest.approx(1.0)

    book = one_book_tables()
    facts = corpus_facts(book["papers"], book["chunks"], book["statements"], book["pairs"])
    assert facts.one_category and facts.one_book
    assert facts.shared_authors == ("The Book's Authors",)


def test_a_paper_without_passages_does_not_count() -> None:
    tables = one_book_tables()
    papers = pd.concat(
        [
            tables["papers"],
            pd.DataFrame(
                {"paper_id": ["2402.00001"], "primary_category": ["math.NT"], "authors": [["X"]]}
            ),
        ],
        ignore_index=True,
    )
    facts = corpus_facts(papers, tables["chunks"], tables["statements"], tables["pairs"])
    assert facts.papers == 6 and facts.one_category and facts.one_book


# -- through the real report ------------------------------------------------------------


def one_book_tables() -> Tables:
    """Six papers of one category by the same authors (the expected failures: categories)
    whose passages are all cut to 150 characters (the unexpected one: passage length)."""
    tables = valid_tables()
    tables["papers"] = tables["papers"].assign(
        primary_category="math.CO", authors=[["The Book's Authors"]] * 6
    )
    chunks = tables["chunks"].copy()
    chunks["text"] = chunks["text"].str.slice(0, 150)
    tables["chunks"] = chunks
    return tables


@pytest.fixture(scope="module")
def book_report(tmp_path_factory: pytest.TempPathFactory) -> QualityReportResult:
    return build_report(one_book_tables(), Paths(tmp_path_factory.mktemp("book")), REPORT_PARAMS)


def test_the_report_marks_expected_failures_and_sets_the_others_apart(
    book_report: QualityReportResult,
) -> None:
    chunks = book_report.suites["chunks"]
    assert not chunks.success and not chunks.only_expected_failures
    record = book_report.record
    expected = {item["expectation"]: item for item in record["failed_as_expected"]}
    assert sorted(expected) == [
        "expect_column_max_to_be_between(category_share)",
        "expect_column_unique_value_count_to_be_between(primary_category)",
    ]
    assert all(
        item["reason"].startswith("one category: all 6 papers are math.CO")
        for item in expected.values()
    )
    unexpected = {item["expectation"] for item in record["failed_unexpectedly"]}
    assert "expect_column_median_to_be_between(text_chars)" in unexpected
    assert "expect_column_mean_to_be_between(text_chars)" in unexpected
    assert not unexpected & set(expected)
    assert record["met"] + len(expected) + len(unexpected) == record["evaluated"]
    # The suite summary says the same: unexpected failures first, expected ones with why.
    assert any("text_chars" in item for item in chunks.unexpected_failures)
    assert all(
        "expected for this corpus: one category" in item for item in chunks.expected_failures
    )


def test_the_record_round_trips_and_reads_as_report_lines(
    book_report: QualityReportResult, tmp_path: Path
) -> None:
    path = tmp_path / "data_quality.json"
    path.write_text(json.dumps({"passed": True, "expectations": book_report.record}))
    record = read_quality_record(json.loads(path.read_text()))
    assert record == book_report.record
    lines = quality_lines(record)
    evaluated, met = record["evaluated"], record["met"]
    n_unexpected = len(record["failed_unexpectedly"])
    assert lines[0] == (
        f"data quality: {met} of {evaluated} expectations met; {n_unexpected} FAILED "
        "UNEXPECTEDLY, 2 as expected for this corpus"
    )
    # Unexpected failures come first and in capitals; each expected one says why.
    assert lines[1].startswith("  UNEXPECTED chunks expect_column_")
    assert lines[-1] == (
        "  expected   chunks expect_column_max_to_be_between(category_share): observed 1, "
        "expected <= 0.85. Why: one category: all 6 papers are math.CO, so every passage is "
        "in it (the suite expects a harvest of several categories)"
    )
    assert read_quality_record({"passed": False, "failed_checks": []}) is None


def test_the_front_page_marks_each_expected_row_with_its_reason(
    book_report: QualityReportResult,
) -> None:
    page = book_report.index_html.read_text(encoding="utf-8")
    assert page.count('<tr class="expected">') == 2
    assert page.count("Expected for this corpus: one category: all 6 papers are math.CO") == 2
    unexpected = len(book_report.record["failed_unexpectedly"])
    assert page.count("Unexpected: no known reason of this corpus") == unexpected
    assert (
        f"2 expectations failed as expected for this corpus (reasons below); {unexpected} "
        "failed unexpectedly."
    ) in page
    assert 'class="verdict-failed"' in page  # an unexpected failure wins the verdict
