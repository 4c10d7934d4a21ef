"""The search service's connections: uvicorn, held to :class:`ConnectionLimits`.

uvicorn owns them (one asyncio loop accepts, reads and writes; searches run on worker
threads, :mod:`pipelines.search.api`) and brings most limits: at most
:attr:`ConnectionLimits.max_connections` connections or requests at once (past it a new
request gets a 503), a request head of at most :attr:`ConnectionLimits.max_head_bytes`
(past it a 400), an idle keep-alive connection closed after
:attr:`ConnectionLimits.keep_alive_seconds`, and a shutdown that waits for running answers
at most :attr:`ConnectionLimits.shutdown_seconds`. Two deadlines it lacks are added by
:class:`DeadlineProtocol`, its h11 protocol: a client must complete its request head within
:attr:`ConnectionLimits.head_timeout_seconds` of connecting (or of its previous answer), so
a client that is idle or trickles its head is closed unanswered (issue 23: such clients
once held a thread each for ever); and a client that stops reading its answer is dropped
once the answer has waited :attr:`ConnectionLimits.write_timeout_seconds` to be sent.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConnectionLimits:
    """What one client may hold of the service, and for how long."""

    #: Searches at once, each on a worker thread. They take turns on the model anyway
    #: (``SearchEngine``'s encode lock): a second lets one search rank while the next
    #: encodes; more only contend for the GIL with the thread that serves the connections
    #: (8 answered 20 clients at 21 searches/s on 2 busy cores where 2 answered 25).
    workers: int = 2
    #: Connections (and requests being answered) at once; past it a request gets a 503.
    max_connections: int = 1024
    #: Connections the kernel queues before they are accepted (capped by somaxconn).
    backlog: int = 1024
    #: From connecting (or the previous answer) to a complete request head.
    head_timeout_seconds: float = 10.0
    #: How long an answer may wait on a client that does not read it.
    write_timeout_seconds: float = 10.0
    #: An idle connection is closed this long after its last answer.
    keep_alive_seconds: int = 5
    #: A request head's size: room for a query of ``query.MAX_QUERY_CHARS`` characters
    #: percent-encoded, so a long one gets the service's message rather than uvicorn's.
    max_head_bytes: int = 64 * 1024
    #: On Ctrl-C or SIGTERM, how long running answers may finish before they are cut.
    shutdown_seconds: float = 0.5


class DeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol with the head and write deadlines of ``limits``."""

    limits = ConnectionLimits()

    def __init__(
        self,
        config: uvicorn.Config,
        server_state: ServerState,
        app_state: dict[str, object],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._head_deadline: asyncio.TimerHandle | None = None
        self._write_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_head()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._await_head()  # the next request's head: the same deadline

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._write_deadline is None:
            timeout = self.limits.write_timeout_seconds
            self._write_deadline = self.loop.call_later(timeout, self._write_overdue)

    def resume_writing(self) -> None:
        super().resume_writing()
        self._cancel_write_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
        self._cancel_write_deadline()
        super().connection_lost(exc)

    def _await_head(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
        timeout = self.limits.head_timeout_seconds
        self._head_deadline = self.loop.call_later(timeout, self._head_overdue)

    def _head_overdue(self) -> None:
        self._head_deadline = None
        if self.cycle is None or self.cycle.response_complete:  # no request came whole
            log.debug("search service: closed %s, no request head in time", self.client)
            self.transport.close()

    def _write_overdue(self) -> None:
        self._write_deadline = None
        log.debug("search service: dropped %s, it did not read its answer", self.client)
        self.transport.abort()

    def _cancel_write_deadline(self) -> None:
        if self._write_deadline is not None:
            self._write_deadline.cancel()
            self._write_deadline = None


def listening_socket(address: tuple[str, int], limits: ConnectionLimits) -> socket.socket:
    """A TCP socket listening at ``address`` (port 0: any free one), IPv6 for an IPv6 host."""
    family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
    return socket.create_server(address, family=family, backlog=limits.backlog)


class _Uvicorn(uvicorn.Server):
    """uvicorn's server, telling ``on_ready`` once it accepts connections."""

    def __init__(self, config: uvicorn.Config, on_ready: Callable[[], None] | None) -> None:
        super().__init__(config)
        self.on_ready = on_ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and not self.should_exit and self.on_ready is not None:
            self.on_ready()


class SearchServer:
    """An ASGI application served by uvicorn on a socket already listening
    (:func:`listening_socket`), with :class:`ConnectionLimits`: ``serve_forever`` until
    ``shutdown`` (from another thread) or, in the main thread, Ctrl-C or SIGTERM, which
    uvicorn catches, stops on, and raises again once stopped."""

    def __init__(
        self,
        app: Callable[..., object],
        listener: socket.socket,
        limits: ConnectionLimits | None = None,
        on_ready: Callable[[], None] | None = None,
    ) -> None:
        limits = limits or ConnectionLimits()
        protocol = type("LimitedProtocol", (DeadlineProtocol,), {"limits": limits})
        config = uvicorn.Config(
            app,
            http=protocol,
            lifespan="off",
            log_config=None,  # the command's logging; uvicorn's own says only warnings
            log_level="warning",
            access_log=False,
            server_header=False,
            limit_concurrency=limits.max_connections,
            timeout_keep_alive=limits.keep_alive_seconds,
            h11_max_incomplete_event_size=limits.max_head_bytes,
        )
        # Declared whole seconds, used as a float (asyncio.wait_for): the wait is shorter.
        config.timeout_graceful_shutdown = limits.shutdown_seconds  # type: ignore[assignment]
        self.limits = limits
        self.socket = listener
        self.server_port: int = listener.getsockname()[1]
        self._server = _Uvicorn(config, on_ready)
        self._stopped = threading.Event()
        self._stopped.set()

    @property
    def open_connections(self) -> int:
        """How many client connections the server holds open now."""
        return len(self._server.server_state.connections)

    def serve_forever(self) -> None:
        self._stopped.clear()
        try:
            self._server.run(sockets=[self.socket])
        finally:
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop :meth:`serve_forever` and wait until it returned."""
        self._server.should_exit = True
        self._stopped.wait()

    def server_close(self) -> None:
        self.socket.close()
