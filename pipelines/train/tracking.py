"""Training logged live to MLflow: one run in the promotion experiment (``promote.experiment``)
that shows the loss, learning rate, gradient norm, validation loss and validation IR score
(``train.validation_ir.mrr_at_10``, ``...ndcg_at_10``, and each validation format's,
``...windows_mrr_at_10``) per logging step while the model
trains, and that ``mathembed promote`` later logs its decision into.

The run is started before training (:func:`start_training_run`), fed by
:func:`mlflow_callback` through an ``MlflowClient`` bound to the run id, and ended FINISHED,
FAILED (an exception) or KILLED (Ctrl-C) by :func:`training_run_status`; each write holds
Ctrl-C back till it is done (:func:`~pipelines.common.interrupts.interrupts_deferred`), so
the KILLED that follows finds the store unlocked. Its id and store
go into the candidate folder as ``mlflow_run.json`` (:func:`run_record`), which is how
promotion finds it.

Why not transformers' own ``report_to="mlflow"``: it logs every one of the ~100 training
arguments as params, reads its experiment and store from environment variables, starts
and ends the run on its own terms (no FAILED or KILLED), and talks to whatever
``mlflow.set_tracking_uri`` left behind. A small callback on a client bound to one run
logs what a person reads, into the store the rest of mathembed uses.

MLflow is a record, not a dependency of training: a store that cannot be reached (or that
fails mid-run) costs a warning and the run's record, never the candidate.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pipelines.common.config import PromoteParams, TrainParams
from pipelines.common.interrupts import interrupts_deferred
from pipelines.common.paths import Paths
from pipelines.common.redact import redact
from pipelines.registry.mlflow_registry import RegistryError, connect, promotion_experiment
from pipelines.train.validation import MLFLOW_NAMES, trainer_key

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from transformers import TrainerCallback

logger = logging.getLogger(__name__)

#: What the trainer's log entries are called in MLflow; other entries (runtimes, FLOPs) are
#: not the reader's business. ``epoch`` lets the chart view plot against epochs.
TRAINER_METRICS = {
    "loss": "train.loss",
    "learning_rate": "train.learning_rate",
    "grad_norm": "train.grad_norm",
    "epoch": "train.epoch",
    "eval_loss": "train.validation_loss",
    **{trainer_key(metric): name for metric, name in MLFLOW_NAMES.items()},
}
#: MLflow's limit for a param value.
PARAM_VALUE_LIMIT = 6000


@dataclass(frozen=True)
class TrainingRun:
    """An MLflow run that training logs into, and where it lives."""

    client: MlflowClient
    run_id: str
    tracking_uri: str
    experiment: str


# -- pure helpers -------------------------------------------------------------------------


def trainer_metrics(logs: Mapping[str, Any]) -> dict[str, float]:
    """The trainer's log entry as MLflow metrics (:data:`TRAINER_METRICS`), numbers only."""
    return {
        name: float(logs[key])
        for key, name in TRAINER_METRICS.items()
        if isinstance(logs.get(key), int | float) and not isinstance(logs.get(key), bool)
    }


def run_params(params: TrainParams) -> dict[str, str]:
    """``train.*`` params as MLflow stores them; the keys and values promotion logs too
    (lists as JSON), so promotion, logging into this run, finds them already there."""
    return {
        f"train.{key}": (json.dumps(value) if isinstance(value, list | tuple) else str(value))[
            :PARAM_VALUE_LIMIT
        ]
        for key, value in asdict(params).items()
    }


def run_record(run: TrainingRun) -> dict[str, str]:
    """What ``mlflow_run.json`` holds: the run, its store (credentials hidden), the experiment."""
    return {
        "run_id": run.run_id,
        "tracking_uri": redact(run.tracking_uri),
        "experiment": run.experiment,
    }


# -- the run ------------------------------------------------------------------------------


def start_training_run(
    paths: Paths, promote: PromoteParams, params: TrainParams
) -> TrainingRun | None:
    """Start a RUNNING run in ``promote.experiment`` with ``params`` logged; ``None`` (and a
    warning) when the store cannot be reached or refuses: training goes on without it.

    The store is the one promotion uses (``MLFLOW_TRACKING_URI``, else ``mlruns/``).
    """
    import requests
    from mlflow.entities import Param
    from mlflow.exceptions import MlflowException

    try:
        registry = connect(paths, promote, create=True)
        assert registry is not None  # create=True always connects
        experiment_id = promotion_experiment(registry, promote, create=True)
        assert experiment_id is not None  # create=True always gives one
        started = datetime.now(UTC)
        run = registry.client.create_run(
            experiment_id, run_name=f"train {started:%Y-%m-%d %H:%M} UTC"
        )
        run_id = str(run.info.run_id)
        registry.client.log_batch(
            run_id, params=[Param(key, value) for key, value in run_params(params).items()]
        )
    except (RegistryError, MlflowException, requests.RequestException, OSError) as error:
        logger.warning(
            "train: not logging to MLflow (%s); training goes on, promotion will start a "
            "run of its own",
            redact(str(error)),
        )
        return None
    logger.info(
        "train: logging live to MLflow run %s (experiment %r, %s)",
        run_id,
        promote.experiment,
        redact(registry.uri),
    )
    return TrainingRun(registry.client, run_id, registry.uri, promote.experiment)


def mlflow_callback(run: TrainingRun) -> TrainerCallback:
    """Logs each trainer log entry (:func:`trainer_metrics`) to ``run`` at its step, as it
    happens. The first MLflow failure is a warning and ends the logging, not training."""
    from transformers import TrainerCallback

    class LogToMlflow(TrainerCallback):
        def __init__(self) -> None:
            self.failed = False

        def on_log(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            metrics = trainer_metrics(kwargs.get("logs") or {})
            if self.failed or not metrics:
                return
            self.failed = not log_metrics(run, metrics, step=int(state.global_step))

    return LogToMlflow()


def log_metrics(run: TrainingRun, metrics: Mapping[str, float], *, step: int | None) -> bool:
    """Log ``metrics`` to ``run`` (at ``step``); ``False`` (and a warning) if MLflow failed."""
    import requests
    from mlflow.entities import Metric
    from mlflow.exceptions import MlflowException

    now_ms = int(time.time() * 1000)
    batch = [Metric(key, value, now_ms, step or 0) for key, value in metrics.items()]
    try:
        with interrupts_deferred():  # Ctrl-C mid-write would lock the run out of its end
            run.client.log_batch(run.run_id, metrics=batch)
    except (MlflowException, requests.RequestException, OSError) as error:
        logger.warning(
            "train: MLflow stopped answering (%s); training goes on, its run %s stops here",
            redact(str(error)),
            run.run_id,
        )
        return False
    return True


def describe_run(run: TrainingRun, *, name: str, tags: Mapping[str, str]) -> None:
    """Rename the finished training's run and tag it (best effort: a warning on failure)."""
    import requests
    from mlflow.exceptions import MlflowException

    try:
        with interrupts_deferred():
            run.client.update_run(run.run_id, name=name)
            for key, value in tags.items():
                run.client.set_tag(run.run_id, key, value)
    except (MlflowException, requests.RequestException, OSError) as error:
        logger.warning("train: could not name MLflow run %s (%s)", run.run_id, redact(str(error)))


@contextmanager
def training_run_status(run: TrainingRun | None) -> Iterator[None]:
    """End ``run`` FINISHED when the block completes, KILLED on Ctrl-C, FAILED on any other
    exception (which is re-raised). ``None``: nothing to end."""
    if run is None:
        yield
        return
    try:
        yield
    except KeyboardInterrupt:
        _terminate(run, "KILLED")
        raise
    except BaseException:
        _terminate(run, "FAILED")
        raise
    _terminate(run, "FINISHED")


def _terminate(run: TrainingRun, status: str) -> None:
    import requests
    from mlflow.exceptions import MlflowException

    try:
        with interrupts_deferred():
            run.client.set_terminated(run.run_id, status)
    except (MlflowException, requests.RequestException, OSError) as error:
        logger.warning(
            "train: could not mark MLflow run %s %s (%s)", run.run_id, status, redact(str(error))
        )
