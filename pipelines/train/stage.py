"""The ``train`` stage: validated pairs -> a fine-tuned sentence-transformers candidate.

A run is data -> model -> loss -> ``SentenceTransformerTrainer`` with one
``SentenceTransformerTrainingArguments``:

* **Data**: ``data/validated/pairs.parquet`` (``anchor``, ``positive``); ``split == "train"``
  trains, ``"validation"`` gives the per-epoch validation loss. Only those two columns
  reach the trainer: the no-duplicates sampler compares every column, and a shared
  ``kind`` or ``concept`` value would keep related pairs out of one batch.
* **Model**: ``train.base_model`` with ``train.pooling`` (:func:`pipelines.models.load_base_model`).
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
* **Checkpoints**: one per epoch in ``models/checkpoints/`` (``save_total_limit`` kept).
  ``models/checkpoints/run.json`` records the data hash and params they belong to; a rerun
  with the same data and params resumes from the newest complete checkpoint (a killed run
  loses at most one epoch), anything else starts fresh and says why. A finished run
  removes its checkpoints: the candidate supersedes them.

Outputs: ``models/candidate/`` (sentence-transformers format + ``mathembed.json``:
fingerprint, base model, pooling, Matryoshka dims, params, data hash, time), trained in a
temporary folder and renamed over the old candidate only when complete; and
``metrics/train.json`` (loss curve per logging step, validation loss per epoch, pairs/s,
wall time, device, counts). Nothing is reported to W&B or TensorBoard.

``torch``, ``transformers`` and ``sentence_transformers`` are imported inside functions,
after :func:`main` has applied the offline switches.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import os
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from pipelines.common import io, offline
from pipelines.common.config import ConfigError, TrainParams, add_config_arguments, load_params
from pipelines.common.models import (
    METADATA_FILE,
    ModelLoadError,
    candidate_dir,
    checkpoints_dir,
    data_hash,
    load_base_model,
    model_fingerprint,
)
from pipelines.common.paths import Paths

if TYPE_CHECKING:
    from datasets import Dataset  # type: ignore[import-untyped]  # datasets ships no types
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.losses import MatryoshkaLoss
    from torch import nn
    from transformers import TrainerCallback

logger = logging.getLogger(__name__)

PAIRS_FILE = "pairs.parquet"
RUN_FILE = "run.json"  # in the checkpoints folder: which data + params its checkpoints are for
MIN_MATRYOSHKA_DIM = 32
MATRYOSHKA_EXTRA_DIMS = 3

Precision = Literal["bf16", "fp16", "fp32"]


class TrainError(RuntimeError):
    """Training cannot start or did not produce a usable model; the message says why and the fix."""


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


# -- pure helpers -------------------------------------------------------------------------


def check_params(params: TrainParams) -> None:
    """Raise :class:`ConfigError` naming the ``train.<key>`` that cannot work."""
    problems: list[str] = []
    if not params.base_model.strip():
        problems.append("train.base_model is empty")
    if params.batch_size < 2:
        problems.append(
            f"train.batch_size must be >= 2 (in-batch negatives), got {params.batch_size}"
        )
    if params.mini_batch_size < 1:
        problems.append(f"train.mini_batch_size must be >= 1, got {params.mini_batch_size}")
    if not params.learning_rate > 0:
        problems.append(f"train.learning_rate must be > 0, got {params.learning_rate}")
    if not 0 <= params.warmup_ratio < 1:
        problems.append(f"train.warmup_ratio must be in [0, 1), got {params.warmup_ratio}")
    if params.epochs < 1:
        problems.append(f"train.epochs must be >= 1, got {params.epochs}")
    if params.max_seq_length < 8:
        problems.append(f"train.max_seq_length must be >= 8, got {params.max_seq_length}")
    if params.max_steps == 0 or params.max_steps < -1:
        problems.append(f"train.max_steps must be -1 (no cap) or >= 1, got {params.max_steps}")
    if params.logging_steps < 1:
        problems.append(f"train.logging_steps must be >= 1, got {params.logging_steps}")
    if params.save_total_limit < 1:
        problems.append(f"train.save_total_limit must be >= 1, got {params.save_total_limit}")
    if any(dim < 1 for dim in params.matryoshka_dims):
        problems.append(
            f"train.matryoshka_dims must be positive, got {list(params.matryoshka_dims)}"
        )
    if len(set(params.matryoshka_dims)) != len(params.matryoshka_dims):
        problems.append(f"train.matryoshka_dims has duplicates: {list(params.matryoshka_dims)}")
    if problems:
        raise ConfigError("; ".join(problems))


def derive_matryoshka_dims(dimension: int) -> tuple[int, ...]:
    """The model's full dimension, then the next three powers of two below it, none under 32.

    768 -> (768, 512, 256, 128); 384 -> (384, 256, 128, 64); 1024 -> (1024, 512, 256, 128);
    64 -> (64, 32); 32 or less -> (dimension,). Powers of two keep the truncated sizes the
    ones vector stores and GPUs handle best; four sizes cover a 6x range of index size,
    and below 32 dimensions retrieval quality collapses.
    """
    if dimension < 1:
        raise ValueError(f"embedding dimension must be >= 1, got {dimension}")
    smaller: list[int] = []
    # The largest power of two strictly below the dimension (0 for dimension 1).
    power = 1 << ((dimension - 1).bit_length() - 1) if dimension > 1 else 0
    while power >= MIN_MATRYOSHKA_DIM and len(smaller) < MATRYOSHKA_EXTRA_DIMS:
        smaller.append(power)
        power //= 2
    return (dimension, *smaller)


def resolve_matryoshka_dims(configured: Sequence[int], dimension: int) -> tuple[int, ...]:
    """``configured`` (sorted, largest first) when set, else :func:`derive_matryoshka_dims`."""
    if not configured:
        return derive_matryoshka_dims(dimension)
    too_large = [dim for dim in configured if dim > dimension]
    if too_large:
        raise ConfigError(
            f"train.matryoshka_dims {list(configured)}: {too_large} exceed the model's "
            f"embedding dimension {dimension}; use dims <= {dimension} or [] to derive them"
        )
    return tuple(sorted(configured, reverse=True))


def split_pairs(pairs: pd.DataFrame, source: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(train, validation) frames of ``anchor``, ``positive`` from the validated pairs table."""
    missing = {"anchor", "positive", "split"} - set(pairs.columns)
    if missing:
        raise TrainError(
            f"{source} lacks column(s) {sorted(missing)}; it must be the pairs table written "
            "by the validate stage (run dvc repro validate)"
        )
    columns = ["anchor", "positive"]
    train = pairs.loc[pairs["split"] == "train", columns].reset_index(drop=True)
    validation = pairs.loc[pairs["split"] == "validation", columns].reset_index(drop=True)
    if train.empty:
        raise TrainError(
            f"no training pairs (split == 'train') in {source} ({len(pairs)} rows in all); "
            "check the pairs stage output and metrics/data_quality.json, then rerun "
            "dvc repro validate"
        )
    return train, validation


def distinct_texts(frame: pd.DataFrame) -> int:
    """The most pairs one no-duplicates batch can hold: the fewer distinct texts of a column."""
    if frame.empty:
        return 0
    return int(min(frame["anchor"].nunique(), frame["positive"].nunique()))


def validation_batch_size(batch_size: int, validation: pd.DataFrame) -> int:
    """Validation batches hold at most half the distinct validation texts, so the
    no-duplicates sampler can fill them; 0 means too few for a validation loss.

    The validation loss is comparable across the epochs of one run (same batches), not
    across runs with another batch size.
    """
    capacity = distinct_texts(validation) // 2
    return min(batch_size, capacity) if capacity >= 2 else 0


def step_budget(params: TrainParams, n_train_pairs: int) -> int:
    """Optimiser steps to run: ``epochs`` full epochs, capped by ``max_steps`` when set.

    An epoch is ``n_train_pairs // batch_size`` steps (the short last batch is dropped).
    The trainer itself would treat ``max_steps`` as a target and run extra epochs to reach
    it; here it only ever shortens the run.
    """
    full = params.epochs * (n_train_pairs // params.batch_size)
    return full if params.max_steps == -1 else min(params.max_steps, full)


def run_key(params: TrainParams, pairs_hash: str) -> dict[str, Any]:
    """What a checkpoint must have been trained with to be resumed: data and every param."""
    return {"data_hash": pairs_hash, "params": json.loads(json.dumps(dataclasses.asdict(params)))}


def loss_curves(log_history: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], ...]:
    """(training loss per logging step, validation loss per evaluation) from the trainer's log."""
    train_curve = [
        {
            "step": int(entry["step"]),
            "epoch": float(entry["epoch"]),
            "loss": float(entry["loss"]),
            "learning_rate": float(entry.get("learning_rate", math.nan)),
        }
        for entry in log_history
        if "loss" in entry
    ]
    validation_curve = [
        {
            "step": int(entry["step"]),
            "epoch": float(entry["epoch"]),
            "loss": float(entry["eval_loss"]),
        }
        for entry in log_history
        if "eval_loss" in entry
    ]
    return train_curve, validation_curve


# -- devices ------------------------------------------------------------------------------


def resolve_device(requested: Literal["auto", "cpu", "cuda"]) -> Literal["cpu", "cuda"]:
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise TrainError(
            f"train.device is 'cuda' but torch {torch.__version__} sees no CUDA device "
            f"(CUDA build: {torch.version.cuda}); set train.device to auto or cpu"
        )
    return requested


def choose_precision(device: Literal["cpu", "cuda"]) -> Precision:
    """bf16 where the GPU supports it (no loss scaling needed), else fp16; fp32 on CPU."""
    if device == "cpu":
        return "fp32"
    import torch

    return "bf16" if torch.cuda.is_bf16_supported() else "fp16"


def describe_device(device: Literal["cpu", "cuda"]) -> str:
    import torch

    if device == "cuda":
        return f"cuda ({torch.cuda.get_device_name(0)})"
    return f"cpu ({torch.get_num_threads()} threads)"


# -- the run ------------------------------------------------------------------------------


def build_loss(
    model: SentenceTransformer, params: TrainParams, dims: Sequence[int]
) -> MatryoshkaLoss:
    from sentence_transformers.sentence_transformer.losses import (
        CachedMultipleNegativesRankingLoss,
        MatryoshkaLoss,
        MultipleNegativesRankingLoss,
    )

    inner: nn.Module
    if params.loss == "cached_mnrl":
        inner = CachedMultipleNegativesRankingLoss(model, mini_batch_size=params.mini_batch_size)
    else:
        inner = MultipleNegativesRankingLoss(model)
    return MatryoshkaLoss(model, inner, matryoshka_dims=list(dims))


def build_arguments(
    params: TrainParams,
    output_dir: Path,
    *,
    max_steps: int,
    device: Literal["cpu", "cuda"],
    precision: Precision,
    eval_batch_size: int,
    progress: bool,
) -> SentenceTransformerTrainingArguments:
    from sentence_transformers import SentenceTransformerTrainingArguments
    from sentence_transformers.base.sampler import BatchSamplers

    evaluate = eval_batch_size > 0
    return SentenceTransformerTrainingArguments(
        output_dir=str(output_dir),
        num_train_epochs=params.epochs,
        max_steps=max_steps,
        per_device_train_batch_size=params.batch_size,
        per_device_eval_batch_size=max(eval_batch_size, 1),
        learning_rate=params.learning_rate,
        # transformers 5: a float below 1 is the warm-up ratio (warmup_ratio is deprecated).
        warmup_steps=params.warmup_ratio,
        bf16=precision == "bf16",
        fp16=precision == "fp16",
        use_cpu=device == "cpu",
        batch_sampler=BatchSamplers.NO_DUPLICATES,
        dataloader_drop_last=True,
        eval_strategy="epoch" if evaluate else "no",
        save_strategy="epoch",
        save_total_limit=params.save_total_limit,
        logging_strategy="steps",
        logging_steps=params.logging_steps,
        logging_first_step=True,
        # Log NaN/inf losses as they are, so the divergence check below sees them.
        logging_nan_inf_filter=False,
        report_to="none",
        seed=params.seed,
        data_seed=params.seed,
        disable_tqdm=not progress,
    )


@dataclass
class _RunLog:
    start_step: int = 0
    end_step: int = 0
    step_seconds: float = 0.0


def _observer(run_log: _RunLog) -> TrainerCallback:
    """Times optimisation steps and stops the run at the first NaN or infinite loss."""
    from transformers import TrainerCallback

    class Observer(TrainerCallback):
        def __init__(self) -> None:
            self._step_started = 0.0

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            run_log.start_step = run_log.end_step = int(state.global_step)

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

    return Observer()


def prepare_checkpoints(folder: Path, key: dict[str, Any]) -> tuple[Path | None, str]:
    """The checkpoint to resume from (or None) and a sentence saying what was decided.

    Checkpoints for other data or params, and incomplete ones (killed while saving: no
    readable ``trainer_state.json``), are removed; ``run.json`` is (re)written for ``key``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    run_file = folder / RUN_FILE
    checkpoints = sorted(
        (path for path in folder.glob("checkpoint-*") if path.is_dir()),
        key=lambda path: _checkpoint_step(path),
    )
    recorded = _read_json_or_none(run_file)
    if checkpoints and recorded != key:
        reason = "no run.json" if recorded is None else _difference(recorded, key)
        for path in checkpoints:
            shutil.rmtree(path)
        io.write_json(run_file, key)
        return None, f"starting fresh: removed checkpoints from another run ({reason})"
    io.write_json(run_file, key)
    complete = [path for path in checkpoints if _is_complete(path)]
    for path in checkpoints:
        if path not in complete:
            shutil.rmtree(path)
    if not complete:
        return None, "starting fresh: no checkpoint to resume"
    latest = complete[-1]
    return latest, f"resuming from {latest} (step {_checkpoint_step(latest)})"


def _checkpoint_step(path: Path) -> int:
    suffix = path.name.rpartition("-")[2]
    return int(suffix) if suffix.isdigit() else -1


def _is_complete(checkpoint: Path) -> bool:
    # The trainer writes trainer_state.json last.
    state = _read_json_or_none(checkpoint / "trainer_state.json")
    return isinstance(state, dict) and "global_step" in state


def _read_json_or_none(path: Path) -> Any:
    try:
        return io.read_json(path)
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None


def _difference(recorded: Any, key: dict[str, Any]) -> str:
    if not isinstance(recorded, dict):
        return "unreadable run.json"
    if recorded.get("data_hash") != key["data_hash"]:
        return "different data"
    old_params = recorded.get("params") or {}
    changed = sorted(name for name, value in key["params"].items() if old_params.get(name) != value)
    return f"different params: {', '.join(changed)}" if changed else "different params"


def _to_dataset(frame: pd.DataFrame) -> Dataset:
    from datasets import Dataset

    return Dataset.from_dict({column: frame[column].tolist() for column in ("anchor", "positive")})


def run_train(
    params: TrainParams,
    paths: Paths,
    *,
    progress: bool = True,
    callbacks: Sequence[TrainerCallback] = (),
) -> TrainReport:
    """Fine-tune ``params.base_model`` on the validated pairs; write the candidate and metrics.

    ``callbacks`` are extra ``transformers.TrainerCallback`` objects (progress reporting
    for an orchestrator, tests). Raises :class:`ConfigError` for unusable params,
    :class:`pipelines.models.ModelLoadError` when the base model cannot be loaded and
    :class:`TrainError` when the data cannot train or training diverges; in every failure
    the previous candidate is left as it was.
    """
    started = time.perf_counter()
    check_params(params)
    pairs_path = paths.validated / PAIRS_FILE
    if not pairs_path.is_file():
        raise TrainError(
            f"{pairs_path} not found; the train stage reads only validated data: run "
            "dvc repro validate (or make repro) first"
        )
    train_pairs, validation_pairs = split_pairs(io.read_parquet(pairs_path), pairs_path)
    if distinct_texts(train_pairs) < params.batch_size:
        raise TrainError(
            f"the training split of {pairs_path} has {len(train_pairs)} pairs but only "
            f"{distinct_texts(train_pairs)} distinct texts per column, too few to fill one "
            f"no-duplicates batch of train.batch_size={params.batch_size}; lower "
            "train.batch_size or add data"
        )
    pairs_hash = data_hash(pairs_path)

    from sentence_transformers import SentenceTransformerTrainer
    from transformers import set_seed

    device = resolve_device(params.device)
    precision = choose_precision(device)
    set_seed(params.seed)  # before loading: a base model missing some weights initialises them
    model = load_base_model(
        params.base_model,
        pooling=params.pooling,
        max_seq_length=params.max_seq_length,
        device=device,
    )
    dimension = model.get_embedding_dimension()
    if dimension is None:
        raise ModelLoadError(f"base model {params.base_model!r} does not report its dimension")
    dims = resolve_matryoshka_dims(params.matryoshka_dims, dimension)

    checkpoint_folder = checkpoints_dir(paths)
    resume_from, resume_note = prepare_checkpoints(checkpoint_folder, run_key(params, pairs_hash))
    logger.info("train: %s", resume_note)
    eval_batch_size = validation_batch_size(params.batch_size, validation_pairs)
    arguments = build_arguments(
        params,
        checkpoint_folder,
        max_steps=step_budget(params, len(train_pairs)),
        device=device,
        precision=precision,
        eval_batch_size=eval_batch_size,
        progress=progress,
    )
    run_log = _RunLog()
    trainer = SentenceTransformerTrainer(
        model=model,
        args=arguments,
        train_dataset=_to_dataset(train_pairs),
        eval_dataset=_to_dataset(validation_pairs) if eval_batch_size else None,
        loss=build_loss(model, params, dims),
        callbacks=[_observer(run_log), *callbacks],
    )
    trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)

    train_curve, validation_curve = loss_curves(trainer.state.log_history)
    trained_at = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    metadata = {
        "base_model": params.base_model,
        "pooling": params.pooling,
        "matryoshka_dims": list(dims),
        "embedding_dimension": dimension,
        "max_seq_length": params.max_seq_length,
        "params": dataclasses.asdict(params),
        "data_hash": pairs_hash,
        "trained_at": trained_at,
    }
    output = candidate_dir(paths)
    fingerprint = _publish_candidate(trainer.model, output, metadata)
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
        "loss": params.loss,
        "matryoshka_dims": list(dims),
        "batch_size": params.batch_size,
        "validation_batch_size": eval_batch_size,
        "n_pairs": {"train": len(train_pairs), "validation": len(validation_pairs)},
        "steps": int(trainer.state.global_step),
        "epochs": float(trainer.state.epoch or 0.0),
        "steps_this_run": steps_run,
        "resumed_from_step": _checkpoint_step(resume_from) if resume_from else None,
        "pairs_trained_this_run": pairs_trained,
        # Optimisation steps only (forward, backward, optimizer): not evaluation or saving.
        "pairs_per_second": round(pairs_per_second, 3),
        "step_seconds": round(run_log.step_seconds, 3),
        "wall_seconds": round(time.perf_counter() - started, 3),
        "final_loss": final_loss,
        "validation_loss": validation_loss,
        "loss_curve": train_curve,
        "validation_loss_curve": validation_curve,
        "trained_at": trained_at,
    }
    io.write_json(paths.metrics / "train.json", metrics)
    return TrainReport(
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


def _publish_candidate(model: SentenceTransformer, output: Path, metadata: dict[str, Any]) -> str:
    """Save ``model`` + ``mathembed.json`` into a temporary sibling, then rename it to ``output``.

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
        fingerprint = model_fingerprint(staging)
        io.write_json(staging / METADATA_FILE, {"fingerprint": fingerprint, **metadata})
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


def _format_loss(loss: float | None) -> str:
    return "n/a" if loss is None else f"{loss:.4f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pipelines.train",
        description=(
            "Fine-tune the base model (params.yaml 'train') on data/validated/pairs.parquet "
            "with MNRL (or cached MNRL) inside a Matryoshka loss; write models/candidate/ "
            "and metrics/train.json. A killed run resumes from models/checkpoints/."
        ),
    )
    add_config_arguments(parser)
    parser.add_argument("--no-progress", action="store_true", help="hide the training progress bar")
    args = parser.parse_args(argv)
    offline.apply()  # before the Hugging Face libraries are first imported
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("pipelines").setLevel(logging.INFO)  # our decisions, not library chatter
    try:
        report = run_train(
            load_params(args.params).train, Paths(args.root), progress=not args.no_progress
        )
    except (ConfigError, ModelLoadError, TrainError, FileNotFoundError) as error:
        print(f"train: {error}", file=sys.stderr)
        return 1
    print(
        f"train: {report.resume_note}; {report.steps} steps on {report.n_train_pairs} pairs "
        f"({report.device}, {report.precision}), {report.pairs_per_second:.1f} pairs/s, "
        f"final loss {_format_loss(report.final_loss)}, validation loss "
        f"{_format_loss(report.validation_loss)}; candidate {report.candidate_dir} "
        f"(fingerprint {report.fingerprint[:12]})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
