"""A real HTTP server on 127.0.0.1 that answers every request with one canned response.

What a server that is not the one a knob should name looks like, in tests:
``with answering(501) as url:``, or ``answering(200, b"<html>", "text/html")`` for an
answer that is not JSON. The server stops when the block ends. :func:`serving` runs any
handler's server the same way (``hostile_arxiv`` serves its fake arXiv with it).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any


@contextmanager
def answering(
    status: int, body: bytes = b"", content_type: str = "application/json"
) -> Iterator[str]:
    """The URL (``http://127.0.0.1:<port>``) of a server answering ``status`` and ``body``
    to every GET, POST, PUT and DELETE."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)  # the request's body, unread, would reset the client
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_DELETE = _answer  # noqa: N815 (http.server's names)

        def log_message(self, *args: Any) -> None:
            pass

    with serving(HTTPServer(("127.0.0.1", 0), Handler)) as url:
        yield url


@contextmanager
def serving(server: HTTPServer, poll_interval: float = 0.5) -> Iterator[str]:
    """Run ``server`` (bound on 127.0.0.1) in a thread for the block; yields its base URL
    and stops it, its socket closed, when the block ends. ``shutdown`` waits up to one
    ``poll_interval``."""
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": poll_interval}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
