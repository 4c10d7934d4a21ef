"""A slow-drip upstream cannot hold a request open: every request has a total deadline.

The server on 127.0.0.1 answers at once, then sends its body one byte at a time, each
well within ``timeout_seconds`` of the last, so the per-read timeout never fires. The
client gives up once the request has run ``REQUEST_DEADLINE_FACTOR * timeout_seconds``
in total. The fetch runs in a thread joined with a timeout, so a client without the
deadline fails this test instead of hanging it; the server stops by itself.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from pipelines.ingest.arxiv.client import ArxivClient
from pipelines.ingest.arxiv.transport import REQUEST_DEADLINE_FACTOR, ArxivError

TIMEOUT_SECONDS = 0.3  # per wait for bytes; the drip is six times faster than that
DRIP_INTERVAL_SECONDS = 0.05
BODY_BYTES = 10_000  # 500 s at this drip: only the deadline can end the request sooner
SERVER_LIFETIME_SECONDS = 15.0
DEADLINE = REQUEST_DEADLINE_FACTOR * TIMEOUT_SECONDS


@contextmanager
def drip_server() -> Iterator[str]:
    """An HTTP server that drips its body; it stops after SERVER_LIFETIME_SECONDS."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(SERVER_LIFETIME_SECONDS)
    stop = threading.Event()

    def serve() -> None:
        ends = time.monotonic() + SERVER_LIFETIME_SECONDS
        try:
            while not stop.is_set() and time.monotonic() < ends:
                connection, _ = listener.accept()
                with connection:
                    connection.recv(65536)  # the request; its content does not matter
                    connection.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/x-eprint-tar\r\n"
                        + f"Content-Length: {BODY_BYTES}\r\n\r\n".encode()
                    )
                    for _ in range(BODY_BYTES):
                        if stop.wait(DRIP_INTERVAL_SECONDS) or time.monotonic() > ends:
                            break
                        connection.sendall(b"x")
        except OSError:
            pass  # the client hung up, or the listener was closed: the drip is over

    thread = threading.Thread(target=serve, name="drip-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        listener.close()
        thread.join(timeout=5)


def test_a_slow_drip_download_fails_within_its_deadline() -> None:
    outcome: dict[str, object] = {}

    def fetch(base_url: str) -> None:
        client = ArxivClient(
            base_url,
            user_agent="mathembed-tests",
            delay_seconds=0.0,
            timeout_seconds=TIMEOUT_SECONDS,
            max_retries=0,
            backoff_seconds=0.0,
        )
        started = time.monotonic()
        try:
            outcome["result"] = client.fetch_eprint("2401.00001", 1)
        except ArxivError as error:
            outcome["error"] = error
        finally:
            outcome["elapsed"] = time.monotonic() - started
            client.close()

    with drip_server() as base_url:
        worker = threading.Thread(target=fetch, args=(base_url,), daemon=True)
        worker.start()
        worker.join(timeout=DEADLINE + 10)
        assert not worker.is_alive(), f"the request was still open after {DEADLINE + 10} s"

    error = outcome.get("error")
    assert isinstance(error, ArxivError), outcome
    assert "deadline" in str(error) and "2401.00001v1" in str(error)
    assert error.retryable  # a slow upstream may be fine tomorrow: the paper is retried
    assert DEADLINE - 0.1 <= float(outcome["elapsed"]) < DEADLINE + 2.0  # type: ignore[arg-type]


def test_the_deadline_is_a_documented_multiple_of_the_timeout() -> None:
    client = ArxivClient(
        "http://127.0.0.1:9",
        user_agent="mathembed-tests",
        delay_seconds=0.0,
        timeout_seconds=30.0,
        max_retries=0,
        backoff_seconds=0.0,
    )
    assert client.request_deadline_seconds == pytest.approx(REQUEST_DEADLINE_FACTOR * 30.0)
    client.close()
