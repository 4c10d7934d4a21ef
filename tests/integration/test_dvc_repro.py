"""`dvc repro` of the data stages on the sample mirror, offline, in a fresh copy of the project.

Checks the promises of dvc.yaml: a first repro builds every dataset, a second does
nothing, and changing one `pairs.*` knob reruns only `pairs` and what follows. The
model stages (train, evaluate) are left out: they have tests of their own and take
minutes on a CPU.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml
from projects import dvc, new_project, update_params

STAGES = ("sample", "ingest", "prepare", "graph", "pairs", "validate")
LAST_DATA_STAGE = STAGES[-1]


def stages_run(output: str) -> list[str]:
    return [stage for stage in STAGES if f"Running stage '{stage}'" in output]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh git + DVC project holding this checkout's pipeline code and DAG."""
    return new_project(tmp_path_factory.mktemp("project"))


def test_first_repro_builds_every_dataset(project: Path) -> None:
    output = dvc("repro", LAST_DATA_STAGE, cwd=project)
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
    output = dvc("repro", LAST_DATA_STAGE, cwd=project)
    assert stages_run(output) == []


def test_changing_a_pairs_knob_reruns_only_pairs_and_what_follows(project: Path) -> None:
    seed = yaml.safe_load((project / "params.yaml").read_text())["pairs"]["seed"]
    update_params(project, {"pairs": {"seed": seed + 1}})
    output = dvc("repro", LAST_DATA_STAGE, cwd=project)
    assert stages_run(output) == ["pairs", "validate"]
