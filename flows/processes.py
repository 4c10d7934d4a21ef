"""Child processes that end with the flow: on timeout, on error, and when the flow is killed.

A flow runs ``dvc`` (which runs a stage, which may start workers) and may start a temporary
Prefect server. Killing only the direct child would orphan the rest, and nothing at all
would stop them if the flow process were SIGKILLed. So each command runs under
``flows/supervisor.py`` as the leader of a new process group, with its stdin a pipe only
this process writes to: closing that pipe (timeout, exception, the end of a run) or this
process dying in any way ends the whole group, SIGTERM first and SIGKILL after a grace
period. A pipe, not ``prctl(PR_SET_PDEATHSIG)``: the death signal fires when the *thread*
that started the child exits, and Prefect runs tasks in worker threads.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

SUPERVISOR = Path(__file__).with_name("supervisor.py")
#: Between SIGTERM and SIGKILL: time for dvc and a stage to release what they hold.
GRACE_SECONDS = 3.0


@dataclass(frozen=True)
class Finished:
    """How a supervised command ended: exit code, output lines, and whether it ran out of time."""

    code: int
    lines: list[str]
    timed_out: bool


class _Stopper:
    """Closes the write end of the supervisor's stdin once, from whichever thread comes first."""

    def __init__(self, write_end: int) -> None:
        self._write_end: int | None = write_end
        self._lock = threading.Lock()

    def stop(self) -> None:
        with self._lock:
            if self._write_end is not None:
                os.close(self._write_end)
                self._write_end = None


def run_in_group(
    command: list[str],
    cwd: Path,
    env: dict[str, str],
    log: Callable[[str], None],
    timeout_seconds: float | None = None,
) -> Finished:
    """Run ``command`` in its own process group, passing each output line to ``log``.

    The group is ended when ``timeout_seconds`` pass, when anything (an interrupt, a
    Prefect task timeout) raises while it runs, and when this process dies.
    """
    read_end, write_end = os.pipe()
    stopper = _Stopper(write_end)
    timed_out = threading.Event()
    try:
        process = subprocess.Popen(
            [sys.executable, str(SUPERVISOR), str(GRACE_SECONDS), "--", *command],
            cwd=cwd,
            env=env,
            stdin=read_end,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            start_new_session=True,
        )
    except BaseException:
        stopper.stop()
        raise
    finally:
        os.close(read_end)

    def on_timeout() -> None:
        timed_out.set()
        stopper.stop()

    timer = threading.Timer(timeout_seconds, on_timeout) if timeout_seconds else None
    lines: list[str] = []
    try:
        if timer is not None:
            timer.daemon = True
            timer.start()
        assert process.stdout is not None
        for raw_line in process.stdout:
            # Progress bars (carriage returns): keep each line's final state.
            line = raw_line.rstrip("\n").rsplit("\r", 1)[-1].rstrip()
            if line:
                lines.append(line)
                log(line)
        code = process.wait()
    finally:
        stopper.stop()  # first: whatever raised, the group is told to end
        if timer is not None:
            timer.cancel()
        _reap(process)
    return Finished(code, lines, timed_out.is_set())


def _reap(process: subprocess.Popen[str]) -> None:
    """Wait for the supervisor to end its group; kill the group outright if it does not."""
    try:
        process.wait(timeout=GRACE_SECONDS + 5)
    except subprocess.TimeoutExpired:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    if process.stdout is not None:
        process.stdout.close()


#: The guards started by :func:`end_with_this_process`, kept for the process's lifetime.
_guards: list[subprocess.Popen[bytes]] = []


def end_with_this_process(pids: list[int]) -> None:
    """End ``pids`` (SIGTERM, then SIGKILL) when this process exits or dies, however.

    For children this process did not start itself, such as Prefect's temporary server,
    which Prefect stops at a normal exit but not when its process is killed. The guard's
    pipe stays open until this process ends; its end-of-file is the signal.
    """
    read_end, write_end = os.pipe()
    try:
        _guards.append(
            subprocess.Popen(
                [sys.executable, str(SUPERVISOR), str(GRACE_SECONDS), "--guard", *map(str, pids)],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                start_new_session=True,  # a Ctrl-C to this process group leaves it watching
            )
        )
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
