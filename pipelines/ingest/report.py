"""What one ingest run did: its counts, the metrics they become, and the alarm it raises when
it quarantined an abnormal share of what it downloaded.

Counts add up: listed = tex + abstract_only + withdrawn + skipped + quarantined, written to
``metrics/ingest.json``. Papers re-extracted from the quarantine before the listing
(``retried``/``recovered``) are counted outside ``listed``.

A run that quarantines more than half of the papers it downloaded (a too-tight cap, a
broken upstream) is abnormal: :func:`quarantine_alarm` says so in one line naming the cap
to raise, and the stage raises :class:`QuarantineRateError` with it after writing. Papers
still refused by a recorded cap count as refused again when relisted, so a retry with
unchanged params fails the same way.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

#: The stage's name: its metrics file, its quarantine folder, its progress bar.
STAGE = "ingest"
COUNT_KEYS = ("tex", "abstract_only", "withdrawn", "skipped", "quarantined")
# A run that quarantines more than this share of the papers it fetched (and at least
# ALARM_MIN_PAPERS of them) is abnormal: a too-tight cap, a broken mirror or upstream.
# Fixed, not a knob: the sample mirror, malformed papers included, stays near 30 %.
ALARM_QUARANTINE_SHARE = 0.5
ALARM_MIN_PAPERS = 5

#: What became of one listed entry: a count key, or "failed" (a download that failed for
#: now: counted as quarantined, retried by the next run).
Outcome = Literal["tex", "abstract_only", "withdrawn", "skipped", "quarantined", "failed"]


@dataclass
class IngestReport:
    """What one run did. ``counts['listed']`` equals the sum of the other counts."""

    window_from: str
    window_to: str
    watermark_before: str | None
    watermark_after: str | None = None
    counts: Counter[str] = field(default_factory=Counter)
    stored: list[str] = field(default_factory=list)  # "<id>v<n>" written this run
    quarantined: list[tuple[str, str]] = field(default_factory=list)  # (item id, reason)
    listing_complete: bool = True
    # What the quarantine alarm weighs: papers downloaded this run plus papers skipped
    # because a cap still in force refused them earlier, and how many of those were refused.
    considered: int = 0
    refused: int = 0
    limit_refusals: Counter[str] = field(default_factory=Counter)  # "ingest.<key>" -> papers

    @property
    def fetch_failures(self) -> int:
        """Downloads that failed for now (quarantined, retried by the next run)."""
        return self.counts["fetch_failed"]

    def metrics(self) -> dict[str, Any]:
        counts = {
            key: self.counts[key]
            for key in ("listed", *COUNT_KEYS, "fetch_failed", "retried", "recovered")
        }
        return {
            **counts,
            "fetched": self.counts["tex"] + self.counts["abstract_only"],
            "window_from": self.window_from,
            "window_to": self.window_to,
            "watermark": self.watermark_after,
            "listing_complete": self.listing_complete,
        }


class QuarantineRateError(ValueError):
    """The run quarantined an abnormal share of what it downloaded (raised after writing)."""

    def __init__(self, message: str, report: IngestReport) -> None:
        super().__init__(message)
        self.report = report


def quarantine_alarm(report: IngestReport, quarantine_folder: Path) -> str | None:
    """One line saying the run's quarantine rate is abnormal, or None when it is not."""
    considered, refused = report.considered, report.refused
    if considered < ALARM_MIN_PAPERS or refused <= ALARM_QUARANTINE_SHARE * considered:
        return None
    message = (
        f"{refused} of the {considered} papers this run fetched (or found refused by a cap "
        f"still in force) are quarantined, more than {ALARM_QUARANTINE_SHARE:.0%}"
    )
    if report.limit_refusals:
        key, papers = report.limit_refusals.most_common(1)[0]
        return (
            f"{message}; {papers} of them refused by {key}: raise {key} in params.yaml "
            f"and rerun (they are re-extracted from {quarantine_folder}, nothing is lost)"
        )
    return f"{message}; see the reasons in {quarantine_folder}"
