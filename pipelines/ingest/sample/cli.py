"""``mathembed sample``: forwarded to the module's argparse ``main``."""

from __future__ import annotations

import typer

from pipelines.common.cli import forward


def register(app: typer.Typer) -> None:
    forward(
        app,
        "sample",
        "pipelines.ingest.sample.__main__",
        (),
        "Generate the offline sample mirror (data/mirror/).",
    )
