"""`dvc repro` of the data stages on the sample mirror, offline, in a fresh copy of the project.

Checks the promises of dvc.yaml: a first repro builds every dataset, a second does
nothing, and changing one `pairs.*` knob reruns only `pairs` and what follows. The
model stages (train, evaluate) are left out: they have tests of their own and take
minutes on a CPU.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
STAGES = ("sample", "ingest", "prepare", "graph", "pairs", "validate")
LAST_DATA_STAGE = STAGES[-1]


def run(*args: str, cwd: Path) -> str:
    env = {
        **os.environ,
        # dvc.yaml's commands say `python -m ...`: this interpreter must be the one found.
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "DVC_NO_ANALYTICS": "1",
    }
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"{' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout + result.stderr


def stages_run(output: str) -> list[str]:
    return [stage for stage in STAGES if f"Running stage '{stage}'" in output]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh git + DVC project holding this checkout's pipeline code and DAG."""
    root = tmp_path_factory.mktemp("project")
    for name in ("dvc.yaml", "params.yaml"):
        shutil.copy(REPO / name, root / name)
    shutil.copytree(REPO / "gx", root / "gx", ignore=shutil.ignore_patterns("uncommitted"))
    shutil.copytree(
        REPO / "pipelines", root / "pipelines", ignore=shutil.ignore_patterns("__pycache__")
    )
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["sample"]["n_papers"] = 80  # the smallest mirror the generator accepts
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run("git", "init", "-q", cwd=root)
    run(sys.executable, "-m", "dvc", "init", "-q", cwd=root)
    return root


def test_first_repro_builds_every_dataset(project: Path) -> None:
    output = run(sys.executable, "-m", "dvc", "repro", LAST_DATA_STAGE, cwd=project)
    assert stages_run(output) == list(STAGES)
    for table in (
        "data/processed/papers.parquet",
        "data/processed/chunks.parquet",
        "data/graph/concepts.parquet",
        "data/graph/edges.parquet",
        "data/training/pairs.parquet",
        "data/eval/queries.parquet",
        "data/eval/qrels.parquet",
        "data/validated/pairs.parquet",
        "reports/data_quality/index.html",
    ):
        path = project / table
        assert path.stat().st_size > 0, f"{table} is empty"
        if path.suffix == ".parquet":
            assert len(pd.read_parquet(path)) > 0, f"{table} has no rows"
    assert (project / "dvc.lock").is_file()


def test_second_repro_does_nothing(project: Path) -> None:
    output = run(sys.executable, "-m", "dvc", "repro", LAST_DATA_STAGE, cwd=project)
    assert stages_run(output) == []


def test_changing_a_pairs_knob_reruns_only_pairs_and_what_follows(project: Path) -> None:
    params_path = project / "params.yaml"
    params = yaml.safe_load(params_path.read_text())
    params["pairs"]["seed"] += 1
    params_path.write_text(yaml.safe_dump(params, sort_keys=False))
    output = run(sys.executable, "-m", "dvc", "repro", LAST_DATA_STAGE, cwd=project)
    assert stages_run(output) == ["pairs", "validate"]
