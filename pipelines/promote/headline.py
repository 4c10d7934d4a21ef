"""The numbers a promotion run logs to MLflow, and the outcomes a night can end with. Pure.

:func:`run_metrics`: a decision's figures (:class:`~pipelines.registry.metric_records.SetFigures`,
one per query set) as MLflow metric names, each naming its set (no "@":
``masked.candidate_mrr_at_10``): the only evaluation metrics a promotion run logs, so
MLflow's chart view opens on them and no chart compares numbers from two sets.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pipelines.registry.metric_records import SetFigures
from pipelines.registry.reporting import NOT_PROMOTED, PROMOTED, mlflow_name

#: A night's outcome (``mathembed.outcome``): what promote decided (``PROMOTED``,
#: ``NOT_PROMOTED``: the decision of ``metrics/promotion.json``), or why it did not run.
NOTHING_TO_DO = "nothing to do"
FAILED = "failed"
OUTCOMES = (PROMOTED, NOT_PROMOTED, NOTHING_TO_DO, FAILED)
#: The sides a set's figures hold.
SIDES = ("candidate", "base", "champion")


def metric_key(query_set: str, side: str, metric: str) -> str:
    """The MLflow name of ``side``'s ``metric`` on ``query_set``: ``masked.base_mrr_at_10``."""
    return f"{query_set}.{side}_{mlflow_name(metric)}"


def run_metrics(figures: Sequence[SetFigures]) -> dict[str, float]:
    """Each set's finite figures as MLflow metrics: every side's score
    (:func:`metric_key`), ``<set>.queries`` and ``<set>.p_value``."""
    metrics: dict[str, float] = {}
    for found in figures:
        metrics[f"{found.query_set}.queries"] = float(found.queries)
        for side in SIDES:
            scores = found.champion if side == "champion" else getattr(found, side)
            for metric, value in (scores or {}).items():
                metrics[metric_key(found.query_set, side, metric)] = float(value)
        if found.p_value is not None:
            metrics[f"{found.query_set}.p_value"] = float(found.p_value)
    return {key: value for key, value in metrics.items() if math.isfinite(value)}
