"""``mathembed train``: fine-tune the base model on the validated pairs."""

from __future__ import annotations

import logging
import shlex
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import NoReturn

import typer

from pipelines.common.cli import (
    DEFAULT_PARAMS,
    DEFAULT_ROOT,
    ParamsOption,
    ProgressOption,
    RootOption,
    command_errors,
    params_path,
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
    With train.init: champion it starts from the registry's @champion instead, on the pairs
    of papers that champion never trained on plus a replay sample of the others.
    Logs progress (step n/N, loss, time left) and logs the run live to MLflow (the
    promote.experiment; MLFLOW_TRACKING_URI or mlruns/), naming it in
    models/candidate/mlflow_run.json; without a reachable store it trains all the same.
    A killed run resumes from models/checkpoints/. With train.processes above 1 (or auto on
    a machine with several GPUs) it runs itself under torchrun, one process per GPU, and
    rank 0 alone writes.
    """
    from pipelines.train.distributed import current_world

    world = current_world()
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    # Our decisions, not library chatter; from rank 0 alone when there are several.
    logging.getLogger("pipelines").setLevel(logging.INFO if world.is_main else logging.WARNING)
    from pipelines.common.paths import Paths
    from pipelines.retrieval.models import ModelLoadError
    from pipelines.train.setup import check_params
    from pipelines.train.stage import TrainError, format_loss, run_train
    from pipelines.train.tracking import start_training_run

    bad_input = (ModelLoadError, TrainError, FileNotFoundError)
    if world.size == 1:
        with command_errors("train", bad_input):
            processes = _processes_asked(params_path(params, root))
        if processes > 1:
            _relaunch(processes, params, root, progress)
    with (
        stage_command("train", params, root, bad_input, lock=world.is_main) as loaded,
        _terminate_as_interrupt(),
    ):
        paths = Paths(root)
        check_params(loaded.train)  # a configuration error starts no MLflow run
        tracking = (
            start_training_run(paths, loaded.promote, loaded.train) if world.is_main else None
        )
        report = run_train(
            loaded.train,
            paths,
            progress=progress,
            tracking=tracking,
            model_name=f"{loaded.promote.registered_model} (mathembed)",
            promote=loaded.promote,
        )
    if not world.is_main:
        return
    typer.echo(
        f"train: {report.resume_note}; {report.steps} steps on {report.n_train_pairs} pairs "
        f"({report.device}, {report.precision}, {world.size} process(es)), "
        f"{report.pairs_per_second:.1f} pairs/s, "
        f"final loss {format_loss(report.final_loss)}, validation loss "
        f"{format_loss(report.validation_loss)}; candidate {report.candidate_dir} "
        f"(fingerprint {report.fingerprint[:12]})"
    )


def _processes_asked(params_file: Path) -> int:
    """How many processes ``train.processes`` asks for here (checked against the GPUs)."""
    from pipelines.common.config import load_params
    from pipelines.train.distributed import check_batch_split, resolve_processes
    from pipelines.train.setup import check_params

    train_params = load_params(params_file).train
    check_params(train_params)
    if train_params.processes == 1 or (
        train_params.processes == "auto" and train_params.device == "cpu"
    ):
        return 1
    import torch

    processes = resolve_processes(
        train_params.processes, train_params.device, torch.cuda.device_count()
    )
    check_batch_split(train_params.batch_size, processes)
    return processes


def _relaunch(processes: int, params: Path, root: Path, progress: bool) -> NoReturn:
    """Run this command as ``processes`` ranks, this process their launcher (the one a
    supervisor's SIGTERM or a Ctrl-C reaches: it stops every rank); exit 0 when they
    finished, 1 with one line when a rank died or a signal stopped them
    (:mod:`pipelines.train.launcher`)."""
    from pipelines.common.paths import MODEL_METADATA_FILE, Paths
    from pipelines.train.distributed import torchrun_command
    from pipelines.train.launcher import LAUNCH_LOG, LaunchFailed, launch

    arguments = ["train", "--params", str(params), "--root", str(root)]
    arguments.append("--progress" if progress else "--no-progress")
    logging.getLogger(__name__).info(
        "train: %d processes under torchrun (rank 0 writes): %s",
        processes,
        shlex.join(torchrun_command(processes, arguments)),
    )
    paths = Paths(root)
    published_before = _stamp(paths.candidate / MODEL_METADATA_FILE)
    with command_errors("train", (LaunchFailed,)):
        launch(
            processes,
            arguments,
            log_file=paths.checkpoints / LAUNCH_LOG,
            published=lambda: _stamp(paths.candidate / MODEL_METADATA_FILE) != published_before,
        )
    raise typer.Exit(code=0)


def _stamp(path: Path) -> tuple[int, int] | None:
    """Which version of ``path`` is there (inode, modification time), ``None`` if none."""
    try:
        status = path.stat()
    except FileNotFoundError:
        return None
    return status.st_ino, status.st_mtime_ns


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
