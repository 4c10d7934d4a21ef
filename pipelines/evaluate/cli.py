"""``mathembed evaluate``: forwarded to the module's argparse ``main``."""

from __future__ import annotations

import typer

from pipelines.common.cli import forward


def register(app: typer.Typer) -> None:
    forward(
        app,
        "evaluate",
        "pipelines.evaluate.stage",
        (),
        "Score candidate and base model on held-out queries.",
    )
