"""What the ``validate`` stage finds: a failed check, the error that stops the run, and the
counts of each table and of the whole run (``metrics/data_quality.json``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from pipelines.common.tables import TABLES


@dataclass(frozen=True)
class CheckFailure:
    """One check that failed on one table: how many rows, and a few of them."""

    table: str
    check: str
    rows: int
    examples: tuple[str, ...] = ()
    note: str = ""

    def __str__(self) -> str:
        head = f"[{self.table}] {self.check}: {self.rows} row(s) fail"
        lines = [f"{head}; {self.note}" if self.note else head]
        lines.extend(f"    {example}" for example in self.examples)
        return "\n".join(lines)


class ValidationError(Exception):
    """The data breaks the contract; nothing was written. ``failures`` says where."""

    def __init__(self, failures: Sequence[CheckFailure]) -> None:
        self.failures = tuple(failures)
        stages = sorted({TABLES[f.table].stage for f in self.failures if f.table in TABLES})
        fix = ", ".join(f"mathembed {stage}" for stage in stages)
        lines = [f"validation failed: {len(self.failures)} check(s); nothing was written"]
        lines.extend(str(failure) for failure in self.failures)
        lines.append(f"fix the data or the stage that writes it ({fix}), then rerun validate")
        super().__init__("\n".join(lines))

    def checks(self) -> set[tuple[str, str]]:
        """``(table, check)`` of every failure, for callers that branch on them."""
        return {(failure.table, failure.check) for failure in self.failures}


@dataclass(frozen=True)
class TableOutcome:
    """One table's counts: ``rows_in == kept + quarantined``; failed rows per check."""

    rows_in: int
    kept: int
    quarantined: int
    quarantined_by_check: dict[str, int]
    checks: dict[str, dict[str, int]]
    papers_quarantined_whole: tuple[str, ...] = ()  # pipelines.validate.per_paper

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows_in": self.rows_in,
            "kept": self.kept,
            "quarantined": self.quarantined,
            "quarantined_by_check": self.quarantined_by_check,
            "checks": self.checks,
            "papers_quarantined_whole": list(self.papers_quarantined_whole),
        }


@dataclass(frozen=True)
class ValidationResult:
    """What :func:`validate_tables` returns: the tables to keep, the rows set aside, counts."""

    kept: dict[str, pd.DataFrame]
    quarantined: dict[str, pd.DataFrame]
    tables: dict[str, TableOutcome]
    max_row_failure_fraction: float
    eval_set: dict[str, Any] = field(default_factory=dict)  # eval_shape.figures

    def metrics(self) -> dict[str, Any]:
        totals = {
            key: sum(getattr(outcome, key) for outcome in self.tables.values())
            for key in ("rows_in", "kept", "quarantined")
        }
        return {
            "max_row_failure_fraction": self.max_row_failure_fraction,
            "tables": {table: outcome.as_dict() for table, outcome in self.tables.items()},
            "totals": totals,
            "eval_set": self.eval_set,
        }
