"""``mathembed validate``: forwarded to the module's argparse ``main``."""

from __future__ import annotations

import typer

from pipelines.common.cli import forward


def register(app: typer.Typer) -> None:
    forward(
        app,
        "validate",
        "pipelines.validate.stage",
        (),
        "Check every table (blocking); data-quality report.",
    )
