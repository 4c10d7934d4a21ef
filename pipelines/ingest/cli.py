"""``mathembed ingest``: forwarded to the module's argparse ``main``."""

from __future__ import annotations

import typer

from pipelines.common.cli import forward


def register(app: typer.Typer) -> None:
    forward(
        app,
        "ingest",
        "pipelines.ingest.stage",
        (),
        "Harvest new papers into the append-only raw store.",
    )
