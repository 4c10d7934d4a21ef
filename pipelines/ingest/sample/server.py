"""An HTTP server on 127.0.0.1 that serves a sample mirror the way arXiv serves papers.

``MirrorServer(mirror_dir)`` reads a mirror written by :mod:`pipelines.sample.generator`
and answers, in a daemon thread, exactly the requests ``ingest`` makes of arXiv, so the
same client code is tested over real HTTP. It is a context manager (or ``start()`` /
``stop()``); ``base_url`` is ``http://127.0.0.1:<port>``.

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
    ``arxiv:comment`` (omitted when empty), the ``alternate`` and ``pdf`` links,
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

import base64
import contextlib
import hashlib
import json
import logging
import re
import socket
import struct
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit
from xml.sax.saxutils import escape, quoteattr

from pipelines.common.io import safe_name
from pipelines.ingest.sample.generator import ENTRIES_FILE, EPRINT_DIR

_LOG = logging.getLogger(__name__)

FAULTS = ("429", "503", "500", "stall", "reset", "truncate")
MAX_RESULTS_LIMIT = 2000
DEFAULT_MAX_RESULTS = 10

ATOM_NS = "http://www.w3.org/2005/Atom"
OPENSEARCH_NS = "http://a9.com/-/spec/opensearch/1.1/"
ARXIV_NS = "http://arxiv.org/schemas/atom"
ATOM_CONTENT_TYPE = "application/atom+xml; charset=utf-8"


class QueryError(ValueError):
    """A request the mirror does not support; the message is sent back in the error feed."""

    def __init__(self, message: str, anchor: str = "unsupported_query") -> None:
        super().__init__(message)
        self.anchor = anchor


# -- the entries ----------------------------------------------------------------------


@dataclass(frozen=True)
class MirrorEntry:
    paper_id: str
    version: int
    title: str
    summary: str
    authors: tuple[str, ...]
    categories: tuple[str, ...]
    primary_category: str
    published: str
    updated: str
    comment: str
    withdrawn: bool

    # Parsed once per entry: a listing compares every entry's dates on every page.
    @cached_property
    def updated_at(self) -> datetime:
        return parse_time(self.updated)

    @cached_property
    def published_at(self) -> datetime:
        return parse_time(self.published)


def parse_time(text: str) -> datetime:
    """ISO 8601 → aware UTC datetime (``Z`` or an offset; naive times are taken as UTC)."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as error:
        raise ValueError(
            f"{text!r} is not an ISO 8601 time such as 2024-01-03T10:00:00Z"
        ) from error
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def format_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def load_entries(mirror_dir: Path) -> list[MirrorEntry]:
    path = mirror_dir / ENTRIES_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; run python -m pipelines.sample first")
    entries = []
    for line_number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            entries.append(
                MirrorEntry(
                    paper_id=raw["paper_id"],
                    version=int(raw["version"]),
                    title=raw["title"],
                    summary=raw["summary"],
                    authors=tuple(raw["authors"]),
                    categories=tuple(raw["categories"]),
                    primary_category=raw["primary_category"],
                    published=raw["published"],
                    updated=raw["updated"],
                    comment=raw["comment"],
                    withdrawn=bool(raw["withdrawn"]),
                )
            )
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{path}:{line_number}: not a mirror entry ({error})") from error
    return entries


def visible_versions(
    entries: Sequence[MirrorEntry], now: datetime | None
) -> dict[str, list[MirrorEntry]]:
    """paper id → its versions with ``updated <= now``, oldest first (papers with none left out)."""
    papers: dict[str, list[MirrorEntry]] = {}
    for entry in entries:
        if now is None or entry.updated_at <= now:
            papers.setdefault(entry.paper_id, []).append(entry)
    for versions in papers.values():
        versions.sort(key=lambda entry: entry.version)
    return papers


# -- search_query ---------------------------------------------------------------------

Predicate = Callable[[MirrorEntry], bool]

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<open>\() | (?P<close>\)) |
        (?P<op>ANDNOT|AND|OR)(?=[\s()]|$) |
        (?P<field>[A-Za-z_]+):(?:
            \[\s*(?P<low>[^\s\]]+)\s+TO\s+(?P<high>[^\s\]]+)\s*\]
          | "(?P<quoted>[^"]*)"
          | (?P<value>[^\s()]+)
        )
    )""",
    re.VERBOSE,
)
_DATE_FIELDS = {"lastUpdatedDate": "updated_at", "submittedDate": "published_at"}
_PAPER_ID = re.compile(
    r"(?P<paper_id>\d{4}\.\d{4,5}|[a-z][a-z-]*(?:\.[A-Z]{2})?/\d{7})(?:v(?P<version>\d+))?"
)


@dataclass(frozen=True)
class _Token:
    kind: str  # "(", ")", "AND", "OR", "ANDNOT", "term"
    predicate: Predicate | None = None


def parse_search_query(text: str) -> Predicate:
    """Compile an arXiv ``search_query`` (the subset in the module docstring) to a test."""
    tokens = _tokenize(text)
    if not tokens:
        raise QueryError("search_query is empty", "empty_search_query")
    predicate, position = _parse_or(tokens, 0)
    if position != len(tokens):
        raise QueryError(f"unexpected {tokens[position].kind!r} in search_query {text!r}")
    return predicate


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    position = 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        if match is None:
            raise QueryError(f"cannot parse search_query {text!r} at {text[position:]!r}")
        position = match.end()
        if match["open"]:
            tokens.append(_Token("("))
        elif match["close"]:
            tokens.append(_Token(")"))
        elif match["op"]:
            tokens.append(_Token(match["op"]))
        else:
            tokens.append(_Token("term", _term(match)))
    return tokens


def _term(match: re.Match[str]) -> Predicate:
    field = match["field"]
    if field in _DATE_FIELDS:
        if match["low"] is None:
            raise QueryError(f"{field} needs a range: {field}:[YYYYMMDDHHMM TO YYYYMMDDHHMM]")
        low = _minute(match["low"], field)
        high = _minute(match["high"], field) + timedelta(minutes=1)
        attribute = _DATE_FIELDS[field]
        return lambda entry: low <= getattr(entry, attribute) < high
    value = match["quoted"] if match["quoted"] is not None else match["value"]
    if value is None:
        raise QueryError(f"{field}: takes a single value, not a range")
    if field == "cat":
        return lambda entry: value in entry.categories
    if field == "id":
        wanted = _PAPER_ID.fullmatch(value)
        if wanted is None:
            raise QueryError(f"incorrect id format for {value}", f"incorrect_id_format_for_{value}")
        return lambda entry: entry.paper_id == wanted["paper_id"]
    raise QueryError(
        f"unsupported field {field!r} in search_query; this mirror supports cat:, id:, "
        "lastUpdatedDate: and submittedDate:"
    )


def _minute(text: str, field: str) -> datetime:
    if not re.fullmatch(r"\d{12}", text):
        raise QueryError(f"{field} bound {text!r} is not YYYYMMDDHHMM (12 digits, UTC)")
    try:
        return datetime.strptime(text, "%Y%m%d%H%M").replace(tzinfo=UTC)
    except ValueError as error:
        raise QueryError(f"{field} bound {text!r} is not a valid date") from error


def _parse_or(tokens: Sequence[_Token], position: int) -> tuple[Predicate, int]:
    left, position = _parse_and(tokens, position)
    while position < len(tokens) and tokens[position].kind == "OR":
        right, position = _parse_and(tokens, position + 1)
        left = _either(left, right)
    return left, position


def _parse_and(tokens: Sequence[_Token], position: int) -> tuple[Predicate, int]:
    left, position = _parse_atom(tokens, position)
    while position < len(tokens) and tokens[position].kind in ("AND", "ANDNOT"):
        negate = tokens[position].kind == "ANDNOT"
        right, position = _parse_atom(tokens, position + 1)
        left = _both(left, _negation(right) if negate else right)
    return left, position


def _parse_atom(tokens: Sequence[_Token], position: int) -> tuple[Predicate, int]:
    if position >= len(tokens):
        raise QueryError("search_query ends where a term was expected")
    token = tokens[position]
    if token.kind == "(":
        inner, position = _parse_or(tokens, position + 1)
        if position >= len(tokens) or tokens[position].kind != ")":
            raise QueryError("unbalanced parentheses in search_query")
        return inner, position + 1
    if token.kind == "term" and token.predicate is not None:
        return token.predicate, position + 1
    raise QueryError(f"unexpected {token.kind!r} in search_query where a term was expected")


def _either(left: Predicate, right: Predicate) -> Predicate:
    return lambda entry: left(entry) or right(entry)


def _both(left: Predicate, right: Predicate) -> Predicate:
    return lambda entry: left(entry) and right(entry)


def _negation(predicate: Predicate) -> Predicate:
    return lambda entry: not predicate(entry)


# -- the listing ----------------------------------------------------------------------


@dataclass(frozen=True)
class Listing:
    entries: tuple[MirrorEntry, ...]  # this page
    total: int
    start: int
    max_results: int


def run_query(
    params: Mapping[str, str], entries: Sequence[MirrorEntry], now: datetime | None
) -> Listing:
    """Answer ``/api/query`` parameters over ``entries`` as seen at ``now`` (pure)."""
    start = _non_negative(params.get("start", "0"), "start")
    max_results = _non_negative(params.get("max_results", str(DEFAULT_MAX_RESULTS)), "max_results")
    if max_results > MAX_RESULTS_LIMIT:
        raise QueryError(
            f"max_results must be at most {MAX_RESULTS_LIMIT}; page with start instead",
            "max_results_too_large",
        )
    sort_by = params.get("sortBy", "relevance")
    if sort_by not in ("relevance", "lastUpdatedDate", "submittedDate"):
        raise QueryError(
            f"sortBy must be relevance, lastUpdatedDate or submittedDate, not {sort_by!r}"
        )
    sort_order = params.get("sortOrder", "descending")
    if sort_order not in ("ascending", "descending"):
        raise QueryError(f"sortOrder must be ascending or descending, not {sort_order!r}")

    search = params.get("search_query", "").strip()
    id_list = [item.strip() for item in params.get("id_list", "").split(",") if item.strip()]
    if not search and not id_list:
        return Listing((), 0, start, max_results)
    predicate = parse_search_query(search) if search else None

    papers = visible_versions(entries, now)
    if id_list:
        candidates = []
        for item in id_list:
            match = _PAPER_ID.fullmatch(item)
            if match is None:
                raise QueryError(
                    f"incorrect id format for {item}", f"incorrect_id_format_for_{item}"
                )
            versions = papers.get(match["paper_id"], [])
            if match["version"] is not None:
                versions = [entry for entry in versions if entry.version == int(match["version"])]
            if versions:
                candidates.append(versions[-1])
    else:
        candidates = [versions[-1] for versions in papers.values()]
    matches = [entry for entry in candidates if predicate is None or predicate(entry)]
    if sort_by == "submittedDate":
        matches.sort(key=lambda entry: (entry.published_at, entry.paper_id))
    elif sort_by == "lastUpdatedDate" or not id_list:
        matches.sort(key=lambda entry: (entry.updated_at, entry.paper_id))
    if sort_order == "descending" and (sort_by != "relevance" or not id_list):
        matches.reverse()
    page = tuple(matches[start : start + max_results])
    return Listing(page, len(matches), start, max_results)


def _non_negative(text: str, name: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise QueryError(f"{name} must be an integer", f"{name}_must_be_an_integer") from None
    if value < 0:
        raise QueryError(f"{name} must be non-negative", f"{name}_must_be_non-negative")
    return value


def _feed_head(query: str, title_query: str, updated: str, base_url: str) -> list[str]:
    digest = base64.urlsafe_b64encode(hashlib.sha1(query.encode("utf-8")).digest()).decode()
    return [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<feed xmlns="{ATOM_NS}" xmlns:opensearch="{OPENSEARCH_NS}" xmlns:arxiv="{ARXIV_NS}">',
        f'  <link href={quoteattr(f"{base_url}/api/query?{query}")} rel="self" '
        'type="application/atom+xml"/>',
        f'  <title type="html">{escape(f"ArXiv Query: {title_query}")}</title>',
        f"  <id>http://arxiv.org/api/{digest.rstrip('=')}</id>",
        f"  <updated>{updated}</updated>",
    ]


def _title_query(params: Mapping[str, str]) -> str:
    return (
        f"search_query={params.get('search_query', '')}&id_list={params.get('id_list', '')}"
        f"&start={params.get('start', '0')}&max_results="
        f"{params.get('max_results', str(DEFAULT_MAX_RESULTS))}"
    )


def render_feed(
    listing: Listing, params: Mapping[str, str], query: str, updated: str, base_url: str
) -> bytes:
    lines = _feed_head(query, _title_query(params), updated, base_url)
    lines += [
        f"  <opensearch:totalResults>{listing.total}</opensearch:totalResults>",
        f"  <opensearch:startIndex>{listing.start}</opensearch:startIndex>",
        f"  <opensearch:itemsPerPage>{listing.max_results}</opensearch:itemsPerPage>",
    ]
    for entry in listing.entries:
        versioned = f"{entry.paper_id}v{entry.version}"
        lines.append("  <entry>")
        lines.append(f"    <id>http://arxiv.org/abs/{versioned}</id>")
        lines.append(f"    <updated>{entry.updated}</updated>")
        lines.append(f"    <published>{entry.published}</published>")
        lines.append(f"    <title>{escape(entry.title)}</title>")
        lines.append(f"    <summary>{escape(entry.summary)}</summary>")
        for author in entry.authors:
            lines.append(f"    <author>\n      <name>{escape(author)}</name>\n    </author>")
        if entry.comment:
            lines.append(f"    <arxiv:comment>{escape(entry.comment)}</arxiv:comment>")
        lines.append(
            f'    <link href="http://arxiv.org/abs/{versioned}" rel="alternate" type="text/html"/>'
        )
        lines.append(
            f'    <link title="pdf" href="http://arxiv.org/pdf/{versioned}" rel="related" '
            'type="application/pdf"/>'
        )
        lines.append(
            f"    <arxiv:primary_category term={quoteattr(entry.primary_category)} "
            f'scheme="{ARXIV_NS}"/>'
        )
        for category in entry.categories:
            lines.append(f'    <category term={quoteattr(category)} scheme="{ARXIV_NS}"/>')
        lines.append("  </entry>")
    lines.append("</feed>")
    return ("\n".join(lines) + "\n").encode("utf-8")


def render_error_feed(
    error: QueryError, params: Mapping[str, str], query: str, updated: str, base_url: str
) -> bytes:
    anchor = re.sub(r"[^A-Za-z0-9_.:-]+", "_", error.anchor)
    error_id = f"http://arxiv.org/api/errors#{anchor}"
    lines = _feed_head(query, _title_query(params), updated, base_url)
    lines += [
        "  <opensearch:totalResults>1</opensearch:totalResults>",
        "  <opensearch:startIndex>0</opensearch:startIndex>",
        "  <opensearch:itemsPerPage>1</opensearch:itemsPerPage>",
        "  <entry>",
        f"    <id>{escape(error_id)}</id>",
        "    <title>Error</title>",
        f"    <summary>{escape(str(error))}</summary>",
        f"    <updated>{updated}</updated>",
        f'    <link href={quoteattr(error_id)} rel="alternate" type="text/html"/>',
        "    <author>\n      <name>arXiv api core</name>\n    </author>",
        "  </entry>",
        "</feed>",
    ]
    return ("\n".join(lines) + "\n").encode("utf-8")


# -- the server -----------------------------------------------------------------------


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
        body = render_feed(listing, params, query, updated, base_url)
        return _Response(200, (("Content-Type", ATOM_CONTENT_TYPE),), body)

    def _eprint(self, identifier: str) -> _Response:
        match = _PAPER_ID.fullmatch(identifier)
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
        name = f"{safe_name(entry.paper_id)}v{entry.version}"
        data_path = self.mirror_dir / EPRINT_DIR / name
        sidecar_path = data_path.with_name(f"{name}.json")
        if not data_path.is_file() or not sidecar_path.is_file():
            return _text(
                404, f"the mirror has no e-print file for {entry.paper_id}v{entry.version}"
            )
        sidecar = json.loads(sidecar_path.read_text(encoding="utf-8"))
        return _Response(200, (("Content-Type", sidecar["content_type"]),), data_path.read_bytes())


def _text(status: int, message: str) -> _Response:
    return _Response(
        status, (("Content-Type", "text/plain; charset=utf-8"),), f"{message}\n".encode()
    )
