"""The evaluate stage's full table and the settings of its paired test.

The headline (``metrics/<set>.json`` per query set, the DVC metrics) is a view of eval.json's
``sets`` (:class:`~pipelines.registry.metric_records.SetHeadline`).
``reports/eval/metrics.csv`` is everything ``metrics/eval.json`` scores, one tidy row per
(subset, model, dim, metric, k): the table to filter, plot or log as an artifact. Numbers
are rounded by :mod:`pipelines.registry.reporting`, the one place that says how a score or a
p-value is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from pipelines.evaluate.scoring import dim_key

#: ``reports/eval/metrics.csv``: every score, one row each.
TABLE_FILE = "metrics.csv"
TABLE_COLUMNS = ["subset", "model", "dim", "metric", "k", "value"]


@dataclass(frozen=True)
class PairedTest:
    """The settings of ``metrics_rs.paired_test``: promote's, so both report the same p,
    on the same per-query ``metric`` (``promote.significance_metric``)."""

    method: Literal["randomization", "bootstrap", "t"]
    n_resamples: int
    seed: int
    metric: str = "mrr@10"


def per_query_scores(
    per_query: pd.DataFrame, model: str, dim: int, metric: str, query_set: str = "named"
) -> npt.NDArray[np.float64]:
    """One model's per-query ``metric`` at ``dim`` on ``query_set``, in query order (for
    paired tests)."""
    rows = per_query[
        (per_query["model"] == model) & (per_query["dim"] == dim) & (per_query["metric"] == metric)
    ]
    if "set" in rows:
        rows = rows[rows["set"] == query_set]
    if rows.empty:
        raise KeyError(f"no per-query {metric} for model {model!r} at dim {dim}")
    return rows["value"].to_numpy(dtype=np.float64)


def metrics_table(summary: Mapping[str, Any]) -> pd.DataFrame:
    """Every score in ``summary`` (eval.json) as ``subset, model, dim, metric, k, value``."""
    blocks = [("named", summary)] + [
        (subset, block) for subset, block in summary.get("subsets", {}).items()
    ]
    rows: list[tuple[str, str, int, str, int, float]] = []
    for subset, block in blocks:
        for model in summary["models"]:
            for dim in summary["dims"]:
                scores = block.get(model, {}).get(dim_key(dim), {})
                by_metric_and_k = sorted(
                    (metric, int(k), value)
                    for metric, _, k, value in (
                        (*name.partition("@"), value) for name, value in scores.items()
                    )
                )
                rows.extend((subset, model, dim, *row) for row in by_metric_and_k)
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)
