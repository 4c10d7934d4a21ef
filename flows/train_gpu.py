"""The GPU training flow: the ``train-gpu`` deployment on the GPU work pool.

It shares nothing with the nightly flow's machine but the remote stores: it receives the
caller's ``dvc.lock`` as a parameter, pulls the validated data from the DVC remote, trains
(``dvc repro --single-item train``; bf16/fp16 autocast on CUDA and one DDP process per GPU
the pod gets, ``train.processes: auto``, come from pipelines.train), pushes the candidate
back to the remote and returns the updated ``dvc.lock`` text, which the caller uses to pull
the candidate, with the training metrics (``metrics/train.json`` is kept in git, not in
the remote). The result is persisted so that ``run_deployment``
can read it (configure shared result storage, e.g. an S3 block, when the pools run on
different machines).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, task

from flows import orchestration as orch
from flows.hooks import report_failure, run_step
from flows.redaction import redact_flow_logs
from flows.steps import bounded, dvc, retry_unless_permanent
from pipelines.common import io
from pipelines.common.config import load_params
from pipelines.common.paths import Paths


@task(
    name="pull-validated-data",
    retries=2,
    retry_delay_seconds=30,
    retry_condition_fn=retry_unless_permanent,
)
def pull_validated(root: Path, dvc_lock: str, remote: str) -> None:
    Paths(root).dvc_lock.write_text(dvc_lock, encoding="utf-8")
    dvc(orch.pull_arguments(remote, ["validate"]), root)


@task(name="train")
def train(root: Path) -> None:
    dvc(["repro", "--single-item", "train"], root)


@task(
    name="push-candidate",
    retries=2,
    retry_delay_seconds=30,
    retry_condition_fn=retry_unless_permanent,
)
def push_candidate(root: Path, remote: str) -> dict[str, Any]:
    dvc(orch.push_arguments(remote, ["train"]), root)
    return {
        "dvc_lock": Paths(root).dvc_lock.read_text(encoding="utf-8"),
        "train_metrics": io.read_json_object(Paths(root).metric_file("train")),
    }


@flow(
    name="train-gpu",
    persist_result=True,
    on_failure=[report_failure],
    on_crashed=[report_failure],
)
def train_gpu(dvc_lock: str, remote: str = "", root: str = ".") -> dict[str, Any]:
    """Train the candidate for the data ``dvc_lock`` describes.

    Returns ``{"dvc_lock": <the new dvc.lock text>, "train_metrics": <metrics/train.json>}``.
    """
    redact_flow_logs()
    root_path = Path(root).resolve()
    # The time limits come from this checkout's params.yaml, as the stages' settings do.
    flow_params = run_step(
        "load-params", lambda: load_params(orch.dvc_params_file(root_path, "params.yaml"))
    ).flow
    pull = bounded(pull_validated, flow_params)
    run_step("pull-validated-data", pull, root_path, dvc_lock, remote)
    run_step("train", bounded(train, flow_params), root_path)
    return run_step("push-candidate", bounded(push_candidate, flow_params), root_path, remote)
