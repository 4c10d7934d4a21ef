"""What a finished training run leaves (rank 0 alone): the candidate, published whole or
not at all; ``metrics/train.json``; the summary of the MLflow run.

The steps of :func:`pipelines.train.stage.run_train` after the trainer has run.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.common import io
from pipelines.common.config import TrainParams
from pipelines.common.paths import MODEL_METADATA_FILE, TRAINING_RUN_FILE
from pipelines.registry.candidate_metadata import CandidateMetadata
from pipelines.retrieval.models import model_fingerprint
from pipelines.train.callbacks import RunLog
from pipelines.train.checkpoints import RUN_FILE, checkpoint_step, disk_errors
from pipelines.train.inputs import LoadedBase, TrainingData
from pipelines.train.mixing import Mixing
from pipelines.train.negatives import MinedNegatives
from pipelines.train.setup import describe_device, loss_curves
from pipelines.train.tracking import TrainingRun, describe_run, log_metrics, run_record
from pipelines.train.validation import (
    IR_CURVE,
    IR_METRICS,
    IrMetric,
    ValidationSet,
    ir_curve,
    kept_checkpoint,
)
from pipelines.train.warm_start import WarmSplit

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from transformers import TrainerState


@dataclass(frozen=True)
class Outcome:
    """What the trainer's log says: the loss curves, the validation IR scores, the step kept."""

    train_curve: list[dict[str, Any]]
    validation_curve: list[dict[str, Any]]
    validation_ir: list[dict[str, Any]]
    kept: dict[str, Any] | None

    @classmethod
    def of(cls, state: TrainerState, metric: IrMetric, *, best_by_ir: bool) -> Outcome:
        train_curve, validation_curve = loss_curves(state.log_history)
        validation_ir = ir_curve(state.log_history)
        kept = kept_checkpoint(
            validation_ir, metric, best_step=state.best_global_step if best_by_ir else None
        )
        return cls(train_curve, validation_curve, validation_ir, kept)

    @property
    def kept_scores(self) -> dict[str, float] | None:
        """Every validation IR score of the step kept, the mean and each format's (``None``
        when it was not measured)."""
        if self.kept is None:
            return None
        point = next((p for p in self.validation_ir if p["step"] == self.kept["step"]), {})
        scores: dict[str, float] = {
            name: score for name, score in point.items() if name not in ("step", "epoch")
        }
        return scores if all(metric in scores for metric in IR_METRICS) else None

    @property
    def final_loss(self) -> float | None:
        return self.train_curve[-1]["loss"] if self.train_curve else None

    @property
    def validation_loss(self) -> float | None:
        return self.validation_curve[-1]["loss"] if self.validation_curve else None


@dataclass(frozen=True)
class Throughput:
    """The optimisation steps this run took (not a resumed run's earlier ones), and their speed."""

    steps: int
    pairs: int
    pairs_per_second: float
    step_seconds: float

    @classmethod
    def of(cls, run_log: RunLog, batch_size: int) -> Throughput:
        steps_run = run_log.end_step - run_log.start_step
        pairs_trained = steps_run * batch_size  # exact: the short last batch is dropped
        pairs_per_second = pairs_trained / run_log.step_seconds if run_log.step_seconds > 0 else 0.0
        return cls(steps_run, pairs_trained, pairs_per_second, run_log.step_seconds)


def save_candidate(
    model: SentenceTransformer,
    output: Path,
    *,
    params: TrainParams,
    base: LoadedBase,
    pairs_hash: str,
    trained_at: str,
    mixing_weight: float,
    trained_papers: Sequence[str],
    tracking: TrainingRun | None,
    card_note: str,
) -> str:
    """Publish ``model`` as the candidate with its metadata (and the MLflow run's record);
    returns its fingerprint."""
    metadata = CandidateMetadata.of_training(
        dataclasses.asdict(params),
        matryoshka_dims=base.dims,
        embedding_dimension=base.dimension,
        data_hash=pairs_hash,
        trained_at=trained_at,
        mixing_weight=mixing_weight,
        trained_papers=trained_papers,
    )
    extra_files = {TRAINING_RUN_FILE: run_record(tracking)} if tracking else {}
    with disk_errors(output.parent):
        return publish_candidate(model, output, metadata, extra_files, card_note=card_note)


def publish_candidate(
    model: SentenceTransformer,
    output: Path,
    metadata: CandidateMetadata,
    extra_files: Mapping[str, Any] | None = None,
    *,
    card_note: str = "",
) -> str:
    """Save ``model`` + ``mathembed.json`` (+ ``extra_files``, JSON; ``card_note`` at the
    end of the model card) into a temporary sibling, then rename it to ``output``.

    Returns the fingerprint. A run killed before the rename leaves the old candidate; only
    the instant between the two renames has no candidate folder, never a partial one.
    """
    output.parent.mkdir(parents=True, exist_ok=True)
    for stale in output.parent.glob(f".{output.name}.*"):
        shutil.rmtree(stale, ignore_errors=True)  # left by a run killed while publishing
    # mkdir (unlike mkdtemp's private 0700) gives the folder the usual umask permissions.
    staging = output.with_name(f".{output.name}.tmp-{os.getpid()}-{time.time_ns()}")
    staging.mkdir()
    try:
        model.save(str(staging))
        io.restore_plain_modes(staging)  # safetensors writes its file 0600 (safetensors#782)
        if card_note:
            with (staging / "README.md").open("a", encoding="utf-8") as card:
                card.write(card_note)
        for name, content in (extra_files or {}).items():
            io.write_json(staging / name, content)
        fingerprint = model_fingerprint(staging)
        io.write_json(
            staging / MODEL_METADATA_FILE, metadata.with_fingerprint(fingerprint).as_json()
        )
        previous = None
        if output.exists():
            previous = output.with_name(f".{output.name}.old-{os.getpid()}")
            os.replace(output, previous)
        os.replace(staging, output)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if previous is not None:
        shutil.rmtree(previous, ignore_errors=True)
    return fingerprint


def remove_checkpoints(folder: Path) -> None:
    """A finished run's checkpoints and their run record: the candidate supersedes them."""
    for path in folder.glob("checkpoint-*"):
        shutil.rmtree(path)
    (folder / RUN_FILE).unlink(missing_ok=True)


def train_metrics(
    *,
    params: TrainParams,
    fingerprint: str,
    data: TrainingData,
    base: LoadedBase,
    processes: int,
    eval_batch_size: int,
    state: TrainerState,
    planned_steps: int,
    resume_from: Path | None,
    throughput: Throughput,
    started: float,
    outcome: Outcome,
    tasks: Mapping[str, ValidationSet],
    mining: MinedNegatives | None,
    mixing: Mixing,
    warm: WarmSplit | None,
    trained_at: str,
) -> dict[str, Any]:
    """``metrics/train.json``: the run's setup, its curves, the step kept (and its mixing
    with the base model), its speed."""
    return {
        "base_model": params.base_model,
        "fingerprint": fingerprint,
        "data_hash": data.hash,
        "device": describe_device(base.device),
        "precision": base.precision,
        "processes": processes,
        "loss": params.loss,
        "matryoshka_dims": list(base.dims),
        "batch_size": params.batch_size,
        "validation_batch_size": eval_batch_size,
        "n_pairs": {"train": len(data.train), "validation": len(data.validation)},
        "steps": int(state.global_step),
        # The steps planned (train.epochs, cut by max_steps) and whether the validation score
        # stopped the run before them (train.early_stopping_patience).
        "planned_steps": planned_steps,
        "stopped_early": int(state.global_step) < planned_steps,
        "epochs": float(state.epoch or 0.0),
        "steps_this_run": throughput.steps,
        "resumed_from_step": checkpoint_step(resume_from) if resume_from else None,
        "pairs_trained_this_run": throughput.pairs,
        # Optimisation steps only (forward, backward, optimizer): not evaluation or saving.
        "pairs_per_second": round(throughput.pairs_per_second, 3),
        "step_seconds": round(throughput.step_seconds, 3),
        "wall_seconds": round(time.perf_counter() - started, 3),
        "final_loss": outcome.final_loss,
        "validation_loss": outcome.validation_loss,
        "loss_curve": outcome.train_curve,
        "validation_loss_curve": outcome.validation_curve,
        IR_CURVE: outcome.validation_ir,
        "kept_checkpoint": outcome.kept,
        "mixing": mixing.as_json(),
        # Where training started (train.init) and, for a warm start, which pairs it trained on.
        "init": {
            **base.start.record(),
            **(
                {"new_pairs": warm.new, "replayed_pairs": warm.replayed, "old_pairs": warm.old}
                if warm
                else {}
            ),
        },
        # The validation task in each format asked (passages; windows with validation_windows).
        "validation_set": {
            name: {
                "queries": len(task.queries),
                "corpus": len(task.corpus),
                "distractors": task.n_distractors,
            }
            for name, task in tasks.items()
        },
        "mined_negatives": mining.summary() if mining else None,
        "trained_at": trained_at,
    }


def log_run_summary(
    tracking: TrainingRun,
    metrics: Mapping[str, Any],
    kept: Mapping[str, Any] | None,
    *,
    fingerprint: str,
    pairs_hash: str,
    base_model: str,
) -> None:
    """The MLflow run's closing entries (speed, the step kept, the mixing weight), its name
    and tags."""
    summary = {
        "train.pairs_per_second": metrics["pairs_per_second"],
        "train.step_seconds": metrics["step_seconds"],
        "train.wall_seconds": metrics["wall_seconds"],
        "train.mixing_weight": metrics["mixing"]["chosen"],
    }
    if kept is not None:
        summary["train.kept_step"] = kept["step"]
    log_metrics(tracking, summary, step=metrics["steps"])
    describe_run(
        tracking,
        name=f"candidate-{fingerprint[:12]}",
        tags={"data_version": pairs_hash, "base_model": base_model},
    )
