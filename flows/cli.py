"""``mathembed nightly`` and ``mathembed serve``: the nightly flow, once now or on its schedule."""

from __future__ import annotations

from typing import Annotated

import typer

from pipelines.common.cli import DEFAULT_ROOT, RootOption, command_errors

# The flows read params.yaml relative to --root (a deployment runs in its own folder).
FlowParamsOption = Annotated[str, typer.Option("--params", help="params.yaml, relative to --root.")]


def nightly(
    force: Annotated[
        bool, typer.Option("--force", help="Retrain even when no paper and no knob changed.")
    ] = False,
    root: RootOption = DEFAULT_ROOT,
    params: FlowParamsOption = "params.yaml",
) -> None:
    """Run the nightly flow once now: ingest, data stages, validate, train, evaluate, promote, push.

    Uses the Prefect server at PREFECT_API_URL, or a temporary local one when unset.
    Exits 0 when the run completed (including "nothing to do"), 1 when a step failed.
    """
    from flows.nightly import nightly_retrain

    state = nightly_retrain(force=force, root=str(root), params_path=params, return_state=True)
    typer.echo(f"nightly-retrain: {state.name}: {state.message or ''}".rstrip(": "))
    raise typer.Exit(code=0 if state.is_completed() else 1)


def serve(root: RootOption = DEFAULT_ROOT, params: FlowParamsOption = "params.yaml") -> None:
    """Run the nightly flow on its cron schedule (params.yaml flow.schedule, flow.timezone).

    Creates the `nightly-retrain` deployment on the Prefect server at PREFECT_API_URL and
    runs its scheduled runs in this process until interrupted (Ctrl-C).
    """
    from prefect.schedules import Cron

    from flows.nightly import nightly_retrain
    from pipelines.common.config import load_params

    with command_errors("serve"):
        flow_params = load_params(root / params).flow
    typer.echo(f"serving nightly-retrain on '{flow_params.schedule}' ({flow_params.timezone})")
    nightly_retrain.serve(
        name="nightly-retrain",
        schedules=[Cron(flow_params.schedule, timezone=flow_params.timezone)],
        parameters={"root": str(root.resolve()), "params_path": params},
    )


def register(app: typer.Typer) -> None:
    app.command("nightly")(nightly)
    app.command("serve")(serve)
