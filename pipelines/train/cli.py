"""``mathembed train``: fine-tune the base model on the validated pairs."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

import typer

from pipelines.common.cli import (
    DEFAULT_PARAMS,
    DEFAULT_ROOT,
    ParamsOption,
    ProgressOption,
    RootOption,
    stage_command,
)


def train(
    params: ParamsOption = DEFAULT_PARAMS,
    root: RootOption = DEFAULT_ROOT,
    progress: ProgressOption = True,
) -> None:
    """Fine-tune the base model on the validated pairs.

    Trains params.yaml's 'train' base model on data/validated/pairs.parquet with MNRL (or
    cached MNRL) inside a Matryoshka loss; writes models/candidate/ and metrics/train.json.
    Logs progress (step n/N, loss, time left) and logs the run live to MLflow (the
    promote.experiment; MLFLOW_TRACKING_URI or mlruns/), naming it in
    models/candidate/mlflow_run.json; without a reachable store it trains all the same.
    A killed run resumes from models/checkpoints/.
    """
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("pipelines").setLevel(logging.INFO)  # our decisions, not library chatter
    from pipelines.common.models import ModelLoadError
    from pipelines.common.paths import Paths
    from pipelines.train.setup import check_params
    from pipelines.train.stage import TrainError, format_loss, run_train
    from pipelines.train.tracking import start_training_run

    bad_input = (ModelLoadError, TrainError, FileNotFoundError)
    with stage_command("train", params, root, bad_input) as loaded, _terminate_as_interrupt():
        paths = Paths(root)
        check_params(loaded.train)  # a configuration error starts no MLflow run
        tracking = start_training_run(paths, loaded.promote, loaded.train)
        report = run_train(
            loaded.train,
            paths,
            progress=progress,
            tracking=tracking,
            model_name=f"{loaded.promote.registered_model} (mathembed)",
        )
    typer.echo(
        f"train: {report.resume_note}; {report.steps} steps on {report.n_train_pairs} pairs "
        f"({report.device}, {report.precision}), {report.pairs_per_second:.1f} pairs/s, "
        f"final loss {format_loss(report.final_loss)}, validation loss "
        f"{format_loss(report.validation_loss)}; candidate {report.candidate_dir} "
        f"(fingerprint {report.fingerprint[:12]})"
    )


@contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (the flow's supervisor ending a step, ``kill``) ends training as Ctrl-C does:
    the MLflow run is marked KILLED rather than left RUNNING, the old candidate kept."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may handle signals
        return
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def register(app: typer.Typer) -> None:
    app.command("train")(train)
