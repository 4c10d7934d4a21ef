"""What training says in its log while it runs: "step 20/100 (20 %), loss 1.2345, lr 8.0e-05,
12 s elapsed, ~48 s left" every ``train.logging_steps``, the validation loss and IR scores
after each evaluation, and the total at the end. Pure formatting; the trainer callback that calls it
is in :mod:`pipelines.train.stage`. Logged, not only drawn: a Prefect or ``dvc repro`` log
shows it as well as a terminal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pipelines.registry.reporting import format_score, metric_label
from pipelines.retrieval.embeddings import format_duration, time_left
from pipelines.train.validation import (
    IR_METRICS,
    VALIDATION_FORMATS,
    IrMetric,
    format_key,
    ir_scores,
)


def _number(logs: Mapping[str, Any], key: str) -> float | None:
    value = logs.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def step_line(
    logs: Mapping[str, Any],
    *,
    step: int,
    max_steps: int,
    first_step: int,
    elapsed: float,
) -> str | None:
    """The line for one training log entry, ``None`` for other entries (evaluation, totals).

    The time left is extrapolated from the steps this process ran (``first_step`` is where
    it started: a resumed run's earlier steps took no time here).
    """
    loss = _number(logs, "loss")
    if loss is None:
        return None
    parts = [f"step {step}/{max_steps} ({100 * step // max(max_steps, 1)} %)", f"loss {loss:.4f}"]
    learning_rate = _number(logs, "learning_rate")
    if learning_rate is not None:
        parts.append(f"lr {learning_rate:.1e}")
    parts.append(f"{format_duration(elapsed)} elapsed")
    left = time_left(step - first_step, max_steps - first_step, elapsed)
    if left is not None:
        parts.append(f"~{format_duration(left)} left")
    return ", ".join(parts)


def validation_line(logs: Mapping[str, Any], *, step: int, max_steps: int) -> str | None:
    """The line for an evaluation entry (validation loss, IR scores), ``None`` for others."""
    loss = _number(logs, "eval_loss")
    parts = [f"loss {loss:.4f}"] if loss is not None else []
    scores = score_text(ir_scores(logs))
    parts += [scores] if scores else []
    if not parts:
        return None
    epoch = _number(logs, "epoch")
    at_epoch = f", epoch {epoch:.2f}" if epoch is not None else ""
    return f"validation {', '.join(parts)} at step {step}/{max_steps}{at_epoch}"


def score_text(scores: Mapping[str, float]) -> str:
    """The validation IR scores as a person reads them: ``MRR@10 0.5389 (passages 0.6346,
    windows 0.4433), NDCG@10 ...`` (``""`` when none)."""
    return ", ".join(part for metric in IR_METRICS if (part := _score_part(scores, metric)))


def _score_part(scores: Mapping[str, float], metric: IrMetric) -> str:
    """``MRR@10 0.5389``, with each validation format's own after it when there are several
    (``MRR@10 0.5389 (passages 0.6346, windows 0.4433)``); ``""`` when not scored."""
    if metric not in scores:
        return ""
    formats = [
        f"{fmt} {format_score(scores[format_key(fmt, metric)])}"
        for fmt in VALIDATION_FORMATS
        if format_key(fmt, metric) in scores
    ]
    by_format = f" ({', '.join(formats)})" if formats else ""
    return f"{metric_label(metric)} {format_score(scores[metric])}{by_format}"


def finished_line(steps: int, elapsed: float, final_loss: float | None) -> str:
    """The last line: steps run, the time they took, the last training loss."""
    per_step = f" ({elapsed / steps:.2f} s/step)" if steps > 0 else ""
    loss = f", final loss {final_loss:.4f}" if final_loss is not None else ""
    return f"trained {steps} steps in {format_duration(elapsed)}{per_step}{loss}"
