"""``mathembed pairs``: build the training pairs and the held-out evaluation set."""

from __future__ import annotations

import typer

from pipelines.common.cli import (
    DEFAULT_PARAMS,
    DEFAULT_ROOT,
    ParamsOption,
    RootOption,
    stage_command,
)


def pairs(params: ParamsOption = DEFAULT_PARAMS, root: RootOption = DEFAULT_ROOT) -> None:
    """Build training pairs and the held-out evaluation set.

    Reads data/processed and data/graph; writes data/training/pairs.parquet,
    data/eval/queries.parquet and qrels.parquet, and the counts to metrics/data.json.
    """
    from pipelines.common.paths import Paths
    from pipelines.pairs.stage import run_pairs

    with stage_command("pairs", params, root) as loaded:
        report = run_pairs(loaded.pairs, Paths(root))
    typer.echo(
        f"pairs: {report.pairs} pairs, {report.queries} queries, {report.qrels} qrels "
        f"({report.held_out_concepts} held-out concepts, {report.unseen_papers} unseen papers)"
    )


def register(app: typer.Typer) -> None:
    app.command("pairs")(pairs)
