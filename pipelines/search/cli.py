"""``mathembed search``, ``serve-search`` and ``mcp``: a registered model ranks the corpus."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from pipelines.common.cli import (
    DEFAULT_PARAMS,
    DEFAULT_ROOT,
    EXIT_CONFIG,
    ParamsOption,
    RootOption,
    command_errors,
    fail,
    log_progress,
    params_path,
)

if TYPE_CHECKING:
    from pipelines.search.engine import SearchEngine

AliasOption = Annotated[
    str | None,
    typer.Option(
        "--alias",
        help="Registry alias of the model: champion (default), challenger, previous, ...",
    ),
]
VersionOption = Annotated[
    str | None,
    typer.Option("--version", help="Model version number instead of an alias, e.g. 3."),
]
RankingOption = Annotated[
    str | None,
    typer.Option(
        "--ranking",
        help="How hits are ordered (default: params.yaml search.ranking): dense, the "
        "model's cosine alone; hybrid, fused with BM25's ranking (reciprocal rank); "
        "adaptive, fused with BM25 weighted by the query's shape (a name or a sentence). "
        "Scores are cosines either way.",
    ),
]
#: serve-search's and mcp's: a service on an address other machines reach answers anyone.
AllowRemoteOption = Annotated[
    bool,
    typer.Option(
        "--allow-remote",
        help="Allow a --host other machines can reach (0.0.0.0, a LAN address): it has no "
        "authentication.",
    ),
]


def search(
    query: Annotated[str, typer.Argument(help="What to look for, e.g. 'chromatic polynomial'.")],
    k: Annotated[int, typer.Option("-k", help="How many passages (1-100).")] = 10,
    alias: AliasOption = None,
    version: VersionOption = None,
    ranking: RankingOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON (query, model, ranking, took_ms, hits).")
    ] = False,
    params: ParamsOption = DEFAULT_PARAMS,
    root: RootOption = DEFAULT_ROOT,
) -> None:
    """Search the passages with a registered model (default: @champion).

    Prints the passages of the validated corpus closest to QUERY, each with its score,
    paper id, title, a link to the paper where one is known, and the passage's start.
    For many queries, `mathembed serve-search` keeps the model loaded.
    """
    from pipelines.search.query import check_request, format_hits

    with command_errors("search", bad_input=_bad_input()):
        check_request(query, k)
        engine = _open(params, root, alias, version, ranking)
        if as_json:
            typer.echo(json.dumps(engine.answer(query, k), ensure_ascii=False, indent=2))
        else:
            results = engine.results(query, k)
            if results.note:
                typer.echo(results.note)  # above the hits: the corpus may not hold the answer
            typer.echo(format_hits(results.hits))


def serve_search(
    alias: AliasOption = None,
    version: VersionOption = None,
    ranking: RankingOption = None,
    host: Annotated[
        str,
        typer.Option(
            "--host", help="Address to listen on; a non-loopback one needs --allow-remote."
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port (0: any free one).")] = 8765,
    allow_remote: AllowRemoteOption = False,
    params: ParamsOption = DEFAULT_PARAMS,
    root: RootOption = DEFAULT_ROOT,
) -> None:
    """Serve search over HTTP: a page at /, JSON at /api/search?q=...&k=10, /health, and
    the API described at /openapi.json and /docs.

    Loads the model once and opens its index of the corpus's passages from the embedding
    store (data/embeddings/: only passages no run has embedded with this model are
    embedded; exact search below search.ann_threshold passages, approximate above) beside
    a BM25 index of the same passages. --ranking is the default; a request may pass
    ranking= another. Ctrl-C or SIGTERM stops it. It listens on 127.0.0.1 only, unless
    --allow-remote.
    """
    from pipelines.search.server import listen, serve

    _check_bind("serve-search", host, allow_remote)
    # The port is bound before the model loads (and maybe embeds): a taken one fails at once.
    with (
        command_errors("serve-search", bad_input=_bad_input()),
        listen(host, port) as listener,
    ):
        engine = _open(params, root, alias, version, ranking)
        serve(engine, host, listener)


def mcp(
    transport: Annotated[
        Literal["stdio", "http"],
        typer.Option(
            "--transport",
            help="stdio: a client (Claude Desktop, an IDE) launches this command and talks "
            "over stdin/stdout; http: streamable HTTP at http://HOST:PORT/mcp for many clients.",
        ),
    ] = "stdio",
    alias: AliasOption = None,
    version: VersionOption = None,
    ranking: RankingOption = None,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="With --transport http: the address to listen on; a non-loopback "
            "one needs --allow-remote.",
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", help="With --transport http: the port (0: any free one).")
    ] = 8766,
    allow_remote: AllowRemoteOption = False,
    params: ParamsOption = DEFAULT_PARAMS,
    root: RootOption = DEFAULT_ROOT,
) -> None:
    """Serve search to AI assistants over MCP (Model Context Protocol).

    Two tools: search_statements(query, k) answers what /api/search answers (the hits,
    each with its passage's start and the statements it holds), get_statement(id) gives the
    whole passage (a hit's chunk_id) or statement (a statement_id) a hit named. The model
    loads once, as for serve-search. --transport http listens on 127.0.0.1 only, unless
    --allow-remote, and prints its URL; Ctrl-C stops it. With stdio, stdout carries only the
    protocol; the client's closing stdin stops it.
    """
    import contextlib
    import sys

    from pipelines.common.paths import Paths
    from pipelines.search.server import listen

    if transport == "stdio":
        # Nothing but protocol may reach stdout: what loading prints goes to stderr.
        with command_errors("mcp", bad_input=_bad_input()), contextlib.redirect_stdout(sys.stderr):
            from pipelines.search.mcp_server import open_server, serve_stdio

            server = open_server(_open(params, root, alias, version, ranking), Paths(root))
        with contextlib.suppress(KeyboardInterrupt):
            serve_stdio(server)
        return
    _check_bind("mcp", host, allow_remote)
    with (
        command_errors("mcp", bad_input=_bad_input()),
        listen(host, port) as listener,  # a taken port fails before the model loads
    ):
        from pipelines.search.mcp_server import http_address, open_server, serve_http

        server = open_server(_open(params, root, alias, version, ranking), Paths(root))
        typer.echo(f"mathembed mcp: {http_address(host, listener.getsockname()[1])}")
        serve_http(server, listener, host)
        typer.echo("mathembed mcp: stopped")


def _check_bind(command: str, host: str, allow_remote: bool) -> None:
    """Refuse a remote address unless ``--allow-remote`` (before the model loads); warn when
    one is allowed."""
    from pipelines.search.server import RemoteBindError, check_bind

    try:
        warning = check_bind(host, allow_remote)
    except RemoteBindError as error:
        fail(command, error, EXIT_CONFIG)
    if warning is not None:
        typer.echo(f"{command}: warning: {warning}", err=True)


def _bad_input() -> tuple[type[BaseException], ...]:
    from pipelines.registry.mlflow_registry import PromotionError

    return (PromotionError, FileNotFoundError, ValueError)


def _open(
    params: Path, root: Path, alias: str | None, version: str | None, ranking: str | None
) -> SearchEngine:
    """The engine for the asked-for model over the corpus, its papers linked as ingest
    recorded them."""
    from pipelines.common.config import load_params
    from pipelines.common.paths import Paths
    from pipelines.search.engine import open_engine

    log_progress()  # what the index reused or embedded, and the embedding's progress
    loaded = load_params(params_path(params, root))
    return open_engine(
        Paths(root),
        loaded.promote,
        alias=alias,
        version=version,
        ranking=ranking,
        search=loaded.search,
    )


def register(app: typer.Typer) -> None:
    app.command("search")(search)
    app.command("serve-search")(serve_search)
    app.command("mcp")(mcp)
