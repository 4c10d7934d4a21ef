"""One stage command at a time per project root: the lock every ``mathembed <stage>`` holds.

Two stages writing the same root at once lose or mix data (two ``ingest`` runs race on the
raw store, two ``train`` runs write ``models/`` together, an orphaned ``dvc repro`` overlaps
the next night). Each stage command holds ``<root>/data/.stage.lock`` while it works; a
second one waits a bounded time, then fails naming the lock file and its holder. It is an
OS file lock (``flock``, taken by ``filelock``), so a killed holder leaves no stale lock.
The nightly flow's own lock (``data/nightly.lock``) is a different file: the flow runs its
stages one at a time through ``dvc repro``, each taking this lock in turn; so is the
promotion lock (``mlruns/promote.lock``, :func:`pipelines.registry.mlflow_registry.promotion_lock`),
one promotion or rollback at a time. :func:`held_lock` is the one file lock every lock of
mathembed (stage, nightly run, promotion) is made of.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock, Timeout

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
    """Hold ``path`` exclusively (``filelock``'s ``flock``), waiting up to ``wait_seconds``.

    ``holder`` is written into the file while held, so a waiting process can say who has
    it; when the wait runs out, ``busy(that text)`` is raised. The kernel releases the lock
    of a killed process: it is never stale. Every lock of mathembed is one of these.

    ``filelock`` does the locking (the wait, the poll, fork and thread safety); what it
    does not do is say who holds a lock, so the holder text is ours: written through its
    ``on_acquired`` hook and cleared before release.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(
        path,
        timeout=wait_seconds,
        poll_interval=poll_seconds,
        # The holder text lives in the file, so the file must stay; and a filesystem without
        # flock must fail rather than fall back to a marker a killed process leaves behind.
        preserve_lock_file=True,
        fallback_to_soft=False,
        on_acquired=lambda descriptor: _write_holder(descriptor, holder),
    )
    try:
        lock.acquire()
    except Timeout:
        raise busy(_read_holder(path)) from None
    try:
        yield
    finally:
        _clear_holder(path)
        lock.release()


def _write_holder(descriptor: int, holder: str) -> None:
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, holder.encode("utf-8"), 0)


def _clear_holder(path: Path) -> None:
    # Still ours while this runs, so nobody else is writing the file.
    with path.open("r+b") as handle:
        os.ftruncate(handle.fileno(), 0)


def _read_holder(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        text = ""
    return text or "holder unknown"


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
