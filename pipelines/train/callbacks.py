"""The trainer callbacks of a run: progress logged as it goes (:mod:`pipelines.train.progress`),
optimisation steps timed, a NaN or infinite loss stopping the run, and the trainer's own
bar drawn on a terminal only."""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipelines.train.progress import finished_line, step_line, validation_line
from pipelines.train.setup import TrainError

if TYPE_CHECKING:
    from transformers import Trainer, TrainerCallback

logger = logging.getLogger(__name__)


@dataclass
class RunLog:
    start_step: int = 0
    end_step: int = 0
    step_seconds: float = 0.0
    started: float = 0.0
    last_loss: float | None = None


def observer(run_log: RunLog) -> TrainerCallback:
    """Times optimisation steps, logs progress (:mod:`pipelines.train.progress`; rank 0
    alone under DDP) and stops the run at the first NaN or infinite loss (on every rank:
    the loss logged is the mean over the ranks)."""
    from transformers import TrainerCallback

    class Observer(TrainerCallback):
        def __init__(self) -> None:
            self._step_started = 0.0

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            run_log.start_step = run_log.end_step = int(state.global_step)
            run_log.started = time.perf_counter()

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self._step_started = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            run_log.step_seconds += time.perf_counter() - self._step_started
            run_log.end_step = int(state.global_step)

        def on_log(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            logs = kwargs.get("logs") or {}
            for key in ("loss", "eval_loss"):
                value = logs.get(key)
                if value is not None and not math.isfinite(float(value)):
                    raise TrainError(
                        f"training diverged: {key} is {value} at step {state.global_step}; "
                        "no candidate was written. Lower train.learning_rate, or train in "
                        "fp32/bf16 instead of fp16, and rerun"
                    )
            step, max_steps = int(state.global_step), int(state.max_steps)
            elapsed = time.perf_counter() - run_log.started
            line = step_line(
                logs,
                step=step,
                max_steps=max_steps,
                first_step=run_log.start_step,
                elapsed=elapsed,
            ) or validation_line(logs, step=step, max_steps=max_steps)
            if "loss" in logs:
                run_log.last_loss = float(logs["loss"])
            if line and state.is_world_process_zero:  # one log for all ranks
                logger.info("train: %s", line)

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if not state.is_world_process_zero:
                return
            steps = int(state.global_step) - run_log.start_step
            elapsed = time.perf_counter() - run_log.started
            logger.info("train: %s", finished_line(steps, elapsed, run_log.last_loss))

    return Observer()


def bars_on_terminal_only(trainer: Trainer, progress: bool) -> None:
    """The trainer's bar without its printed log dicts (our log lines say it better), and
    no printing at all without a bar (the trainer's fallback prints every log entry)."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(PrinterCallback)
    if trainer.pop_callback(ProgressCallback) is not None and progress:

        class BarOnly(ProgressCallback):
            def on_log(
                self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any
            ) -> None:
                return None

        trainer.add_callback(BarOnly())
