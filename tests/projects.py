"""Fresh copies of this project for tests that run DVC or the flows end to end.

:func:`new_project` writes a git + DVC project holding this checkout's pipeline code, DAG,
embedded corpus and params (on the synthetic sample, with changes), so stage commands
(``mathembed <stage>``) run the code under test and nothing touches the checkout's own data.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from repo import REPO


def run(*args: str, cwd: Path) -> str:
    """Run a command with this interpreter's folder first on PATH; fail with its output."""
    env = {
        **os.environ,
        # dvc.yaml's commands say `python -m ...`: this interpreter must be the one found.
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "DVC_NO_ANALYTICS": "1",
    }
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"{' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout + result.stderr


def dvc(*args: str, cwd: Path) -> str:
    return run(sys.executable, "-m", "dvc", *args, cwd=cwd)


def update_params(root: Path, changes: dict[str, dict[str, Any]]) -> None:
    """Set ``{section: {key: value}}`` in ``root/params.yaml``."""
    path = root / "params.yaml"
    params = yaml.safe_load(path.read_text())
    for section, values in changes.items():
        params.setdefault(section, {}).update(values)
    path.write_text(yaml.safe_dump(params, sort_keys=False))


def new_project(root: Path, changes: dict[str, dict[str, Any]] | None = None) -> Path:
    """A git + DVC project in ``root`` with the smallest sample mirror, plus ``changes``."""
    root.mkdir(parents=True, exist_ok=True)
    for name in ("dvc.yaml", "params.yaml"):
        shutil.copy(REPO / name, root / name)
    shutil.copytree(REPO / "gx", root / "gx", ignore=shutil.ignore_patterns("uncommitted"))
    shutil.copytree(
        REPO / "pipelines", root / "pipelines", ignore=shutil.ignore_patterns("__pycache__")
    )
    # dvc.yaml's sample stage depends on the real corpus, so it has to exist here, even
    # though these projects run on the synthetic sample: the full pipeline, training
    # included, on the real chapters would slow CI down, and the tests that add papers
    # to the mirror need the generator's n_papers.
    shutil.copytree(REPO / "corpora", root / "corpora")
    # dvc.yaml's evaluate stage depends on the extension's sources too (it runs the built
    # extension of the venv, but DVC hashes what it lists).
    for source in ("metrics_rs/src", "metrics_rs/Cargo.toml"):
        copy = shutil.copytree if (REPO / source).is_dir() else shutil.copy
        (root / source).parent.mkdir(parents=True, exist_ok=True)
        copy(REPO / source, root / source)
    # 80: the smallest mirror the generator accepts. Its eval set has ~20 queries, not the
    # real corpus's ~195 that validate.min_queries (100) is set for.
    update_params(root, {"sample": {"corpus": "synthetic", "n_papers": 80}})
    # No described set either: the generator's citing sentences that cite a held-out result
    # sit in its own passage (a proof citing its lemma) or use the reference as a noun
    # ("Theorem [ref] applies to ..."), so none is a described query (that set is tested on
    # real chapters: tests/unit/pairs, the demo).
    update_params(root, {"validate": {"min_queries": 5, "min_described_queries": 0}})
    if changes:
        update_params(root, changes)
    run("git", "init", "-q", cwd=root)
    dvc("init", "-q", cwd=root)
    return root
