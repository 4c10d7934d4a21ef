"""DVC wiring: dvc.yaml agrees with params.yaml and the code, and the S3 remote round-trips.

The S3 test is real: DVC (through dvc-s3 and boto3) pushes to moto's S3 server on
127.0.0.1 and pulls back into an emptied workspace.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import boto3
import pytest
import yaml
from repo import REPO

from pipelines.common.config import load_params


def dvc(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the venv's DVC; a failure shows DVC's own output."""
    result = subprocess.run(
        [sys.executable, "-m", "dvc", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "DVC_NO_ANALYTICS": "1"},
        check=False,
    )
    assert result.returncode == 0, f"dvc {' '.join(args)} failed:\n{result.stdout}{result.stderr}"
    return result


def stages() -> dict[str, dict]:
    return yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]


def is_produced(dep: str, outs: set[str]) -> bool:
    """Whether ``dep`` is one of ``outs`` or a file inside one of them."""
    return any(dep == out or dep.startswith(f"{out}/") for out in outs)


def test_every_stage_reads_an_existing_params_section_and_existing_code() -> None:
    params = load_params(REPO / "params.yaml")
    produced = {
        (next(iter(out)) if isinstance(out, dict) else out)
        for stage in stages().values()
        for out in stage.get("outs", [])
    }
    for name, stage in stages().items():
        for key in stage.get("params", []):
            # A whole section ("train") or one key in it ("train.base_model").
            value: object = params
            for part in key.split("."):
                assert hasattr(value, part), f"stage {name} reads unknown params key {key}"
                value = getattr(value, part)
        for dep in stage["deps"]:
            # A dependency is either code in the repo or data another stage produces.
            assert (REPO / dep).exists() or is_produced(dep, produced), (
                f"stage {name}: missing dep {dep}"
            )


def test_stages_run_in_pipeline_order() -> None:
    order = list(stages())
    assert order == [
        "sample",
        "ingest",
        "prepare",
        "graph",
        "pairs",
        "validate",
        "train",
        "evaluate",
    ]
    outs_so_far: set[str] = set()
    for name, stage in stages().items():
        for dep in stage["deps"]:
            if dep.startswith(("data/", "models/")):
                assert is_produced(dep, outs_so_far), (
                    f"{name} reads {dep}: no earlier stage writes it"
                )
        for out in stage.get("outs", []):
            outs_so_far.add(next(iter(out)) if isinstance(out, dict) else out)


def test_push_and_pull_through_the_s3_remote(s3_endpoint: str, tmp_path: Path) -> None:
    bucket = "mathembed-dvc-test"
    boto3.client("s3", endpoint_url=s3_endpoint).create_bucket(Bucket=bucket)
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    dvc("init", "-q", cwd=project)
    dvc("remote", "add", "-d", "s3", f"s3://{bucket}/store", cwd=project)
    dvc("remote", "modify", "s3", "endpointurl", s3_endpoint, cwd=project)

    data = project / "data"
    (data / "nested").mkdir(parents=True)
    files = {
        data / "papers.parquet": os.urandom(50_000),
        data / "nested" / "notes.txt": b"Bailey's lemma and q-series\n",
    }
    for path, content in files.items():
        path.write_bytes(content)
    dvc("add", "data", cwd=project)
    dvc("push", cwd=project)

    stored = boto3.client("s3", endpoint_url=s3_endpoint).list_objects_v2(Bucket=bucket)
    assert stored["KeyCount"] >= len(files), "push left the bucket without the files"

    shutil.rmtree(data)
    shutil.rmtree(project / ".dvc" / "cache")
    dvc("pull", cwd=project)
    for path, content in files.items():
        assert path.read_bytes() == content, f"{path} differs after the round trip"


def test_pull_from_an_unreachable_s3_endpoint_fails_clearly(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    dvc("init", "-q", cwd=project)
    dvc("remote", "add", "-d", "s3", "s3://nowhere/store", cwd=project)
    # Port 9 (discard) on loopback: nothing listens there.
    dvc("remote", "modify", "s3", "endpointurl", "http://127.0.0.1:9", cwd=project)
    (project / "file.txt").write_text("x")
    dvc("add", "file.txt", cwd=project)
    result = subprocess.run(
        [sys.executable, "-m", "dvc", "push"],
        cwd=project,
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "DVC_NO_ANALYTICS": "1",
            "AWS_ACCESS_KEY_ID": "x",
            "AWS_SECRET_ACCESS_KEY": "x",
            "AWS_MAX_ATTEMPTS": "1",
        },
        check=False,
        timeout=120,
    )
    assert result.returncode != 0
    assert (
        "127.0.0.1:9" in result.stdout + result.stderr
        or "connect" in (result.stdout + result.stderr).lower()
    )


@pytest.mark.parametrize("remote", ["local", "s3"])
def test_project_remotes_are_configured(remote: str) -> None:
    config = (REPO / ".dvc" / "config").read_text()
    assert f'remote "{remote}"' in config
