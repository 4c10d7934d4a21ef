"""Weight-space ensembling of the kept checkpoint with its base model (WiSE-FT: Wortsman et
al., "Robust fine-tuning of zero-shot models", 2022).

Fine-tuning makes the model retrieve better what it was tuned on and worse some of what it
was not. Interpolating the weights, ``(1 - a) x base + a x tuned``, keeps most of the gain
and loses less elsewhere. ``a`` is one of ``train.mixing_weights``: the one whose mixture
scores best on the validation task by ``train.best_checkpoint_metric`` (the score the
checkpoint was kept by), the smaller on a tie (closer to the base). Weight 1.0 is the kept
checkpoint itself: its score is the one the trainer measured at that step (the same
evaluator on the same weights), not measured again. Without validation queries nothing
can choose: the largest weight is used and the record says so. ``[1.0]`` is no mixing: the
base model is not loaded again. A warm start (:mod:`pipelines.train.warm_start`) mixes
with the champion it started from: ``base`` here is whatever the run started from.

The mixture is what :mod:`pipelines.train.stage` publishes as the candidate, so evaluate and
promote see an ordinary model; the choice is recorded in ``metrics/train.json``
(``mixing``), on the model card and in ``mathembed.json``. Rank 0 alone mixes: the other
ranks are already waiting for its report.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pipelines.common.config import TrainParams
from pipelines.registry.reporting import format_score, metric_label
from pipelines.train.card import show_scores
from pipelines.train.progress import score_text
from pipelines.train.validation import IR_METRICS, IrMetric

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from torch import Tensor

    from pipelines.train.ir_evaluator import MetricsRsEvaluator
    from pipelines.train.warm_start import Start

logger = logging.getLogger(__name__)

#: Scores closer than this are equal (the order of float sums, not the model, tells them
#: apart): the smaller weight wins.
TIE = 1e-9


@dataclass(frozen=True)
class Mixing:
    """How the candidate's weights were mixed: each weight of the grid with its validation
    score (``None``: not scored), the weight chosen and why; ``by_format``: each scored
    weight's score in each validation format, when more than one was asked."""

    scores: dict[float, float | None]
    chosen: float
    metric: IrMetric
    why: str
    by_format: dict[float, dict[str, float]] = field(default_factory=dict)

    @property
    def is_plain(self) -> bool:
        """Whether nothing was mixed or scored: the grid was ``[1.0]`` alone."""
        return list(self.scores) == [1.0]

    def card_note(self) -> str:
        """The card's "Weight-space mixing" section: the weight chosen, why, each weight's
        validation score; nothing when the grid was ``[1.0]`` alone (nothing was mixed)."""
        if self.is_plain:
            return ""
        scored = ", ".join(
            f"{weight:g}: {format_score(score)}"
            for weight, score in self.scores.items()
            if score is not None
        )
        by_weight = (
            f" Validation {metric_label(self.metric)} by weight: {scored}." if scored else ""
        )
        weights = (
            "The kept checkpoint's weights as they are"
            if self.chosen == 1.0
            else f"{self.chosen:g} x the kept checkpoint's weights + {1 - self.chosen:g} x the "
            "base model's (WiSE-FT)"
        )
        return (
            "\n## Weight-space mixing\n\n"
            f"{weights}, mixing weight {self.chosen:g}: {self.why}.{by_weight}\n"
        )

    def as_json(self) -> dict[str, Any]:
        """The ``mixing`` block of ``metrics/train.json``."""
        return {
            "weights": {str(weight): score for weight, score in self.scores.items()},
            "chosen": self.chosen,
            "metric": self.metric,
            "why": self.why,
            **(
                {"by_format": {str(weight): s for weight, s in self.by_format.items()}}
                if self.by_format
                else {}
            ),
        }


# -- pure helpers -------------------------------------------------------------------------


def interpolate_state_dict(
    base: Mapping[str, Tensor], tuned: Mapping[str, Tensor], weight: float
) -> dict[str, Tensor]:
    """``(1 - weight) x base + weight x tuned`` for every floating tensor (in ``tuned``'s
    dtype and on its device); other tensors (integer buffers such as ``position_ids``) are
    ``tuned``'s. Weight 0 gives ``base``'s values and 1 ``tuned``'s, exactly (``torch.lerp``).

    A key on one side only or a shape that differs is a ``ValueError`` naming the key: the
    two are not the same architecture, and no mixture of them is a model.
    """
    import torch

    for key in sorted(set(base) ^ set(tuned)):
        has, lacks = ("candidate", "base model") if key in tuned else ("base model", "candidate")
        raise ValueError(
            f"cannot mix weights: {key!r} is in the {has} but not in the {lacks}; the "
            "candidate and the base model differ in architecture"
        )
    mixed: dict[str, Tensor] = {}
    for key, tuned_tensor in tuned.items():
        base_tensor = base[key]
        if base_tensor.shape != tuned_tensor.shape:
            raise ValueError(
                f"cannot mix weights: {key!r} has shape {tuple(tuned_tensor.shape)} in the "
                f"candidate but {tuple(base_tensor.shape)} in the base model; the candidate "
                "and the base model differ in architecture"
            )
        if tuned_tensor.is_floating_point():
            mixed[key] = torch.lerp(base_tensor.to(tuned_tensor), tuned_tensor, weight)
        else:
            mixed[key] = tuned_tensor
    return mixed


def choose_weight(scores: Mapping[float, float]) -> float:
    """The weight that scored best; of those within :data:`TIE` of the best, the smallest
    (the closest to the base model)."""
    best = max(scores.values())
    return min(weight for weight, score in scores.items() if score >= best - TIE)


def scored_mixing(means: Mapping[float, Mapping[str, float]], metric: IrMetric) -> Mixing:
    """The record of a choice by validation score: ``means`` holds each weight's validation
    scores (:meth:`MetricsRsEvaluator.means`), the mean over the formats and each format's."""
    scores = {weight: scored[metric] for weight, scored in sorted(means.items())}
    by_format = {
        weight: {name: value for name, value in scored.items() if name not in IR_METRICS}
        for weight, scored in sorted(means.items())
    }
    return Mixing(
        scores=dict(scores),
        chosen=choose_weight(scores),
        metric=metric,
        why=(
            f"the best validation {metric} of the {len(scores)} weights in "
            "train.mixing_weights (on a tie, the smaller)"
        ),
        by_format={weight: scored for weight, scored in by_format.items() if scored},
    )


def unscored_mixing(weights: Sequence[float], metric: IrMetric) -> Mixing:
    """The record when no score chooses: the largest weight (1.0, the kept checkpoint as it
    is, when the grid has it)."""
    grid = sorted(set(weights))
    why = (
        "train.mixing_weights is [1.0]: the kept checkpoint, not mixed"
        if grid == [1.0]
        else "no validation queries to score the weights: the largest of train.mixing_weights"
    )
    return Mixing(scores=dict.fromkeys(grid), chosen=grid[-1], metric=metric, why=why)


# -- the step -----------------------------------------------------------------------------


def mix_with_start(
    model: SentenceTransformer,
    params: TrainParams,
    evaluator: MetricsRsEvaluator | None,
    start: Start,
    kept_scores: Mapping[str, float] | None = None,
) -> Mixing:
    """Load into ``model`` (the kept checkpoint) its mixture with the weights the run
    started from (``train.base_model``, or a warm start's champion) at the weight chosen from
    ``train.mixing_weights`` (and put that mixture's validation scores on its card); the
    record of the choice. ``kept_scores``: the kept checkpoint's validation scores, as the
    trainer measured them (weight 1.0's). Rank 0 alone."""
    grid = sorted(set(params.mixing_weights))
    metric = params.best_checkpoint_metric
    if evaluator is None or grid == [1.0]:
        mixing = unscored_mixing(grid, metric)
        if mixing.chosen < 1.0:
            model.load_state_dict(_mixer(model, params, start)(mixing.chosen))
        if not mixing.is_plain:
            logger.info("train: mixing: weight %g, %s", mixing.chosen, mixing.why)
        return mixing
    mix = _mixer(model, params, start)
    means: dict[float, dict[str, float]] = {}
    if kept_scores and 1.0 in grid:  # the kept checkpoint itself, scored by the trainer
        means[1.0] = dict(kept_scores)
    for weight in grid:
        if weight not in means:
            model.load_state_dict(mix(weight))
            means[weight] = evaluator.means(model)
        logger.info("train: mixing: weight %g -> validation %s", weight, score_text(means[weight]))
    mixing = scored_mixing(means, metric)
    model.load_state_dict(mix(mixing.chosen))
    show_scores(model, evaluator, evaluator.named(means[mixing.chosen]))
    logger.info("train: mixing: kept weight %g, %s", mixing.chosen, mixing.why)
    return mixing


def _mixer(
    model: SentenceTransformer, params: TrainParams, start: Start
) -> Callable[[float], dict[str, Tensor]]:
    """``weight -> state dict`` of ``model``'s current weights mixed with those the run
    started from, both held on the CPU (loaded as training loaded them: same spec, same seed)."""
    tuned = {key: value.detach().to("cpu", copy=True) for key, value in model.state_dict().items()}
    base = start.load(params, "cpu").state_dict()
    return lambda weight: interpolate_state_dict(base, tuned, weight)
