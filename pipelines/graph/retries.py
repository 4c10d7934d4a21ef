"""When the graph stage tries a quarantined paper again (issue 29, finding 10).

A paper whose per-paper work failed (it raised, killed its worker or ran past
``graph.paper_timeout_seconds``) is quarantined in ``data/quarantine/graph/``. It is
retried on later nights with backoff, 1, 2, 4, ... nights after each failure, up to
``graph.max_paper_retries`` retries (a larger value gives it more); past them it stays
quarantined until what it failed under changes: the work fingerprint (the code, the
extractor, the graph params), the paper's content, or a larger
``graph.paper_timeout_seconds``. Then it is tried again with a fresh count. Without this,
every always-slow paper cost two budgets every night.

The bookkeeping is one typed record per paper, :class:`FailedWork`, kept in the paper's
quarantine record (so it persists with the quarantine, across nights) and written and read
by :class:`FailedWorkRecords` alone. The decisions are pure functions of it:
:func:`held_reason` (is the paper due tonight?), :func:`after_failure` (the record a new
failure leaves) and :func:`describe` (the reason the quarantine shows). A night is a
calendar day (UTC): a second run on the same day does not count as a later night.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from pipelines.common import io

STAGE = "graph"
#: Marks the quarantine records of failed per-paper work (the LLM extractor writes others).
WORK_FAILED = "per_paper_work_failed"
#: A count past this in a record is damage, not history (graph.max_paper_retries <= 10).
MAX_FAILURES_COUNTED = 20


@dataclass(frozen=True)
class Conditions:
    """What a paper's work runs under; a failure under other conditions says nothing."""

    fingerprint: str  # the code, the extractor and the graph params (cache.work_fingerprint)
    content_hash: str  # the paper's (cache.document_hash)
    budget_seconds: float  # graph.paper_timeout_seconds


@dataclass(frozen=True)
class FailedWork:
    """A paper whose per-paper work failed ``failures`` times in a row under ``conditions``,
    the last time on the night ``failed_on``, with ``failure`` saying why."""

    paper_id: str
    failure: str
    failures: int
    failed_on: date
    conditions: Conditions

    @property
    def retry_on(self) -> date:
        """The first night it may be tried again: 1, 2, 4, ... nights after the failure."""
        return self.failed_on + timedelta(days=2 ** (self.failures - 1))


def holds_under(record: FailedWork, now: Conditions) -> bool:
    """Whether ``record``'s failures count under ``now``: the same fingerprint and content,
    and a budget no larger than the one the paper failed with."""
    return (
        record.conditions.fingerprint == now.fingerprint
        and record.conditions.content_hash == now.content_hash
        and now.budget_seconds <= record.conditions.budget_seconds
    )


def describe(record: FailedWork, max_retries: int) -> str:
    """The quarantine reason of ``record``: its failure and when it is tried again."""
    if record.failures > max_retries:
        return (
            f"{record.failure}; failed {_times(record.failures)}, retries used up "
            f"(graph.max_paper_retries: {max_retries}): tried again once "
            "graph.paper_timeout_seconds is larger or the paper, the code or the graph "
            "params change"
        )
    return f"{record.failure}; failed {_times(record.failures)}, tried again on {record.retry_on}"


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def held_reason(
    record: FailedWork | None, now: Conditions, today: date, max_retries: int
) -> str | None:
    """Why a paper is not tried tonight, or None when it is due: no failure that still
    holds under ``now``, or retries left and the retry night come."""
    if record is None or not holds_under(record, now):
        return None
    if record.failures > max_retries or today < record.retry_on:
        return describe(record, max_retries)
    return None


def after_failure(
    previous: FailedWork | None, paper_id: str, failure: str, now: Conditions, today: date
) -> FailedWork:
    """The record a failure tonight leaves: one failure more than ``previous``, if that
    still holds under ``now``; else the first."""
    failures = previous.failures + 1 if previous and holds_under(previous, now) else 1
    return FailedWork(paper_id, failure, failures, today, now)


class FailedWorkRecords:
    """The :class:`FailedWork` records in a quarantine folder: the one writer and reader
    of their form (the ``details`` of :func:`pipelines.common.io.quarantine`'s record)."""

    def __init__(self, quarantine_dir: Path) -> None:
        self.quarantine_dir = quarantine_dir

    def write(self, record: FailedWork, max_retries: int) -> None:
        """Record ``record``, its reason saying when it is tried again (:func:`describe`)."""
        conditions = record.conditions
        details: dict[str, Any] = {
            "paper_id": record.paper_id,
            WORK_FAILED: True,
            "failure": record.failure,
            "failures": record.failures,
            "failed_on": record.failed_on.isoformat(),
            "retry_on": record.retry_on.isoformat(),  # for people; derived when read
            "fingerprint": conditions.fingerprint,
            "content_hash": conditions.content_hash,
            "budget_seconds": conditions.budget_seconds,
        }
        reason = describe(record, max_retries)
        io.quarantine(self.quarantine_dir, STAGE, record.paper_id, reason, details=details)

    def read_all(self) -> dict[str, FailedWork]:
        """Every record, by paper id. Another stage part's record (the LLM extractor's) is
        not one; nor is one that does not read back (an older layout, a damaged file): its
        paper is due, and a new failure writes a whole record."""
        found: dict[str, FailedWork] = {}
        for value in io.quarantined(self.quarantine_dir, STAGE):
            record = _from_record(value)
            if record is not None:
                found[record.paper_id] = record
        return found

    def remove(self, paper_id: str) -> None:
        """Drop ``paper_id``'s record, if it is one of these (its work went through)."""
        path = io.quarantine_record_path(self.quarantine_dir, STAGE, paper_id)
        if path.is_file() and io.read_quarantine_record(path).get("details", {}).get(WORK_FAILED):
            path.unlink()


def _from_record(value: Mapping[str, Any]) -> FailedWork | None:
    details = value.get("details", {})
    if not isinstance(details, Mapping) or details.get(WORK_FAILED) is not True:
        return None
    try:
        record = FailedWork(
            paper_id=str(details["paper_id"]),
            failure=str(details["failure"]),
            failures=int(details["failures"]),
            failed_on=date.fromisoformat(details["failed_on"]),
            conditions=Conditions(
                fingerprint=str(details["fingerprint"]),
                content_hash=str(details["content_hash"]),
                budget_seconds=float(details["budget_seconds"]),
            ),
        )
    except (KeyError, TypeError, ValueError):
        return None
    if not 1 <= record.failures <= MAX_FAILURES_COUNTED:
        return None
    if not math.isfinite(record.conditions.budget_seconds):
        return None
    return record


def plan_retries(
    records: Mapping[str, FailedWork],
    now: Mapping[str, Conditions],
    today: date,
    max_retries: int,
) -> tuple[dict[str, str], frozenset[str]]:
    """Of the papers in ``now`` (paper id -> the conditions tonight), those held in
    quarantine tonight (paper id -> why) and those due for a retry."""
    held: dict[str, str] = {}
    retrying: set[str] = set()
    for paper_id, conditions in now.items():
        record = records.get(paper_id)
        if record is None:
            continue
        reason = held_reason(record, conditions, today, max_retries)
        if reason is None:
            retrying.add(paper_id)
        else:
            held[paper_id] = reason
    return held, frozenset(retrying)
