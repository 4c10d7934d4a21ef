"""An HTTP server on 127.0.0.1 that serves a mirror the way arXiv serves papers: the one
door to the mirror from outside it.

``MirrorServer(mirror_dir)`` reads a mirror (:mod:`pipelines.mirror.layout`) and answers,
in a daemon thread, exactly the requests ``ingest`` makes of arXiv, so the same client
code is tested over real HTTP. It is a context manager (or ``start()`` / ``stop()``);
``base_url`` is ``http://127.0.0.1:<port>``. :func:`serving` is what ingest uses: the
mirror served for the length of a ``with`` block, its URL given.

What is supported (anything else is answered as described):

``GET /api/query``
    Parameters ``search_query``, ``id_list``, ``start`` (default 0), ``max_results``
    (default 10, at most 2000), ``sortBy`` (``lastUpdatedDate``, ``submittedDate``;
    ``relevance``, the default, is served as ``lastUpdatedDate``) and ``sortOrder``
    (``ascending`` or ``descending``, the default). Ties are broken by paper id.

    ``search_query`` grammar (what ingest sends, and a little more)::

        query := and_query ("OR" and_query)*
        and_query := atom (("AND" | "ANDNOT") atom)*
        atom := "(" query ")" | cat:<category> | id:<paper id>
              | lastUpdatedDate:[YYYYMMDDHHMM TO YYYYMMDDHHMM]
              | submittedDate:[YYYYMMDDHHMM TO YYYYMMDDHHMM]

    so AND and ANDNOT bind tighter than OR. Date ranges are in UTC and inclusive at
    minute resolution: ``[202401010000 TO 202401312359]`` holds every time from
    2024-01-01T00:00:00Z to 2024-01-31T23:59:59Z. ``lastUpdatedDate`` is the ``updated``
    of the version listed, ``submittedDate`` its ``published`` (the v1 date). Other
    fields (``ti:``, ``au:``, ``abs:``, ``all:`` ...), malformed syntax, a bad
    ``start``/``max_results`` or a malformed id in ``id_list`` get HTTP 400 with arXiv's
    error feed: one ``<entry>`` whose ``<id>`` is ``http://arxiv.org/api/errors#...``,
    ``<title>Error</title>`` and the message in ``<summary>``. Neither ``search_query``
    nor ``id_list``: an empty feed (totalResults 0).

    The answer is an Atom 1.0 feed like export.arxiv.org's (namespaces Atom, OpenSearch
    1.1 and ``http://arxiv.org/schemas/atom``) listing, for every matching paper, the
    latest version visible at ``now``: ``<id>http://arxiv.org/abs/<id>v<N></id>``,
    ``updated``, ``published``, ``title``, ``summary``, ``author/name``,
    ``arxiv:comment`` (omitted when empty), the ``alternate`` and ``pdf`` links, a
    ``source`` link (``rel="related"``, as arXiv links a DOI) where the mirror's corpus
    knows where a reader finds the paper (:mod:`pipelines.mirror.links`),
    ``arxiv:primary_category`` and ``category``; ``opensearch:totalResults``,
    ``startIndex`` and ``itemsPerPage`` (the requested ``max_results``). With
    ``id_list``, an id with a version (``2401.00004v1``) lists that version if visible.

``GET /e-print/<id>v<N>`` and ``GET /e-print/<id>`` (the latest visible version)
    The e-print bytes as stored, with the sidecar's ``Content-Type``
    (``application/x-eprint-tar``, ``application/x-eprint`` or ``application/pdf``) and
    no ``Content-Encoding``: like arXiv, the gzip bytes are the body. Old-style ids work
    (``/e-print/math/0501001v2``). A version not visible at ``now``, an unknown paper,
    and a **withdrawn version get 404** (withdrawn versions have no e-print; they are
    listed with a comment saying "withdrawn").

Any other path: 404. Only ``GET`` is served. HTTP/1.1 with keep-alive.

Time: ``now`` (ISO 8601, or ``None`` for "everything") hides every version whose
``updated`` is later; ``set_now()`` moves it, simulating days passing between runs.

Faults: ``faults`` maps a path prefix (``"/api/query"``, ``"/e-print/2401.00005v1"``) to
a queue of faults, consumed one per matching request (the longest matching prefix with
faults left wins): ``"429"`` and ``"503"`` (with ``Retry-After: 1``), ``"500"``,
``"stall"`` (wait ``stall_seconds``, then answer normally; clients with a shorter
timeout give up), ``"reset"`` (close the connection with a TCP reset, no response) and
``"truncate"`` (the normal status and ``Content-Length``, then half of the body and the
connection is closed). ``requests`` lists every request's path and query, in order;
``faults_applied`` lists ``(request, fault)`` pairs; ``wait_for_requests(n)`` blocks until
``n`` requests have arrived.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import threading
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from pipelines.common.io import read_json
from pipelines.mirror.layout import (
    ENTRIES_FILE,
    EPRINT_DIR,
    eprint_name,
    format_time,
    load_entries,
    parse_time,
)
from pipelines.mirror.links import source_links
from pipelines.mirror.listing import (
    PAPER_ID,
    QueryError,
    render_error_feed,
    render_feed,
    run_query,
    visible_versions,
)

_LOG = logging.getLogger(__name__)

FAULTS = ("429", "503", "500", "stall", "reset", "truncate")
ATOM_CONTENT_TYPE = "application/atom+xml; charset=utf-8"


@dataclass(frozen=True)
class _Response:
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, mirror: MirrorServer, port: int) -> None:
        self.mirror = mirror
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", port), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def close_request(self, request: Any) -> None:
        with self.connections_lock:
            self.connections.discard(request)
        super().close_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout, reset) is expected in fault tests: log, not print.
        _LOG.debug("connection from %s ended with an error", client_address, exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    protocol_version = "HTTP/1.1"
    server_version = "mathembed-sample-mirror/1"
    # Headers and body go out in separate writes; without TCP_NODELAY each response
    # waits ~40 ms on a delayed ACK.
    disable_nagle_algorithm = True
    timeout = 30  # an idle keep-alive connection is closed after this many seconds

    def do_GET(self) -> None:  # noqa: N802 -- the name http.server dispatches to
        mirror = self.server.mirror
        fault = mirror._record(self.path)
        if fault in ("429", "503", "500"):
            headers: tuple[tuple[str, str], ...] = (("Content-Type", "text/plain; charset=utf-8"),)
            if fault != "500":
                headers += (("Retry-After", "1"),)
            self._send(_Response(int(fault), headers, f"fault {fault}\n".encode()))
            return
        if fault == "reset":
            self._reset()
            return
        if fault == "stall" and mirror._stall():
            self.close_connection = True  # the server is stopping: just hang up
            return
        response = mirror._respond(self.path)
        self._send(response, truncate=fault == "truncate")

    def _send(self, response: _Response, *, truncate: bool = False) -> None:
        self.send_response(response.status)
        for name, value in response.headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        if truncate:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(response.body[: len(response.body) // 2] if truncate else response.body)
        if truncate:
            self.wfile.flush()
            self.close_connection = True

    def _reset(self) -> None:
        # SO_LINGER with a zero timeout makes close() send RST instead of FIN.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 -- base signature
        _LOG.debug("%s %s", self.address_string(), format % args)


class MirrorServer:
    """Serves ``mirror_dir`` on 127.0.0.1 like arXiv; see the module docstring."""

    def __init__(
        self,
        mirror_dir: Path,
        *,
        now: str | None = None,
        faults: Mapping[str, Sequence[str]] | None = None,
        stall_seconds: float = 2.0,
        port: int = 0,
    ) -> None:
        self.mirror_dir = Path(mirror_dir)
        self.entries = load_entries(self.mirror_dir)
        self.links = source_links(self.mirror_dir)
        self.stall_seconds = stall_seconds
        self.port = port
        self.requests: list[str] = []
        self.faults_applied: list[tuple[str, str]] = []
        self._now: datetime | None = parse_time(now) if now is not None else None
        self._faults: dict[str, deque[str]] = {}
        self._lock = threading.Lock()
        self._request_seen = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._server: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        for prefix, queue in (faults or {}).items():
            self.add_faults(prefix, queue)

    # ---- lifecycle

    def start(self) -> MirrorServer:
        if self._server is not None:
            return self
        self._stopping.clear()
        self._server = _HTTPServer(self, self.port)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="mirror-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()  # wakes stalled handlers
        server.shutdown()
        with server.connections_lock:
            open_connections = list(server.connections)
        for connection in open_connections:
            # Unblocks handler threads waiting for the next keep-alive request.
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        server.server_close()
        if thread is not None:
            thread.join()
        self._server = None
        self._thread = None

    def __enter__(self) -> MirrorServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the mirror server is not running; use it as a context manager")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # ---- controls

    def set_now(self, iso: str | None) -> None:
        """Hide versions updated after ``iso`` (``None``: show everything)."""
        self._now = parse_time(iso) if iso is not None else None

    @property
    def now(self) -> str | None:
        return format_time(self._now) if self._now is not None else None

    def add_faults(self, prefix: str, faults: Sequence[str]) -> None:
        unknown = [fault for fault in faults if fault not in FAULTS]
        if unknown:
            raise ValueError(f"unknown fault(s) {unknown} for {prefix!r}; known: {list(FAULTS)}")
        if not prefix.startswith("/"):
            raise ValueError(f"fault prefix {prefix!r} must be a path starting with '/'")
        with self._lock:
            self._faults.setdefault(prefix, deque()).extend(faults)

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> bool:
        """Block until ``count`` requests have arrived (tests synchronise on this, not sleeps)."""
        with self._request_seen:
            return self._request_seen.wait_for(lambda: len(self.requests) >= count, timeout)

    # ---- request handling (called from handler threads)

    def _record(self, raw_path: str) -> str | None:
        """Log the request and take the next fault queued for its path, if any."""
        path = urlsplit(raw_path).path
        with self._lock:
            self.requests.append(raw_path)
            self._request_seen.notify_all()
            prefixes = [p for p, queue in self._faults.items() if queue and path.startswith(p)]
            if not prefixes:
                return None
            fault = self._faults[max(prefixes, key=len)].popleft()
            self.faults_applied.append((raw_path, fault))
            return fault

    def _stall(self) -> bool:
        """Wait ``stall_seconds``; True if the server began stopping meanwhile."""
        return self._stopping.wait(self.stall_seconds)

    def _respond(self, raw_path: str) -> _Response:
        parts = urlsplit(raw_path)
        if parts.path == "/api/query":
            return self._query(parts.query)
        if parts.path.startswith("/e-print/"):
            return self._eprint(unquote(parts.path.removeprefix("/e-print/")))
        return _text(404, f"{parts.path} not found: this mirror serves /api/query and /e-print/")

    def _query(self, query: str) -> _Response:
        params = {key: values[-1] for key, values in parse_qs(query).items()}
        updated = (
            format_time(self._now) if self._now is not None else format_time(datetime.now(UTC))
        )
        base_url = self.base_url
        try:
            listing = run_query(params, self.entries, self._now)
        except QueryError as error:
            body = render_error_feed(error, params, query, updated, base_url)
            return _Response(400, (("Content-Type", ATOM_CONTENT_TYPE),), body)
        body = render_feed(listing, params, query, updated, base_url, self.links)
        return _Response(200, (("Content-Type", ATOM_CONTENT_TYPE),), body)

    def _eprint(self, identifier: str) -> _Response:
        match = PAPER_ID.fullmatch(identifier)
        if match is None:
            return _text(404, f"no e-print {identifier!r}: not an arXiv id")
        versions = visible_versions(
            [entry for entry in self.entries if entry.paper_id == match["paper_id"]], self._now
        ).get(match["paper_id"], [])
        if match["version"] is not None:
            versions = [entry for entry in versions if entry.version == int(match["version"])]
        if not versions:
            return _text(404, f"no e-print {identifier!r} in this mirror (at this time)")
        entry = versions[-1]
        if entry.withdrawn:
            return _text(404, f"{entry.paper_id}v{entry.version} is withdrawn: no e-print")
        name = eprint_name(entry.paper_id, entry.version)
        data_path = self.mirror_dir / EPRINT_DIR / name
        sidecar_path = data_path.with_name(f"{name}.json")
        if not data_path.is_file() or not sidecar_path.is_file():
            return _text(
                404, f"the mirror has no e-print file for {entry.paper_id}v{entry.version}"
            )
        sidecar = read_json(sidecar_path)
        return _Response(200, (("Content-Type", sidecar["content_type"]),), data_path.read_bytes())


@contextlib.contextmanager
def serving(mirror_dir: Path) -> Iterator[str]:
    """Serve the mirror in ``mirror_dir`` on 127.0.0.1 for the length of the block; its
    base URL, to harvest like arXiv's API."""
    if not (mirror_dir / ENTRIES_FILE).is_file():
        raise FileNotFoundError(
            f"the sample mirror {mirror_dir} is missing (no {ENTRIES_FILE}); "
            "run mathembed sample first"
        )
    with MirrorServer(mirror_dir) as server:
        yield server.base_url


def _text(status: int, message: str) -> _Response:
    return _Response(
        status, (("Content-Type", "text/plain; charset=utf-8"),), f"{message}\n".encode()
    )
