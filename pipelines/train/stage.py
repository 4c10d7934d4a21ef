"""The ``train`` stage: validated pairs -> a fine-tuned sentence-transformers candidate.

A run is data -> model -> loss -> ``SentenceTransformerTrainer`` with one
``SentenceTransformerTrainingArguments``:

* **Data**: ``data/validated/pairs.parquet`` (``anchor``, ``positive``); ``split == "train"``
  trains, ``"validation"`` gives the validation loss and the validation IR score
  (:mod:`pipelines.train.validation`). With ``train.mined_negatives`` each training
  pair's negative is the base model's top-ranked non-relevant passage
  (:mod:`pipelines.train.negatives`). Only those columns reach the trainer: the
  no-duplicates sampler compares every column, and a shared ``kind`` or ``concept``
  value would keep related pairs out of one batch.
* **Model**: ``train.base_model`` with ``train.pooling``
  (:func:`pipelines.retrieval.models.load_base_model`).
* **Loss**: ``MultipleNegativesRankingLoss`` (MNRL) inside ``MatryoshkaLoss``. MNRL treats
  the other positives of a batch as an anchor's negatives, so the batch size *is* the
  number of negatives. Gradient accumulation cannot raise it (each micro-batch still sees
  only its own negatives), so ``train.loss: cached_mnrl`` selects
  ``CachedMultipleNegativesRankingLoss`` (GradCache): it embeds the whole batch without
  gradients in mini-batches of ``train.mini_batch_size``, takes the loss over the full
  batch, then replays the gradients mini-batch by mini-batch — a true large batch at the
  memory of a small one, for about one extra forward pass. Matryoshka dims:
  ``train.matryoshka_dims``, or when empty :func:`derive_matryoshka_dims` of the model's
  dimension.
* **Batches**: ``BatchSamplers.NO_DUPLICATES`` (the same text twice in a batch would be a
  false negative) and the short last batch of an epoch is dropped: a 3-pair batch is a
  noisy, easy step, and the epoch's shuffle changes which pairs fall in it. ``epochs``
  epochs, cut short by ``max_steps`` when set (:func:`step_budget`). Validation batches
  are sized to the validation split (:func:`validation_batch_size`).
* **Determinism**: ``train.seed`` seeds weights that the base model lacks, the batch order
  and dropout; the same data, params and seed give the same model, bit for bit on CPU.
* **Device and precision**: ``train.device: auto`` uses CUDA when present, with bf16 where
  the GPU supports it and fp16 (loss-scaled) otherwise; plain fp32 on CPU.
* **Checkpoints and the model kept**: every ``train.eval_steps`` (and at the last step)
  the validation loss and IR score are measured and a checkpoint saved in
  ``models/checkpoints/`` (``save_total_limit`` kept, and the best so far besides); the
  candidate is the checkpoint with the best ``train.best_checkpoint_metric``, not the last
  one. ``models/checkpoints/run.json`` records the data hash and params they belong to; a
  rerun with the same data and params resumes from the newest complete checkpoint (a
  killed run loses at most ``eval_steps`` steps), anything else starts fresh and says why.
  A finished run removes its checkpoints: the candidate supersedes them.

Outputs: ``models/candidate/`` (sentence-transformers format + ``mathembed.json``:
fingerprint, base model, pooling, Matryoshka dims, params, data hash, time), trained in a
temporary folder and renamed over the old candidate only when complete; and
``metrics/train.json`` (loss curve per logging step, validation loss and IR scores per
evaluation, the step kept and why, mined-negative counts, pairs/s, wall time, device,
counts). Nothing is reported to W&B or TensorBoard.

Progress is logged, not only drawn: every ``logging_steps`` a line "step 20/100 (20 %),
loss ..., lr ..., 12 s elapsed, ~48 s left" (:mod:`pipelines.train.progress`), the
validation loss and IR scores after each evaluation and the total at the end; the
trainer's bar is drawn only on a terminal. Given a
:class:`~pipelines.train.tracking.TrainingRun`, the same entries go live to MLflow, the
run ends FINISHED/FAILED/KILLED with the training, and the candidate carries
``mlflow_run.json`` naming it. The candidate's ``README.md`` is its own model card
(:mod:`pipelines.train.card`): base model, training pairs, task, the step kept.

``torch``, ``transformers`` and ``sentence_transformers`` are imported inside functions,
after the command (:mod:`pipelines.train.cli`) has applied the offline switches. The
pieces of a run are in :mod:`pipelines.train.setup`, its callbacks in
:mod:`pipelines.train.callbacks`, resuming in :mod:`pipelines.train.checkpoints`, the
checkpoint kept in :mod:`pipelines.train.validation`, mined negatives in
:mod:`pipelines.train.negatives`.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from pipelines.common import io
from pipelines.common.config import TrainParams
from pipelines.common.paths import MODEL_METADATA_FILE, TRAINING_RUN_FILE, Paths
from pipelines.common.tables import TABLES
from pipelines.registry.candidate_metadata import CandidateMetadata
from pipelines.retrieval.models import ModelLoadError, data_hash, load_base_model, model_fingerprint
from pipelines.train.callbacks import RunLog, bars_on_terminal_only, observer
from pipelines.train.card import card_data, describe_model, kept_checkpoint_note, show_kept_scores
from pipelines.train.checkpoints import (
    RUN_FILE,
    checkpoint_step,
    disk_errors,
    prepare_checkpoints,
)
from pipelines.train.distributed import (
    World,
    check_batch_split,
    current_world,
    join,
    leave,
    lost_rank_as_interrupt,
    main_first,
    rank_zero_saving_trainer,
    share,
)
from pipelines.train.negatives import mine_training_negatives
from pipelines.train.setup import (
    Precision,
    TrainError,
    build_arguments,
    build_loss,
    capped_sample,
    check_params,
    choose_precision,
    describe_device,
    distinct_texts,
    loss_curves,
    resolve_device,
    resolve_matryoshka_dims,
    run_key,
    split_pairs,
    step_budget,
    validation_batch_size,
)
from pipelines.train.tracking import (
    TrainingRun,
    describe_run,
    log_metrics,
    mlflow_callback,
    run_record,
    training_run_status,
)
from pipelines.train.validation import (
    IR_CURVE,
    ir_curve,
    kept_checkpoint,
    validation_set,
)

if TYPE_CHECKING:
    from datasets import Dataset  # type: ignore[import-untyped]  # datasets ships no types
    from sentence_transformers import SentenceTransformer
    from transformers import TrainerCallback

logger = logging.getLogger(__name__)

#: The card's model name when the caller names none (``mathembed train`` names the
#: registered model: ``math-embed (mathembed)``).
DEFAULT_MODEL_NAME = "mathembed candidate"


@dataclass(frozen=True)
class TrainReport:
    candidate_dir: Path
    fingerprint: str
    data_hash: str
    n_train_pairs: int
    n_validation_pairs: int
    steps: int
    resumed_from_step: int | None
    resume_note: str
    matryoshka_dims: tuple[int, ...]
    device: str
    precision: Precision
    pairs_per_second: float
    final_loss: float | None
    validation_loss: float | None
    metrics: dict[str, Any] = field(repr=False)


def _to_dataset(frame: pd.DataFrame) -> Dataset:
    from datasets import Dataset

    # MultipleNegativesRankingLoss reads the columns in order: anchor, positive, negative.
    return Dataset.from_dict({column: frame[column].tolist() for column in frame.columns})


def run_train(
    params: TrainParams,
    paths: Paths,
    *,
    progress: bool = True,
    callbacks: Sequence[TrainerCallback] = (),
    tracking: TrainingRun | None = None,
    model_name: str = DEFAULT_MODEL_NAME,
) -> TrainReport:
    """Fine-tune ``params.base_model`` on the validated pairs; write the candidate and metrics.

    ``progress`` draws the trainer's bar when stderr is a terminal (progress lines are
    logged either way). ``callbacks`` are extra ``transformers.TrainerCallback`` objects
    (an orchestrator, tests). ``tracking``: the MLflow run to log into live; it is ended
    with the training (FINISHED, FAILED, KILLED). ``model_name`` titles the model card.
    Raises :class:`ConfigError` for unusable params,
    :class:`pipelines.retrieval.models.ModelLoadError` when the base model cannot be loaded and
    :class:`TrainError` when the data cannot train or training diverges; in every failure
    the previous candidate is left as it was.

    Under ``torchrun`` (:mod:`pipelines.train.distributed`) every rank calls this; rank 0
    alone writes (checkpoints, candidate, metrics; ``tracking`` is rank 0's, ``None``
    elsewhere) and every rank returns rank 0's report.
    """
    world = current_world()
    try:
        with training_run_status(tracking), lost_rank_as_interrupt(world):
            return _train(
                params,
                paths,
                world=world,
                bars=progress and sys.stderr.isatty() and world.is_main,
                callbacks=callbacks,
                tracking=tracking,
                model_name=model_name,
            )
    finally:
        leave()


def _train(
    params: TrainParams,
    paths: Paths,
    *,
    world: World,
    bars: bool,
    callbacks: Sequence[TrainerCallback],
    tracking: TrainingRun | None,
    model_name: str,
) -> TrainReport:
    started = time.perf_counter()
    check_params(params)
    check_batch_split(params.batch_size, world.size)
    pairs_path = TABLES["pairs"].validated_path(paths)
    if not pairs_path.is_file():
        raise TrainError(
            f"{pairs_path} not found; the train stage reads only validated data: run "
            "dvc repro validate (or make repro) first"
        )
    pairs = io.read_parquet(pairs_path)
    train_pairs, validation_pairs = split_pairs(pairs, pairs_path)
    validation_pairs = capped_sample(validation_pairs, params.max_validation_pairs, params.seed)
    if distinct_texts(train_pairs) < params.batch_size:
        raise TrainError(
            f"the training split of {pairs_path} has {len(train_pairs)} pairs but only "
            f"{distinct_texts(train_pairs)} distinct texts per column, too few to fill one "
            f"no-duplicates batch of train.batch_size={params.batch_size}; lower "
            "train.batch_size or add data"
        )
    pairs_hash = data_hash(pairs_path)

    from transformers import set_seed

    device = resolve_device(params.device)
    precision = choose_precision(device)
    join(world, device)
    set_seed(params.seed)  # before loading: a base model missing some weights initialises them
    model = load_base_model(
        params.base_model,
        pooling=params.pooling,
        max_seq_length=params.max_seq_length,
        device=f"cuda:{world.local_rank}" if device == "cuda" else device,
    )
    dimension = model.get_embedding_dimension()
    if dimension is None:
        raise ModelLoadError(f"base model {params.base_model!r} does not report its dimension")
    dims = resolve_matryoshka_dims(params.matryoshka_dims, dimension)
    # Distractors from the passages the pairs stage wrote: one validation task, mined or not.
    task = validation_set(
        validation_pairs, train_pairs, max_corpus=params.max_validation_corpus, seed=params.seed
    )
    mining = None
    if params.mined_negatives:
        with main_first(world):  # rank 0 mines and caches; the others read its cache
            mining = mine_training_negatives(
                model, pairs, params=params, cache_dir=paths.negatives_cache, pairs_hash=pairs_hash
            )
        train_pairs, _ = split_pairs(mining.pairs, pairs_path)
    from pipelines.train.ir_evaluator import MetricsRsEvaluator  # needs sentence-transformers

    evaluator = (
        MetricsRsEvaluator(task, batch_size=params.batch_size, metric=params.best_checkpoint_metric)
        if task.queries
        else None
    )

    checkpoint_folder = paths.checkpoints
    # Rank 0 alone looks at (and tidies) the checkpoints; every rank resumes from its choice.
    resume_from, resume_note = share(
        prepare_checkpoints(checkpoint_folder, run_key(params, pairs_hash, processes=world.size))
        if world.is_main
        else (None, "")
    )
    if world.is_main:
        logger.info("train: %s", resume_note)
    eval_batch_size = validation_batch_size(params.batch_size, validation_pairs, world.size)
    arguments = build_arguments(
        params,
        checkpoint_folder,
        max_steps=step_budget(params, len(train_pairs)),
        device=device,
        precision=precision,
        eval_batch_size=eval_batch_size,
        progress=bars,
        best_by_ir=evaluator is not None,
        processes=world.size,
    )
    describe_model(
        model,
        card_data(
            model_name=model_name,
            base_model=params.base_model,
            pairs_file=_shown_path(pairs_path, paths.root),
            pairs_hash=pairs_hash,
            n_validation_pairs=len(validation_pairs) if eval_batch_size else 0,
        ),
    )
    run_log = RunLog()
    tracking_callbacks = [mlflow_callback(tracking)] if tracking else []
    trainer = rank_zero_saving_trainer()(
        model=model,
        args=arguments,
        train_dataset=_to_dataset(train_pairs),
        eval_dataset=_to_dataset(validation_pairs) if eval_batch_size else None,
        loss=build_loss(model, params, dims, gather=world.size > 1),
        evaluator=evaluator,
        callbacks=[observer(run_log), *tracking_callbacks, *callbacks],
    )
    bars_on_terminal_only(trainer, bars)
    with disk_errors(checkpoint_folder):
        trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    if not world.is_main:
        # Its weights are rank 0's (the best checkpoint, loaded from rank 0's save); rank 0
        # publishes them and says what it wrote.
        report = share(None)
        assert isinstance(report, TrainReport)
        return report
    train_curve, validation_curve = loss_curves(trainer.state.log_history)
    validation_ir = ir_curve(trainer.state.log_history)
    kept = kept_checkpoint(
        validation_ir,
        params.best_checkpoint_metric,
        best_step=trainer.state.best_global_step if evaluator is not None else None,
    )
    if evaluator is not None and kept is not None:
        show_kept_scores(trainer.model, evaluator, trainer.state.log_history, kept["step"])
    trained_at = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    metadata = CandidateMetadata.of_training(
        dataclasses.asdict(params),
        matryoshka_dims=dims,
        embedding_dimension=dimension,
        data_hash=pairs_hash,
        trained_at=trained_at,
    )
    output = paths.candidate
    extra_files = {TRAINING_RUN_FILE: run_record(tracking)} if tracking else {}
    with disk_errors(output.parent):
        fingerprint = _publish_candidate(
            trainer.model,
            output,
            metadata,
            extra_files,
            card_note=kept_checkpoint_note(
                kept, n_queries=len(task.queries), n_corpus=len(task.corpus)
            ),
        )
    for path in checkpoint_folder.glob("checkpoint-*"):
        shutil.rmtree(path)
    (checkpoint_folder / RUN_FILE).unlink(missing_ok=True)

    steps_run = run_log.end_step - run_log.start_step
    pairs_trained = steps_run * params.batch_size  # exact: the short last batch is dropped
    pairs_per_second = pairs_trained / run_log.step_seconds if run_log.step_seconds > 0 else 0.0
    final_loss = train_curve[-1]["loss"] if train_curve else None
    validation_loss = validation_curve[-1]["loss"] if validation_curve else None
    metrics: dict[str, Any] = {
        "base_model": params.base_model,
        "fingerprint": fingerprint,
        "data_hash": pairs_hash,
        "device": describe_device(device),
        "precision": precision,
        "processes": world.size,
        "loss": params.loss,
        "matryoshka_dims": list(dims),
        "batch_size": params.batch_size,
        "validation_batch_size": eval_batch_size,
        "n_pairs": {"train": len(train_pairs), "validation": len(validation_pairs)},
        "steps": int(trainer.state.global_step),
        "epochs": float(trainer.state.epoch or 0.0),
        "steps_this_run": steps_run,
        "resumed_from_step": checkpoint_step(resume_from) if resume_from else None,
        "pairs_trained_this_run": pairs_trained,
        # Optimisation steps only (forward, backward, optimizer): not evaluation or saving.
        "pairs_per_second": round(pairs_per_second, 3),
        "step_seconds": round(run_log.step_seconds, 3),
        "wall_seconds": round(time.perf_counter() - started, 3),
        "final_loss": final_loss,
        "validation_loss": validation_loss,
        "loss_curve": train_curve,
        "validation_loss_curve": validation_curve,
        IR_CURVE: validation_ir,
        "kept_checkpoint": kept,
        "validation_set": {
            "queries": len(task.queries),
            "corpus": len(task.corpus),
            "distractors": task.n_distractors,
        },
        "mined_negatives": mining.summary() if mining else None,
        "trained_at": trained_at,
    }
    io.write_json(paths.metric_file("train"), metrics)
    if tracking is not None:
        summary = {
            "train.pairs_per_second": metrics["pairs_per_second"],
            "train.step_seconds": metrics["step_seconds"],
            "train.wall_seconds": metrics["wall_seconds"],
        }
        if kept is not None:
            summary["train.kept_step"] = kept["step"]
        log_metrics(tracking, summary, step=metrics["steps"])
        describe_run(
            tracking,
            name=f"candidate-{fingerprint[:12]}",
            tags={"data_version": pairs_hash, "base_model": params.base_model},
        )
    return share(
        TrainReport(
            candidate_dir=output,
            fingerprint=fingerprint,
            data_hash=pairs_hash,
            n_train_pairs=len(train_pairs),
            n_validation_pairs=len(validation_pairs),
            steps=int(trainer.state.global_step),
            resumed_from_step=metrics["resumed_from_step"],
            resume_note=resume_note,
            matryoshka_dims=dims,
            device=metrics["device"],
            precision=precision,
            pairs_per_second=pairs_per_second,
            final_loss=final_loss,
            validation_loss=validation_loss,
            metrics=metrics,
        )
    )


def _shown_path(path: Path, root: Path) -> str:
    """``path`` relative to the project root when inside it (what a reader of the card can
    find in any checkout), else as it is."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def _publish_candidate(
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


def format_loss(loss: float | None) -> str:
    return "n/a" if loss is None else f"{loss:.4f}"
