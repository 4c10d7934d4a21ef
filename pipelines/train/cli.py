"""``mathembed train``: forwarded to the module's argparse ``main``."""

from __future__ import annotations

import typer

from pipelines.common.cli import forward


def register(app: typer.Typer) -> None:
    forward(
        app,
        "train",
        "pipelines.train.stage",
        (),
        "Fine-tune the base model on the validated pairs.",
    )
