"""A night stopped by a signal ends in one line: SIGTERM (a supervisor, ``timeout``,
``kill``) or Ctrl-C.

Prefect turns a SIGTERM during a flow run into ``TerminationSignal``: the running task and
the flow run are recorded as Crashed (the step's processes ended by :mod:`flows.processes`),
the ``on_crashed`` hook runs, then Prefect hands the signal on to the handler that was
there before the run: :func:`sigterm_stops`'s, which raises :class:`Stopped`, as it does
for a SIGTERM outside the run. Ctrl-C takes the same path as ``KeyboardInterrupt``,
without the hand-over. The step a signal interrupted is noted on the exception
(:func:`note_step`, called by :func:`flows.hooks.run_step`), so the command can say where
the night stopped (:func:`stopped_line`).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

#: How :func:`note_step` marks the step a signal interrupted.
STEP_NOTE = "interrupted step: "


class Stopped(BaseException):
    """SIGTERM stopped the command (a BaseException, as KeyboardInterrupt is: nothing that
    handles errors may swallow it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


#: What a stopped night raises: SIGTERM, or Ctrl-C.
STOPS: tuple[type[BaseException], ...] = (Stopped, KeyboardInterrupt)


def note_step(stop: BaseException, step: str) -> None:
    """Record on ``stop`` that it interrupted ``step`` (the innermost step is kept)."""
    if interrupted_step(stop) is None:
        stop.add_note(f"{STEP_NOTE}{step}")


def interrupted_step(stop: BaseException) -> str | None:
    """The step ``stop``, or an exception it was raised while handling, interrupted (pure)."""
    seen: set[int] = set()
    current: BaseException | None = stop
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        for note in getattr(current, "__notes__", ()):
            if isinstance(note, str) and note.startswith(STEP_NOTE):
                return note.removeprefix(STEP_NOTE)
        current = current.__context__
    return None


def signal_number(stop: BaseException) -> int:
    """The signal behind a stop: SIGTERM for :class:`Stopped`, SIGINT for Ctrl-C (pure)."""
    return stop.signum if isinstance(stop, Stopped) else int(signal.SIGINT)


def stopped_line(flow_name: str, stop: BaseException) -> str:
    """The one line a stopped night ends with (pure).

    In a step, the flow run was running and Prefect recorded it Crashed; outside every step
    (starting, or printing the report) only the signal is named.
    """
    name = signal.Signals(signal_number(stop)).name
    step = interrupted_step(stop)
    if step is None:
        return f"{flow_name}: stopped by {name}"
    return (
        f"{flow_name}: Crashed: stopped by {name} during step '{step}'; the processes it "
        "started were ended"
    )


@contextmanager
def sigterm_stops() -> Iterator[None]:
    """SIGTERM raises :class:`Stopped` in the block (on the main thread) instead of ending
    the process at once: during a flow run, Prefect records the run Crashed first and then
    hands the signal on to this handler, so the command can still say how it ended."""

    def stop(signum: int, frame: FrameType | None) -> None:
        raise Stopped(signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
