"""What a suite's validation result says, in words: the rows of the report's front page.

GX hands back nested result objects; :func:`expectation_row` turns each expectation's
result into a short reading of what was expected and what was observed, and
:func:`summarize` a whole suite's into its verdict and failed expectations.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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
    # "<expectation type>(<column>): observed <value>", one per failed expectation.
    failed_expectations: list[str]


@dataclass(frozen=True)
class ExpectationRow:
    success: bool
    expectation: str  # "<type>(<column>)"
    expected: str
    observed: str
    notes: str


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
        failed_expectations=[
            f"{row.expectation}: observed {row.observed}" for row in rows if not row.success
        ],
    )


def expectation_row(result: ExpectationValidationResult) -> ExpectationRow:
    config = result.expectation_config
    if config is None:
        raise RuntimeError(f"GX returned a validation result without its expectation: {result}")
    kwargs = dict(config.kwargs)
    notes = config.notes
    return ExpectationRow(
        success=bool(result.success),
        expectation=f"{config.type}({_target(kwargs)})",
        expected=describe_expected(config.type, kwargs),
        observed=describe_observed(result.result or {}, result.exception_info or {}),
        notes=" ".join(notes) if isinstance(notes, list) else (notes or ""),
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
