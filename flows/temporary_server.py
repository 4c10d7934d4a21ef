"""Prefect's temporary server for ``mathembed nightly`` without ``PREFECT_API_URL``: in a
session of its own, and ending with the command however it ends.

Prefect starts the temporary server as a plain child, in the command's process group, so
a signal to that group (Ctrl-C on a terminal, ``timeout``, ``kill -- -PGID``) stopped the
server at the same moment as the flow: the flow could no longer record how it ended (it
stayed ``Running``) and retried its API calls for minutes, printing ``ConnectError``
tracebacks. Started here first, in a new session, it outlives the signal until the
command has recorded the run; Prefect reuses it (one instance per port), stops it at a
normal exit, and a guard (:func:`flows.processes.end_with_this_process`) ends it in every
other case, SIGKILL of the command included.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import prefect
from prefect.server.api.server import SubprocessASGIServer
from prefect.settings import get_current_settings

from flows.processes import end_with_this_process


class OwnSessionServer(SubprocessASGIServer):
    """Prefect's ``SubprocessASGIServer``, its uvicorn started in a session of its own.

    The command and environment are Prefect 3.8's (``_run_uvicorn_command``); only
    ``start_new_session`` is added.
    """

    def _run_uvicorn_command(self) -> subprocess.Popen[Any]:
        server_env = {
            "PREFECT_UI_ENABLED": "0",
            "PREFECT__SERVER_EPHEMERAL": "1",
            "PREFECT__SERVER_FINAL": "1",
        }
        return subprocess.Popen(
            args=[
                sys.executable,
                "-m",
                "uvicorn",
                "--app-dir",
                str(prefect.__module_path__.parent),
                "--factory",
                "prefect.server.api.server:create_app",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--log-level",
                "error",
                "--lifespan",
                "on",
            ],
            env={
                **os.environ,
                **server_env,
                **get_current_settings().to_environment_variables(exclude_unset=True),
            },
            start_new_session=True,  # a signal to the command's group does not reach it
        )


def start_temporary_server() -> None:
    """Start the temporary server the flow will use, guarded to end with this process."""
    server = OwnSessionServer()
    server.start()
    assert server.server_process is not None
    end_with_this_process([server.server_process.pid])
