"""A real HTTP endpoint on 127.0.0.1 that records the JSON documents POSTed to it.

What the flows' failure hook posts to, in tests: ``with receiving_webhook() as webhook:``
gives its ``url``, the ``reports`` received so far, and the ``status`` it answers with;
with ``location`` set, a POST to any other path is answered ``307`` to that path instead.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any


@dataclass
class Webhook:
    url: str = ""
    reports: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    location: str = ""


@contextmanager
def receiving_webhook() -> Iterator[Webhook]:
    webhook = Webhook()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers["Content-Length"]))
            webhook.reports.append(json.loads(body))
            if webhook.location and self.path != webhook.location:
                self.send_response(307)
                self.send_header("Location", webhook.location)
            else:
                self.send_response(webhook.status)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    webhook.url = f"http://127.0.0.1:{server.server_port}/hook"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield webhook
    finally:
        server.shutdown()
        server.server_close()
