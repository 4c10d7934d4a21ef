"""``mathembed serve-search``'s HTTP API: a real server on 127.0.0.1, a real registry.

The world's champion is a tiny bag-of-words model (``promotion_worlds``); the server runs
in a thread on a free port, shared by the module's tests (none changes it), and is shut
down by the fixture.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import Message
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from promotion_worlds import LATTICE_COSINE, Models, World, make_world

from pipelines.retrieval.vector_store import EmbeddingStore, StoreKey
from pipelines.search.api import SearchAnswer
from pipelines.search.engine import SearchEngine, open_engine
from pipelines.search.page import PAGE_POLICY
from pipelines.search.server import make_server


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Message
    body: bytes


class Inputs(HTMLParser):
    """A page's form fields as a browser reads them: name -> value."""

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "input":
            fields = dict(attrs)
            self.values[fields["name"] or ""] = fields.get("value") or ""


@dataclass(frozen=True)
class Service:
    world: World
    engine: SearchEngine
    base_url: str

    def get_answer(self, path: str, method: str = "GET") -> Answer:
        """Status, headers and body of ``method path``, errors included."""
        request = urllib.request.Request(self.base_url + path, method=method)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return Answer(response.status, response.headers, response.read())
        except urllib.error.HTTPError as error:
            return Answer(error.code, error.headers, error.read())

    def get(self, path: str) -> tuple[int, str, str]:
        """Status, content type and body of ``GET path``, errors included."""
        answer = self.get_answer(path)
        return answer.status, answer.headers["Content-Type"], answer.body.decode()

    def json(self, path: str) -> tuple[int, Any]:
        status, content_type, body = self.get(path)
        assert content_type == "application/json"
        return status, json.loads(body)


@pytest.fixture(scope="module")
def service(
    tmp_path_factory: pytest.TempPathFactory, bow_models: Models, empty_mlflow_db: Path
) -> Iterator[Service]:
    with pytest.MonkeyPatch.context() as env:
        env.delenv("MLFLOW_TRACKING_URI", raising=False)
        env.delenv("MLFLOW_REGISTRY_URI", raising=False)
        root = tmp_path_factory.mktemp("search-api") / "project"
        world = make_world(root, bow_models.base, empty_mlflow_db)
        world.promote(world.install_candidate(bow_models.knows_7))
        engine = open_engine(world.paths, world.params.promote)
        server = make_server(engine, "127.0.0.1", 0)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield Service(world, engine, f"http://127.0.0.1:{server.server_port}")
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)


def test_the_api_answers_ranked_hits_with_the_model_that_ranked_them(service: Service) -> None:
    status, answer = service.json("/api/search?q=lattice&k=3")
    assert status == 200
    assert answer["query"] == "lattice"
    assert answer["model"] == {"name": "math-embed", "version": "1", "alias": "champion"}
    assert isinstance(answer["took_ms"], float) and answer["took_ms"] >= 0
    hits = answer["hits"]
    assert [hit["rank"] for hit in hits] == [1, 2, 3]
    assert {
        "rank",
        "chunk_id",
        "paper_id",
        "title",
        "score",
        "text",
        "url",
        "statements",
    } <= set(hits[0])  # and what the engine says of the statement, when it does
    assert hits[0]["statements"] == []  # the world has no statements table
    assert {hit["chunk_id"] for hit in hits[:2]} == {"2401.00007v1#c0000", "2401.00007v1#c0001"}
    assert hits[0]["title"] == "On the lattice" and hits[0]["url"] is None
    assert hits[0]["score"] >= hits[1]["score"] > hits[2]["score"]
    assert answer["ranking"] == service.engine.ranking  # the service's default

    status, dense = service.json("/api/search?q=lattice&k=3&ranking=dense")
    assert status == 200 and dense["ranking"] == "dense"
    assert dense["hits"][0]["score"] == pytest.approx(
        LATTICE_COSINE
    )  # the cosine, not a fused score

    status, health = service.json("/health")
    assert status == 200 and health["status"] == "ok" and health["model"] == answer["model"]
    assert health["torch_threads"] >= 1


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/api/search?q=", "the query is empty"),
        ("/api/search?k=3", "the query is empty"),
        ("/api/search?q=%20%20", "the query is empty"),
        ("/api/search?q=prime&k=zero", "k must be a whole number from 1 to 100, got 'zero'"),
        ("/api/search?q=prime&k=0", "k must be a whole number from 1 to 100, got 0"),
        ("/api/search?q=prime&k=101", "got 101"),
        ("/api/search?q=prime&ranking=bm25", "ranking must be one of "),
        ("/api/search?q=prime&ranking=bm25", "got 'bm25'"),
        ("/api/search?q=" + "x" * 2001, "the query is 2,001 characters long; at most 2,000"),
    ],
)
def test_bad_requests_are_400_with_a_message(service: Service, path: str, message: str) -> None:
    status, body = service.json(path)
    assert status == 400 and message in body["error"]


def test_unknown_paths_are_404(service: Service) -> None:
    status, body = service.json("/api/nothing")
    assert status == 404 and "/api/nothing" in body["error"]


def test_the_page_lists_hits_and_escapes_what_it_shows(service: Service) -> None:
    status, content_type, page = service.get("/")
    assert status == 200 and content_type == "text/html; charset=utf-8"
    assert '<form action="/" method="get"' in page and "<ol>" not in page

    status, _, page = service.get("/?q=lattice&k=2")
    assert status == 200 and page.count('<li class="hit">') == 2 and "On the lattice" in page
    default = service.engine.ranking
    assert f"{default} ranking" in page and f'<option value="{default}" selected>' in page

    for ranking in ("hybrid", "dense"):
        status, _, page = service.get(f"/?q=lattice&k=2&ranking={ranking}")
        assert f"{ranking} ranking" in page and f'<option value="{ranking}" selected>' in page

    hostile = 'lattice <script>alert(1)</script> " onmouseover=x'
    status, _, page = service.get("/?" + urllib.parse.urlencode({"q": hostile, "k": 1}))
    assert status == 200 and "<script>" not in page and "&lt;script&gt;" in page
    assert 'value="lattice &lt;script&gt;alert(1)&lt;/script&gt; &#34; onmouseover=x"' in page
    fields = Inputs()
    fields.feed(page)
    assert fields.values["q"] == hostile  # one attribute holding the query, nothing more

    status, _, page = service.get("/?q=&k=2")
    assert status == 400 and 'role="alert"' in page and "the query is empty" in page


def test_the_vectors_persist_per_model_and_a_restart_embeds_nothing(service: Service) -> None:
    world = service.world
    fingerprint = service.engine.ref.fingerprint
    table = EmbeddingStore(world.paths.embedding_store).table_path(StoreKey(fingerprint))
    assert table.is_dir()  # the served model's vectors are in the store
    version = EmbeddingStore(world.paths.embedding_store).vectors(StoreKey(fingerprint)).table
    written = version.version
    again = open_engine(world.paths, world.params.promote)
    reread = EmbeddingStore(world.paths.embedding_store).vectors(StoreKey(fingerprint)).table
    assert reread.version == written  # no new commit: nothing embedded
    assert again.search("lattice", 3, "dense") == service.engine.search("lattice", 3, "dense")
    assert again.search("lattice", 1) == service.engine.search("lattice", 1)


def raw_request(service: Service, request: bytes) -> bytes:
    """What the service sends back for ``request`` written as is on a new connection."""
    port = int(service.base_url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(request)
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
    return answer


def test_openapi_describes_the_api_and_docs_shows_it_without_a_script(service: Service) -> None:
    status, openapi = service.json("/openapi.json")
    assert status == 200
    search = openapi["paths"]["/api/search"]["get"]
    assert {parameter["name"] for parameter in search["parameters"]} == {"q", "k", "ranking"}
    ok = search["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok == {"$ref": "#/components/schemas/SearchAnswer"}
    bad = search["responses"]["400"]["content"]["application/json"]["schema"]
    assert bad == {"$ref": "#/components/schemas/Problem"}
    schemas = openapi["components"]["schemas"]
    assert {"SearchAnswer", "HitOut", "StatementOut", "Health", "Problem"} <= set(schemas)
    assert set(schemas["SearchAnswer"]["required"]) == {
        "query",
        "model",
        "ranking",
        "took_ms",
        "hits",
    }
    assert "/static/{name}" not in openapi["paths"] and "/docs" not in openapi["paths"]
    # The answers are what the document says.
    _, answer = service.json("/api/search?q=lattice&k=2")
    SearchAnswer.model_validate(answer)

    docs = service.get_answer("/docs")
    assert docs.status == 200 and docs.headers["Content-Security-Policy"] == PAGE_POLICY
    page = docs.body.decode()
    assert "<script" not in page and "GET /api/search" in page
    assert '<section class="schema" id="SearchAnswer">' in page
    assert 'href="#HitOut"' in page  # a field's type links to its schema


@pytest.mark.parametrize("path", ["/", "/?q=lattice&k=2", "/health", "/api/search?q=lattice"])
def test_head_is_answered_as_get_without_a_body(service: Service, path: str) -> None:
    got = service.get_answer(path)
    head = service.get_answer(path, method="HEAD")
    assert head.status == got.status == 200
    assert head.headers["Content-Type"] == got.headers["Content-Type"]
    assert head.body == b""


@pytest.mark.parametrize(
    "query",
    [
        "$\\int_0^1 f(x)\\,dx = \\sum_{n} a_n$",  # only maths: no word BM25 knows
        "$x$",
        "\x00\x01 lattice \x1b[31m\x7f",  # control characters, percent-encoded
        "\ufffd\u202e lattice \U0001d53c",  # what a bad decoding leaves, bidi, astral
        "\\",
    ],
)
def test_odd_queries_get_a_normal_answer(service: Service, query: str) -> None:
    status, answer = service.json("/api/search?" + urllib.parse.urlencode({"q": query, "k": 3}))
    assert status == 200 and answer["query"] == query and len(answer["hits"]) == 3
    status, _, page = service.get("/?" + urllib.parse.urlencode({"q": query, "k": 3}))
    assert status == 200 and page.count('<li class="hit">') == 3


def test_oversized_and_malformed_requests_are_4xx_and_the_service_goes_on(
    service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    sixteen_kb = ("the lattice of $\\mathbb{Z}^n$ " * 600)[: 16 * 1024]
    status, body = service.json("/api/search?" + urllib.parse.urlencode({"q": sixteen_kb}))
    assert status == 400 and "at most 2,000" in body["error"]
    status, _, page = service.get("/?" + urllib.parse.urlencode({"q": sixteen_kb}))
    assert status == 400 and 'role="alert"' in page and "at most 2,000" in page
    # A head past the limit, a control character unencoded, no HTTP at all: uvicorn's 400.
    for request in (
        b"GET /api/search?q=" + b"x" * (70 * 1024) + b" HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET /api/search?q=a\x00b HTTP/1.1\r\nHost: a\r\n\r\n",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 TLS, not HTTP\r\n\r\n",
    ):
        answer = raw_request(service, request)
        assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
        assert b"Traceback" not in answer
    status, body = service.json("/api/search?q=lattice&k=1")  # still answering
    assert status == 200 and body["hits"]
    posted = raw_request(
        service, b"POST /api/search HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n"
    )
    assert posted.startswith(b"HTTP/1.1 405 ") and b'"error":"POST is not answered here' in posted
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]
