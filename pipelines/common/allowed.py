"""What a knob of ``params.yaml`` may hold, declared on its field in
:mod:`pipelines.common.config` (``Annotated[float, Range(0, 1)]``) and checked by pydantic
when a params file is read."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import Discriminator, GetCoreSchemaHandler, Strict, Tag, ValidationInfo
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

#: The validation context under which the rules below apply: reading a params file. A
#: section built in code (``PairsParams(held_out_fraction=1.0)``) is type-checked only, so
#: tests can build the corner cases a person may not ask for in a file.
_CHECK_ALLOWED = "mathembed.check_allowed"
FILE_CONTEXT = {_CHECK_ALLOWED: True}

#: The pydantic error type a broken rule raises (the loader shows it as "allowed: ...").
NOT_ALLOWED = "not_allowed"


class Allowed:
    """What a knob may hold, declared on its field: ``Annotated[int, Range(1)]``.

    Pydantic runs it after the field's type check (``__get_pydantic_core_schema__``).
    """

    def accepts(self, value: Any) -> bool:
        raise NotImplementedError

    def describe(self) -> str:
        """What is allowed, for the error message."""
        raise NotImplementedError

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        return core_schema.with_info_after_validator_function(self._check, handler(source))

    def _check(self, value: Any, info: ValidationInfo) -> Any:
        checking = isinstance(info.context, dict) and info.context.get(_CHECK_ALLOWED)
        if checking and not self.accepts(value):
            shown = list(value) if isinstance(value, tuple) else value
            raise PydanticCustomError(
                NOT_ALLOWED,
                "got {shown}; allowed: {allowed}",
                {"shown": repr(shown), "allowed": self.describe()},
            )
        return value


@dataclass(frozen=True)
class Range(Allowed):
    """A finite number in ``[low, high]``; ``low_open``/``high_open`` exclude that end.

    Infinity and NaN are refused too: an infinite timeout is a hang, a NaN compares false.
    """

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def accepts(self, value: Any) -> bool:
        if not math.isfinite(value):
            return False
        above = self.low is None or (value > self.low if self.low_open else value >= self.low)
        below = self.high is None or (value < self.high if self.high_open else value <= self.high)
        return bool(above and below)

    def describe(self) -> str:
        if self.low is not None and self.high is not None:
            left = "(" if self.low_open else "["
            right = ")" if self.high_open else "]"
            return f"a finite number in {left}{self.low:g}, {self.high:g}{right}"
        if self.low is not None:
            return f"a finite number {'>' if self.low_open else '>='} {self.low:g}"
        assert self.high is not None
        return f"a finite number {'<' if self.high_open else '<='} {self.high:g}"


class NonEmpty(Allowed):
    def describe(self) -> str:
        return "a non-empty value"

    def accepts(self, value: Any) -> bool:
        return bool(value.strip() if isinstance(value, str) else value)


@dataclass(frozen=True)
class IsoDate(Allowed):
    """``YYYY-MM-DD``; with ``time_allowed`` also an ISO 8601 timestamp (``...T00:00:00Z``)."""

    time_allowed: bool = False

    def describe(self) -> str:
        return "a date YYYY-MM-DD" + (" or an ISO 8601 timestamp" if self.time_allowed else "")

    def accepts(self, value: Any) -> bool:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            try:
                date.fromisoformat(value)
            except ValueError:
                return False
            return True
        if not self.time_allowed or not re.match(r"\d{4}-\d{2}-\d{2}T", value):
            return False
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return False
        return True


class HttpUrl(Allowed):
    def describe(self) -> str:
        return "an http:// or https:// URL"

    def accepts(self, value: Any) -> bool:
        return bool(re.fullmatch(r"https?://[^\s/]+\S*", value))


#: The metric families ``metrics_rs.evaluate`` reports, each at a cut-off: ``mrr@10``.
METRIC_FAMILIES = ("mrr", "ndcg", "recall", "precision", "map", "hit")


class MetricName(Allowed):
    def describe(self) -> str:
        return f"a metric name <family>@<k>, family one of {list(METRIC_FAMILIES)}, k >= 1"

    def accepts(self, value: Any) -> bool:
        family, _at, cutoff = value.partition("@")
        return family in METRIC_FAMILIES and bool(re.fullmatch(r"[1-9]\d*", cutoff))


class CronSchedule(Allowed):
    def describe(self) -> str:
        return "a cron expression of five fields, e.g. '0 2 * * *'"

    def accepts(self, value: Any) -> bool:
        from cronsim import CronSim, CronSimError  # light, but only the loader needs it

        # A sixth field means seconds to some cron parsers and a year to others.
        if len(value.split()) != 5:
            return False
        try:
            CronSim(value, datetime.now(UTC))
        except CronSimError:
            return False
        return True


class TimeZoneName(Allowed):
    def describe(self) -> str:
        return "an IANA time zone name, e.g. UTC or Europe/Berlin"

    def accepts(self, value: Any) -> bool:
        from zoneinfo import ZoneInfo

        try:
            ZoneInfo(value)
        except (ValueError, KeyError):  # ZoneInfoNotFoundError is a KeyError
            return False
        return True


# The value types of knobs: what the YAML holds, never converted. ``true`` is no number
# and "3" no int; a float knob takes an int (3 -> 3.0). A list becomes a tuple.
Int = Annotated[int, Strict()]
Float = Annotated[float, Strict()]
Str = Annotated[str, Strict()]
Bool = Annotated[bool, Strict()]

# The ranges most knobs share.
Count = Annotated[Int, Range(1)]  # how many of something: at least one
Retries = Annotated[Int, Range(0)]  # retries after the first try
Seed = Annotated[Int, Range(0)]
Seconds = Annotated[Float, Range(0, low_open=True)]  # a timeout
Delay = Annotated[Float, Range(0)]  # a pause; 0 = none
Name = Annotated[Str, NonEmpty()]


# "auto" or a value (``train.processes: auto | 4``). The union's members are told apart by
# the value's type, so an error names the one member that applies; their tags are left out
# of the error's key (:data:`UNION_TAGS`): ``train.processes: got 0; allowed: ...``.
_Value = TypeVar("_Value")
UNION_TAGS = frozenset({"auto", "value"})


def _auto_or_value(value: Any) -> str:
    return "auto" if isinstance(value, str) else "value"


AutoOr = Annotated[
    Annotated[Literal["auto"], Tag("auto")] | Annotated[_Value, Tag("value")],
    Discriminator(_auto_or_value),
]
