"""``mathembed serve-search``: the search engine over HTTP on 127.0.0.1.

The routes are :mod:`pipelines.search.api`'s (a FastAPI application: the page at ``/``,
JSON at ``/api/search``, ``/health``, ``/openapi.json`` and ``/docs``); uvicorn serves them
(:mod:`pipelines.search.connections`: its connections, limits and shutdown). This module
is the command's side: where the service may listen and the socket it listens on. It
listens on 127.0.0.1; any other address serves whoever can reach the machine, so
:func:`check_bind` refuses one unless the caller allows remote clients. The port is bound
(:func:`listen`) before the model loads: a port already taken is one line at once, not
after a load that may embed the corpus. :func:`serve` runs until Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import signal
import socket
from collections.abc import Callable

from pipelines.search.api import create_app
from pipelines.search.connections import ConnectionLimits, SearchServer, listening_socket
from pipelines.search.engine import SearchEngine

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
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


def make_server(
    engine: SearchEngine,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    limits: ConnectionLimits | None = None,
    *,
    listener: socket.socket | None = None,
    on_ready: Callable[[], None] | None = None,
) -> SearchServer:
    """The service on ``listener`` (from :func:`listen`), else bound to ``host:port`` (port
    0: any free one); call ``serve_forever``."""
    limits = limits or ConnectionLimits()
    app = create_app(engine, workers=limits.workers)
    return SearchServer(app, listener or listen(host, port, limits), limits, on_ready)


def serve(engine: SearchEngine, host: str, listener: socket.socket) -> None:
    """Serve on ``listener`` (:func:`listen`) until Ctrl-C (or SIGTERM, as a service manager
    stops it), then close it.

    ``host`` is the one :func:`check_bind` let through, as the address printed names it.
    """
    import torch

    # The index is built: from now on only single queries are encoded.
    torch.set_num_threads(QUERY_THREADS)
    engine.encode_query("warm-up")
    address = f"http://{host}:{listener.getsockname()[1]}/"

    def ready() -> None:
        log.info("search service on %s", address)
        print(f"mathembed search: {address} (Ctrl-C stops)", flush=True)

    server = make_server(engine, listener=listener, on_ready=ready)
    # uvicorn stops on SIGINT and SIGTERM, then raises the signal again: SIGTERM as Ctrl-C.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass  # raised again by uvicorn once stopped (not when SIGINT was ignored: `cmd &`)
    finally:
        server.server_close()
    print("mathembed search: stopped", flush=True)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
