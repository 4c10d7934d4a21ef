"""What ``/proc`` says about processes, for tests that watch or kill them: whether one
still runs, and which worker of a ``torchrun`` launch holds a rank (torchrun names no pids)."""

from __future__ import annotations

from pathlib import Path


def running(pid: int) -> bool:
    """Alive and not a zombie (an orphaned zombie waits for a reaper; it runs nothing)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = next(line for line in status.splitlines() if line.startswith("State:"))
    return "Z" not in state.split()[1]


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
