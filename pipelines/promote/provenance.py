"""Where a model came from, as promotion records it: the git commit, the data hashes in
``dvc.lock``, and when."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

import yaml

from pipelines.common.paths import Paths


def dvc_lock_hashes(paths: Paths) -> dict[str, str]:
    """``path -> md5`` of every stage output under ``data/`` recorded in ``dvc.lock``."""
    lock = paths.dvc_lock
    if not lock.is_file():
        return {}
    content = yaml.safe_load(lock.read_text(encoding="utf-8")) or {}
    hashes: dict[str, str] = {}
    for stage in (content.get("stages") or {}).values():
        for out in stage.get("outs") or []:
            path, md5 = str(out.get("path", "")), out.get("md5")
            if path.startswith("data/") and md5:
                hashes[path] = str(md5)
    return dict(sorted(hashes.items()))


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
