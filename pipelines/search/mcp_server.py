"""``mathembed mcp``: the search engine as an MCP server, so an assistant (Claude Desktop, an
IDE, any Model Context Protocol client) can search the corpus and read what it found.

Two tools over one :class:`~pipelines.search.engine.SearchEngine`, built with the official
SDK (``mcp``; its ``MCPServer`` is v1's ``FastMCP``):

- ``search_statements(query, k)``: :meth:`SearchEngine.answer` as structured output, the
  JSON ``/api/search`` gives (each passage cut to the same length); fields the engine adds
  pass through.
- ``get_statement(id)``: a hit's ``chunk_id`` gives the whole passage, the ``statement_id``
  of one of its statements gives that statement and its proof.

Transports: stdio (the client launches ``mathembed mcp``) and streamable HTTP (``--transport
http``: ``http://127.0.0.1:8766/mcp``), both served by the SDK. Whatever a caller can fix is
a tool error (``isError``, one line saying what to change), never a traceback: an empty or
too-long query, ``k`` out of range, an unknown id, and what the SDK leaves alone, an
argument the tool does not take (it would ignore it); the SDK answers an unknown tool the
same way. A client that goes away mid-call costs the server nothing: the search finishes on
its worker thread and the answer is dropped.
"""

from __future__ import annotations

import contextlib
import signal
import socket
from collections.abc import Iterator
from typing import Annotated, Any, Literal

import pandas as pd
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipelines.common import io
from pipelines.common.paths import Paths
from pipelines.common.tables import TABLES
from pipelines.search.engine import SearchEngine
from pipelines.search.query import MAX_K, MAX_QUERY_CHARS, SNIPPET_CHARS, Corpus, corpus_dir

#: The name the server gives clients, and the path of its streamable HTTP endpoint.
SERVER_NAME = "mathembed"
HTTP_PATH = "/mcp"
#: Seconds uvicorn gives open streams to close when the HTTP server is stopped.
SHUTDOWN_SECONDS = 5

INSTRUCTIONS = (
    "Searches a corpus of mathematical papers (definitions, lemmas, theorems, proofs), "
    "ranked by this project's registered embedding model (the service's ranking). Call "
    "search_statements with a concept, a statement or a question (words or LaTeX); each hit "
    "names its passage (chunk_id) and the statements it holds (statement_id). Call "
    "get_statement with one of those ids to read the whole passage or statement."
)
SEARCH_DESCRIPTION = (
    "Find the passages of mathematical papers closest in meaning to a query, best first. "
    "query: what to look for, in words or LaTeX: a concept ('snake lemma'), a statement "
    f"('every PID is a UFD') or a question. k: how many hits (1-{MAX_K}, default 10). Each "
    "hit has rank, score (higher is closer; compare scores within one answer only), chunk_id, "
    "paper_id, title, url (the paper's page when one is known, else null), text (the "
    f"passage, cut to {SNIPPET_CHARS} characters) and statements (the statements the passage "
    "holds: statement_id, kind such as 'lemma', name, label). To read more, call "
    "get_statement with a hit's chunk_id or one of its statement_ids."
)
GET_DESCRIPTION = (
    "Read one passage or statement whole, by an id a search_statements hit gave. A hit's "
    "chunk_id (e.g. 'stacks/2607001v1#c0002') returns the whole passage, its section and the "
    "statements it holds; a statement_id from a hit's statements (e.g. "
    "'stacks/2607001v1#s000') returns that statement: its kind, name, label, text, proof and "
    "slogan (a one-line summary, often empty). "
    "An id that no hit gave is an error: search first."
)
READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)


# ----------------------------------------------------------------------------- the answers


class _Open(BaseModel):
    """A structured answer's declared fields; any others the engine adds pass through."""

    model_config = ConfigDict(extra="allow")


class StatementRef(_Open):
    """A statement a passage holds (:class:`pipelines.mathtext.statements.StatementRef`)."""

    statement_id: str
    kind: str
    name: str
    label: str


class SearchHit(_Open):
    """One ranked passage (:meth:`pipelines.search.query.Hit.as_json`)."""

    rank: int
    chunk_id: str
    paper_id: str
    title: str
    score: float
    text: str
    url: str | None
    statements: list[StatementRef]


class ModelInfo(_Open):
    """The model version that ranked (:meth:`pipelines.search.engine.ModelRef.as_json`)."""

    name: str
    version: str
    alias: str | None


class SearchAnswer(_Open):
    """What ``search_statements`` returns: :meth:`SearchEngine.answer`'s JSON."""

    query: str
    model: ModelInfo
    ranking: str
    took_ms: float
    hits: list[SearchHit]


class Document(BaseModel):
    """What ``get_statement`` returns: a passage (``type`` "passage": ``section`` and the
    ``statements`` it holds) or a statement (``type`` "statement": ``kind``, ``name``,
    ``label``, ``proof``, ``slogan``: a one-line summary some carry), with its paper."""

    id: str
    type: Literal["passage", "statement"]
    paper_id: str
    title: str
    url: str | None
    text: str
    section: str = ""
    statements: list[StatementRef] = Field(default_factory=list)
    kind: str = ""
    name: str = ""
    label: str = ""
    proof: str = ""
    slogan: str = ""


# ----------------------------------------------------------------------------- the lookup


class Documents:
    """The passages and statements of one corpus by id (``chunk_id``, ``statement_id``)."""

    def __init__(self, corpus: Corpus, statements: pd.DataFrame | None) -> None:
        self.corpus = corpus
        ids = corpus.chunks["chunk_id"].astype(str)
        self._passage_rows = dict(zip(ids, range(len(ids)), strict=True))
        self._statements: dict[str, dict[str, Any]] = {}
        if statements is not None:
            table = statements.fillna("")
            for record in table.to_dict("records"):
                self._statements[str(record["statement_id"])] = {
                    str(column): value for column, value in record.items()
                }

    def get(self, id: str) -> Document:
        """The passage or statement ``id`` names (``KeyError``: none does)."""
        row = self._passage_rows.get(id)
        if row is not None:
            hit = self.corpus.hit(row, 0.0)
            chunk = self.corpus.chunks.iloc[row]
            section = chunk["section"] if "section" in chunk.index else ""
            return Document(
                id=id,
                type="passage",
                paper_id=hit.paper_id,
                title=hit.title,
                url=hit.url,
                text=hit.text,
                section="" if pd.isna(section) else str(section),
                statements=[StatementRef(**ref.as_json()) for ref in hit.statements],
            )
        record = self._statements.get(id)
        if record is None:
            raise KeyError(id)
        paper_id = str(record["paper_id"])
        return Document(
            id=id,
            type="statement",
            paper_id=paper_id,
            title=self.corpus.titles.get(paper_id, ""),
            url=self.corpus.urls.get(paper_id),
            text=str(record["text"]),
            kind=str(record["kind"]),
            name=str(record["name"]),
            label=str(record["label"]),
            proof=str(record.get("proof", "")),
            slogan=str(record.get("slogan", "")),
        )


def read_statements(paths: Paths) -> pd.DataFrame | None:
    """The statements table beside the corpus's passages (``None``: there is none)."""
    path = corpus_dir(paths) / TABLES["statements"].file_name
    return io.read_parquet(path) if path.is_file() else None


# ----------------------------------------------------------------------------- the server


class SearchServer(MCPServer):
    """An ``MCPServer`` that refuses arguments its tools do not take (the SDK drops them
    silently, so a misspelt ``top_k`` would quietly search with the default) and says in
    one line which argument is wrong and why (the SDK quotes pydantic's whole report)."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        taken = await self._arguments_of(name)
        if taken is not None and (unknown := sorted(set(arguments) - taken)):
            raise ToolError(
                f"{name} takes no argument {', '.join(map(repr, unknown))}; "
                f"its arguments are {', '.join(sorted(taken))}"
            )
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as error:
            cause = error.__cause__
            if isinstance(error, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            raise ToolError(f"{name}: {argument_problems(cause)}") from cause

    async def _arguments_of(self, name: str) -> set[str] | None:
        for tool in await self.list_tools():
            if tool.name == name:
                return set(tool.input_schema.get("properties", {}))
        return None  # an unknown tool: the SDK says so


def argument_problems(error: ValidationError) -> str:
    """Each invalid argument and what is wrong with it, on one line (pure)."""
    problems = []
    for problem in error.errors(include_url=False):
        where = ".".join(str(part) for part in problem["loc"]) or "arguments"
        given = problem.get("input")
        shown = "" if problem["type"] == "missing" else f" (got {_short(given)})"
        problems.append(f"argument {where}: {problem['msg']}{shown}")
    return "; ".join(problems)


def _short(value: object, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def build_server(engine: SearchEngine, documents: Documents) -> SearchServer:
    """The MCP server with its two tools over ``engine`` and ``documents``."""
    server = SearchServer(SERVER_NAME, instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool(description=SEARCH_DESCRIPTION, annotations=READ_ONLY)
    def search_statements(
        query: Annotated[
            str,
            Field(
                description="What to look for, in words or LaTeX, e.g. 'snake lemma'.",
                min_length=1,
                max_length=MAX_QUERY_CHARS,
            ),
        ],
        k: Annotated[int, Field(description="How many hits, best first.", ge=1, le=MAX_K)] = 10,
    ) -> SearchAnswer:
        if not query.strip():
            raise ToolError("the query is blank; pass the words to look for, e.g. 'snake lemma'")
        try:
            answer = engine.answer(query, k, max_chars=SNIPPET_CHARS)
        except ValueError as error:  # a request the engine refuses (check_request)
            raise ToolError(str(error)) from error
        return SearchAnswer.model_validate(answer)

    @server.tool(description=GET_DESCRIPTION, annotations=READ_ONLY)
    def get_statement(
        id: Annotated[
            str,
            Field(
                description="A hit's chunk_id, or the statement_id of one of its statements.",
                min_length=1,
                max_length=500,
            ),
        ],
    ) -> Document:
        try:
            return documents.get(id)
        except KeyError:
            raise ToolError(
                f"no passage or statement has the id {_short(id, 80)}; pass a chunk_id or a "
                "statement_id exactly as a search_statements hit gave it"
            ) from None

    return server


def open_server(engine: SearchEngine, paths: Paths) -> SearchServer:
    """The server over ``engine`` and the statements beside its corpus under ``paths``."""
    return build_server(engine, Documents(engine.corpus, read_statements(paths)))


def http_address(host: str, port: int) -> str:
    """The URL of the streamable HTTP endpoint at ``host:port`` (pure)."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{HTTP_PATH}"


def serve_stdio(server: MCPServer) -> None:
    """Answer one client over stdin/stdout until it closes stdin."""
    server.run("stdio")


def serve_http(server: MCPServer, listener: socket.socket, host: str) -> None:
    """Serve streamable HTTP at :data:`HTTP_PATH` on ``listener`` (already bound, so a
    taken port failed before the model loaded) until SIGINT or SIGTERM. On loopback the SDK
    also refuses requests whose ``Host``/``Origin`` name another site (DNS rebinding)."""
    import uvicorn

    class Stoppable(uvicorn.Server):
        """uvicorn's server, stopped by SIGINT or SIGTERM as uvicorn stops it but then
        returning: uvicorn raises the signal again once it has shut down, which would end
        the command by the signal (Ctrl-C: a KeyboardInterrupt traceback)."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            stops = (signal.SIGINT, signal.SIGTERM)
            previous = {stop: signal.signal(stop, self.handle_exit) for stop in stops}
            try:
                yield
            finally:
                for stop, handler in previous.items():
                    signal.signal(stop, handler)

    app = server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host)
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=SHUTDOWN_SECONDS,
    )
    Stoppable(config).run(sockets=[listener])
