"""One stage command at a time per project root: the lock every ``mathembed <stage>`` holds.

Two stages writing the same root at once lose or mix data (two ``ingest`` runs race on the
raw store, two ``train`` runs write ``models/`` together, an orphaned ``dvc repro`` overlaps
the next night). Each stage command holds ``<root>/data/.stage.lock`` while it works; a
second one waits a bounded time, then fails naming the lock file and its holder. It is an
OS file lock (``flock``), so a killed holder leaves no stale lock. The nightly flow's own
lock (``data/nightly.lock``) is a different file: the flow runs its stages one at a time
through ``dvc repro``, each taking this lock in turn. :func:`held_lock` is the one file
lock every lock of mathembed (stage, nightly run, promotion) is made of.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

STAGE_LOCK_FILE = ".stage.lock"
#: How long a stage waits for the one before it; the environment variable overrides it
#: (tests, or an operator who would rather queue a long training run).
WAIT_SECONDS = 60.0
WAIT_ENV = "MATHEMBED_STAGE_LOCK_WAIT_SECONDS"
_POLL_SECONDS = 0.2


class StageBusyError(RuntimeError):
    """Another stage command holds this root's stage lock."""


def stage_lock_path(root: Path) -> Path:
    return root / "data" / STAGE_LOCK_FILE


def wait_seconds_from(environment: dict[str, str] | os._Environ[str]) -> float:
    """The bound on the wait (pure): the environment's override, else :data:`WAIT_SECONDS`."""
    text = environment.get(WAIT_ENV, "").strip()
    try:
        return max(0.0, float(text)) if text else WAIT_SECONDS
    except ValueError:
        return WAIT_SECONDS


@contextmanager
def held_lock(
    path: Path,
    holder: str,
    busy: Callable[[str], Exception],
    wait_seconds: float = 0.0,
    poll_seconds: float = _POLL_SECONDS,
) -> Iterator[None]:
    """Hold ``path`` exclusively (``flock``), waiting up to ``wait_seconds`` for it.

    ``holder`` is written into the file while held, so a waiting process can say who has
    it; when the wait runs out, ``busy(that text)`` is raised. The kernel releases the lock
    of a killed process: it is never stale. Every lock of mathembed is one of these.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait_seconds
    with path.open("a+", encoding="utf-8") as handle:
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    handle.seek(0)
                    raise busy(handle.read().strip() or "holder unknown") from None
                time.sleep(poll_seconds)  # flock has no timeout of its own
        handle.seek(0)
        handle.truncate()
        handle.write(holder)
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def since_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@contextmanager
def stage_lock(root: Path, command: str, wait_seconds: float | None = None) -> Iterator[None]:
    """Hold ``root``'s stage lock; raise :class:`StageBusyError` after ``wait_seconds``."""
    wait = wait_seconds_from(os.environ) if wait_seconds is None else wait_seconds
    lock_path = stage_lock_path(root)

    def busy(holder: str) -> StageBusyError:
        return StageBusyError(
            f"another stage is running on this root ({holder}); waited "
            f"{wait:g} s for {lock_path.resolve()}: let it finish (or end that "
            f"process), then run {command} again"
        )

    holder = f"pid {os.getpid()}, mathembed {command}, since {since_now()}"
    with held_lock(lock_path, holder, busy, wait_seconds=wait):
        yield
