"""``mathembed nightly`` and ``mathembed serve``: the nightly flow, once now or on its schedule;
``mathembed pools``: the Prefect work pools its deployments (infra/prefect.yaml) run on;
``mathembed report``: the night's decision and what each stage did; ``mathembed services``:
the real services a night talks to (moto S3, MLflow, Prefect), on 127.0.0.1."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from pipelines.common.cli import DEFAULT_ROOT, EXIT_CONFIG, RootOption, command_errors, fail

# The flows read params.yaml relative to --root (a deployment runs in its own folder); DVC
# reads only <root>/params.yaml, so that is the one value accepted.
FlowParamsOption = Annotated[
    str, typer.Option("--params", help="params.yaml, relative to --root (only that one).")
]
#: What to do when `mathembed serve` finds no Prefect server.
SERVE_NEEDS_A_SERVER = (
    "PREFECT_API_URL is not set, and schedules cannot run on Prefect's temporary server; "
    "start one (`make services`, then `source .services/env.sh`) or set PREFECT_API_URL "
    "to a running Prefect server"
)
#: What to do when `mathembed pools` finds no Prefect server.
POOLS_NEED_A_SERVER = (
    "PREFECT_API_URL is not set: work pools live on a Prefect server; start one "
    "(`make services` creates them itself) or set PREFECT_API_URL to the server to deploy to"
)


def nightly(
    force: Annotated[
        bool, typer.Option("--force", help="Retrain even when no paper and no knob changed.")
    ] = False,
    root: RootOption = DEFAULT_ROOT,
    params: FlowParamsOption = "params.yaml",
) -> None:
    """Run the nightly flow once now: ingest, data stages, validate, train, evaluate, promote, push.

    Uses the Prefect server at PREFECT_API_URL, or a temporary local one when unset.
    Ends with the run's state and, when it completed, `mathembed report` (the decision
    first). Exits 0 when the run completed (including "nothing to do"), 1 when a step failed;
    stopped by SIGTERM or Ctrl-C, it ends the step's processes, records the run as Crashed
    and exits 143 or 130 with one line naming the step.
    """
    from flows.orchestration import dvc_params_file
    from flows.stopping import STOPS, signal_number, sigterm_stops, stopped_line

    with command_errors("nightly"):
        dvc_params_file(root.resolve(), params)
    try:
        with sigterm_stops():
            _start_a_temporary_server_unless_there_is_one()
            completed = _run_the_night(force, root, params)
    except STOPS as stop:
        typer.echo(stopped_line("nightly-retrain", stop))
        raise typer.Exit(code=128 + signal_number(stop)) from None
    raise typer.Exit(code=0 if completed else 1)


def _run_the_night(force: bool, root: Path, params: str) -> bool:
    """Run the flow once; print its state and, when it decided something, the report."""
    from flows.nightly import nightly_retrain
    from flows.orchestration import SKIPPED
    from flows.report import render_report
    from pipelines.common.paths import Paths
    from pipelines.common.redact import redact

    state = nightly_retrain(force=force, root=str(root), params_path=params, return_state=True)
    typer.echo(redact(f"nightly-retrain: {state.name}: {state.message or ''}".rstrip(": ")))
    # A failed or skipped run decided nothing: the report would tell an older night's story.
    if state.is_completed() and state.name != SKIPPED:
        typer.echo(redact(render_report(Paths(root))))
    return state.is_completed()


def _start_a_temporary_server_unless_there_is_one() -> None:
    """Without PREFECT_API_URL, the flow runs on Prefect's temporary server: started here
    (Prefect then reuses it) in a session of its own, so that a Ctrl-C or SIGTERM to this
    command's process group leaves it up until the run is recorded, and guarded to end with
    this process in every case (:mod:`flows.temporary_server`)."""
    from prefect.settings import PREFECT_API_URL

    if PREFECT_API_URL.value():
        return
    from flows.temporary_server import start_temporary_server

    start_temporary_server()


def serve(root: RootOption = DEFAULT_ROOT, params: FlowParamsOption = "params.yaml") -> None:
    """Run the nightly flow on its cron schedule (params.yaml flow.schedule, flow.timezone).

    Creates the `nightly-retrain` deployment on the Prefect server at PREFECT_API_URL and
    runs its scheduled runs in this process until interrupted (Ctrl-C).
    """
    from prefect.schedules import Cron
    from prefect.settings import PREFECT_API_URL

    from flows.nightly import nightly_retrain
    from flows.orchestration import dvc_params_file
    from pipelines.common.config import load_params

    with command_errors("serve"):
        flow_params = load_params(dvc_params_file(root.resolve(), params)).flow
    if not PREFECT_API_URL.value():
        # Before "serving": on a temporary server the schedule would never run anything.
        fail("serve", SERVE_NEEDS_A_SERVER, EXIT_CONFIG)
    typer.echo(f"serving nightly-retrain on '{flow_params.schedule}' ({flow_params.timezone})")
    nightly_retrain.serve(
        name="nightly-retrain",
        schedules=[Cron(flow_params.schedule, timezone=flow_params.timezone)],
        parameters={"root": str(root.resolve()), "params_path": params},
    )


def pools(
    prefect_file: Annotated[
        Path | None,
        typer.Option(
            "--prefect-file",
            help="The deployments' file (default: infra/prefect.yaml of this checkout).",
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """Create the work pools the deployments of infra/prefect.yaml name (type process).

    On the Prefect server at PREFECT_API_URL; pools that exist are left as they are. Run it
    before `prefect deploy --prefect-file infra/prefect.yaml --all` (`make services` does).
    """
    from prefect.settings import PREFECT_API_URL

    from flows.pools import (
        PREFECT_FILE,
        PoolError,
        describe,
        ensure_work_pools,
        read_deployment_pools,
    )
    from pipelines.common.redact import redact

    if not PREFECT_API_URL.value():
        fail("pools", POOLS_NEED_A_SERVER, EXIT_CONFIG)
    try:
        names = read_deployment_pools(prefect_file or PREFECT_FILE)
    except PoolError as error:
        fail("pools", error, EXIT_CONFIG)
    try:
        results = ensure_work_pools(names)
    except Exception as error:  # noqa: BLE001 (httpx, Prefect: say which server refused)
        fail("pools", redact(f"the Prefect API at {PREFECT_API_URL.value()} failed: {error}"))
    typer.echo(describe(results))


def report(root: RootOption = DEFAULT_ROOT) -> None:
    """The decision and why, what each stage did, where the reports are.

    The first line is the decision (promoted, not promoted, or no decision yet and why);
    reads the metrics files under metrics/ and changes nothing.
    """
    from flows.report import render_report
    from pipelines.common.paths import Paths

    typer.echo(render_report(Paths(root)))


class Action(StrEnum):
    up = "up"
    down = "down"


def services(
    action: Annotated[Action, typer.Argument(help="up: start them; down: stop them.")],
    folder: Annotated[
        Path, typer.Option("--folder", help="State and logs of the services.")
    ] = Path(".services"),
    s3_port: Annotated[int | None, typer.Option("--s3-port", help="Default 9000.")] = None,
    mlflow_port: Annotated[int | None, typer.Option("--mlflow-port", help="Default 5000.")] = None,
    prefect_port: Annotated[
        int | None, typer.Option("--prefect-port", help="Default 4200.")
    ] = None,
) -> None:
    """Start or stop moto S3, an MLflow server and a Prefect server on 127.0.0.1.

    moto S3 holds the DVC remote 's3' and MLflow's artifacts. After `up`,
    `source <folder>/env.sh` points mathembed at them.
    """
    from flows.services import (
        DVC_BUCKET,
        MLFLOW_BUCKET,
        Ports,
        ServiceError,
        start,
        stop,
    )

    if action is Action.down:
        stopped = stop(folder)
        typer.echo(f"stopped: {', '.join(stopped) if stopped else 'nothing was running'}")
        return
    try:
        chosen = {"s3": s3_port, "mlflow": mlflow_port, "prefect": prefect_port}
        ports = Ports(**{name: port for name, port in chosen.items() if port is not None})
        started = start(folder, ports)
    except ServiceError as error:
        fail("services", error)
    typer.echo(f"S3 (moto)  {started.s3_url}  buckets {DVC_BUCKET}, {MLFLOW_BUCKET}")
    typer.echo(f"MLflow     {started.mlflow_url}")
    typer.echo(f"Prefect    {started.prefect_api_url.removesuffix('/api')}")
    if started.work_pools:
        typer.echo(f"work pools {', '.join(started.work_pools)} (for prefect deploy --all)")
    typer.echo(f"logs in {folder}/; use them with: source {folder}/env.sh")


def register(app: typer.Typer) -> None:
    app.command("nightly")(nightly)
    app.command("serve")(serve)
    app.command("pools")(pools)
    app.command("report")(report)
    # The name `make repro` and older notes use: the same report, not listed in --help.
    app.command("summary", hidden=True)(report)
    app.command("services")(services)
