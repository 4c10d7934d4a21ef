"""The search service's routes: a FastAPI application over one :class:`SearchEngine`.

``GET /api/search?q=...&k=10`` answers JSON (:meth:`SearchEngine.answer`, typed by
:class:`SearchAnswer`; ``ranking=`` overrides the service's default); ``GET /?q=...`` is
the HTML page (:mod:`pipelines.search.page`); ``GET /static/...`` serves its scripts,
style sheets and fonts (:mod:`pipelines.search.assets`; nothing comes from elsewhere);
``GET /health`` says which model answers; ``GET /openapi.json`` describes all of it and
``GET /docs`` shows that description as a page. A bad request (an empty or too long ``q``,
``k`` not a number in 1..100, an unknown ``ranking``) is a 400 with a JSON message naming
what to send instead, any other error JSON too; ``HEAD`` is answered as ``GET`` without
the body. The server around it (connections, limits, shutdown) is uvicorn's
(:mod:`pipelines.search.connections`).

A search runs on a worker thread, at most :attr:`ConnectionLimits.workers` at once (they
take turns on the model anyway); a request whose client has gone by its turn is not
searched.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from functools import partial
from http import HTTPStatus
from importlib.metadata import version
from typing import Annotated, Any

import anyio
import anyio.to_thread
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import ErrorDetails
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pipelines.retrieval.lexical import RANKINGS, check_ranking
from pipelines.search.assets import CACHE_CONTROL, load_assets, not_modified
from pipelines.search.engine import SearchEngine
from pipelines.search.page import (
    DEFAULT_K,
    NOTHING_POLICY,
    PAGE_POLICY,
    STATIC_PREFIX,
    render_page,
    render_reference,
)
from pipelines.search.query import MAX_K, MAX_QUERY_CHARS, SNIPPET_CHARS

log = logging.getLogger(__name__)

EMPTY_QUERY = "the query is empty: pass q, e.g. /api/search?q=prime+gaps"

# -- what a request sends ------------------------------------------------------------------


class SearchParams(BaseModel):
    """A search's query parameters; each check's message says what to send instead."""

    q: str = Field(description=f"What to look for, at most {MAX_QUERY_CHARS} characters.")
    k: int = Field(DEFAULT_K, ge=1, le=MAX_K, description="How many passages.")
    ranking: str | None = Field(
        None,
        description="How hits are ordered; the service's default when absent.",
        json_schema_extra={"enum": list(RANKINGS)},
    )

    @field_validator("q")
    @classmethod
    def _query(cls, query: str) -> str:
        if not query.strip():
            raise ValueError(EMPTY_QUERY)
        if len(query) > MAX_QUERY_CHARS:
            raise ValueError(
                f"the query is {len(query):,} characters long; at most {MAX_QUERY_CHARS:,}: "
                "ask for a statement or a question, not a page"
            )
        return query

    @field_validator("k", mode="before")
    @classmethod
    def _k(cls, raw: object) -> int:
        try:
            k = int(str(raw))
        except ValueError:
            raise ValueError(f"k must be a whole number from 1 to {MAX_K}, got {raw!r}") from None
        if not 1 <= k <= MAX_K:
            raise ValueError(f"k must be a whole number from 1 to {MAX_K}, got {k}")
        return k

    @field_validator("ranking", mode="before")
    @classmethod
    def _ranking(cls, raw: object) -> str | None:
        return check_ranking(str(raw)) if raw not in (None, "") else None


def problem(errors: Sequence[ErrorDetails] | Sequence[Any]) -> str:
    """One line from a validation's errors: each check's own message, else pydantic's."""
    messages = []
    for error in errors:
        field = str(error["loc"][-1]) if error["loc"] else "request"
        if error["type"] == "missing":
            messages.append(EMPTY_QUERY if field == "q" else f"{field} is missing")
        elif "error" in error.get("ctx", {}):
            messages.append(str(error["ctx"]["error"]))
        else:
            messages.append(f"{field}: {error['msg']}")
    return "; ".join(messages)


# -- what it answers -------------------------------------------------------------------------


class Answered(BaseModel):
    # What the engine adds in a later version passes through rather than being dropped.
    model_config = ConfigDict(extra="allow")


class StatementOut(Answered):
    """A statement the passage holds (or holds part of)."""

    statement_id: str
    kind: str = Field(description='"lemma", "definition", ...')
    name: str = Field(description='The name its author gave it ("Yoneda lemma"), often "".')
    label: str = Field(description='Its LaTeX label ("lemma-yoneda"), "" when none.')


class HitOut(Answered):
    """One ranked passage. The fields from ``kind`` on are given by engines that know the
    statement a passage belongs to, and absent otherwise."""

    rank: int
    chunk_id: str
    paper_id: str
    title: str
    score: float = Field(description="How close the passage is to the query.")
    text: str = Field(description=f"The passage, on one line, cut to {SNIPPET_CHARS} characters.")
    url: str | None = Field(description="The paper's page, when one is known.")
    statements: list[StatementOut]
    kind: str | None = Field(None, description='"lemma", "definition", "proof", "text", ...')
    name: str | None = Field(None, description="The statement's name; may be empty.")
    heading: str | None = Field(None, description='The line to show: "Lemma (snake lemma)".')
    section: str | None = Field(None, description="The section's title; may be empty.")
    link: str | None = Field(None, description="The statement's own page, when known.")
    snippet: str | None = Field(None, description="The text, cut where no formula is.")


class ModelOut(BaseModel):
    name: str
    version: str
    alias: str | None = Field(description="The registry alias asked for; null: by version.")


class SearchAnswer(Answered):
    """The passages closest to a query, best first, and the model that ranked them."""

    query: str
    model: ModelOut
    ranking: str
    took_ms: float = Field(description="The search's own time, on the server.")
    hits: list[HitOut]
    no_close_match: bool | None = Field(
        None, description="Whether no passage is close; absent from engines that do not say."
    )
    note: str | None = Field(None, description="Why no hit is close, to show above them.")


class Health(BaseModel):
    status: str
    model: ModelOut
    torch_threads: int


class Problem(BaseModel):
    """What was wrong with a request, and what to send instead."""

    error: str


# -- the application -------------------------------------------------------------------------


class Searcher:
    """Runs searches on worker threads, ``workers`` at once, skipping a request whose
    client left while it waited for its turn."""

    def __init__(self, engine: SearchEngine, workers: int) -> None:
        self.engine = engine
        self._turns = anyio.CapacityLimiter(workers)

    async def answer(self, request: Request, params: SearchParams) -> dict[str, Any] | None:
        """The search's answer; ``None``, unsearched, when the client has gone; a
        ``ValueError`` (the engine's refusal) for a 400."""
        async with self._turns:
            if await request.is_disconnected():
                log.debug("%s left before its search; not searched", request.client)
                return None
            search = partial(
                self.engine.answer,
                params.q,
                params.k,
                ranking=params.ranking,
                max_chars=SNIPPET_CHARS,
            )
            return await anyio.to_thread.run_sync(search)


def create_app(engine: SearchEngine, workers: int = 8) -> FastAPI:
    """The service's routes over ``engine``; ``workers`` searches at once."""
    app = FastAPI(
        title="mathembed search",
        version=version("mathembed"),
        description="Passages of the corpus closest to a query, ranked by a registered model.",
        docs_url=None,  # Swagger UI loads its code from a CDN: /docs is our own page
        redoc_url=None,
    )
    app.add_middleware(SecurityHeaders)
    app.add_middleware(HeadAsGet)
    searcher = Searcher(engine, workers)
    assets = load_assets()
    model = ModelOut(**engine.ref.as_json())

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, error: RequestValidationError) -> JSONResponse:
        return _problem(HTTPStatus.BAD_REQUEST, problem(error.errors()))

    @app.exception_handler(HTTPException)
    async def http_problem(request: Request, error: HTTPException) -> JSONResponse:
        if error.status_code == HTTPStatus.NOT_FOUND:
            message = f"no page {request.url.path}; try /"
        elif error.status_code == HTTPStatus.METHOD_NOT_ALLOWED:
            message = f"{request.method} is not answered here; use GET"
        else:
            message = str(error.detail)
        return _problem(error.status_code, message, error.headers)

    @app.exception_handler(Exception)
    async def failed(request: Request, error: Exception) -> JSONResponse:
        # A bug: its traceback goes to the log (uvicorn's), the client gets one line.
        return _problem(HTTPStatus.INTERNAL_SERVER_ERROR, "the search failed; see the server's log")

    @app.get(
        "/api/search",
        response_model=SearchAnswer,
        response_model_exclude_unset=True,
        responses={400: {"model": Problem, "description": "A bad request, and what to send"}},
        summary="The passages closest to a query",
    )
    async def search(
        request: Request, params: Annotated[SearchParams, Query()]
    ) -> dict[str, Any] | Response:
        try:
            answer = await searcher.answer(request, params)
        except ValueError as error:  # what the engine refuses (check_request)
            return _problem(HTTPStatus.BAD_REQUEST, str(error))
        if answer is None:
            return Response(status_code=HTTPStatus.NO_CONTENT)  # nobody is there to read it
        return answer

    @app.get("/health", response_model=Health, summary="Which model answers")
    async def health() -> Health:
        import torch

        return Health(status="ok", model=model, torch_threads=torch.get_num_threads())

    @app.get("/", response_class=HTMLResponse, summary="The search page (q, k, ranking as above)")
    async def page(request: Request) -> HTMLResponse:
        fields = request.query_params
        shown = model.model_dump()
        if "q" not in fields:
            return _page(HTTPStatus.OK, render_page(shown, ranking=engine.ranking))
        query = fields["q"]
        try:
            params = SearchParams.model_validate(dict(fields))
            answer = await searcher.answer(request, params)
        except ValueError as error:  # a check's (ValidationError) or the engine's
            message = problem(error.errors()) if isinstance(error, ValidationError) else str(error)
            failed = render_page(shown, query, error=message, ranking=engine.ranking)
            return _page(HTTPStatus.BAD_REQUEST, failed)
        if answer is None:
            return _page(HTTPStatus.NO_CONTENT, "")
        return _page(
            HTTPStatus.OK, render_page(shown, query, params.k, answer, ranking=answer["ranking"])
        )

    @app.get("/docs", response_class=HTMLResponse, include_in_schema=False)
    async def reference() -> HTMLResponse:
        return _page(HTTPStatus.OK, render_reference(app.openapi()))

    @app.get(STATIC_PREFIX + "{name:path}", include_in_schema=False)
    async def static(name: str, request: Request) -> Response:
        asset = assets.get(name)
        if asset is None:
            raise HTTPException(HTTPStatus.NOT_FOUND)
        headers = {"ETag": asset.etag, "Cache-Control": CACHE_CONTROL}
        if not_modified(asset, request.headers.get("If-None-Match")):
            return Response(status_code=HTTPStatus.NOT_MODIFIED, headers=headers)
        return Response(asset.body, media_type=asset.content_type, headers=headers)

    return app


def _problem(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _page(status: int, page: str) -> HTMLResponse:
    # The page loads its scripts, styles and fonts from here, nothing else.
    return HTMLResponse(page, status, headers={"Content-Security-Policy": PAGE_POLICY})


# -- what every answer carries ------------------------------------------------------------------


class SecurityHeaders:
    """``nosniff`` on every answer, and a policy that loads nothing on all but the pages
    (JSON, the assets), which set their own."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                headers.append((b"x-content-type-options", b"nosniff"))
                if b"content-security-policy" not in names:
                    headers.append((b"content-security-policy", NOTHING_POLICY.encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


class HeadAsGet:
    """``HEAD`` routed as ``GET``: the same status and headers; uvicorn sends no body for a
    HEAD request. (FastAPI routes declared with ``GET`` answer ``HEAD`` with 405.)"""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "HEAD":
            scope = {**scope, "method": "GET"}
        await self.app(scope, receive, send)
