"""The nightly flow end to end against real local services (what ``make services`` starts).

One fresh project (the smallest sample mirror, a tiny BERT as the base model) and, on
127.0.0.1: moto's S3 server as the DVC remote and MLflow's artifact store, an MLflow
tracking server and a Prefect server. The tests run in order, each a night in the life
of the project:

1. the first run trains, promotes and pushes: the Prefect API says COMPLETED, MLflow has
   the run and ``@champion``, the decision is a table artifact and a webhook notice, and
   the data pulled back from S3 is identical;
2. new papers arrive while S3 and MLflow are down, and a second run is started at the
   same time: the second exits at once, the first fails naming both steps (log and
   webhook), and nothing is lost or half-registered;
3. the next run, services back, promotes and pushes what was left, without retraining;
4. a run with nothing new ends early (``mathembed nightly`` says so, then the decision
   line; MLflow records the night as "nothing to do"), and ``force`` retrains anyway;
5. a run killed during training takes its trainer with it, and the next run resumes from
   its checkpoint;
6. ``mathembed serve`` registers the cron deployment, and training can run on a served
   ``train-gpu`` deployment in another checkout that shares only S3 and the Prefect API.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from mlflow import MlflowClient
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    ArtifactFilter,
    ArtifactFilterKey,
    FlowRunFilter,
    FlowRunFilterId,
)
from prefect.client.schemas.objects import StateType
from prefect.client.schemas.sorting import FlowRunSort
from prefect.settings import PREFECT_API_URL, temporary_settings
from prefect.states import State
from projects import dvc, new_project, run, update_params
from webhook import Webhook, receiving_webhook

from flows import processes, services
from flows.nightly import nightly_retrain
from pipelines.common.config import load_params
from pipelines.common.io import read_json
from pipelines.common.locks import stage_lock

MODEL = "math-embed"
DEAD_URL = "http://127.0.0.1:9"  # the discard port: nothing listens there


@dataclass
class Stack:
    root: Path
    services: services.Services
    webhook: Webhook


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, tiny_bert_dir: Path) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("services")
    with (
        receiving_webhook() as webhook,
        services.running(folder) as running,
        pytest.MonkeyPatch.context() as patch,
    ):
        for key, value in running.client_environment().items():
            patch.setenv(key, value)
        patch.setenv("MATHEMBED_WEBHOOK_URL", webhook.url)
        root = new_project(
            tmp_path_factory.mktemp("nightly") / "project",
            {
                "train": {
                    "base_model": str(tiny_bert_dir),
                    "pooling": "mean",
                    "batch_size": 16,
                    # a passage is searched headed by its statement: room for both
                    "max_seq_length": 128,
                    "epochs": 1,
                    "max_steps": 80,
                    "learning_rate": 1.0e-3,
                },
                # A tiny random BERT learns in 80 steps from the name pairs alone; the
                # descriptions and masked names have their own tests.
                "pairs": {
                    "masked_name_pairs": False,
                    "max_citing_pairs": 0,
                    "slogan_pairs": False,
                    "held_out_statement_fraction": 0.0,
                },
                "validate": {"min_described_queries": 0},
                # ~20 synthetic queries cannot reach p < 0.01: this stack tests the plumbing
                # (the gate on meaning is tested on its own and by the demo).
                "promote": {
                    "server_timeout_seconds": 2.0,
                    "lock_timeout_seconds": 60.0,
                    "significance": False,
                    "gate": "named",
                },
                "flow": {
                    "dvc_remote": "s3",
                    "network_retries": 1,
                    "network_retry_delay_seconds": 0.1,
                },
            },
        )
        dvc("remote", "add", "s3", f"s3://{services.DVC_BUCKET}/store", cwd=root)
        dvc("remote", "modify", "s3", "endpointurl", running.s3_url, cwd=root)
        with temporary_settings({PREFECT_API_URL: running.prefect_api_url}):
            yield Stack(root, running, webhook)


def run_nightly(stack: Stack, **parameters: Any) -> State[Any]:
    state = nightly_retrain(root=str(stack.root), return_state=True, **parameters)
    assert isinstance(state, State)
    return state


def api_view(state: State[Any] | None) -> tuple[StateType, str, set[str]]:
    """The flow run as the Prefect server recorded it: state type, name, its task names.

    ``None``: the latest flow run (one a subprocess ran).
    """
    if state is None:
        with get_client(sync_client=True) as client:
            (latest,) = client.read_flow_runs(sort=FlowRunSort.START_TIME_DESC, limit=1)
        flow_run_id = latest.id
    else:
        assert state.state_details.flow_run_id is not None
        flow_run_id = state.state_details.flow_run_id
    with get_client(sync_client=True) as client:
        flow_run = client.read_flow_run(flow_run_id)
        task_runs = client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
        )
    assert flow_run.state is not None
    names = {task_run.name.rsplit("-", 1)[0] for task_run in task_runs}
    return flow_run.state.type, flow_run.state.name, names


def registry(stack: Stack) -> MlflowClient:
    return MlflowClient(stack.services.mlflow_url)


def promotion_table(state: State[Any]) -> list[dict[str, Any]]:
    """The ``promotion`` table artifact the run left."""
    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["promotion"]))
        )
    (table,) = [a for a in artifacts if a.flow_run_id == state.state_details.flow_run_id]
    assert table.type == "table"
    assert isinstance(table.data, str)
    rows: list[dict[str, Any]] = json.loads(table.data)
    return rows


def nights(stack: Stack, outcome: str) -> list[Any]:
    """The MLflow runs that record a night with ``outcome``."""
    experiment = registry(stack).get_experiment_by_name(
        load_params(stack.root / "params.yaml").promote.experiment
    )
    assert experiment is not None
    return registry(stack).search_runs(
        [experiment.experiment_id], filter_string=f"tags.`mathembed.outcome` = '{outcome}'"
    )


def version_numbers(stack: Stack) -> list[int]:
    return sorted(int(v.version) for v in registry(stack).search_model_versions(f"name='{MODEL}'"))


def tree_digest(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def test_first_run_trains_promotes_and_pushes(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    state = run_nightly(stack)
    assert state.is_completed(), state.message
    state_type, _name, tasks = api_view(state)
    assert state_type == StateType.COMPLETED
    assert {"ingest", "plan", "data-stages", "validate", "train", "evaluate", "promote"} <= tasks
    assert "dvc-push" in tasks

    champion = registry(stack).get_model_version_by_alias(MODEL, "champion")
    assert champion.version == "1"
    champion_run = registry(stack).get_run(champion.run_id)
    assert champion_run.info.status == "FINISHED" and champion_run.data.metrics
    promotion = read_json(stack.root / "metrics" / "promotion.json")
    assert promotion["decision"] == "promoted"
    assert promotion["tracking_uri"] == stack.services.mlflow_url
    # The gate saw mathematics the night never trained on: the first foreign corpus the
    # project ships (the synthetic papers hold none of the blueprints'), beside its passages.
    asked = read_json(stack.root / "metrics" / "eval.json")["transfer"]["foreign_corpus"]
    assert asked["folder"] == "corpora/blueprints-eval"
    assert promotion["sets"]["transfer_corpus"]["queries"] > 100
    # Told: a table in Prefect, a notice on the webhook; the deciding set's rows first.
    rows = promotion_table(state)
    decided = promotion["decided_on"]
    assert [row["metric"] for row in rows[:2]] == ["MRR@10", "NDCG@10"]
    assert [row["query set"] for row in rows[:2]] == [decided, decided]
    assert [row["query set"] for row in rows] == [
        name for name in promotion["sets"] for _metric in ("MRR@10", "NDCG@10")
    ]
    assert {row["decision"] for row in rows} == {"promoted"}
    assert rows[0]["candidate"] == promotion["sets"][decided]["candidate"]["mrr@10"]
    assert rows[0]["base"] is not None and rows[0]["champion"] is None  # no champion yet
    (notice,) = stack.webhook.reports
    assert (notice["outcome"], notice["version"]) == ("promoted", "1")
    assert notice["message"].startswith("Promoted")

    # Pushed to S3 and pulled back identical into a checkout without data or cache.
    clone = tmp_path_factory.mktemp("clone")
    run("git", "init", "-q", cwd=clone)
    for name in ("dvc.yaml", "dvc.lock", "params.yaml"):
        shutil.copy(stack.root / name, clone / name)
    shutil.copytree(
        stack.root / ".dvc", clone / ".dvc", ignore=shutil.ignore_patterns("cache", "tmp")
    )
    dvc("pull", "-r", "s3", "validate", "train", cwd=clone)
    for output in ("data/validated", "models/candidate", "reports/data_quality"):
        assert tree_digest(clone / output) == tree_digest(stack.root / output), output


def test_services_down_and_a_concurrent_run_lose_nothing(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    versions_before = version_numbers(stack)
    champion_before = registry(stack).get_model_version_by_alias(MODEL, "champion").version
    candidate_before = read_json(stack.root / "models" / "candidate" / "mathembed.json")

    update_params(stack.root, {"sample": {"n_papers": 84}})  # new papers on the mirror
    dvc("remote", "modify", "--local", "s3", "endpointurl", DEAD_URL, cwd=stack.root)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", DEAD_URL)
    stack.webhook.reports.clear()

    first = subprocess.Popen(
        [sys.executable, "-m", "mathembed", "nightly", "--root", str(stack.root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lock = stack.root / "data" / "nightly.lock"
    deadline = time.monotonic() + 120
    while not (lock.is_file() and lock.read_text().startswith("pid")):
        assert first.poll() is None and time.monotonic() < deadline, "first run never locked"
        time.sleep(0.2)
    second = run_nightly(stack)
    output, _ = first.communicate(timeout=900)

    assert second.is_completed() and second.name == "Skipped"
    assert "another nightly run is in progress" in (second.message or "")
    assert first.returncode == 1, output
    assert "nightly-retrain: Failed" in output
    assert "step 'promote and dvc-push' failed" in output
    assert [report["step"] for report in stack.webhook.reports] == ["promote and dvc-push"]

    # Nothing half-done: the registry is untouched, the new candidate and data are here.
    assert version_numbers(stack) == versions_before
    assert registry(stack).get_model_version_by_alias(MODEL, "champion").version == champion_before
    candidate = read_json(stack.root / "models" / "candidate" / "mathembed.json")
    assert candidate and candidate != candidate_before
    assert "Data and pipelines are up to date" in dvc("status", cwd=stack.root)


def test_next_run_promotes_and_pushes_what_was_left(stack: Stack) -> None:
    versions_before = version_numbers(stack)
    dvc("remote", "modify", "--local", "--unset", "s3", "endpointurl", cwd=stack.root)
    stack.webhook.reports.clear()
    state = run_nightly(stack)
    assert state.is_completed(), state.message
    _type, _name, tasks = api_view(state)
    assert {"promote", "dvc-push"} <= tasks and "train" not in tasks  # no retraining
    assert version_numbers(stack) == [*versions_before, versions_before[-1] + 1]
    assert read_json(stack.root / "metrics" / "promotion.json")["tracking_uri"] == (
        stack.services.mlflow_url
    )
    assert "in sync" in dvc("status", "--cloud", "-r", "s3", cwd=stack.root)
    (notice,) = stack.webhook.reports  # promoted or not, the decision is told
    promotion = read_json(stack.root / "metrics" / "promotion.json")
    assert notice["outcome"] == promotion["decision"] in ("promoted", "not promoted")
    assert notice["version"] == str(versions_before[-1] + 1) and notice["reason"]


def test_a_run_with_nothing_new_ends_early(stack: Stack) -> None:
    versions_before = version_numbers(stack)
    stack.webhook.reports.clear()
    night = subprocess.run(
        [sys.executable, "-m", "mathembed", "nightly", "--root", str(stack.root)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert night.returncode == 0, night.stdout + night.stderr
    lines = night.stdout.splitlines()
    at = next(n for n, line in enumerate(lines) if line.startswith("nightly-retrain: "))
    assert lines[at].startswith("nightly-retrain: Nothing to do: no new papers")
    assert lines[at + 1].startswith(("Promoted", "Not promoted"))  # the last decision
    assert "What ran:" in lines[at + 2 :]  # then the rest of `mathembed report`
    state_type, name, tasks = api_view(None)
    assert state_type == StateType.COMPLETED and name == "Nothing to do"
    assert tasks == {"ingest", "plan"}
    assert version_numbers(stack) == versions_before
    (record,) = nights(stack, "nothing to do")
    assert record.data.tags["mathembed.reason"].startswith("no new papers")
    assert stack.webhook.reports == []  # a quiet night sends nothing


def test_force_retrains_when_nothing_changed(stack: Stack) -> None:
    trained_before = read_json(stack.root / "metrics" / "train.json")["trained_at"]
    state = run_nightly(stack, force=True)
    assert state.is_completed(), state.message
    _type, _name, tasks = api_view(state)
    assert {"train", "evaluate", "promote"} <= tasks
    assert read_json(stack.root / "metrics" / "train.json")["trained_at"] != trained_before


def test_a_warm_started_night_starts_from_the_champion_on_the_server(stack: Stack) -> None:
    champion = registry(stack).get_model_version_by_alias(MODEL, "champion")
    init_before = yaml.safe_load((stack.root / "params.yaml").read_text())["train"]["init"]
    update_params(stack.root, {"train": {"init": "champion"}})
    try:
        state = run_nightly(stack, force=True)
        assert state.is_completed(), state.message
        init = read_json(stack.root / "metrics" / "train.json")["init"]
        assert (init["asked"], init["started_from"]) == ("champion", "champion")
        assert init["version"] == champion.version
        assert init["fingerprint"] == champion.tags["fingerprint"]
        assert init["new_pairs"] == 0  # the same papers: every pair is trained on again
        card = (stack.root / "models" / "candidate" / "README.md").read_text(encoding="utf-8")
        assert f"starting from {MODEL} v{champion.version} (@champion)" in card
    finally:
        update_params(stack.root, {"train": {"init": init_before}})


def test_a_run_killed_during_training_resumes_on_the_next(stack: Stack) -> None:
    # Longer training (whole epochs, checkpoint after each) so there is a moment to kill.
    update_params(stack.root, {"train": {"max_steps": -1, "epochs": 4}})
    checkpoints = stack.root / "models" / "checkpoints"
    killed = subprocess.Popen(
        [sys.executable, "-m", "mathembed", "nightly", "--root", str(stack.root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 600
    while not any(checkpoints.glob("*/trainer_state.json")):
        assert killed.poll() is None, "training finished before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.1)
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait(timeout=60)
    # The trainer (its own process group, under dvc) died with the flow: its stage lock is
    # free within the SIGTERM grace, so the next run cannot overlap an orphan.
    with stage_lock(stack.root, "test", wait_seconds=processes.GRACE_SECONDS + 10):
        pass

    state = run_nightly(stack)
    assert state.is_completed(), state.message
    train = read_json(stack.root / "metrics" / "train.json")
    assert train["resumed_from_step"] and train["resumed_from_step"] > 0
    assert train["steps_this_run"] < train["steps"]


def _default_sigint() -> None:
    # A child of a test run started as a background job inherits SIGINT ignored; serve
    # must still stop on Ctrl-C.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def serving(command: list[str], cwd: Path | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """A serving process, stopped with Ctrl-C at the end (killed if it does not stop)."""
    process = subprocess.Popen(
        command,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=_default_sigint,
    )
    try:
        yield process
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise


def test_serve_registers_the_nightly_deployment_on_its_cron_schedule(stack: Stack) -> None:
    with serving([sys.executable, "-m", "mathembed", "serve", "--root", str(stack.root)]) as server:
        deployment = None
        deadline = time.monotonic() + 120
        while deployment is None:
            assert server.poll() is None, "mathembed serve exited"
            assert time.monotonic() < deadline, "no deployment appeared"
            time.sleep(0.5)
            with get_client(sync_client=True) as client:
                deployments = client.read_deployments()
            deployment = next((d for d in deployments if d.name == "nightly-retrain"), None)
    schedule = deployment.schedules[0].schedule
    assert (getattr(schedule, "cron", None), getattr(schedule, "timezone", None)) == (
        "0 2 * * *",
        "UTC",
    )
    assert deployment.parameters["root"] == str(stack.root.resolve())


def test_training_on_the_gpu_pool_shares_only_the_remote_stores(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory, tiny_bert_dir: Path
) -> None:
    # The "GPU worker": another checkout that serves the train-gpu deployment. It shares
    # no files with the nightly run's project, only S3 (DVC) and the Prefect API.
    worker = new_project(
        tmp_path_factory.mktemp("gpu-worker") / "project",
        {"train": yaml.safe_load((stack.root / "params.yaml").read_text())["train"]},
    )
    dvc("remote", "add", "s3", f"s3://{services.DVC_BUCKET}/store", cwd=worker)
    dvc("remote", "modify", "s3", "endpointurl", stack.services.s3_url, cwd=worker)
    update_params(stack.root, {"flow": {"gpu_deployment": "train-gpu/train-gpu"}})
    serve_gpu = "from flows.train_gpu import train_gpu; train_gpu.serve(name='train-gpu')"
    try:
        with serving([sys.executable, "-c", serve_gpu], cwd=worker):
            state = run_nightly(stack, force=True)
    finally:
        update_params(stack.root, {"flow": {"gpu_deployment": ""}})
    assert state.is_completed(), state.message
    _type, _name, tasks = api_view(state)
    assert "train-on-gpu-pool" in tasks and "train" not in tasks
    with get_client(sync_client=True) as client:
        gpu_runs = [run for run in client.read_flow_runs() if run.deployment_id is not None]
    assert [run.state.type for run in gpu_runs if run.state] == [StateType.COMPLETED]
    # The candidate came over S3: identical to what the worker trained.
    assert tree_digest(stack.root / "models" / "candidate") == tree_digest(
        worker / "models" / "candidate"
    )
    assert read_json(stack.root / "metrics" / "train.json") == read_json(
        worker / "metrics" / "train.json"
    )
