"""torchrun's launcher run inside ``mathembed train``, and how its ranks ended in one line.

With ``train.processes`` above 1, ``mathembed train`` becomes the launcher of its ranks:
it runs torchrun's elastic agent (``torch.distributed.run``) in its own process, the one a
supervisor's SIGTERM or a person's Ctrl-C reaches, instead of exec'ing ``torchrun``. Same
ranks, same environment; what changes is the ending. torchrun ends a failed launch with
its own traceback and a 30-line failure table; here a rank that died, or a signal that
stopped the launch, is one line (:func:`failure_line`) naming the rank, how it ended and
that nothing was published, and exits 1. The launcher's own log (its warnings, which
processes it stopped with which signal, torchrun's failure table) goes to
``models/checkpoints/torchrun.log`` (:data:`LAUNCH_LOG`), rewritten by each launch and
named in that line. The ranks' own output is untouched.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pipelines.train.distributed import torchrun_arguments
from pipelines.train.setup import TrainError

#: The launcher's log, in the checkpoints folder (what a stopped run leaves behind).
LAUNCH_LOG = "torchrun.log"
#: torchrun's loggers (the agent, its process contexts, the rendezvous, ``run`` itself).
LAUNCHER_LOGGER = "torch.distributed"
#: The signals torchrun's agent turns into a stop of every rank; restored after a launch.
STOPPING_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
#: Exit statuses of a rank that the launcher itself stopped (SIGTERM, which training turns
#: into Ctrl-C, exit 130; or the signal itself): an effect of a failure, never its cause.
STOPPED_BY_LAUNCHER = frozenset({-signal.SIGTERM, -signal.SIGINT, 128 + signal.SIGINT, 143})


class LaunchFailed(TrainError):
    """A rank died or a signal stopped the launch; the message is the one line to show."""


@dataclass(frozen=True)
class RankExit:
    """How one rank's process ended: its exit code, negative for a signal (as torch says)."""

    rank: int
    pid: int
    exitcode: int
    timestamp: int = 0

    def how(self) -> str:
        if self.exitcode < 0:
            try:
                name = signal.Signals(-self.exitcode).name
            except ValueError:
                name = f"signal {-self.exitcode}"
            return f"was killed by {name}"
        return f"exited with code {self.exitcode}"


# -- pure helpers -------------------------------------------------------------------------


def first_failure(exits: Sequence[RankExit]) -> RankExit:
    """The rank whose end ended the launch: the earliest, and among ranks that ended in the
    same second one the launcher did not stop itself."""
    if not exits:
        raise ValueError("no rank failed")
    return min(exits, key=lambda end: (end.timestamp, end.exitcode in STOPPED_BY_LAUNCHER))


def failure_line(
    *, failed: RankExit | None, stopped_by: str | None, published: bool, log_file: Path
) -> str:
    """One line for a launch that did not finish (pure): which rank died and how, or which
    signal stopped it; whether anything was published; where the launcher's log is."""
    if failed is not None:
        what = f"rank {failed.rank} (pid {failed.pid}) {failed.how()}, so every rank was stopped"
    else:
        what = f"stopped by {stopped_by}: every rank was stopped"
    outcome = (
        "the candidate had been published before it (models/candidate/)"
        if published
        else "nothing was published (models/candidate/ is as it was)"
    )
    return f"{what}; {outcome}; torchrun's log: {log_file}"


# -- the launch ---------------------------------------------------------------------------


def launch(
    processes: int, arguments: Sequence[str], log_file: Path, published: Callable[[], bool]
) -> None:
    """Run ``mathembed <arguments>`` as ``processes`` ranks; return when every rank finished.

    Raises :class:`LaunchFailed` with :func:`failure_line` when a rank fails or a signal
    (SIGTERM, Ctrl-C) stops the launch; torchrun has stopped every rank by then.
    ``published`` says, after a failure, whether rank 0 had published a candidate.
    """
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import parse_args, run

    handlers = {signum: signal.getsignal(signum) for signum in STOPPING_SIGNALS}
    try:
        with _launcher_log(log_file):
            try:
                run(parse_args(torchrun_arguments(processes, arguments)))
            except ChildFailedError as error:
                logging.getLogger(LAUNCHER_LOGGER).error("%s", error.format_msg())
                exits = [
                    RankExit(rank, failure.pid, failure.exitcode, failure.timestamp)
                    for rank, failure in error.failures.items()
                ]
                failed, stopped_by = first_failure(exits), None
            except SignalException as error:
                failed, stopped_by = None, signal.Signals(error.sigval).name
            else:
                return
    finally:
        # torchrun's handlers raise SignalException: a later Ctrl-C must not meet them.
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    line = failure_line(
        failed=failed, stopped_by=stopped_by, published=published(), log_file=log_file
    )
    raise LaunchFailed(line)


@contextmanager
def _launcher_log(log_file: Path) -> Iterator[None]:
    """torchrun's log records go to ``log_file`` alone while the block runs.

    torch gives ``torch.distributed`` and several loggers below it a handler of its own
    on stderr (and stops their propagation): each has it replaced by the file's meanwhile.
    """
    log_file.parent.mkdir(parents=True, exist_ok=True)
    to_file = logging.FileHandler(log_file, mode="w", encoding="utf-8")
    to_file.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    launcher = logging.getLogger(LAUNCHER_LOGGER)
    loggers = [launcher] + [
        logger
        for name, logger in list(logging.root.manager.loggerDict.items())
        if name.startswith(f"{LAUNCHER_LOGGER}.")
        and isinstance(logger, logging.Logger)
        and logger.handlers
    ]
    saved = {logger: (logger.handlers, logger.propagate) for logger in loggers}
    for logger in loggers:
        logger.handlers = [to_file]
        logger.propagate = False
    try:
        yield
    finally:
        for logger, (handlers, propagate) in saved.items():
            logger.handlers, logger.propagate = handlers, propagate
        to_file.close()
