"""``mathembed report`` and ``mathembed services``: the developer's view of a run and the
local real services (moto S3, MLflow, Prefect on 127.0.0.1)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from pipelines.common.cli import DEFAULT_ROOT, RootOption, fail


def report(root: RootOption = DEFAULT_ROOT) -> None:
    """The decision and why, what each stage did, where the reports are.

    The first line is the decision (promoted, not promoted, or no decision yet and why);
    reads the metrics files under metrics/ and changes nothing.
    """
    from pipelines.common.paths import Paths
    from pipelines.dev.report import render_report

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
    from pipelines.dev.services import (
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
    app.command("report")(report)
    # The name `make repro` and older notes use: the same report, not listed in --help.
    app.command("summary", hidden=True)(report)
    app.command("services")(services)
