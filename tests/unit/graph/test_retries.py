"""When the graph stage tries a quarantined paper again (issue 29, finding 10): the pure
decisions of :mod:`pipelines.graph.retries`, and its record read back as written."""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path

import pytest

from pipelines.common import io
from pipelines.graph.retries import (
    Conditions,
    FailedWork,
    FailedWorkRecords,
    after_failure,
    held_reason,
    plan_retries,
)

NOW = Conditions(fingerprint="code-1", content_hash="paper-1", budget_seconds=60.0)
NIGHT = date(2024, 3, 1)
FAILURE = "graph extraction ran past its 60 s budget and was stopped"


def failed(times: int, on: date = NIGHT, now: Conditions = NOW) -> FailedWork:
    record = None
    for _ in range(times):
        record = after_failure(record, "2401.00001", FAILURE, now, on)
    assert record is not None
    return record


def due_nights(record: FailedWork, max_retries: int, horizon: int = 40) -> list[int]:
    """The nights after the last failure on which the paper is tried."""
    return [
        offset
        for offset in range(horizon)
        if held_reason(record, NOW, record.failed_on + timedelta(days=offset), max_retries) is None
    ]


def test_each_failure_doubles_the_wait_until_the_retries_are_used_up() -> None:
    assert [failed(times).failures for times in (1, 2, 3)] == [1, 2, 3]
    assert due_nights(failed(1), max_retries=3)[0] == 1
    assert due_nights(failed(2), max_retries=3)[0] == 2
    assert due_nights(failed(3), max_retries=3)[0] == 4
    assert due_nights(failed(4), max_retries=3) == []  # used up: never, under these conditions
    reason = held_reason(failed(4), NOW, NIGHT + timedelta(days=365), 3)
    assert reason is not None and "retries used up" in reason and FAILURE in reason
    assert due_nights(failed(1), max_retries=0) == []  # no retries at all


def test_the_same_night_is_no_later_night() -> None:
    reason = held_reason(failed(1), NOW, NIGHT, max_retries=3)
    assert reason == f"{FAILURE}; failed once, tried again on 2024-03-02"


@pytest.mark.parametrize(
    "changed",
    [
        Conditions("code-2", "paper-1", 60.0),  # the code or the graph params
        Conditions("code-1", "paper-2", 60.0),  # the paper
        Conditions("code-1", "paper-1", 120.0),  # a larger budget
    ],
)
def test_a_change_to_what_it_failed_under_makes_it_due_with_a_fresh_count(
    changed: Conditions,
) -> None:
    used_up = failed(4)
    assert held_reason(used_up, changed, NIGHT, max_retries=3) is None
    assert after_failure(used_up, "2401.00001", FAILURE, changed, NIGHT).failures == 1


def test_a_smaller_budget_or_a_larger_limit() -> None:
    smaller = Conditions("code-1", "paper-1", 30.0)
    assert held_reason(failed(4), smaller, NIGHT, max_retries=3) is not None
    assert held_reason(failed(4), NOW, NIGHT + timedelta(days=8), max_retries=4) is None


def test_plan_retries_splits_held_and_due() -> None:
    records = {"a": failed(1), "b": failed(1)}
    now = {"a": NOW, "b": Conditions("code-2", "paper-1", 60.0), "c": NOW}
    held, retrying = plan_retries(records, now, NIGHT, max_retries=3)
    assert list(held) == ["a"] and retrying == {"b"}


def test_records_read_back_as_written_and_only_these(tmp_path: Path) -> None:
    records = FailedWorkRecords(tmp_path)
    record = failed(2)
    records.write(record, max_retries=3)
    assert records.read_all() == {record.paper_id: record}
    (written,) = io.quarantined(tmp_path, "graph")
    assert written["reason"] == f"{FAILURE}; failed 2 times, tried again on 2024-03-03"

    # The LLM extractor's records, damaged ones, older layouts: not these.
    io.quarantine(tmp_path, "graph", "2401.00002", "LLM reply unusable", details={"x": 1})
    io.quarantine(tmp_path, "graph", "2401.00003", "old", details={"per_paper_work_failed": True})
    (tmp_path / "graph" / "2401.00004.json").write_text("{not json", encoding="utf-8")
    damaged = json.loads(json.dumps(written))
    damaged["id"] = damaged["details"]["paper_id"] = "2401.00005"
    damaged["details"]["failures"] = -1
    io.write_json(io.quarantine_record_path(tmp_path, "graph", "2401.00005"), damaged)
    assert list(records.read_all()) == [record.paper_id]

    records.remove("2401.00002")  # not one of these: it stays
    records.remove(record.paper_id)
    assert records.read_all() == {}
    assert io.quarantine_record_path(tmp_path, "graph", "2401.00002").is_file()
