"""The optional LLM extractor, against a fake OpenAI-compatible endpoint on 127.0.0.1.

The fake speaks the chat-completions protocol (``POST /v1/chat/completions`` -> a
``chat.completion`` object) and answers each paper from a script chosen by its title:
good JSON, malformed replies of every kind, HTTP 500s, 401.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from pipelines.common import io
from pipelines.common.config import GraphParams
from pipelines.common.paths import Paths
from pipelines.graph.build import build_graph
from pipelines.graph.extractor import Chunk, PaperDocument
from pipelines.graph.llm import (
    LLMError,
    LLMExtractor,
    MalformedReply,
    build_messages,
    excerpt_chunks,
    extraction_from_reply,
    parse_reply,
)
from pipelines.graph.stage import run_graph

GOOD_REPLY = {
    "concepts": [
        {
            "name": "Rogers–Ramanujan identities",
            "type": "identity",
            "description": "Two q-series identities equating sums and products.",
            "aliases": ["RR identities"],
        },
        {"name": "Bailey's lemma", "type": "theorem", "description": "Builds Bailey pairs."},
        {"name": "Bailey pair", "type": "not-a-type"},
        {"description": "a concept without a name"},
        "not an object",
    ],
    "relations": [
        {"source": "Bailey's lemma", "target": "RR identities", "relation": "implies"},
        {"source": "Bailey's lemma", "target": "Bailey pair", "relation": "uses"},
        {"source": "Bailey's lemma", "target": "Bailey pair", "relation": "is friends with"},
        {"source": "Bailey's lemma", "target": "an unknown thing", "relation": "uses"},
    ],
}

TEXT = (
    "Bailey's lemma turns a Bailey pair into another Bailey pair; iterating it proves the "
    "Rogers–Ramanujan identities (the RR identities) and many more."
)


def chat_completion(content: Any) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "fake-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    ).encode()


GOOD = (200, chat_completion(json.dumps(GOOD_REPLY)))
NOT_JSON = (200, chat_completion('{"concepts": [ {"name": "Bailey'))
SERVER_ERROR = (500, b'{"error": {"message": "overloaded"}}')


class FakeChatServer:
    """Answers each request from the script of the first title found in it.

    ``script`` maps a paper title to the replies for its successive requests; the last
    reply repeats. ``requests`` records every request: path, headers and JSON body.
    """

    def __init__(self, script: dict[str, list[tuple[int, bytes]]]) -> None:
        self.script = {title: list(replies) for title, replies in script.items()}
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                status, payload = fake.reply(self.path, dict(self.headers), body)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # A short poll interval: shutdown() waits up to one interval for the loop to stop.
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def reply(self, path: str, headers: dict[str, str], body: Any) -> tuple[int, bytes]:
        with self._lock:
            self.requests.append({"path": path, "headers": headers, "body": body})
            if path != "/v1/chat/completions":
                return 404, b"{}"
            user = body["messages"][-1]["content"]
            for title, replies in self.script.items():
                if f"Title: {title}\n" in user:
                    return replies.pop(0) if len(replies) > 1 else replies[0]
            return GOOD

    def requests_for(self, title: str) -> int:
        return sum(
            f"Title: {title}\n" in request["body"]["messages"][-1]["content"]
            for request in self.requests
        )

    def __enter__(self) -> FakeChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[FakeChatServer] = []

    def start(script: dict[str, list[tuple[int, bytes]]]) -> FakeChatServer:
        server = FakeChatServer(script).__enter__()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.__exit__(None, None, None)


def extractor(url: str, root: Path, max_retries: int = 2, api_key: str = "") -> LLMExtractor:
    return LLMExtractor(
        url=url,
        model="fake-model",
        api_key=api_key,
        max_retries=max_retries,
        timeout_seconds=5.0,
        cache_dir=root / "llm_cache",
        quarantine_dir=root / "quarantine",
        backoff_seconds=0.0,
    )


def document(title: str, paper_id: str = "2401.00001", n_chunks: int = 1) -> PaperDocument:
    chunks = tuple(
        Chunk(f"{paper_id}v1#c{index:04d}", f"Chunk {index}. {TEXT}") for index in range(n_chunks)
    )
    return PaperDocument(paper_id, title, "An abstract.", ("math.CO",), chunks, ())


# -- the request ----------------------------------------------------------------------


def test_excerpt_is_first_two_and_last_two_chunks() -> None:
    chunks = [Chunk(str(index), f"text {index}") for index in range(6)]
    assert [c.chunk_id for c in excerpt_chunks(chunks)] == ["0", "1", "4", "5"]
    assert [c.chunk_id for c in excerpt_chunks(chunks[:3])] == ["0", "1", "2"]
    assert [c.chunk_id for c in excerpt_chunks(chunks[:1])] == ["0"]
    assert excerpt_chunks([]) == []
    messages = build_messages(document("Six chunks", n_chunks=6))
    user = messages[-1]["content"]
    assert [f"Chunk {index}." in user for index in range(6)] == [
        True,
        True,
        False,
        False,
        True,
        True,
    ]
    assert messages[0]["role"] == "system" and '"concepts"' in messages[0]["content"]


def test_request_speaks_chat_completions_with_the_key(serve: Any, tmp_path: Path) -> None:
    server = serve({})
    extractor(server.url, tmp_path, api_key="sk-test").extract(document("Keyed"))
    (request,) = server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-test"
    assert request["body"]["model"] == "fake-model"
    assert request["body"]["response_format"] == {"type": "json_object"}
    assert [message["role"] for message in request["body"]["messages"]] == ["system", "user"]


# -- replies --------------------------------------------------------------------------


def test_good_reply_gives_candidates_and_drops_unusable_items(serve: Any, tmp_path: Path) -> None:
    server = serve({})
    llm = extractor(server.url, tmp_path)
    extraction = llm.extract(document("Good"))
    assert [(c.display_name, c.type) for c in extraction.concepts] == [
        ("Rogers–Ramanujan identities", "identity"),
        ("Bailey's lemma", "theorem"),
        ("Bailey pair", "other"),  # an unknown type becomes "other"
    ]
    assert extraction.concepts[0].aliases == ("RR identities",)
    assert len(extraction.relations) == 3
    # 2 unusable concepts (no name, not an object) + 1 unknown relation.
    assert llm.stats == {
        "requests": 1,
        "cache_hits": 0,
        "retries": 0,
        "skipped": 0,
        "items_dropped": 3,
    }


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"concepts": [', "not JSON"),
        ("Sure! Here are the concepts: Bailey's lemma.", "not JSON"),
        ('["Bailey"]', "JSON list, not an object"),
        ('{"relations": []}', "no 'concepts' list"),
        ('{"concepts": "Bailey"}', "no 'concepts' list"),
        ('{"concepts": [], "relations": {"a": "b"}}', "'relations' is not a list"),
    ],
)
def test_parse_reply_rejects_malformed(content: str, message: str) -> None:
    with pytest.raises(MalformedReply, match=message):
        parse_reply(content)


def test_parse_reply_accepts_code_fences_and_missing_relations() -> None:
    assert parse_reply('```json\n{"concepts": []}\n```') == {"concepts": [], "relations": []}
    extraction, dropped = extraction_from_reply("x", {"concepts": [], "relations": []})
    assert extraction.concepts == () and dropped == 0


def test_malformed_reply_is_retried(serve: Any, tmp_path: Path) -> None:
    server = serve({"Flaky": [NOT_JSON, GOOD]})
    llm = extractor(server.url, tmp_path)
    extraction = llm.extract(document("Flaky"))
    assert server.requests_for("Flaky") == 2
    assert len(extraction.concepts) == 3 and not extraction.skipped_reason
    assert llm.stats["retries"] == 1


def test_server_error_is_retried(serve: Any, tmp_path: Path) -> None:
    server = serve({"Busy": [SERVER_ERROR, SERVER_ERROR, GOOD]})
    extraction = extractor(server.url, tmp_path).extract(document("Busy"))
    assert server.requests_for("Busy") == 3
    assert len(extraction.concepts) == 3


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (NOT_JSON, "reply is not JSON"),
        ((200, chat_completion('{"relations": []}')), "no 'concepts' list"),
        ((200, chat_completion(None)), "content is not a string"),
        ((200, b'{"choices": []}'), "not a chat completion"),
        ((200, b"<html>gateway</html>"), "not a chat completion"),
        (SERVER_ERROR, "HTTP 500"),
    ],
)
def test_unusable_after_retries_is_skipped_with_reason(
    serve: Any, tmp_path: Path, reply: tuple[int, bytes], reason: str
) -> None:
    server = serve({"Broken": [reply]})
    llm = extractor(server.url, tmp_path, max_retries=2)
    extraction = llm.extract(document("Broken", paper_id="math/0501001"))
    assert server.requests_for("Broken") == 3  # 1 + llm_max_retries
    assert extraction.concepts == () and extraction.skipped_reason
    (record,) = io.quarantined(tmp_path / "quarantine", "graph")
    assert record["id"] == "math/0501001"
    assert record["stage"] == "graph"
    assert "after 3 attempts" in record["reason"] and reason in record["reason"]
    errors = record["details"]["errors"]
    assert len(errors) == 3
    # Each attempt's own message, with no internal exception name in front of it.
    assert all(
        e.startswith(f"attempt {i}: ") and "_" not in e.split(":")[1]
        for i, e in enumerate(errors, 1)
    )
    assert (tmp_path / "quarantine" / "graph" / record["payload"]).read_bytes() == reply[1]
    assert llm.stats["skipped"] == 1
    # Not cached: the next run asks again.
    assert not list((tmp_path / "llm_cache").glob("*.json"))
    extractor(server.url, tmp_path, max_retries=0).extract(document("Broken", "math/0501001"))
    assert server.requests_for("Broken") == 4


def test_wrong_key_stops_the_run(serve: Any, tmp_path: Path) -> None:
    server = serve({"Locked": [(401, b'{"error": "invalid api key"}')]})
    with pytest.raises(LLMError, match="HTTP 401.*llm_api_key_env"):
        extractor(server.url, tmp_path).extract(document("Locked"))
    assert server.requests_for("Locked") == 1


def test_url_without_scheme_stops_the_run(tmp_path: Path) -> None:
    with pytest.raises(LLMError, match="not a usable URL"):
        extractor("127.0.0.1:9/v1", tmp_path).extract(document("No scheme"))


def test_unreachable_endpoint_is_retried_then_skipped(tmp_path: Path) -> None:
    server = FakeChatServer({})
    url = server.url
    server.server.server_close()  # nothing listens on the port any more
    llm = extractor(url, tmp_path, max_retries=1)
    extraction = llm.extract(document("Nobody home"))
    assert extraction.skipped_reason
    assert llm.stats["requests"] == 2
    (record,) = io.quarantined(tmp_path / "quarantine", "graph")
    assert "ConnectionError" in record["reason"]


# -- cache ----------------------------------------------------------------------------


def test_second_run_hits_the_cache_without_a_request(serve: Any, tmp_path: Path) -> None:
    server = serve({})
    first = extractor(server.url, tmp_path).extract(document("Cached"))
    assert server.requests_for("Cached") == 1
    (cache_file,) = (tmp_path / "llm_cache").glob("*.json")
    assert len(cache_file.stem) == 64  # sha256 hex of the request
    again = extractor(server.url, tmp_path)
    second = again.extract(document("Cached"))
    assert server.requests_for("Cached") == 1
    assert second == first
    assert again.stats["cache_hits"] == 1 and again.stats["requests"] == 0
    # Another model is another request.
    other = extractor(server.url, tmp_path)
    other.model = "other-model"
    other.extract(document("Cached"))
    assert server.requests_for("Cached") == 2


def test_damaged_cache_file_is_asked_again(serve: Any, tmp_path: Path) -> None:
    server = serve({})
    extractor(server.url, tmp_path).extract(document("Damaged"))
    (cache_file,) = (tmp_path / "llm_cache").glob("*.json")
    cache_file.write_text("{not json")
    extractor(server.url, tmp_path).extract(document("Damaged"))
    assert server.requests_for("Damaged") == 2
    assert json.loads(cache_file.read_text())["reply"]["concepts"]


# -- in the graph ---------------------------------------------------------------------


def test_llm_concepts_and_relations_reach_the_graph(serve: Any, tmp_path: Path) -> None:
    server = serve({"Broken": [NOT_JSON]})
    documents = [document("Good one", "2401.00001"), document("Broken", "2401.00002")]
    graph, report = build_graph(
        documents, extractor(server.url, tmp_path), GraphParams(), disable_progress=True
    )
    assert set(graph.concepts["name"]) == {
        "rogers ramanujan identity",
        "bailey lemma",
        "bailey pair",
    }
    edges = set(
        zip(graph.edges["source"], graph.edges["target"], graph.edges["relation"], strict=True)
    )
    assert ("bailey lemma", "rogers ramanujan identity", "implies") in edges  # via alias
    assert ("bailey lemma", "bailey pair", "uses") in edges
    assert report.relations_unresolved == 1  # "an unknown thing"
    assert report.papers == 2 and report.papers_skipped == 1 and report.papers_extracted == 1
    # Mentions come from the text of every paper, skipped or not.
    assert set(graph.mentions["paper_id"]) == {"2401.00001", "2401.00002"}
    assert report.extractor_stats["skipped"] == 1


def test_run_graph_with_llm_params(
    serve: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = serve({})
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-from-env")
    paths = Paths(tmp_path)
    io.write_parquet(
        paths.processed / "papers.parquet",
        pd.DataFrame(
            {
                "paper_id": ["2401.00001"],
                "title": ["Bailey chains"],
                "abstract": ["An abstract."],
                "categories": [["math.CO"]],
                "authors": [["A. Author"]],
            }
        ),
    )
    io.write_parquet(
        paths.processed / "chunks.parquet",
        pd.DataFrame(
            {
                "chunk_id": ["2401.00001v1#c0000"],
                "paper_id": ["2401.00001"],
                "chunk_index": [0],
                "text": [TEXT],
            }
        ),
    )
    io.write_parquet(
        paths.processed / "statements.parquet",
        pd.DataFrame(
            {"statement_id": [], "paper_id": [], "kind": [], "name": [], "text": [], "label": []},
            dtype=str,
        ).assign(terms=[], refs=[]),
    )
    params = GraphParams(
        extractor="llm",
        llm_url=server.url,
        llm_model="fake-model",
        llm_api_key_env="FAKE_LLM_KEY",
        llm_backoff_seconds=0.0,
    )
    report = run_graph(params, paths)
    assert report.extractor == "llm" and report.concepts == 3
    assert server.requests[0]["headers"]["Authorization"] == "Bearer sk-from-env"
    assert len(list(paths.llm_cache.glob("*.json"))) == 1
    run_graph(params, paths)
    assert len(server.requests) == 1  # the rerun is served from the cache
    metrics = json.loads((paths.metrics / "graph.json").read_text())
    assert metrics["extractor_stats"]["cache_hits"] == 1
