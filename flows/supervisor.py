"""Ends a flow's child processes with the flow: run as a script by :mod:`flows.processes`.

``supervisor.py GRACE -- COMMAND...`` runs COMMAND as the leader of its own process group
(the caller starts it in a new session); ``supervisor.py GRACE --guard PID...`` only watches.
Its stdin is a pipe that only the caller writes to, so it reads end-of-file when the caller
closes it (timeout, error, normal exit) or dies in any way, SIGKILL included: then the
group (or the guarded PIDs) gets SIGTERM and, GRACE seconds later, SIGKILL. SIGTERM, SIGINT
and SIGHUP do the same. Standard library only: it runs before anything else is imported.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time

_ending = threading.Event()


def _end_group(child: subprocess.Popen[bytes] | None, grace: float) -> None:
    if _ending.is_set():
        return  # the group's SIGTERM reaches this process too
    _ending.set()
    os.killpg(0, signal.SIGTERM)
    if child is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=grace)
    os.killpg(0, signal.SIGKILL)  # whatever is left, this process included


def _end_pids(pids: list[int], grace: float) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        if sig == signal.SIGTERM:
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
                time.sleep(0.1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_for_caller() -> None:
    """Return when the caller closes our stdin or dies (its end of the pipe closes)."""
    # os.read, not sys.stdin: a daemon thread blocked on a buffered reader aborts the
    # interpreter's shutdown.
    while os.read(0, 1024):
        pass


def main(argv: list[str]) -> int:
    grace, mode, rest = float(argv[0]), argv[1], argv[2:]
    if mode == "--guard":
        _wait_for_caller()
        _end_pids([int(pid) for pid in rest], grace)
        return 0
    child: subprocess.Popen[bytes] | None = None

    def on_signal(_signum: int, _frame: object) -> None:
        _end_group(child, grace)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    child = subprocess.Popen(rest, stdin=subprocess.DEVNULL)

    def watch_caller() -> None:
        _wait_for_caller()
        _end_group(child, grace)

    threading.Thread(target=watch_caller, daemon=True).start()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
