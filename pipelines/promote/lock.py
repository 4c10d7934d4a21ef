"""The promotion lock: one promotion (or rollback) at a time per project root."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from pipelines.common.locks import held_lock
from pipelines.common.paths import Paths
from pipelines.common.registry import RERUN_HINT, PromotionLockedError
from pipelines.promote.provenance import now


@contextmanager
def promotion_lock(paths: Paths, timeout_seconds: float) -> Iterator[None]:
    """Hold ``<root>/mlruns/promote.lock`` (:func:`held_lock`), waiting up to the timeout.

    The lock is released by the kernel if the process dies, so a crashed promotion never
    leaves a stale lock behind. It serialises promotions that share this root (the
    nightly flow and a person at the terminal); a shared MLflow server used from several
    machines needs them to share this folder too.
    """
    lock_path = paths.mlflow_store / "promote.lock"

    def busy(holder: str) -> PromotionLockedError:
        return PromotionLockedError(
            f"another promotion holds {lock_path} ({holder}); gave up after "
            f"{timeout_seconds:g} s (params.yaml promote.lock_timeout_seconds). "
            f"Wait for it to finish, then {RERUN_HINT}"
        )

    holder = f"pid {os.getpid()} since {now()}\n"
    with held_lock(lock_path, holder, busy, wait_seconds=timeout_seconds, poll_seconds=0.05):
        yield
