"""``mathembed graph``: build the knowledge graph of concepts and relations."""

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
        help=(
            "Worker processes for the per-paper work (default: one per CPU; one below 400 "
            "papers; 0 = in this process, without graph.paper_timeout_seconds; "
            "graph.stage_budget_seconds still applies)."
        ),
    ),
]


def graph(
    params: ParamsOption = DEFAULT_PARAMS,
    root: RootOption = DEFAULT_ROOT,
    workers: WorkersOption = None,
) -> None:
    """Extract the knowledge graph of concepts and relations.

    Reads data/processed; writes data/graph/{concepts,edges,mentions}.parquet
    and the counts to metrics/graph.json. The per-paper work is cached in
    data/cache/graph/ and reused while the paper, the code and the params stay.
    """
    from pipelines.common.paths import Paths
    from pipelines.graph.llm import LLMError
    from pipelines.graph.stage import run_graph

    bad_input = (FileNotFoundError, ValueError, LLMError)
    with stage_command("graph", params, root, bad_input) as loaded:
        report = run_graph(loaded.graph, Paths(root), workers=workers)
    typer.echo(
        f"graph: {report.papers} papers -> {report.concepts} concepts, {report.edges} edges, "
        f"{report.mentions} mentions ({report.papers_skipped} papers skipped; "
        f"{len(report.quarantined)} quarantined, {len(report.deferred)} deferred to the next run)"
    )


def register(app: typer.Typer) -> None:
    app.command("graph")(graph)
