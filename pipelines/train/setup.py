"""What a training run is made of: checked params, Matryoshka dims, the step budget, the
device and precision, the loss and the trainer arguments — pure or nearly so, so the
stage (:mod:`pipelines.train.stage`) only wires them together."""

from __future__ import annotations

import dataclasses
import json
import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from pipelines.common.config import ConfigError, TrainParams
from pipelines.train.validation import trainer_key

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.losses import MatryoshkaLoss
    from torch import nn
    from transformers import TrainerCallback

logger = logging.getLogger(__name__)

MIN_MATRYOSHKA_DIM = 32
MATRYOSHKA_EXTRA_DIMS = 3

Precision = Literal["bf16", "fp16", "fp32"]


class TrainError(RuntimeError):
    """Training cannot start or did not produce a usable model; the message says why and the fix."""


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
    """(train, validation) frames of ``anchor``, ``positive`` (and ``negative`` when every
    pair of that split has one: it then uses triplets) from the validated pairs table."""
    missing = {"anchor", "positive", "split"} - set(pairs.columns)
    if missing:
        raise TrainError(
            f"{source} lacks column(s) {sorted(missing)}; it must be the pairs table written "
            "by the validate stage (run dvc repro validate)"
        )
    train = _pair_columns(pairs.loc[pairs["split"] == "train"])
    validation = _pair_columns(pairs.loc[pairs["split"] == "validation"])
    if train.empty:
        raise TrainError(
            f"no training pairs (split == 'train') in {source} ({len(pairs)} rows in all); "
            "check the pairs stage output and metrics/data_quality.json, then rerun "
            "dvc repro validate"
        )
    return train, validation


def _pair_columns(split: pd.DataFrame) -> pd.DataFrame:
    columns = ["anchor", "positive"]
    if "negative" in split.columns and len(split) and (split["negative"] != "").all():
        columns.append("negative")
    return split[columns].reset_index(drop=True)


def capped_sample(frame: pd.DataFrame, cap: int, seed: int) -> pd.DataFrame:
    """At most ``cap`` rows of ``frame``, drawn with ``seed`` (all of them when fewer).

    The validation loss costs a forward pass over every validation pair: on a CPU, a few
    hundred say as much about over-fitting as thousands, at a fraction of the time.
    """
    if len(frame) <= cap:
        return frame
    return frame.sample(n=cap, random_state=seed).reset_index(drop=True)


def distinct_texts(frame: pd.DataFrame) -> int:
    """The most pairs one no-duplicates batch can hold: the fewer distinct texts of a column."""
    if frame.empty:
        return 0
    return int(min(frame["anchor"].nunique(), frame["positive"].nunique()))


def validation_batch_size(batch_size: int, validation: pd.DataFrame, processes: int = 1) -> int:
    """Validation batches hold at most half the distinct validation texts, so the
    no-duplicates sampler can fill them, and split evenly over ``processes``; 0 means too
    few for a validation loss.

    The validation loss is comparable across the epochs of one run (same batches), not
    across runs with another batch size.
    """
    size = min(batch_size, distinct_texts(validation) // 2)
    size -= size % processes
    return size if size >= 2 else 0


def early_stopping(params: TrainParams, validated: bool) -> list[TrainerCallback]:
    """The callback that stops training after ``train.early_stopping_patience`` evaluations
    in a row without a better validation score (``[]`` at 0); ``validated``: whether there
    is a validation score to watch (without one, nothing can stop early, and a line says so).
    The checkpoint kept is the best either way (``load_best_model_at_end``)."""
    if params.early_stopping_patience == 0:
        return []
    if not validated:
        logger.warning(
            "train: no validation queries, so train.early_stopping_patience=%d cannot apply: "
            "training runs its full budget",
            params.early_stopping_patience,
        )
        return []
    from transformers import EarlyStoppingCallback

    return [EarlyStoppingCallback(early_stopping_patience=params.early_stopping_patience)]


def step_budget(params: TrainParams, n_train_pairs: int) -> int:
    """Optimiser steps to run: ``epochs`` full epochs, capped by ``max_steps`` when set.

    An epoch is ``n_train_pairs // batch_size`` steps (the short last batch is dropped).
    The trainer itself would treat ``max_steps`` as a target and run extra epochs to reach
    it; here it only ever shortens the run.
    """
    full = params.epochs * (n_train_pairs // params.batch_size)
    return full if params.max_steps == -1 else min(params.max_steps, full)


def run_key(
    params: TrainParams, pairs_hash: str, *, processes: int = 1, start: str | None = None
) -> dict[str, Any]:
    """What a checkpoint must have been trained with to be resumed: data, every param, the
    number of processes (each rank resumes its own random state) and, for a warm start, the
    champion it started from (``start``, its fingerprint)."""
    key: dict[str, Any] = {
        "data_hash": pairs_hash,
        "params": json.loads(json.dumps(dataclasses.asdict(params))),
    }
    if processes != 1:
        key["processes"] = processes
    return key if start is None else {**key, "start": start}


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
    model: SentenceTransformer, params: TrainParams, dims: Sequence[int], *, gather: bool = False
) -> MatryoshkaLoss:
    """MNRL or cached MNRL inside Matryoshka. ``gather`` (several processes): each anchor's
    negatives are the positives of every process's share of the batch, not only its own."""
    from sentence_transformers.sentence_transformer.losses import (
        CachedMultipleNegativesRankingLoss,
        MatryoshkaLoss,
        MultipleNegativesRankingLoss,
    )

    inner: nn.Module
    if params.loss == "cached_mnrl":
        inner = CachedMultipleNegativesRankingLoss(
            model, mini_batch_size=params.mini_batch_size, gather_across_devices=gather
        )
    else:
        inner = MultipleNegativesRankingLoss(model, gather_across_devices=gather)
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
    best_by_ir: bool,
    processes: int = 1,
) -> SentenceTransformerTrainingArguments:
    """The trainer's arguments. Every ``train.eval_steps`` (and at the last step) the
    validation loss (when ``eval_batch_size``) and IR score are measured and a checkpoint is
    saved; with ``best_by_ir`` the checkpoint best on ``train.best_checkpoint_metric``
    becomes the model at the end, and checkpoint rotation (``save_total_limit``) spares it.

    With several ``processes`` the batch sizes stay global: each batch the sampler draws is
    split between the processes (accelerate's ``split_batches``), not one batch per process.
    """
    from sentence_transformers import SentenceTransformerTrainingArguments
    from sentence_transformers.base.sampler import BatchSamplers

    evaluate = eval_batch_size > 0 or best_by_ir
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
        eval_strategy="steps" if evaluate else "no",
        eval_steps=params.eval_steps,
        # Saved when evaluated: the best model can only be one that was saved.
        save_strategy="steps",
        save_steps=params.eval_steps,
        save_total_limit=params.save_total_limit,
        load_best_model_at_end=best_by_ir,
        metric_for_best_model=trainer_key(params.best_checkpoint_metric) if best_by_ir else None,
        greater_is_better=True if best_by_ir else None,
        logging_strategy="steps",
        logging_steps=params.logging_steps,
        logging_first_step=True,
        # Log NaN/inf losses as they are, so the divergence check below sees them.
        logging_nan_inf_filter=False,
        report_to="none",
        seed=params.seed,
        data_seed=params.seed,
        disable_tqdm=not progress,
        accelerator_config={"split_batches": processes > 1},
    )
