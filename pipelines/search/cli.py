"""``mathembed search``: the passages closest to a query under the ``@champion`` model."""

from __future__ import annotations

from typing import Annotated

import typer

from pipelines.common.cli import (
    DEFAULT_PARAMS,
    DEFAULT_ROOT,
    ParamsOption,
    RootOption,
    command_errors,
    params_path,
)


def search(
    query: Annotated[str, typer.Argument(help="What to look for, e.g. 'chromatic polynomial'.")],
    k: Annotated[int, typer.Option("-k", help="How many passages.")] = 10,
    params: ParamsOption = DEFAULT_PARAMS,
    root: RootOption = DEFAULT_ROOT,
) -> None:
    """Search the passages with the @champion model.

    Prints the passages of the validated corpus closest to QUERY under the registry's
    @champion model (models:/math-embed@champion), with paper id, title and score.
    """
    from pipelines.common.config import load_params
    from pipelines.common.paths import Paths
    from pipelines.promote.errors import PromotionError
    from pipelines.search.query import format_hits
    from pipelines.search.query import search as search_passages

    with command_errors("search", bad_input=(PromotionError, FileNotFoundError, ValueError)):
        hits = search_passages(
            query, k, Paths(root), load_params(params_path(params, root)).promote
        )
    typer.echo(format_hits(hits))


def register(app: typer.Typer) -> None:
    app.command("search")(search)
