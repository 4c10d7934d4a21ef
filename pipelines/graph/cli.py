"""``mathembed graph``: forwarded to the module's argparse ``main``."""

from __future__ import annotations

import typer

from pipelines.common.cli import forward


def register(app: typer.Typer) -> None:
    forward(
        app,
        "graph",
        "pipelines.graph.stage",
        (),
        "Extract the knowledge graph of concepts and relations.",
    )
