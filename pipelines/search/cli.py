"""``mathembed search``: forwarded to the module's argparse ``main``."""

from __future__ import annotations

import typer

from pipelines.common.cli import forward


def register(app: typer.Typer) -> None:
    forward(
        app, "search", "pipelines.search.query", (), "Search the passages with the @champion model."
    )
