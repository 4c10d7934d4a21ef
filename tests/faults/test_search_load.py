"""The search service holds against idle, slow and vanishing clients (issue 23, finding 5).

A real server on 127.0.0.1 over a real :class:`SearchEngine` (a tiny model, a few
passages, no registry) that counts its searches; clients are raw sockets, so a test can
stop half-way through a request, never send one, or leave before its answer. The limits
are shrunk (one or two workers, a head deadline under a second) so each case is quick.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from promotion_worlds import Models, World
from typer.testing import CliRunner

from pipelines import cli
from pipelines.search.connections import ConnectionLimits, SearchServer
from pipelines.search.engine import LexicalIndex, ModelRef, SearchEngine
from pipelines.search.index import PassageIndex
from pipelines.search.query import Corpus
from pipelines.search.server import check_bind, make_server

PASSAGES = [
    "A lattice is a discrete subgroup of a real vector space.",
    "A prime gap is the difference between consecutive primes.",
    "A Zariski covering is a family of open immersions that covers a scheme.",
]
#: A request cut before the blank line that ends its head.
PARTIAL_HEAD = b"GET /api/search?q=lattice&k=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
FULL_HEAD = PARTIAL_HEAD + b"\r\n"


class CountingEngine(SearchEngine):
    """A real engine that counts its searches and can hold one at the door (``gate``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.searches = 0
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.gate.set()

    def answer(self, query: str, k: int, **kwargs: Any) -> dict[str, Any]:
        self.searches += 1
        self.entered.set()
        assert self.gate.wait(timeout=15), "the test never opened the gate"
        return super().answer(query, k, **kwargs)


@pytest.fixture(scope="module")
def engine(tiny_model_dir: Path) -> CountingEngine:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(tiny_model_dir), device="cpu")
    chunks = pd.DataFrame(
        {
            "chunk_id": [f"2401.0000{i}v1#c0000" for i in range(len(PASSAGES))],
            "paper_id": [f"2401.0000{i}" for i in range(len(PASSAGES))],
            "text": PASSAGES,
        }
    )
    vectors = model.encode(PASSAGES, normalize_embeddings=True)
    return CountingEngine(
        model,
        ModelRef("math-embed", "1", "champion", "tiny"),
        Corpus(chunks, {}, {}),
        PassageIndex(vectors),
        LexicalIndex(PASSAGES),
        "dense",
        miss_threshold=0.0,
    )


@contextmanager
def serving(engine: CountingEngine, limits: ConnectionLimits) -> Iterator[SearchServer]:
    engine.searches = 0
    engine.entered.clear()
    engine.gate.set()
    server = make_server(engine, "127.0.0.1", 0, limits)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        engine.gate.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def connect(server: SearchServer, timeout: float = 10) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.server_port), timeout=timeout)


def search(server: SearchServer, query: str = "lattice") -> dict[str, Any]:
    url = f"http://127.0.0.1:{server.server_port}/api/search?q={query}&k=1"
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        answer: dict[str, Any] = json.loads(response.read())
        return answer


def wait_until(condition: Callable[[], bool], timeout: float = 10) -> bool:
    """Whether ``condition`` came true within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def closed_by_server(client: socket.socket) -> bool:
    """Whether the server closed the connection (an EOF or a reset), waiting up to the
    client's timeout."""
    try:
        return client.recv(1024) == b""
    except ConnectionResetError:
        return True


def test_a_request_whose_head_never_ends_is_not_searched(
    engine: CountingEngine, bounded_in_time: None
) -> None:
    with serving(engine, ConnectionLimits(head_timeout_seconds=5)) as server:
        cut_short = connect(server)
        cut_short.sendall(PARTIAL_HEAD)
        cut_short.close()  # the client gives up mid-head
        assert search(server)["hits"][0]["text"].startswith("A lattice")
    assert engine.searches == 1  # the real query only


def test_requests_whose_clients_left_are_not_searched(
    engine: CountingEngine, bounded_in_time: None
) -> None:
    """300 aborted requests delayed a real query by 4.4 s: each was searched all the same."""
    with serving(engine, ConnectionLimits(workers=1)) as server:
        engine.gate.clear()  # the one worker holds the first search until the others left
        first: dict[str, Any] = {}
        holder = threading.Thread(target=lambda: first.update(search(server)))
        holder.start()
        assert engine.entered.wait(timeout=10)
        for _ in range(20):
            aborted = connect(server)
            aborted.sendall(FULL_HEAD)
            aborted.close()
        # Their requests wait for the worker; open it once the server has seen them go (a
        # client that leaves the instant its request is read may be searched: a race no
        # server can win, and not this test's case).
        assert wait_until(lambda: server.open_connections == 1)
        engine.gate.set()
        holder.join(timeout=10)
        assert first["hits"]
        assert search(server, "prime")["hits"][0]["text"].startswith("A prime gap")
    assert engine.searches == 2


def test_a_client_that_leaves_mid_answer_frees_its_worker(
    engine: CountingEngine, bounded_in_time: None, caplog: pytest.LogCaptureFixture
) -> None:
    with serving(engine, ConnectionLimits(workers=1)) as server:
        engine.gate.clear()  # the search starts, then waits until its client has gone
        leaving = connect(server)
        leaving.sendall(FULL_HEAD)
        assert engine.entered.wait(timeout=10)
        leaving.close()
        engine.gate.set()  # its answer now has nobody to go to
        # The one worker is free again: the next searches are answered.
        for query in ("prime", "Zariski"):
            assert search(server, query)["hits"]
    assert engine.searches == 3
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]


def test_idle_and_trickling_clients_are_closed_at_the_head_deadline(
    engine: CountingEngine, bounded_in_time: None
) -> None:
    deadline = 0.5
    with serving(engine, ConnectionLimits(head_timeout_seconds=deadline)) as server:
        started = time.monotonic()  # before the accept: the deadline counts from there
        with connect(server) as idle, connect(server, timeout=0.1) as trickling:
            sent, closed = 0, False
            # A byte every 0.1 s keeps a per-read timeout from ever firing; only a deadline
            # for the whole head stops it.
            while not closed and time.monotonic() - started < 8:
                try:
                    trickling.send(bytes([PARTIAL_HEAD[sent % len(PARTIAL_HEAD)]]))
                    sent += 1
                    closed = trickling.recv(1) == b""
                except TimeoutError:
                    continue
                except (BrokenPipeError, ConnectionResetError):
                    closed = True
            trickled_for = time.monotonic() - started
            assert closed, (
                f"a client trickling its head was still connected after {trickled_for:.1f} s"
            )
            assert closed_by_server(idle)
            assert deadline <= trickled_for < 5
        assert search(server)["hits"]  # the service itself is fine
    assert engine.searches == 1


def test_hundreds_of_slow_clients_do_not_hold_up_a_real_query(
    engine: CountingEngine, bounded_in_time: None
) -> None:
    limits = ConnectionLimits(workers=2, head_timeout_seconds=15)
    with serving(engine, limits) as server, ExitStack() as open_sockets:
        slow = [open_sockets.enter_context(connect(server)) for _ in range(300)]
        for client in slow[::2]:
            client.sendall(PARTIAL_HEAD)  # half started a head, half send nothing
        started = time.monotonic()
        for query in ("lattice", "prime", "Zariski"):
            assert search(server, query)["hits"]
        answered_in = time.monotonic() - started
    assert engine.searches == 3
    assert answered_in < limits.head_timeout_seconds  # not after the slow ones timed out


@pytest.mark.parametrize("host", ["", "0.0.0.0", "192.168.1.20", "example.org"])
def test_a_bind_other_machines_can_reach_needs_allow_remote(
    host: str, tmp_path: Path, bounded_in_time: None
) -> None:
    result = CliRunner().invoke(
        cli.app, ["serve-search", "--host", host, "--port", "0", "--root", str(tmp_path)]
    )
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("serve-search: --host")
    assert "--allow-remote" in lines[0] and "127.0.0.1" in lines[0]


def test_allow_remote_warns_and_loopback_needs_nothing() -> None:
    assert "0.0.0.0" in (check_bind("", allow_remote=True) or "")
    assert "anyone who can reach" in (check_bind("10.0.0.5", allow_remote=True) or "")
    for loopback in ("127.0.0.1", "127.0.0.2", "::1", "localhost"):
        assert check_bind(loopback, allow_remote=False) is None


def test_a_port_already_taken_is_one_line_naming_it_and_the_option(
    world: World, bow_models: Models, bounded_in_time: None
) -> None:
    world.promote(world.install_candidate(bow_models.knows_7))  # a champion to serve
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(
            cli.app, ["serve-search", "--port", str(port), "--root", str(world.root)]
        )
    assert result.exit_code == 1
    assert isinstance(result.exception, SystemExit)  # the message, not a traceback
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"serve-search: port {port} is taken")
    assert f"127.0.0.1:{port}" in line and "--port" in line
    assert "writable" not in line
