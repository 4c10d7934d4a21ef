"""A stuck step fails the night with a reason and leaves nothing running (issue 14, finding 5).

Every step of the nightly flow gets its time limit from params.yaml (flow.task_timeout_seconds,
flow.train_timeout_seconds for training), and the ``dvc`` command a step runs is bounded by
the same limit, so its whole process group ends with it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from prefect import Task

from flows import nightly, processes
from flows import orchestration as orch
from pipelines.common.config import FlowParams, Params

TASK_LIMIT, TRAIN_LIMIT = 11.0, 22.0


def limited_params(gpu_deployment: str) -> Params:
    flow = replace(
        FlowParams(),
        task_timeout_seconds=TASK_LIMIT,
        train_timeout_seconds=TRAIN_LIMIT,
        gpu_deployment=gpu_deployment,
    )
    return Params(flow=flow)


@pytest.mark.parametrize("gpu_deployment", ["", "train-gpu/train-gpu"])
def test_every_nightly_step_runs_with_its_limit_from_params_yaml(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, gpu_deployment: str
) -> None:
    params = limited_params(gpu_deployment)
    limits: dict[str, float | None] = {}

    def record(step: str, function: Task[..., Any], *args: Any, **kwargs: Any) -> Any:
        limits[step] = function.timeout_seconds
        if step == "plan":
            return orch.NightlyWork(True, True, True, "stale stages: ingest")
        return {}

    monkeypatch.setattr(nightly, "run_step", record)
    nightly._nightly(tmp_path, params, force=False)
    assert limits == {
        "ingest": TASK_LIMIT,
        "plan": TASK_LIMIT,
        "data-stages": TASK_LIMIT,
        "validate": TASK_LIMIT,
        "train": TRAIN_LIMIT,
        "evaluate": TASK_LIMIT,
        "promote": TASK_LIMIT,
        "dvc-push": TASK_LIMIT,
    }


def test_the_embedded_limits_are_sane() -> None:
    flow = FlowParams()
    assert 0 < flow.task_timeout_seconds <= flow.train_timeout_seconds
    assert orch.step_timeout_seconds("train", flow) == flow.train_timeout_seconds
    assert orch.step_timeout_seconds("validate", flow) == flow.task_timeout_seconds


def running(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return "\tZ" not in next(line for line in status.splitlines() if line.startswith("State:"))


@pytest.fixture
def hanging_project(tmp_path: Path) -> Path:
    """A DVC project whose one stage starts a worker and hangs, as a stuck stage would."""
    subprocess.run(
        [sys.executable, "-m", "dvc", "init", "--no-scm", "-q"], cwd=tmp_path, check=True
    )
    (tmp_path / "hang.py").write_text(
        "import os, subprocess, sys, time\n"
        "worker = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        "print('family', os.getpid(), worker.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    (tmp_path / "dvc.yaml").write_text(
        f"stages:\n  hang:\n    cmd: {sys.executable} hang.py\n    deps: [hang.py]\n"
    )
    return tmp_path


def test_a_stuck_dvc_stage_fails_with_the_reason_and_ends_its_processes(
    hanging_project: Path,
) -> None:
    lines: list[str] = []
    limit = 4.0  # dvc itself needs a second or two to start on a busy machine
    began = time.monotonic()
    with pytest.raises(orch.DvcTimeoutError) as raised:
        orch.run_dvc(["repro", "hang"], hanging_project, log=lines.append, timeout_seconds=limit)
    took = time.monotonic() - began
    message = str(raised.value)
    assert message.startswith("`dvc repro hang` ran longer than its 4 s limit")
    assert "flow.task_timeout_seconds" in message
    assert took < limit + processes.GRACE_SECONDS + 5
    family = next(line for line in lines if line.startswith("family")).split()[1:]
    deadline = time.monotonic() + processes.GRACE_SECONDS + 5
    while any(running(int(pid)) for pid in family):
        assert time.monotonic() < deadline, f"left running: {family}"
        time.sleep(0.05)
    assert not orch.worth_retrying(raised.value)  # a stuck step is not retried either
    orch.run_dvc(["status"], hanging_project, log=lines.append)  # no stale DVC lock left
    print(f"failed after {took:.2f} s, its processes gone")


def test_a_run_without_a_limit_is_unchanged(tmp_path: Path) -> None:
    finished = processes.run_in_group(
        [sys.executable, "-c", "print('done')"], tmp_path, dict(os.environ), lambda _line: None
    )
    assert (finished.code, finished.lines, finished.timed_out) == (0, ["done"], False)
