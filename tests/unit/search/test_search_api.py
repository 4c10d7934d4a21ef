"""``mathembed serve-search``'s HTTP API: a real server on 127.0.0.1, a real registry.

The world's champion is a tiny bag-of-words model (``promotion_worlds``); the server runs
in a thread on a free port, shared by the module's tests (none changes it), and is shut
down by the fixture.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from promotion_worlds import LATTICE_COSINE, Models, World, make_world

from pipelines.retrieval.vector_store import EmbeddingStore, StoreKey
from pipelines.search.engine import SearchEngine, open_engine
from pipelines.search.server import make_server


@dataclass(frozen=True)
class Service:
    world: World
    engine: SearchEngine
    base_url: str

    def get(self, path: str) -> tuple[int, str, str]:
        """Status, content type and body of ``GET path``, errors included."""
        try:
            with urllib.request.urlopen(self.base_url + path, timeout=10) as response:
                return response.status, response.headers["Content-Type"], response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.headers["Content-Type"], error.read().decode()

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
    assert set(hits[0]) == {
        "rank",
        "chunk_id",
        "paper_id",
        "title",
        "score",
        "text",
        "url",
        "statements",
    }
    assert hits[0]["statements"] == []  # the world has no statements table
    assert {hit["chunk_id"] for hit in hits[:2]} == {"2401.00007v1#c0000", "2401.00007v1#c0001"}
    assert hits[0]["title"] == "On the lattice" and hits[0]["url"] is None
    assert hits[0]["score"] >= hits[1]["score"] > hits[2]["score"]
    assert answer["ranking"] == "hybrid"  # the service's default

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
        ("/api/search?q=prime&ranking=bm25", "ranking must be one of hybrid, dense, got 'bm25'"),
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
    assert "hybrid ranking" in page and '<option value="hybrid" selected>' in page

    status, _, page = service.get("/?q=lattice&k=2&ranking=dense")
    assert "dense ranking" in page and '<option value="dense" selected>' in page

    hostile = 'lattice <script>alert(1)</script> " onmouseover=x'
    status, _, page = service.get("/?" + urllib.parse.urlencode({"q": hostile, "k": 1}))
    assert status == 200 and "<script>" not in page and "&lt;script&gt;" in page
    assert 'value="lattice &lt;script&gt;alert(1)&lt;/script&gt; &quot; onmouseover=x"' in page

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
