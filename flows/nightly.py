"""The nightly retrain flow: ingest → data stages → validate → train → evaluate → promote → push.

Orchestration only. Each step is a named Prefect task that runs a DVC stage (so
``dvc repro`` semantics decide what reruns) or calls the promotion function the
``mathembed promote`` command uses. Every step has a time limit from params.yaml
(flow.task_timeout_seconds, flow.train_timeout_seconds) and ends the processes it started
with it. Network steps retry with backoff (not a missing DVC project, not a timeout);
training does not (a failed training run is a finding, not a hiccup; a killed one resumes
from its checkpoint on the next run).

Every night is told: the promotion decision becomes the table artifact ``promotion`` and,
with ``flow.webhook_env`` set, a notice to that webhook (promoted or not, with the reason;
failures go there too, from :mod:`flows.hooks`); a night with nothing to do or that failed
leaves its own MLflow run (:func:`pipelines.promote.nights.record_night`) beside the
promotions'; the run ends by logging the decision line of ``mathembed report``.

Run it once with ``mathembed nightly [--force]``, on its schedule with ``mathembed serve``,
or as the ``nightly-retrain`` deployment of ``infra/prefect.yaml``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from prefect import Task, flow, get_run_logger, task
from prefect.artifacts import create_table_artifact
from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import FlowRun
from prefect.concurrency.sync import concurrency
from prefect.context import FlowRunContext
from prefect.deployments import run_deployment
from prefect.states import Completed, State
from prefect.tasks import exponential_backoff

from flows import orchestration as orch
from flows.hooks import StepFailed, post_webhook, report_failed_night, run_step
from flows.outcome import outcome_notice, promotion_table
from flows.redaction import redact_flow_logs
from flows.report import render_report
from flows.steps import bounded, dvc, log, retry_unless_permanent
from pipelines.common import io
from pipelines.common.config import FlowParams, Params, load_params
from pipelines.common.paths import Paths
from pipelines.common.redact import redact
from pipelines.promote.formatting import format_promotion
from pipelines.promote.headline import NOTHING_TO_DO
from pipelines.promote.nights import record_night
from pipelines.promote.promotion import PromotionResult, promote_candidate
from pipelines.registry.metric_records import PromotionRecord
from pipelines.registry.mlflow_registry import RegistryError, tracking_uri
from pipelines.registry.reporting import NOT_PROMOTED, PROMOTED, promotion_file

P = ParamSpec("P")
R = TypeVar("R")


def _retry_on_registry_errors(_task: Any, _task_run: Any, state: State[Any]) -> bool:
    """Retry promotion only when MLflow was unreachable, not when the candidate was refused."""
    try:
        state.result()
    except RegistryError:
        return True
    except Exception:
        return False
    return False


@task(name="ingest")
def ingest(root: Path) -> dict[str, Any]:
    """Harvest new papers. Forced: DVC cannot know that arXiv has new papers."""
    dvc(["repro", "sample"], root)
    dvc(["repro", "--force", "--single-item", "ingest"], root)
    return io.read_json_object(Paths(root).metric_file("ingest"))


@task(name="plan")
def plan(root: Path, params: Params, force: bool) -> orch.NightlyWork:
    paths = Paths(root)
    work = orch.nightly_work(
        stale=orch.stale_stages(root, "evaluate", log=log),
        candidate_fingerprint=orch.candidate_fingerprint(paths.candidate),
        decided_fingerprint=orch.decided_fingerprint(promotion_file(paths), tracking_uri(paths)),
        outputs_digest=orch.cached_outputs_digest(root),
        pushed_outputs_digest=orch.pushed_outputs_digest(paths, params.flow.dvc_remote),
        force=force,
        deferred=orch.deferred_stages(paths),
    )
    log(work.reason)
    return work


@task(name="data-stages")
def data_stages(root: Path, rerun: tuple[str, ...] = ()) -> None:
    """prepare → graph → pairs (each reruns only when its inputs changed; a stage in
    ``rerun``, which left papers for this night, runs whatever changed)."""
    for stage in rerun:
        dvc(["repro", "--force", "--single-item", stage], root)
    dvc(["repro", *orch.DATA_STAGES], root)


@task(name="validate")
def validate(root: Path) -> dict[str, Any]:
    """The blocking gate: a failure stops the flow here, before training."""
    dvc(["repro", "validate"], root)
    return io.read_json_object(Paths(root).metric_file("data_quality"))


@task(name="train")
def train_in_place(root: Path, force: bool) -> dict[str, Any]:
    # Forced: only train itself; the stages before it just ran (or were up to date).
    forced = ["--force", "--single-item"] if force else []
    dvc(["repro", *forced, "train"], root)
    return io.read_json_object(Paths(root).metric_file("train"))


@task(name="train-on-gpu-pool")
def train_on_gpu_pool(root: Path, params: Params) -> dict[str, Any]:
    """Hand training to the GPU deployment; the two sides share only the remote stores.

    The validated data goes to the DVC remote, the GPU flow gets this dvc.lock, pulls,
    trains and pushes the candidate, and returns its dvc.lock and training metrics;
    pulling ``train`` with that lock brings the candidate here.
    """
    remote = params.flow.dvc_remote
    dvc(orch.push_arguments(remote, ["validate"]), root)
    lock_file = Paths(root).dvc_lock
    log(f"running deployment {params.flow.gpu_deployment}")
    flow_run = run_deployment(
        name=params.flow.gpu_deployment,
        parameters={"dvc_lock": lock_file.read_text(encoding="utf-8"), "remote": remote},
        timeout=params.flow.train_timeout_seconds,
    )
    assert isinstance(flow_run, FlowRun)  # called from sync code: not a coroutine
    state = flow_run.state
    if state is None or not state.is_completed():
        message = state.message if state else "no state"
        raise RuntimeError(f"GPU training run {flow_run.name} did not complete: {message}")
    trained = state.result()
    lock_file.write_text(trained["dvc_lock"], encoding="utf-8")
    io.write_json(Paths(root).metric_file("train"), trained["train_metrics"])
    dvc(orch.pull_arguments(remote, ["train"]), root)
    return dict(trained["train_metrics"])


@task(name="evaluate")
def evaluate(root: Path) -> dict[str, Any]:
    dvc(["repro", "evaluate"], root)
    return io.read_json_object(Paths(root).metric_file("eval"))


@task(name="promote", retry_condition_fn=_retry_on_registry_errors)
def promote(root: Path, params: Params) -> dict[str, Any]:
    """Champion/challenger in MLflow, one promotion at a time across all workers.

    The Prefect concurrency limit serialises promotions of runs on different machines;
    the file lock inside ``promote_candidate`` does it for runs sharing a root.
    """
    limit = params.flow.promotion_concurrency_limit
    with get_client(sync_client=True) as client:
        client.upsert_global_concurrency_limit_by_name(limit, 1)
    with concurrency(limit, occupy=1, timeout_seconds=params.promote.lock_timeout_seconds):
        result = promote_candidate(params, Paths(root))
    record_decided_before(root, params, result)
    report = redact(format_promotion(result))
    log(report)
    promotion = result.as_json()
    create_table_artifact(
        key="promotion",
        table=promotion_table(result.record),
        description=report.splitlines()[0],
    )
    return promotion


def record_decided_before(root: Path, params: Params, result: PromotionResult) -> str | None:
    """A night whose candidate was decided before logs no promotion run: its own record
    (the MLflow run id), so every night is listed with its outcome."""
    if not result.already_registered:
        return None
    outcome = PROMOTED if result.decision.promote else NOT_PROMOTED
    return record_night(Paths(root), params, outcome, f"decided before: {result.decision.reason}")


@task(name="dvc-push")
def push(root: Path, remote: str) -> None:
    digest = orch.cached_outputs_digest(root)
    dvc(orch.push_arguments(remote), root)
    orch.record_push(Paths(root), remote, digest)


@flow(
    name="nightly-retrain",
    on_failure=[report_failed_night],
    on_crashed=[report_failed_night],
    log_prints=True,
)
def nightly_retrain(
    force: bool = False, root: str = ".", params_path: str = "params.yaml"
) -> State[Any] | dict[str, Any]:
    """Bring the champion up to date with the papers published since the last run.

    ``force`` retrains even when nothing changed. ``params_path`` is relative to ``root``.
    """
    redact_flow_logs()
    root_path = Path(root).resolve()
    params = run_step(
        "load-params", lambda: load_params(orch.dvc_params_file(root_path, params_path))
    )
    try:
        with orch.nightly_lock(root_path):
            ended = _nightly(root_path, params, force)
    except orch.NightlyBusyError as busy:
        get_run_logger().warning(str(busy))
        return Completed(name=orch.SKIPPED, message=str(busy))
    log(decision_line(root_path))
    return ended


def _with_network_retries(step: Task[P, R], flow_params: FlowParams) -> Task[P, R]:
    """Network steps retry with backoff as params.yaml says; training never retries.

    A step with its own retry condition (promote) keeps it; the others retry anything but
    what a retry cannot fix.
    """
    return bounded(step, flow_params).with_options(
        retries=flow_params.network_retries,
        retry_delay_seconds=exponential_backoff(flow_params.network_retry_delay_seconds),
        retry_jitter_factor=0.5,
        retry_condition_fn=step.retry_condition_fn or retry_unless_permanent,
    )


def _nightly(root: Path, params: Params, force: bool) -> State[Any] | dict[str, Any]:
    ingested = run_step("ingest", _with_network_retries(ingest, params.flow), root)
    work = run_step("plan", bounded(plan, params.flow), root, params, force)
    summary: dict[str, Any] = {"ingest": ingested, "work": work.reason}
    if work.nothing_to_do:
        record_night(Paths(root), params, NOTHING_TO_DO, work.reason)
        return Completed(name="Nothing to do", message=work.reason, data=summary)
    if work.reproduce:
        run_step("data-stages", bounded(data_stages, params.flow), root, work.rerun)
        summary["data_quality"] = run_step("validate", bounded(validate, params.flow), root)
        if params.flow.gpu_deployment:
            train = bounded(train_on_gpu_pool, params.flow)
            summary["train"] = run_step("train", train, root, params)
        else:
            summary["train"] = run_step("train", bounded(train_in_place, params.flow), root, force)
        run_step("evaluate", bounded(evaluate, params.flow), root)
    # Promotion and push are independent: the data is pushed even when MLflow is down,
    # and the run fails afterwards, naming every step that failed.
    failures: list[StepFailed] = []
    if work.promote:
        try:
            summary["promotion"] = run_step(
                "promote", _with_network_retries(promote, params.flow), root, params
            )
        except StepFailed as failure:
            failures.append(failure)
        else:
            _announce(root, params.flow, summary["promotion"])
    if work.push or work.reproduce:
        try:
            run_step(
                "dvc-push", _with_network_retries(push, params.flow), root, params.flow.dvc_remote
            )
        except StepFailed as failure:
            failures.append(failure)
    if failures:
        raise StepFailed.combine(failures)
    return summary


def decision_line(root: Path) -> str:
    """The first line of ``mathembed report``: what was decided, against what, and why."""
    return render_report(Paths(root)).splitlines()[0]


def _announce(root: Path, flow_params: FlowParams, promotion: dict[str, Any]) -> None:
    """Tell the webhook (when ``flow.webhook_env`` names a set variable) what promote decided."""
    url = os.environ.get(flow_params.webhook_env, "").strip()
    context = FlowRunContext.get()
    if not url or context is None or context.flow_run is None:
        return
    flow_run = context.flow_run
    notice = outcome_notice(
        "nightly-retrain",
        flow_run.name,
        str(flow_run.id),
        PromotionRecord.from_json(promotion),
        decision_line(root),
    )
    post_webhook(url, notice, get_run_logger())
