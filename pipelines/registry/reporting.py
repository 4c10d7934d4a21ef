"""How mathembed writes its results for people and for metric files, in one place, so the
evaluate line, ``mathembed report``, the promotion reason, the model card, the figures and
the night's table agree:

* numbers: scores to four decimals, p-values to two significant digits (``p = 0.0001``,
  ``p = 0.92``, ``p < 0.0001``);
* metric names: the key ``mrr@10`` (``metrics_rs``'s, in every file) is shown as the label
  ``MRR@10`` (``Recall@100``, ``Hit@10``...), a family heading a figure's panel by its
  title (``Hit rate``), and spelled ``mrr_at_10`` in MLflow, whose keys may not hold "@";
* the decision: ``metrics/promotion.json`` (written by ``mathembed promote``; its record,
  :class:`pipelines.registry.metric_records.PromotionRecord`, is how every reader reads it).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pipelines.common.paths import Paths

# --------------------------------------------------------------------------- numbers

#: Decimals of a headline score: differences below 1e-4 mean nothing on a few hundred queries.
SCORE_DECIMALS = 4
#: Significant digits of a headline p-value.
P_SIGNIFICANT = 2
#: Below this a p-value is written "p < 0.0001".
P_FLOOR = 1e-4


def round_score(value: float) -> float:
    return round(float(value), SCORE_DECIMALS)


def format_score(value: float) -> str:
    """A score as people read it: ``0.6557``."""
    return f"{value:.{SCORE_DECIMALS}f}"


def format_delta(value: float) -> str:
    """A difference of scores, signed: ``+0.0547``, ``-0.0032``."""
    return f"{value:+.{SCORE_DECIMALS}f}"


def round_p_value(p_value: float | None) -> float | None:
    """``p_value`` to two significant digits (9.999e-05 -> 0.0001, 0.92211 -> 0.92)."""
    if p_value is None or not np.isfinite(p_value):
        return None
    return float(f"{p_value:.{P_SIGNIFICANT}g}")


def format_p_value(p_value: float | None) -> str:
    """A p-value as people read it: ``p = 0.92``, ``p = 0.0012``, ``p < 0.0001``, ``p n/a``."""
    rounded = round_p_value(p_value)
    if rounded is None:
        return "p n/a"
    if rounded < P_FLOOR:
        return f"p < {P_FLOOR:.4f}"
    text = np.format_float_positional(rounded, trim="-")
    if len(text.partition(".")[2]) > SCORE_DECIMALS:  # 0.00012: four decimals are enough
        text = f"{rounded:.{SCORE_DECIMALS}f}"
    return f"p = {text}"


# --------------------------------------------------------------------------- labels

#: How each metric family (:data:`pipelines.common.allowed.METRIC_FAMILIES`) is written in
#: a label; a family not listed is capitalised.
FAMILY_LABELS = {
    "mrr": "MRR",
    "ndcg": "NDCG",
    "recall": "Recall",
    "precision": "Precision",
    "map": "MAP",
    "hit": "Hit",
}
#: A family as the title of a figure's panel: its label, the hit rate said in full.
FAMILY_TITLES = {**FAMILY_LABELS, "hit": "Hit rate"}


def mlflow_name(metric: str) -> str:
    """A metric name as MLflow accepts it in a key: ``mrr@10`` -> ``mrr_at_10`` (pure)."""
    return metric.replace("@", "_at_")


def metric_label(metric: str) -> str:
    """``mrr@10`` -> ``MRR@10``, ``recall@100`` -> ``Recall@100``, ``hit`` -> ``Hit`` (pure)."""
    family, _, cutoff = metric.partition("@")
    label = FAMILY_LABELS.get(family, family.capitalize())
    return f"{label}@{cutoff}" if cutoff else label


# --------------------------------------------------------------------------- the decision

#: ``decision`` in ``metrics/promotion.json``.
PROMOTED = "promoted"
NOT_PROMOTED = "not promoted"


def promotion_file(paths: Paths) -> Path:
    """``metrics/promotion.json``: the last decision, as ``mathembed promote`` wrote it."""
    return paths.metric_file("promotion")
