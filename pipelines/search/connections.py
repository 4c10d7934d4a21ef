"""The search service's connections: requests read off the worker pool, answered on it.

The standard library's ``ThreadingHTTPServer`` gives every connection a thread that waits
on the client for ever: idle connections were never closed, a request whose head never
finished still ran a search once the client had gone, and 300 aborted requests delayed a
real query by seconds (issue 23). Here one thread, the one in :meth:`PooledHTTPServer.
serve_forever`, accepts connections and reads each request's head with a selector, under
a deadline counted from the accept (:attr:`ConnectionLimits.head_timeout_seconds`): a
client that is idle or trickles its head is closed unanswered and never holds a worker. A
complete head goes to a fixed pool of :attr:`ConnectionLimits.workers` threads, which
answer it with the handler class (:class:`HeadFirstHandler`); each write is bounded by
:attr:`ConnectionLimits.write_timeout_seconds`, so a client that never reads its answer
frees the worker too. Past :attr:`ConnectionLimits.max_heads` heads being read, or
:attr:`ConnectionLimits.max_queued` requests waiting for a worker, new ones get a 503.
One request per connection (HTTP/1.0, as ``http.server`` answers by default): no
keep-alive connection sits idle after its answer.
"""

from __future__ import annotations

import contextlib
import io
import logging
import selectors
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

log = logging.getLogger(__name__)

#: How a request head ends (http.server also accepts bare newlines).
_HEAD_ENDS = (b"\r\n\r\n", b"\n\n")
_BUSY = (
    b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    b"Retry-After: 1\r\nConnection: close\r\n\r\n"
    b'{"error": "the search service is busy; retry in a second"}'
)
_HEAD_TOO_LARGE = (
    b"HTTP/1.0 431 Request Header Fields Too Large\r\nContent-Type: application/json\r\n"
    b'Connection: close\r\n\r\n{"error": "the request head is too large"}'
)


@dataclass(frozen=True)
class ConnectionLimits:
    """What one client may hold of the service, and for how long."""

    #: Threads answering complete requests. Searches take turns on the model anyway
    #: (``SearchEngine``'s encode lock); more threads would only queue on it.
    workers: int = 8
    #: Connections the kernel queues before they are accepted (capped by somaxconn).
    #: 5, the standard library's default, made clients time out at 200 at once.
    backlog: int = 1024
    #: From accept to a complete request head: an idle or trickling client is closed.
    head_timeout_seconds: float = 10.0
    #: Per send of an answer: a client that does not read it frees its worker after this.
    write_timeout_seconds: float = 10.0
    max_head_bytes: int = 16 * 1024
    #: Heads being read at once; past it a new connection gets a 503 at once.
    max_heads: int = 2048
    #: Complete requests waiting for a worker; past it a new one gets a 503.
    max_queued: int = 512


@dataclass
class _Head:
    """A connection whose request head is still arriving."""

    address: Any
    deadline: float
    data: bytearray = field(default_factory=bytearray)


@dataclass(frozen=True)
class Arrived:
    """A connection with its complete request head: what :class:`HeadFirstHandler` gets."""

    connection: socket.socket
    head: bytes


def head_complete(data: bytes | bytearray) -> bool:
    """Whether ``data`` holds a whole request head (pure)."""
    return any(end in data for end in _HEAD_ENDS)


def client_gone(connection: socket.socket) -> bool:
    """Whether the client closed (or reset) its side: nothing to answer, so no search.

    A client that half-closes after its request and still reads the answer counts as
    gone too; HTTP clients (browsers, curl, urllib, requests) do not do that.
    """
    try:
        readable = selectors.DefaultSelector()
        with readable:
            readable.register(connection, selectors.EVENT_READ)
            if not readable.select(timeout=0):
                return False
        return connection.recv(1, socket.MSG_PEEK) == b""
    except OSError:  # reset by the peer
        return True


class HeadFirstHandler(BaseHTTPRequestHandler):
    """A ``BaseHTTPRequestHandler`` for a request whose head was read already."""

    request: Arrived

    def setup(self) -> None:
        self.connection = self.request.connection
        self.rfile = io.BytesIO(self.request.head)
        self.wfile = self.connection.makefile("wb")

    def finish(self) -> None:
        try:
            self.wfile.flush()
        except OSError:
            pass  # the client left before its answer; nothing to tell it
        finally:
            self.wfile.close()

    def client_gone(self) -> bool:
        return client_gone(self.connection)


def listening_socket(address: tuple[str, int], limits: ConnectionLimits) -> socket.socket:
    """A TCP socket listening at ``address`` (port 0: any free one), IPv6 for an IPv6 host."""
    family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
    return socket.create_server(address, family=family, backlog=limits.backlog)


class PooledHTTPServer:
    """An HTTP server with :class:`ConnectionLimits` on a socket :func:`listening_socket`
    opened; the subset of ``socketserver``'s API the service uses (``serve_forever``,
    ``shutdown``, ``server_close``, ``server_port``)."""

    def __init__(
        self,
        listener: socket.socket,
        handler_class: type[HeadFirstHandler],
        limits: ConnectionLimits | None = None,
    ) -> None:
        self.limits = limits or ConnectionLimits()
        self.handler_class = handler_class
        self.socket = listener
        self.socket.setblocking(False)
        self.server_address = self.socket.getsockname()[:2]
        self.server_port: int = self.server_address[1]
        self._pool = ThreadPoolExecutor(self.limits.workers, thread_name_prefix="search")
        self._selector = selectors.DefaultSelector()
        self._heads: dict[socket.socket, _Head] = {}
        self._queued: set[socket.socket] = set()
        self._queued_lock = threading.Lock()
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._stopped.set()

    # -- the accepting and reading thread ------------------------------------------------

    def serve_forever(self, poll_interval: float = 0.25) -> None:
        """Accept, read heads and hand them to the pool until :meth:`shutdown`."""
        self._stopped.clear()
        self._selector.register(self.socket, selectors.EVENT_READ, None)
        try:
            while not self._stop.is_set():
                for key, _ in self._selector.select(poll_interval):
                    if key.data is None:
                        self._accept()
                    else:
                        self._read(key.fileobj)  # type: ignore[arg-type]
                self._expire(time.monotonic())
        finally:
            self._selector.unregister(self.socket)
            self._stopped.set()

    def _accept(self) -> None:
        # A bounded batch: reading the heads already open must not starve.
        for _ in range(64):
            try:
                connection, address = self.socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as error:  # e.g. EMFILE: the next select retries
                log.warning("search service: cannot accept a connection (%s)", error)
                return
            if len(self._heads) >= self.limits.max_heads:
                _refuse(connection, _BUSY)
                continue
            connection.setblocking(False)
            deadline = time.monotonic() + self.limits.head_timeout_seconds
            self._heads[connection] = _Head(address, deadline)
            self._selector.register(connection, selectors.EVENT_READ, True)

    def _read(self, connection: socket.socket) -> None:
        head = self._heads[connection]
        try:
            chunk = connection.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:  # closed before its request was complete: nothing to answer
            self._drop(connection)
            return
        head.data += chunk
        if head_complete(head.data):
            self._forget(connection)
            self._dispatch(connection, head)
        elif len(head.data) > self.limits.max_head_bytes:
            self._forget(connection)
            _refuse(connection, _HEAD_TOO_LARGE)

    def _expire(self, now: float) -> None:
        for connection in [conn for conn, head in self._heads.items() if head.deadline <= now]:
            log.debug("search service: closed %s, no request head in time", connection)
            self._drop(connection)

    def _dispatch(self, connection: socket.socket, head: _Head) -> None:
        with self._queued_lock:
            if len(self._queued) >= self.limits.max_queued:
                busy = True
            else:
                busy = False
                self._queued.add(connection)
        if busy:
            _refuse(connection, _BUSY)
            return
        connection.setblocking(True)
        connection.settimeout(self.limits.write_timeout_seconds)
        self._pool.submit(self._answer, connection, head.address, bytes(head.data))

    def _forget(self, connection: socket.socket) -> None:
        self._selector.unregister(connection)
        del self._heads[connection]

    def _drop(self, connection: socket.socket) -> None:
        self._forget(connection)
        connection.close()

    # -- the workers -----------------------------------------------------------------------

    def _answer(self, connection: socket.socket, address: Any, head: bytes) -> None:
        with self._queued_lock:
            self._queued.discard(connection)
        try:
            self.handler_class(Arrived(connection, head), address, self)  # type: ignore[arg-type]
        except Exception:  # a bug in one request must not end the worker
            log.exception("search service: request from %s failed", address)
        finally:
            _close(connection)

    # -- stopping ----------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Stop :meth:`serve_forever` (from another thread) and wait until it returned."""
        self._stop.set()
        self._stopped.wait()

    def server_close(self) -> None:
        """Close the listening socket and every connection; let running answers finish."""
        self.socket.close()
        for connection in list(self._heads):
            self._drop(connection)
        self._pool.shutdown(wait=True, cancel_futures=True)
        with self._queued_lock:
            for connection in self._queued:  # cancelled before a worker took them
                _close(connection)
            self._queued.clear()
        self._selector.close()


def _refuse(connection: socket.socket, answer: bytes) -> None:
    """Send a short refusal without waiting on the client, then close."""
    try:
        connection.setblocking(False)
        connection.send(answer)
    except OSError:
        pass  # a client that cannot take a few hundred bytes gets no explanation
    _close(connection)


def _close(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed by the peer
        connection.shutdown(socket.SHUT_RDWR)
    connection.close()
