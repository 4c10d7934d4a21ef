"""Where a model came from, as promotion records it: the git commit, the data hashes in
``dvc.lock``, and when."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

import yaml

from pipelines.common.paths import Paths
from pipelines.registry.mlflow_registry import PromotionRefusedError


def dvc_lock_hashes(paths: Paths) -> dict[str, str]:
    """``path -> md5`` of every stage output under ``data/`` recorded in ``dvc.lock``.

    Raises :class:`PromotionRefusedError` naming the file when it cannot be read: promotion
    checks this before scoring, so a broken lock file fails in a second, not after it.
    """
    lock = paths.dvc_lock
    if not lock.is_file():
        return {}
    try:
        content = yaml.safe_load(lock.read_text(encoding="utf-8")) or {}
    except (UnicodeDecodeError, yaml.YAMLError) as error:
        problem = " ".join(str(error).split())  # YAML errors span several lines
        raise _unreadable_lock(lock, problem) from error
    stages = content.get("stages") if isinstance(content, dict) else None
    if not isinstance(stages, dict | None) or not isinstance(content, dict):
        raise _unreadable_lock(lock, "it is not a mapping with a 'stages' mapping")
    hashes: dict[str, str] = {}
    for stage in (stages or {}).values():
        outs = stage.get("outs") if isinstance(stage, dict) else None
        for out in outs if isinstance(outs, list) else []:
            if not isinstance(out, dict):
                continue
            path, md5 = str(out.get("path", "")), out.get("md5")
            if path.startswith("data/") and md5:
                hashes[path] = str(md5)
    return dict(sorted(hashes.items()))


def _unreadable_lock(lock: Path, problem: str) -> PromotionRefusedError:
    return PromotionRefusedError(
        f"{lock} cannot be read ({problem}); restore it (`git checkout -- dvc.lock`) or "
        "rewrite it with `dvc repro`, then `mathembed promote`"
    )


def git_commit(folder: Path) -> str:
    """The commit checked out in ``folder``, or ``unknown`` outside a git checkout."""
    try:
        completed = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=folder,
            capture_output=True,
            text=True,
            check=False,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return completed.stdout.strip() if completed.returncode == 0 else "unknown"


def now() -> str:
    """The time in UTC, to the second, as ISO 8601."""
    return datetime.now(UTC).isoformat(timespec="seconds")
