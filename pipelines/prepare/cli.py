"""``mathembed prepare``: clean the raw store's LaTeX into passages and statements."""

from __future__ import annotations

from typing import Annotated

import typer

from pipelines.common.cli import (
    DEFAULT_PARAMS,
    DEFAULT_ROOT,
    ParamsOption,
    RootOption,
    stage_command,
)

WorkersOption = Annotated[
    int | None,
    typer.Option(
        "--workers",
        help="Worker processes for cleaning (default: one per CPU; one below 400 papers).",
    ),
]


def prepare(
    params: ParamsOption = DEFAULT_PARAMS,
    root: RootOption = DEFAULT_ROOT,
    workers: WorkersOption = None,
) -> None:
    """Clean LaTeX into passages and statements (Parquet).

    Reads data/raw; writes data/processed/{papers,chunks,statements}.parquet and the counts
    to metrics/prepare.json. Papers already prepared (same id, version and content hash,
    same cleaner and knobs) are reused, not redone.
    """
    from pipelines.common.paths import Paths
    from pipelines.prepare.stage import run_prepare

    with stage_command("prepare", params, root) as loaded:
        report = run_prepare(loaded.prepare, Paths(root), workers=workers)
    typer.echo(
        f"prepare: {report.papers_in} papers: {report.prepared} prepared, {report.reused} "
        f"reused, {report.quarantined} quarantined, {report.withdrawn} withdrawn, "
        f"{report.deferred} deferred to the next run; "
        f"{report.chunks} chunks, {report.statements} statements"
    )


def register(app: typer.Typer) -> None:
    app.command("prepare")(prepare)
