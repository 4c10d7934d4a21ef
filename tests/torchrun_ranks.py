"""The worker processes a ``torchrun`` launch started, found by rank (for tests that kill
one): read from ``/proc``, since torchrun names no pids."""

from __future__ import annotations

from pathlib import Path


def rank_pid(launcher: int, rank: int) -> int | None:
    """The process id of ``rank`` among the workers ``launcher`` started (None: not yet)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            environ = (entry / "environ").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if parent == launcher and f"RANK={rank}".encode() in environ:
            return int(entry.name)
    return None
