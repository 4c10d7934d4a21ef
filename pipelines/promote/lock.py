"""The promotion lock: one promotion (or rollback) at a time per project root."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from pipelines.common.paths import Paths
from pipelines.promote.errors import RERUN_HINT, PromotionLockedError
from pipelines.promote.provenance import now


@contextmanager
def promotion_lock(paths: Paths, timeout_seconds: float) -> Iterator[None]:
    """Hold ``<root>/mlruns/promote.lock`` exclusively (``flock``), waiting up to the timeout.

    The lock is released by the kernel if the process dies, so a crashed promotion never
    leaves a stale lock behind. It serialises promotions that share this root (the
    nightly flow and a person at the terminal); a shared MLflow server used from several
    machines needs them to share this folder too.
    """
    lock_path = paths.mlflow_store / "promote.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout_seconds
    with lock_path.open("a+", encoding="utf-8") as handle:
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    handle.seek(0)
                    holder = handle.read().strip() or "unknown"
                    raise PromotionLockedError(
                        f"another promotion holds {lock_path} ({holder}); gave up after "
                        f"{timeout_seconds:g} s (params.yaml promote.lock_timeout_seconds). "
                        f"Wait for it to finish, then {RERUN_HINT}"
                    ) from None
                time.sleep(0.05)  # polling the lock, not synchronising a test
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()} since {now()}\n")
            handle.flush()
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
