"""``mathembed promote``, ``status``, ``rollback``: forwarded to the module's argparse ``main``."""

from __future__ import annotations

import typer

from pipelines.common.cli import forward


def register(app: typer.Typer) -> None:
    forward(
        app,
        "promote",
        "pipelines.promote.command",
        ("promote",),
        "Register the candidate in MLflow; move @champion only if it wins.",
    )
    forward(
        app,
        "status",
        "pipelines.promote.command",
        ("status",),
        "Show @champion, @challenger and @previous.",
    )
    forward(
        app,
        "rollback",
        "pipelines.promote.command",
        ("rollback",),
        "Move @champion back to @previous.",
    )
