"""The few numbers a person looks at first: candidate, base and champion MRR@10 and NDCG@10,
their deltas, the p-value and the decision. Pure; the shells read and write the files.

* :func:`evaluate_headline`: ``metrics/headline.json`` as the evaluate stage writes it, or,
  when it is absent (an older evaluate stage), the same keys derived from ``eval.json``;
* :func:`promotion_headline`: the flat keys ``metrics/promotion.json`` gains;
* :func:`run_metrics`: both as MLflow metric names (no "@": ``candidate_mrr_at_10``), the
  only evaluation metrics a promotion run logs, so MLflow's chart view opens on them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pipelines.common.reporting import NOT_PROMOTED, PROMOTED, mlflow_name, round_score
from pipelines.promote.decision import Decision

#: The metrics the headline shows when ``eval.json`` is all there is.
HEADLINE_METRICS = ("mrr@10", "ndcg@10")
#: A night's outcome (``mathembed.outcome``): what promote decided (``PROMOTED``,
#: ``NOT_PROMOTED``: the decision of ``metrics/promotion.json``), or why it did not run.
NOTHING_TO_DO = "nothing to do"
FAILED = "failed"
OUTCOMES = (PROMOTED, NOT_PROMOTED, NOTHING_TO_DO, FAILED)


def evaluate_headline(
    headline: Mapping[str, Any] | None, eval_json: Mapping[str, Any]
) -> dict[str, Any]:
    """``headline.json`` when the evaluate stage wrote one, else its keys from ``eval.json``.

    ``eval.json`` holds ``candidate``/``base`` → ``dim_<d>`` → metric at every dimension;
    the headline is the primary (full) dimension. It has no p-values: they are ``None``.
    """
    if headline:
        return dict(headline)
    primary = eval_json.get("primary_dim")
    dim = f"dim_{primary}"
    derived: dict[str, Any] = {}
    if isinstance(eval_json.get("n_queries"), int):
        derived["queries"] = eval_json["n_queries"]
    for metric in HEADLINE_METRICS:
        candidate = _at(eval_json, "candidate", dim, metric)
        base = _at(eval_json, "base", dim, metric)
        if candidate is None or base is None:
            continue
        derived[f"candidate_{metric}"] = round_score(candidate)
        derived[f"base_{metric}"] = round_score(base)
        derived[f"delta_{metric}"] = round_score(candidate - base)
        derived[f"p_{metric}"] = None
    return derived


def promotion_headline(
    decision: Decision, base: Mapping[str, float], queries: int | None = None
) -> dict[str, Any]:
    """The flat keys of ``metrics/promotion.json``: ``decision``, each side's rule metrics,
    the deltas against the base (``delta_base_<metric>``) and against the champion
    (``None`` without one), and the p-value."""
    champion = decision.other if decision.compared_against == "champion" else {}
    flat: dict[str, Any] = {"decision": PROMOTED if decision.promote else NOT_PROMOTED}
    if queries is not None:
        flat["queries"] = queries
    for metric, value in decision.candidate.items():
        flat[f"candidate_{metric}"] = value
        flat[f"base_{metric}"] = base.get(metric)
        flat[f"champion_{metric}"] = champion.get(metric)
        flat[f"delta_champion_{metric}"] = value - champion[metric] if metric in champion else None
        flat[f"delta_base_{metric}"] = value - base[metric] if metric in base else None
    flat["p_value"] = decision.p_value
    return flat


def evaluate_extras(evaluate: Mapping[str, Any], promotion: Mapping[str, Any]) -> dict[str, Any]:
    """What evaluate's headline adds to promotion's: its p-values against the base model.

    Only when it was measured on the queries promotion scored (same count): a stale
    ``eval.json`` must not sit beside promotion's numbers in one run. The scores and
    deltas promotion has itself, measured in the same run as the decision.
    """
    if evaluate.get("queries") != promotion.get("queries"):
        return {}
    return {key: value for key, value in evaluate.items() if key.startswith("p_")}


def run_metrics(*headlines: Mapping[str, Any]) -> dict[str, float]:
    """The headlines' finite numbers as MLflow metrics; a later headline wins a shared key."""
    metrics: dict[str, float] = {}
    for headline in headlines:
        for key, value in headline.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            if math.isfinite(value):
                metrics[mlflow_name(key)] = float(value)
    return metrics


def _at(tree: Mapping[str, Any], *keys: str) -> float | None:
    node: Any = tree
    for key in keys:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return float(node) if isinstance(node, int | float) and not isinstance(node, bool) else None
