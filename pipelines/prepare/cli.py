"""``mathembed prepare``: forwarded to the module's argparse ``main``."""

from __future__ import annotations

import typer

from pipelines.common.cli import forward


def register(app: typer.Typer) -> None:
    forward(
        app,
        "prepare",
        "pipelines.prepare.stage",
        (),
        "Clean LaTeX into passages and statements (Parquet).",
    )
