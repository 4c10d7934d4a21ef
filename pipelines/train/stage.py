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
  (:func:`pipelines.retrieval.models.load_base_model`); with ``train.init: champion`` the
  registry's champion in its place, trained on the new papers' pairs and a replay sample of
  the old (:mod:`pipelines.train.warm_start`).
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
  one; with ``train.validation_windows`` the score is the mean over the validation anchors
  asked among passages and among the papers' plain windows (the transfer sets' format).
  ``models/checkpoints/run.json`` records the data hash and params they belong to; a rerun
  with the same data and params resumes from the newest complete checkpoint (a killed run
  loses at most ``eval_steps`` steps), anything else starts fresh and says why.
  A finished run removes its checkpoints: the candidate supersedes them.
* **Mixing with the base model**: the candidate's weights are ``(1 - a) x base + a x kept``
  (WiSE-FT), ``a`` the one of ``train.mixing_weights`` whose mixture scores best on the
  same validation score (:mod:`pipelines.train.mixing`); ``[1.0]`` keeps the checkpoint.
  A warm start mixes with the champion it started from.

Outputs: ``models/candidate/`` (sentence-transformers format + ``mathembed.json``:
fingerprint, base model, pooling, Matryoshka dims, params, data hash, time, mixing weight),
trained in a temporary folder and renamed over the old candidate only when complete; and
``metrics/train.json`` (loss curve per logging step, validation loss and IR scores per
evaluation, the step kept and why, the mixing weight chosen and each weight's score,
mined-negative counts, pairs/s, wall time, device, counts). Nothing is reported to W&B or
TensorBoard.

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
:mod:`pipelines.train.negatives`. The steps before the trainer (the data, the base model)
are in :mod:`pipelines.train.inputs`, those after it (the candidate, the metrics) in
:mod:`pipelines.train.results`.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from pipelines.common import io
from pipelines.common.config import PromoteParams, TrainParams
from pipelines.common.paths import Paths
from pipelines.train.callbacks import RunLog, bars_on_terminal_only, observer
from pipelines.train.card import (
    card_data,
    describe_model,
    kept_checkpoint_note,
    show_kept_scores,
)
from pipelines.train.checkpoints import disk_errors, prepare_checkpoints
from pipelines.train.distributed import (
    World,
    check_batch_split,
    current_world,
    leave,
    lost_rank_as_interrupt,
    rank_zero_saving_trainer,
    share,
)
from pipelines.train.inputs import (
    LoadedBase,
    TrainingData,
    load_base,
    read_training_data,
    validation_tasks,
    with_mined_negatives,
    with_warm_split,
)
from pipelines.train.mixing import mix_with_start
from pipelines.train.results import (
    Outcome,
    Throughput,
    log_run_summary,
    remove_checkpoints,
    save_candidate,
    train_metrics,
)
from pipelines.train.setup import (
    Precision,
    build_arguments,
    build_loss,
    check_params,
    early_stopping,
    run_key,
    step_budget,
    validation_batch_size,
)
from pipelines.train.setup import TrainError as TrainError  # the command catches it from here
from pipelines.train.tracking import TrainingRun, mlflow_callback, training_run_status
from pipelines.train.validation import ValidationSet
from pipelines.train.warm_start import (
    Start,
    WarmSplit,
    positive_papers,
    resolve_start,
    trained_papers,
)

if TYPE_CHECKING:
    from datasets import Dataset  # type: ignore[import-untyped]  # datasets ships no types
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from transformers import TrainerCallback

    from pipelines.train.ir_evaluator import MetricsRsEvaluator

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
    promote: PromoteParams | None = None,
    start: Start | None = None,
) -> TrainReport:
    """Fine-tune ``params.base_model`` on the validated pairs; write the candidate and metrics.

    ``progress`` draws the trainer's bar when stderr is a terminal (progress lines are
    logged either way). ``callbacks`` are extra ``transformers.TrainerCallback`` objects
    (an orchestrator, tests). ``tracking``: the MLflow run to log into live; it is ended
    with the training (FINISHED, FAILED, KILLED). ``model_name`` titles the model card.
    ``start``: the weights to start from; by default ``train.init`` says, the champion looked
    up in ``promote``'s registry (params.yaml's when ``None``).
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
                start=lambda: start or resolve_start(params, promote or PromoteParams(), paths),
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
    start: Callable[[], Start],
) -> TrainReport:
    started = time.perf_counter()
    check_params(params)
    check_batch_split(params.batch_size, world.size)
    data = read_training_data(params, paths)
    # Distractors from the passages the pairs stage wrote: one validation task, mined or not.
    tasks = validation_tasks(data, params, paths)
    base = load_base(params, world, start)
    data, mining = with_mined_negatives(data, base, params, paths, world)
    data, warm = with_warm_split(data, base.start, params)
    if world.is_main:
        logger.info("train: %s%s", base.start.note, f"; {warm.note}" if warm else "")
    evaluator = _ir_evaluator(tasks, params)
    resume_from, resume_note = _resume_point(
        params, paths.checkpoints, data.hash, world, start=base.start.fingerprint
    )
    eval_batch_size = validation_batch_size(params.batch_size, data.validation, world.size)
    arguments = build_arguments(
        params,
        paths.checkpoints,
        max_steps=step_budget(params, len(data.train)),
        device=base.device,
        precision=base.precision,
        eval_batch_size=eval_batch_size,
        progress=bars,
        best_by_ir=evaluator is not None,
        processes=world.size,
    )
    _describe_candidate(base.model, model_name, params, paths, data, eval_batch_size)
    run_log = RunLog()
    trainer = _trainer(
        base,
        arguments,
        data,
        params,
        eval_batch_size=eval_batch_size,
        evaluator=evaluator,
        run_log=run_log,
        callbacks=[*([mlflow_callback(tracking)] if tracking else []), *callbacks],
        world=world,
        bars=bars,
    )
    with disk_errors(paths.checkpoints):
        trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    if not world.is_main:
        return _rank_zero_report()
    # Rank 0 alone from here: what the log says, the candidate, the metrics, the run's summary.
    outcome = Outcome.of(
        trainer.state, params.best_checkpoint_metric, best_by_ir=evaluator is not None
    )
    if evaluator is not None and outcome.kept is not None:
        show_kept_scores(trainer.model, evaluator, trainer.state.log_history, outcome.kept["step"])
    mixing = mix_with_start(trainer.model, params, evaluator, base.start, outcome.kept_scores)
    trained_at = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    fingerprint = save_candidate(
        trainer.model,
        paths.candidate,
        params=params,
        base=base,
        pairs_hash=data.hash,
        trained_at=trained_at,
        mixing_weight=mixing.chosen,
        trained_papers=sorted(
            base.start.known_papers | set(trained_papers(positive_papers(data.pairs)))
        ),
        tracking=tracking,
        card_note=kept_checkpoint_note(outcome.kept, tasks)
        + _start_note(base.start, warm)
        + mixing.card_note(),
    )
    remove_checkpoints(paths.checkpoints)
    throughput = Throughput.of(run_log, params.batch_size)
    metrics = train_metrics(
        params=params,
        fingerprint=fingerprint,
        data=data,
        base=base,
        processes=world.size,
        eval_batch_size=eval_batch_size,
        state=trainer.state,
        planned_steps=arguments.max_steps,
        resume_from=resume_from,
        throughput=throughput,
        started=started,
        outcome=outcome,
        tasks=tasks,
        mining=mining,
        mixing=mixing,
        warm=warm,
        trained_at=trained_at,
    )
    io.write_json(paths.metric_file("train"), metrics)
    if metrics["stopped_early"]:
        logger.info(
            "train: stopped early at step %d of %d: %d evaluations in a row without a better "
            "validation score (train.early_stopping_patience)",
            metrics["steps"],
            metrics["planned_steps"],
            params.early_stopping_patience,
        )
    if tracking is not None:
        log_run_summary(
            tracking,
            metrics,
            outcome.kept,
            fingerprint=fingerprint,
            pairs_hash=data.hash,
            base_model=params.base_model,
        )
    return share(
        _report(paths.candidate, fingerprint, data, base, metrics, resume_note, throughput, outcome)
    )


def _ir_evaluator(
    tasks: Mapping[str, ValidationSet], params: TrainParams
) -> MetricsRsEvaluator | None:
    """The validation IR evaluator that picks the checkpoint kept; none without queries."""
    from pipelines.train.ir_evaluator import MetricsRsEvaluator  # needs sentence-transformers

    return (
        MetricsRsEvaluator(
            tasks, batch_size=params.batch_size, metric=params.best_checkpoint_metric
        )
        if any(task.queries for task in tasks.values())
        else None
    )


def _start_note(start: Start, warm: WarmSplit | None) -> str:
    """The card's "Warm start" section: the champion the run started from and its pairs."""
    if warm is None:  # not a warm start
        return ""
    return (
        "\n## Warm start\n\n"
        f"{start.note} (fingerprint {(start.fingerprint or '')[:12]}), on {warm.note}. "
        "Weight-space mixing mixes with the champion's weights, not the base model's.\n"
    )


def _resume_point(
    params: TrainParams,
    checkpoint_folder: Path,
    pairs_hash: str,
    world: World,
    *,
    start: str | None,
) -> tuple[Path | None, str]:
    """The checkpoint to resume from (none to start fresh) and why, the same on every rank."""
    # Rank 0 alone looks at (and tidies) the checkpoints; every rank resumes from its choice.
    key = run_key(params, pairs_hash, processes=world.size, start=start)
    resume_from, resume_note = share(
        prepare_checkpoints(checkpoint_folder, key) if world.is_main else (None, "")
    )
    if world.is_main:
        logger.info("train: %s", resume_note)
    return resume_from, resume_note


def _describe_candidate(
    model: SentenceTransformer,
    model_name: str,
    params: TrainParams,
    paths: Paths,
    data: TrainingData,
    eval_batch_size: int,
) -> None:
    """The model card's data: its name, base model and training pairs."""
    describe_model(
        model,
        card_data(
            model_name=model_name,
            base_model=params.base_model,
            pairs_file=_shown_path(data.path, paths.root),
            pairs_hash=data.hash,
            n_validation_pairs=len(data.validation) if eval_batch_size else 0,
        ),
    )


def _trainer(
    base: LoadedBase,
    arguments: SentenceTransformerTrainingArguments,
    data: TrainingData,
    params: TrainParams,
    *,
    eval_batch_size: int,
    evaluator: MetricsRsEvaluator | None,
    run_log: RunLog,
    callbacks: list[TrainerCallback],
    world: World,
    bars: bool,
) -> SentenceTransformerTrainer:
    """The trainer of ``base``: the splits, the loss, the evaluator, the callbacks (``run_log``
    first, then early stopping); the validation split only when it fills a batch."""
    trainer = rank_zero_saving_trainer()(
        model=base.model,
        args=arguments,
        train_dataset=_to_dataset(data.train),
        eval_dataset=_to_dataset(data.validation) if eval_batch_size else None,
        loss=build_loss(base.model, params, base.dims, gather=world.size > 1),
        evaluator=evaluator,
        callbacks=[observer(run_log), *early_stopping(params, evaluator is not None), *callbacks],
    )
    bars_on_terminal_only(trainer, bars)
    return trainer


def _report(
    candidate_dir: Path,
    fingerprint: str,
    data: TrainingData,
    base: LoadedBase,
    metrics: dict[str, Any],
    resume_note: str,
    throughput: Throughput,
    outcome: Outcome,
) -> TrainReport:
    """What the run returns: the candidate, its data, how training went (``metrics`` whole)."""
    return TrainReport(
        candidate_dir=candidate_dir,
        fingerprint=fingerprint,
        data_hash=data.hash,
        n_train_pairs=len(data.train),
        n_validation_pairs=len(data.validation),
        steps=metrics["steps"],
        resumed_from_step=metrics["resumed_from_step"],
        resume_note=resume_note,
        matryoshka_dims=base.dims,
        device=metrics["device"],
        precision=base.precision,
        pairs_per_second=throughput.pairs_per_second,
        final_loss=outcome.final_loss,
        validation_loss=outcome.validation_loss,
        metrics=metrics,
    )


def _rank_zero_report() -> TrainReport:
    """What rank 0 reports, on another rank: its weights are rank 0's (the best checkpoint,
    loaded from rank 0's save); rank 0 publishes them and says what it wrote."""
    report = share(None)
    assert isinstance(report, TrainReport)
    return report


def _shown_path(path: Path, root: Path) -> str:
    """``path`` relative to the project root when inside it (what a reader of the card can
    find in any checkout), else as it is."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def format_loss(loss: float | None) -> str:
    return "n/a" if loss is None else f"{loss:.4f}"
