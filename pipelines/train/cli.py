"""``mathembed train``: fine-tune the base model on the validated pairs."""

from __future__ import annotations

import logging

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
    A killed run resumes from models/checkpoints/.
    """
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("pipelines").setLevel(logging.INFO)  # our decisions, not library chatter
    from pipelines.common.models import ModelLoadError
    from pipelines.common.paths import Paths
    from pipelines.train.stage import TrainError, format_loss, run_train

    bad_input = (ModelLoadError, TrainError, FileNotFoundError)
    with stage_command("train", params, root, bad_input) as loaded:
        report = run_train(loaded.train, Paths(root), progress=progress)
    typer.echo(
        f"train: {report.resume_note}; {report.steps} steps on {report.n_train_pairs} pairs "
        f"({report.device}, {report.precision}), {report.pairs_per_second:.1f} pairs/s, "
        f"final loss {format_loss(report.final_loss)}, validation loss "
        f"{format_loss(report.validation_loss)}; candidate {report.candidate_dir} "
        f"(fingerprint {report.fingerprint[:12]})"
    )


def register(app: typer.Typer) -> None:
    app.command("train")(train)
