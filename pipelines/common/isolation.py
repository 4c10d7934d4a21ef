"""One bad item never stops a per-paper stage: each item runs in a worker process with a
time budget, and one that raises, kills its worker or runs past the budget comes back as
a :class:`Failure` saying why, while the others go on (issue 23, finding 1).

The budget is enforced from outside: a worker past its deadline is killed (SIGKILL) and a
fresh one takes its place, so a runaway regex or loop inside the work cannot hold the
stage, as a check between steps would let it. The workers are one pool for the whole run
(items go out one at a time and results come back in input order, so the output does not
depend on the number of workers). They are forked from a ``forkserver`` that imported the
work's module once: a restart after a kill costs a fork (~15 ms), not an interpreter
start, and, unlike a plain fork, none of the parent's threads (tqdm's monitor) is copied.

A stage's per-item budgets add up: sixty items that each run out of time cost an hour.
A :class:`StageBudget` bounds their sum (issue 29, finding 10): once the stage has spent
it, no item starts, and those not started come back as :class:`Deferred` (for the next
run, not quarantined). Items already running finish within their own budget, so a call
takes at most the stage's budget plus one item's.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any, Literal, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

#: How long a worker may take to exit once told to, before it is killed.
SHUTDOWN_GRACE_SECONDS = 5.0
#: How long a new worker may take to be ready (the forkserver's first start imports the
#: work's modules); an item's budget starts only once its worker is ready.
STARTUP_SECONDS = 120.0
READY = "ready"


@dataclass(frozen=True)
class Failure:
    """Why an item has no result: it ``raised``, ran past its ``timeout`` or its worker
    ``died`` (killed from outside, out of memory, a crash in native code)."""

    kind: Literal["raised", "timeout", "died"]
    detail: str


@dataclass(frozen=True)
class Deferred:
    """An item that was not started: the stage had spent its :class:`StageBudget`. Nothing
    is wrong with it; the next run does it."""

    detail: str


class StageBudget:
    """The time a stage may spend on its per-item work in one run, shared by every
    :func:`run_isolated` call given it (graph's two phases share one).

    The clock starts at the first item (:meth:`begin`), not when the budget is made:
    reading inputs and starting workers are not per-item work, and a run that starts no
    item would defer everything every night. ``seconds`` None: no budget.
    """

    def __init__(
        self, seconds: float | None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.seconds = seconds
        self._clock = clock
        self._deadline: float | None = None

    def begin(self) -> None:
        """Start the clock, if it has not started yet."""
        if self._deadline is None and self.seconds is not None:
            self._deadline = self._clock() + self.seconds

    def spent(self) -> bool:
        """Whether the clock has started and run past the budget."""
        return self._deadline is not None and self._clock() >= self._deadline

    def deferred(self) -> Deferred:
        """What an item not started because of this budget comes back as."""
        return Deferred(f"was not started: the stage had spent its {self.seconds:g} s budget")


def _serve(work: Callable[[Any], Any], connection: Connection) -> None:
    """A worker: run ``work`` on each ``(index, item)`` received until told to stop."""
    # Ctrl-C reaches the whole process group; the parent decides, and stops the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    connection.send(READY)
    while True:
        try:
            message = connection.recv()
        except (EOFError, OSError):
            return  # the parent is gone
        if message is None:
            return
        index, item = message
        try:
            outcome: tuple[str, Any] = ("ok", work(item))
        except Exception as error:  # one bad item never stops the worker
            outcome = ("raised", f"{type(error).__name__}: {error}")
        try:
            connection.send((index, outcome))
        except Exception as error:  # a result that cannot be pickled; nothing was sent
            connection.send((index, ("raised", f"unsendable result: {error!r}")))


@dataclass
class _Worker:
    process: BaseProcess
    connection: Connection
    index: int | None = None  # the item it works on
    deadline: float = 0.0


class _Pool:
    """The worker processes of one :func:`run_isolated` call."""

    def __init__(self, work: Callable[[Any], Any], size: int, preload: Sequence[str]) -> None:
        self._context = multiprocessing.get_context("forkserver")
        if preload:
            # Takes effect when the forkserver starts (once per process): the work's
            # imports are paid there, not by each worker.
            self._context.set_forkserver_preload(list(preload))
        self._work = work
        self.workers = [self._start() for _ in range(size)]

    def _start(self) -> _Worker:
        parent_end, child_end = self._context.Pipe()
        process = self._context.Process(
            target=_serve, args=(self._work, child_end), name="mathembed-isolated", daemon=True
        )
        process.start()
        child_end.close()
        worker = _Worker(process, parent_end)
        try:
            ready = parent_end.poll(STARTUP_SECONDS) and parent_end.recv() == READY
        except (EOFError, OSError):
            ready = False
        if not ready:
            _kill(worker)
            if process.exitcode not in (None, -signal.SIGKILL):  # it failed by itself
                raise RuntimeError(
                    f"a worker process exited with code {process.exitcode} while starting "
                    "(its error is printed above: a module it could not import?)"
                )
            raise RuntimeError(
                f"a worker process did not start within {STARTUP_SECONDS:g} s; "
                "is the machine out of memory or processes?"
            )
        return worker

    def replace(self, worker: _Worker) -> _Worker:
        """Kill ``worker`` (whatever it is doing) and put a fresh one in its place."""
        _kill(worker)
        fresh = self._start()
        self.workers[self.workers.index(worker)] = fresh
        return fresh

    def retire(self, worker: _Worker) -> None:
        """Kill ``worker`` and take it out of the pool (nothing is left for it to do)."""
        _kill(worker)
        self.workers.remove(worker)

    def close(self) -> None:
        """Tell the idle workers to stop and wait for them; kill the rest (the caller
        stopped early: their items are not wanted any more)."""
        idle = [worker for worker in self.workers if worker.index is None]
        for worker in idle:
            with contextlib.suppress(OSError):  # a worker that already died
                worker.connection.send(None)
        deadline = time.monotonic() + SHUTDOWN_GRACE_SECONDS
        for worker in idle:
            worker.process.join(max(0.0, deadline - time.monotonic()))
        for worker in self.workers:
            _kill(worker)


def _kill(worker: _Worker) -> None:
    if worker.process.is_alive():
        worker.process.kill()
    worker.process.join()
    worker.connection.close()


def run_isolated(
    work: Callable[[Item], Result],
    items: Sequence[Item],
    *,
    workers: int,
    timeout_seconds: float | None,
    preload: Sequence[str] = (),
    budget: StageBudget | None = None,
) -> Iterator[Result | Failure | Deferred]:
    """``work(item)`` for each of ``items``, in order, each in a worker process.

    ``work`` must be picklable (a module-level function, or a ``functools.partial`` of
    one); ``preload`` names modules the forkserver imports once for every worker. An item
    whose call raises, whose worker dies, or that runs past ``timeout_seconds`` yields a
    :class:`Failure` in its place; the worker is replaced and the next items go on.
    A result already back when its deadline is checked is kept, even one that came after
    the deadline (a loaded machine may look late): the budget stops work still running,
    it never throws finished work away. ``timeout_seconds`` None: no budget (the work
    still cannot take this process down).
    ``workers`` processes at most (never more than there are items). With a ``budget``,
    no item starts once it is spent: each one left yields a :class:`Deferred` (none
    starts if it was spent before this call).
    """
    if not items:
        return
    if budget is not None and budget.spent():
        yield from (budget.deferred() for _item in items)
        return
    pool = _Pool(work, max(1, min(workers, len(items))), preload)
    results: dict[int, Result | Failure | Deferred] = {}
    next_in = next_out = 0
    if budget is not None:
        budget.begin()

    def defer_the_rest_if_spent() -> None:
        nonlocal next_in
        if budget is not None and next_in < len(items) and budget.spent():
            for index in range(next_in, len(items)):
                results[index] = budget.deferred()
            next_in = len(items)

    def assign(worker: _Worker) -> None:
        nonlocal next_in
        defer_the_rest_if_spent()
        if next_in >= len(items):
            worker.index = None
            return
        worker.index, next_in = next_in, next_in + 1
        worker.deadline = time.monotonic() + (timeout_seconds or math.inf)
        worker.connection.send((worker.index, items[worker.index]))

    def lost(worker: _Worker, failure: Failure) -> None:
        """``worker``'s item failed with it: record that, replace it if work is left."""
        assert worker.index is not None
        results[worker.index] = failure
        defer_the_rest_if_spent()  # no fresh worker just to find nothing may start
        if next_in < len(items):
            assign(pool.replace(worker))
        else:
            pool.retire(worker)

    try:
        for worker in pool.workers:
            assign(worker)
        while next_out < len(items):
            while next_out in results:
                yield results.pop(next_out)
                next_out += 1
            if next_out >= len(items):
                break
            busy = [worker for worker in pool.workers if worker.index is not None]
            earliest = min(worker.deadline for worker in busy)
            ready = wait(
                [worker.connection for worker in busy],
                None if earliest == math.inf else max(0.0, earliest - time.monotonic()),
            )
            for worker in busy:
                assert worker.index is not None
                if worker.connection in ready:
                    try:
                        index, (status, value) = worker.connection.recv()
                    except (EOFError, OSError):
                        worker.process.join()
                        code = worker.process.exitcode
                        lost(
                            worker, Failure("died", f"its worker process ended (exit code {code})")
                        )
                        continue
                    results[index] = value if status == "ok" else Failure("raised", value)
                    assign(worker)
                elif time.monotonic() >= worker.deadline:
                    why = f"ran past its {timeout_seconds:g} s budget and was stopped"
                    lost(worker, Failure("timeout", why))
    finally:
        pool.close()
