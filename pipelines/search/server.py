"""``mathembed serve-search``: the search engine over HTTP on 127.0.0.1.

``GET /api/search?q=...&k=10`` answers JSON (:meth:`SearchEngine.answer`; ``ranking=dense``
or ``ranking=hybrid`` overrides the service's default); ``GET /?q=...`` is the HTML page
(:mod:`pipelines.search.page`: a form and the hits, every text escaped, formulas typeset by
KaTeX in the browser); ``GET /static/...`` serves its scripts, style sheets and fonts
(:mod:`pipelines.search.assets`; nothing comes from elsewhere); ``GET /health`` says which
model answers. A bad request
(empty ``q``, ``k`` not a number in 1..100, an unknown ``ranking``) is a 400 with a JSON
message.
Connections are held to :class:`~pipelines.search.connections.ConnectionLimits` (a
bounded worker pool, deadlines for idle and slow clients; a request whose client has gone
is not searched). It listens on 127.0.0.1; any other address serves whoever can reach the
machine, so :func:`check_bind` refuses one unless the caller allows remote clients. The
port is bound (:func:`listen`) before the model loads: a port already taken is one line at
once, not after a load that may embed the corpus.
"""

from __future__ import annotations

import errno
import ipaddress
import json
import logging
import signal
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pipelines.search.assets import CACHE_CONTROL, Asset, load_assets, not_modified
from pipelines.search.connections import (
    ConnectionLimits,
    HeadFirstHandler,
    PooledHTTPServer,
    listening_socket,
)
from pipelines.search.engine import SearchEngine
from pipelines.search.page import (
    DEFAULT_K,
    NOTHING_POLICY,
    PAGE_POLICY,
    STATIC_PREFIX,
    render_page,
)
from pipelines.search.query import MAX_K

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
#: Characters of a passage shown per hit (the API and the page alike).
PASSAGE_CHARS = 400
#: torch threads while serving. One short query gains nothing from a second core: on the
#: 2-core machine, idle, MiniLM encodes one in 11.5 ms with one thread and 20 ms with two;
#: at a load average of 9 a search took p50 24 ms with one and 134 ms with two.
QUERY_THREADS = 1


class RemoteBindError(ValueError):
    """A non-loopback address without permission to serve remote clients."""


def check_bind(host: str, allow_remote: bool) -> str | None:
    """Refuse an address other clients could reach unless ``allow_remote``; with it, the
    warning to show (``None``: loopback, nothing to say). Pure: ``host`` is not resolved,
    so a host name other than ``localhost`` counts as remote."""
    if host == "localhost" or _is_loopback(host):
        return None
    shown = "all interfaces (0.0.0.0)" if host in ("", "0.0.0.0", "::") else host
    if not allow_remote:
        raise RemoteBindError(
            f"--host {host!r} would serve {shown}: anyone who can reach this machine could "
            "query it (there is no authentication). Keep the default 127.0.0.1, or pass "
            "--allow-remote to serve other machines on purpose"
        )
    return f"serving on {shown}: anyone who can reach this machine can query it"


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ListenError(ValueError):
    """The service cannot listen at ``--host``/``--port`` (the port taken, a privileged
    port, an address not this machine's)."""


def listen(host: str, port: int, limits: ConnectionLimits | None = None) -> socket.socket:
    """The service's socket listening at ``host:port`` (port 0: any free one), or a
    :class:`ListenError` saying why not and what to pass instead."""
    try:
        return listening_socket((host, port), limits or ConnectionLimits())
    except OSError as error:
        raise ListenError(listen_problem(host, port, error)) from error


def listen_problem(host: str, port: int, error: OSError) -> str:
    """Why ``host:port`` cannot be listened on, and the option that changes it (pure)."""
    where = f"[{host}]:{port}" if ":" in host else f"{host or '0.0.0.0'}:{port}"
    if error.errno == errno.EADDRINUSE:
        return (
            f"port {port} is taken: another program (another serve-search?) listens on "
            f"{where}; stop it (`ss -ltnp 'sport = :{port}'` names it) or pick another port "
            "with --port (--port 0: any free one, printed at start)"
        )
    reason = error.strerror or str(error)
    if error.errno == errno.EACCES:
        return (
            f"cannot listen on {where}: {reason} (a port below 1024 needs privileges); "
            "pick another port with --port"
        )
    return (
        f"cannot listen on {where}: {reason}; pass --host an address of this machine "
        "(default 127.0.0.1) and --port a free port"
    )


class BadRequest(ValueError):
    """A request the service refuses with 400; the message says what to send instead."""


@dataclass(frozen=True)
class SearchRequest:
    query: str
    k: int
    ranking: str | None  # None: the service's default


def parse_search(query_string: str) -> SearchRequest:
    """``q``, ``k`` and ``ranking`` (unchecked) from a query string, or :class:`BadRequest`."""
    fields = parse_qs(query_string, keep_blank_values=True)
    query = fields.get("q", [""])[0]
    if not query.strip():
        raise BadRequest("the query is empty: pass q, e.g. /api/search?q=prime+gaps")
    raw_k = fields.get("k", [str(DEFAULT_K)])[0]
    try:
        k = int(raw_k)
    except ValueError:
        raise BadRequest(f"k must be a whole number from 1 to {MAX_K}, got {raw_k!r}") from None
    if not 1 <= k <= MAX_K:
        raise BadRequest(f"k must be a whole number from 1 to {MAX_K}, got {k}")
    # An unknown ranking is the engine's to refuse (a ValueError, a 400 like these).
    return SearchRequest(query, k, fields.get("ranking", [""])[0] or None)


def make_server(
    engine: SearchEngine,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    limits: ConnectionLimits | None = None,
    *,
    listener: socket.socket | None = None,
) -> PooledHTTPServer:
    """A server on ``listener`` (from :func:`listen`), else bound to ``host:port`` (port 0:
    any free one); call ``serve_forever``."""
    limits = limits or ConnectionLimits()
    assets = load_assets()

    class Handler(HeadFirstHandler):
        server_version = "mathembed-search"

        def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
            url = urlsplit(self.path)
            if url.path == "/health":
                import torch

                health = {"status": "ok", "model": engine.ref.as_json()}
                self._json(HTTPStatus.OK, {**health, "torch_threads": torch.get_num_threads()})
            elif url.path == "/api/search":
                try:
                    request = parse_search(url.query)
                    answer = self._answer(request)
                except ValueError as error:  # BadRequest, or what check_request refuses
                    self._json(HTTPStatus.BAD_REQUEST, {"error": str(error)})
                    return
                if answer is not None:
                    self._json(HTTPStatus.OK, answer)
            elif url.path == "/":
                self._page(url.query)
            elif url.path.startswith(STATIC_PREFIX) and (
                asset := assets.get(url.path.removeprefix(STATIC_PREFIX))
            ):
                self._asset(asset)
            else:
                self._json(HTTPStatus.NOT_FOUND, {"error": f"no page {url.path}; try /"})

        def _page(self, query_string: str) -> None:
            model = engine.ref.as_json()
            fields = parse_qs(query_string, keep_blank_values=True)
            if "q" not in fields:
                self._html(HTTPStatus.OK, render_page(model, ranking=engine.ranking))
                return
            query = fields["q"][0]
            try:
                request = parse_search(query_string)
                answer = self._answer(request)
            except ValueError as error:
                page = render_page(model, query, error=str(error), ranking=engine.ranking)
                self._html(HTTPStatus.BAD_REQUEST, page)
                return
            if answer is not None:
                page = render_page(model, query, request.k, answer, ranking=answer["ranking"])
                self._html(HTTPStatus.OK, page)

        def _answer(self, request: SearchRequest) -> dict[str, Any] | None:
            """The search's answer, or ``None`` without searching when the client has gone
            (it gave up waiting, or never meant to read): its turn on the model is free."""
            if self.client_gone():
                log.debug("%s left before its search; not searched", self.address_string())
                return None
            return engine.answer(
                request.query, request.k, ranking=request.ranking, max_chars=PASSAGE_CHARS
            )

        def _asset(self, asset: Asset) -> None:
            headers = {"ETag": asset.etag, "Cache-Control": CACHE_CONTROL}
            if not_modified(asset, self.headers.get("If-None-Match")):
                self._send(HTTPStatus.NOT_MODIFIED, asset.content_type, b"", headers)
            else:
                self._send(HTTPStatus.OK, asset.content_type, asset.body, headers)

        def _json(self, status: HTTPStatus, body: Mapping[str, Any]) -> None:
            text = json.dumps(body, ensure_ascii=False)
            self._send(status, "application/json", text.encode("utf-8"))

        def _html(self, status: HTTPStatus, page: str) -> None:
            # The page loads its scripts, styles and fonts from here, nothing else.
            policy = {"Content-Security-Policy": PAGE_POLICY}
            self._send(status, "text/html; charset=utf-8", page.encode("utf-8"), policy)

        def _send(
            self,
            status: HTTPStatus,
            content_type: str,
            data: bytes,
            headers: Mapping[str, str] | None = None,
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            if status != HTTPStatus.NOT_MODIFIED:
                self.send_header("Content-Length", str(len(data)))
            self.send_header("X-Content-Type-Options", "nosniff")
            # What is not the page (JSON, an asset) loads nothing at all.
            headers = {"Content-Security-Policy": NOTHING_POLICY, **(headers or {})}
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            log.debug("%s " + format, self.address_string(), *args)

    return PooledHTTPServer(listener or listen(host, port, limits), Handler, limits)


def serve(engine: SearchEngine, host: str, listener: socket.socket) -> None:
    """Serve on ``listener`` (:func:`listen`) until Ctrl-C (or SIGTERM, as a service manager
    stops it), then close it.

    ``host`` is the one :func:`check_bind` let through, as the address printed names it.
    """
    import torch

    server = make_server(engine, listener=listener)
    signal.signal(signal.SIGTERM, _interrupt)
    # The index is built: from now on only single queries are encoded.
    torch.set_num_threads(QUERY_THREADS)
    engine.encode_query("warm-up")
    address = f"http://{host}:{server.server_port}/"
    log.info("search service on %s", address)
    print(f"mathembed search: {address} (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("mathembed search: stopped", flush=True)
    finally:
        server.server_close()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
