"""``mathembed nightly`` and ``mathembed serve``: the nightly flow, once now or on its schedule;
``mathembed pools``: the Prefect work pools its deployments (infra/prefect.yaml) run on."""

from __future__ import annotations

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
    first). Exits 0 when the run completed (including "nothing to do"), 1 when a step failed.
    """
    from flows.nightly import nightly_retrain
    from flows.orchestration import SKIPPED, dvc_params_file
    from pipelines.common.paths import Paths
    from pipelines.common.redact import redact
    from pipelines.dev.report import render_report

    with command_errors("nightly"):
        dvc_params_file(root.resolve(), params)
    _end_the_temporary_server_with_this_process()
    state = nightly_retrain(force=force, root=str(root), params_path=params, return_state=True)
    typer.echo(redact(f"nightly-retrain: {state.name}: {state.message or ''}".rstrip(": ")))
    # A failed or skipped run decided nothing: the report would tell an older night's story.
    if state.is_completed() and state.name != SKIPPED:
        typer.echo(redact(render_report(Paths(root))))
    raise typer.Exit(code=0 if state.is_completed() else 1)


def _end_the_temporary_server_with_this_process() -> None:
    """Without PREFECT_API_URL, Prefect starts a temporary server: it must die with us.

    Prefect stops it at exit, but not when this process is killed; started here first
    (Prefect then reuses it), it is watched by a guard that ends it in every case.
    """
    from prefect.settings import PREFECT_API_URL

    if PREFECT_API_URL.value():
        return
    from prefect.server.api.server import SubprocessASGIServer

    from flows.processes import end_with_this_process

    server = SubprocessASGIServer()
    server.start()
    assert server.server_process is not None
    end_with_this_process([server.server_process.pid])


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

    from pipelines.common.redact import redact
    from pipelines.dev.pools import (
        PREFECT_FILE,
        PoolError,
        describe,
        ensure_work_pools,
        read_deployment_pools,
    )

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


def register(app: typer.Typer) -> None:
    app.command("nightly")(nightly)
    app.command("serve")(serve)
    app.command("pools")(pools)
