"""What a suite's validation result says, in words: the rows of the report's front page,
and the record of the failures in ``metrics/data_quality.json`` that ``mathembed report``
reads.

GX hands back nested result objects; :func:`expectation_row` turns each expectation's
result into a short reading of what was expected and what was observed, with the reason
when the corpus explains its failure (:mod:`pipelines.validate.expected`), and
:func:`summarize` a whole suite's into its verdict and failed expectations, those the
corpus explains apart from the others. :class:`QualityRecord` is the same for the whole
report, written by :func:`quality_record` and read by :func:`read_quality_record`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

from pipelines.validate.expected import CorpusFacts, expected_failure

if TYPE_CHECKING:
    from great_expectations.core.expectation_validation_result import (
        ExpectationSuiteValidationResult,
        ExpectationValidationResult,
    )


@dataclass(frozen=True)
class SuiteSummary:
    success: bool
    evaluated: int
    successful: int
    # "<expectation type>(<column>): observed <value>", one per failed expectation that no
    # known reason of the corpus explains ...
    unexpected_failures: list[str]
    # ... and "<the same>; expected for this corpus: <reason>" for those one does.
    expected_failures: list[str]

    @property
    def only_expected_failures(self) -> bool:
        """Failed, and every failure explained by the corpus."""
        return not self.success and not self.unexpected_failures


@dataclass(frozen=True)
class ExpectationRow:
    success: bool
    expectation: str  # "<type>(<column>)"
    expected: str
    observed: str
    notes: str
    # Why this corpus fails it (pipelines.validate.expected); "" when it passed or no known
    # reason explains the failure.
    expected_because: str = ""

    @property
    def unexpected(self) -> bool:
        return not self.success and not self.expected_because


@dataclass(frozen=True)
class SuiteSection:
    name: str
    summary: SuiteSummary
    rows: list[ExpectationRow]
    validation_page: str | None  # relative to the site folder
    suite_page: str | None


def summarize(
    validation: ExpectationSuiteValidationResult, rows: Sequence[ExpectationRow]
) -> SuiteSummary:
    """Success, counts and the failed expectations (with observed values) of one suite."""
    statistics = validation.statistics
    return SuiteSummary(
        success=bool(validation.success),
        evaluated=int(statistics["evaluated_expectations"]),
        successful=int(statistics["successful_expectations"]),
        unexpected_failures=[
            f"{row.expectation}: observed {row.observed}" for row in rows if row.unexpected
        ],
        expected_failures=[
            f"{row.expectation}: observed {row.observed}; expected for this corpus: "
            f"{row.expected_because}"
            for row in rows
            if row.expected_because
        ],
    )


def expectation_row(
    result: ExpectationValidationResult, suite: str, facts: CorpusFacts
) -> ExpectationRow:
    """One expectation of ``suite`` in words; a failure carries its reason when ``facts``
    (the corpus's) explain it."""
    config = result.expectation_config
    if config is None:
        raise RuntimeError(f"GX returned a validation result without its expectation: {result}")
    kwargs = dict(config.kwargs)
    notes = config.notes
    success = bool(result.success)
    because = None
    if not success and not _raised_exception(result.exception_info or {}):
        observed = (result.result or {}).get("observed_value")
        because = expected_failure(suite, config.type, kwargs, observed, facts)
    return ExpectationRow(
        success=success,
        expectation=f"{config.type}({_target(kwargs)})",
        expected=describe_expected(config.type, kwargs),
        observed=describe_observed(result.result or {}, result.exception_info or {}),
        notes=" ".join(notes) if isinstance(notes, list) else (notes or ""),
        expected_because=because or "",
    )


def _target(kwargs: Mapping[str, Any]) -> str:
    if "column_list" in kwargs:
        return ", ".join(str(column) for column in kwargs["column_list"])
    return str(kwargs.get("column", ""))


def describe_expected(expectation_type: str, kwargs: Mapping[str, Any]) -> str:
    """A short human reading of an expectation's arguments (bounds, sets, regex, mostly)."""
    parts: list[str] = []
    low, high = kwargs.get("min_value"), kwargs.get("max_value")
    if low is not None and high is not None:
        parts.append(f"between {_number(low)} and {_number(high)}")
    elif low is not None:
        parts.append(f">= {_number(low)}")
    elif high is not None:
        parts.append(f"<= {_number(high)}")
    if "value_set" in kwargs:
        values = ", ".join(repr(value) for value in kwargs["value_set"])
        negated = "not_be_in_set" in expectation_type
        parts.append(f"{'not ' if negated else ''}in {{{values}}}")
    if "regex" in kwargs:
        parts.append(f"matches {kwargs['regex']}")
    mostly = kwargs.get("mostly")
    if mostly is not None and mostly < 1:
        parts.append(f"for at least {mostly:.0%} of rows")
    return "; ".join(parts) or "holds for every row"


def describe_observed(result: Mapping[str, Any], exception_info: Mapping[str, Any]) -> str:
    """The observed value of an aggregate expectation, or the unexpected rows of a map one."""
    raised = _raised_exception(exception_info)
    if raised:
        return f"error: {raised}"
    observed = result.get("observed_value")
    if observed is not None:
        return _value(observed)
    if "unexpected_count" in result:
        count = int(result["unexpected_count"])
        total = int(result.get("element_count") or 0)
        percent = result.get("unexpected_percent")
        text = f"{count} of {total} rows unexpected"
        if percent is not None:
            text += f" ({percent:.1f}%)"
        examples = list(
            dict.fromkeys(
                _short(repr(value)) for value in result.get("partial_unexpected_list") or []
            )
        )
        if count and examples:
            text += "; e.g. " + ", ".join(examples[:3])
        return text
    return "no value (empty column?)"


def _raised_exception(exception_info: Mapping[str, Any]) -> str:
    # GX nests exception info per metric when a validation raised several.
    if "raised_exception" in exception_info:
        if exception_info.get("raised_exception"):
            return str(exception_info.get("exception_message") or "exception")
        return ""
    for value in exception_info.values():
        if isinstance(value, Mapping) and value.get("raised_exception"):
            return str(value.get("exception_message") or "exception")
    return ""


def _number(value: Any) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        return f"{value:.4g}"
    return str(value)


def _value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{key}: {_value(item)}" for key, item in value.items()) + "}"
    return _number(value)


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- the record in metrics/data_quality.json -------------------------------------------

#: The key of :class:`QualityRecord` in ``metrics/data_quality.json``.
RECORD_KEY = "expectations"


class FailedExpectation(TypedDict):
    suite: str
    expectation: str  # "<type>(<column>)"
    expected: str
    observed: str


class ExpectedFailure(FailedExpectation):
    reason: str  # why this corpus fails it (pipelines.validate.expected)


class QualityRecord(TypedDict):
    """The data-quality report in ``metrics/data_quality.json`` under :data:`RECORD_KEY`."""

    evaluated: int
    met: int
    failed_as_expected: list[ExpectedFailure]
    failed_unexpectedly: list[FailedExpectation]


def quality_record(sections: Sequence[SuiteSection]) -> QualityRecord:
    """Counts and failures of every suite, the ones the corpus explains apart."""
    expected: list[ExpectedFailure] = []
    unexpected: list[FailedExpectation] = []
    for section in sections:
        for row in section.rows:
            failure = FailedExpectation(
                suite=section.name,
                expectation=row.expectation,
                expected=row.expected,
                observed=row.observed,
            )
            if row.expected_because:
                expected.append(ExpectedFailure(**failure, reason=row.expected_because))
            elif not row.success:
                unexpected.append(failure)
    return QualityRecord(
        evaluated=sum(section.summary.evaluated for section in sections),
        met=sum(section.summary.successful for section in sections),
        failed_as_expected=expected,
        failed_unexpectedly=unexpected,
    )


def read_quality_record(data_quality: Mapping[str, Any]) -> QualityRecord | None:
    """The record in ``metrics/data_quality.json``'s contents; None when the file has none
    (validate stopped before the report, or the file predates the record)."""
    record = data_quality.get(RECORD_KEY)
    if not isinstance(record, Mapping):
        return None
    return QualityRecord(
        evaluated=int(record.get("evaluated", 0)),
        met=int(record.get("met", 0)),
        failed_as_expected=[
            ExpectedFailure(**_failure_of(item), reason=str(item["reason"]))
            for item in record.get("failed_as_expected", [])
        ],
        failed_unexpectedly=[_failure_of(item) for item in record.get("failed_unexpectedly", [])],
    )


def _failure_of(item: Mapping[str, Any]) -> FailedExpectation:
    return FailedExpectation(
        suite=str(item["suite"]),
        expectation=str(item["expectation"]),
        expected=str(item["expected"]),
        observed=str(item["observed"]),
    )


def quality_lines(record: QualityRecord) -> list[str]:
    """The record for ``mathembed report``: the counts, then each unexpected failure
    (first, in capitals) and each expected one with its reason."""
    expected, unexpected = record["failed_as_expected"], record["failed_unexpectedly"]
    head = f"data quality: {record['met']} of {record['evaluated']} expectations met"
    if unexpected:
        head += f"; {len(unexpected)} FAILED UNEXPECTEDLY"
        head += f", {len(expected)} as expected for this corpus" if expected else ""
    elif expected:
        head += f"; {len(expected)} failed as expected for this corpus, none unexpectedly"
    lines = [head]
    lines.extend(
        f"  UNEXPECTED {item['suite']} {item['expectation']}: observed {item['observed']}, "
        f"expected {item['expected']}"
        for item in unexpected
    )
    lines.extend(
        f"  expected   {item['suite']} {item['expectation']}: observed {item['observed']}, "
        f"expected {item['expected']}. Why: {item['reason']}"
        for item in expected
    )
    return lines
