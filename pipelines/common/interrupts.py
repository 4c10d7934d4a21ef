"""Interrupts held back while a write must not be cut in half.

Ctrl-C (and SIGTERM, which ``mathembed train`` turns into Ctrl-C) raises wherever Python
happens to be. Raised inside an MLflow write to its sqlite store, it can leave that
process's connection holding the database lock, so the run's own end a moment later
("KILLED") fails with "database is locked" and the run stays RUNNING for ever.
:func:`interrupts_deferred` holds those signals for a short block and hands them, once
it ends, to the handlers that were there.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

#: Interrupts a person or a supervisor sends to stop a command.
INTERRUPTS: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Run the block whole: an interrupt arriving in it takes effect when it ends.

    Only Python-level handlers are held (``SIG_DFL`` ends the process at once, which a
    database survives; ``SIG_IGN`` stays ignored), and only on the main thread, the one
    Python runs signal handlers on.
    """
    held = [
        signum
        for signum in INTERRUPTS
        if threading.current_thread() is threading.main_thread()
        and callable(signal.getsignal(signum))
    ]
    pending: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        pending.append(signum)

    previous = {signum: signal.signal(signum, hold) for signum in held}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in dict.fromkeys(pending):
            signal.raise_signal(signum)
