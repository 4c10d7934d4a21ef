"""How far a harvest is, in the logs: a live one takes minutes (arXiv asks 3 s a request).

The terminal has ingest's progress bar; logs (the nightly flow, ``dvc repro`` in CI, a
file) get one line every :data:`LOG_EVERY_SECONDS` instead, such as ``harvested 120/500
papers, 3 quarantined, ~18 min left``. A run quicker than that (the sample mirror) logs
none: its start and end lines say it all.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

#: Often enough that a stalled harvest shows within a minute, rare enough to read.
LOG_EVERY_SECONDS = 30.0


def harvest_target(listed_total: int, skipped: int, max_papers: int) -> int:
    """How many listed papers this run will go through (pure): the whole listing, or fewer
    when ``max_papers`` ends it early (papers already stored are skipped and do not count
    toward the cap)."""
    return max(0, min(listed_total, skipped + max_papers))


def time_left(elapsed_seconds: float, done: int, target: int) -> str:
    """``~18 min left`` from the pace so far (pure); empty before any paper is done."""
    if done <= 0 or target <= done:
        return ""
    seconds = elapsed_seconds / done * (target - done)
    if seconds < 60:
        return "<1 min left"
    minutes = math.ceil(seconds / 60)
    if minutes < 60:
        return f"~{minutes} min left"
    hours, minutes = divmod(minutes, 60)
    return f"~{hours} h {minutes} min left"


def progress_line(done: int, target: int, quarantined: int, elapsed_seconds: float) -> str:
    """``harvested 120/500 papers, 3 quarantined, ~18 min left`` (pure)."""
    parts = [f"harvested {done}/{target} papers", f"{quarantined} quarantined"]
    remaining = time_left(elapsed_seconds, done, target)
    if remaining:
        parts.append(remaining)
    return ", ".join(parts)


@dataclass
class HarvestProgress:
    """Says :func:`progress_line` at most once every ``every_seconds`` (injectable clock)."""

    every_seconds: float = LOG_EVERY_SECONDS
    clock: Callable[[], float] = time.monotonic
    started: float = field(init=False)
    last_said: float = field(init=False)

    def __post_init__(self) -> None:
        self.started = self.last_said = self.clock()

    def update(self, done: int, target: int, quarantined: int) -> str | None:
        """The line to log now, or None when the last one is recent (or the run is over)."""
        now = self.clock()
        if now - self.last_said < self.every_seconds or done >= target:
            return None
        self.last_said = now
        return progress_line(done, target, quarantined, now - self.started)
