"""The evaluate stage's two summaries of one run: the headline and the full table.

``metrics/headline.json`` is the stage's only DVC metric: a handful of rounded numbers
(candidate and base MRR@10 and NDCG@10 at the full dimension, their deltas, a paired test's
p-value for each), so ``dvc metrics show`` and ``dvc exp show`` open on what decides a
promotion. ``reports/eval/metrics.csv`` is everything ``metrics/eval.json`` scores, one
tidy row per (subset, model, dim, metric, k): the table to filter, plot or log as an
artifact. Numbers are rounded by :mod:`pipelines.common.reporting`, the one place that says
how a score or a p-value is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from pipelines.common import io
from pipelines.common.reporting import (
    round_p_value,
    round_score,
)
from pipelines.common.tables import MEANING_SETS
from pipelines.evaluate.reports import headline_metrics
from pipelines.evaluate.scoring import dim_key, paired_test_p_value
from pipelines.evaluate.sources import BASE, CANDIDATE

#: ``reports/eval/metrics.csv``: every score, one row each.
TABLE_FILE = "metrics.csv"
TABLE_COLUMNS = ["subset", "model", "dim", "metric", "k", "value"]


@dataclass(frozen=True)
class PairedTest:
    """The settings of ``metrics_rs.paired_test``: promote's, so both report the same p."""

    method: Literal["randomization", "bootstrap", "t"]
    n_resamples: int
    seed: int


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


def paired_p_value(
    per_query: pd.DataFrame, dim: int, metric: str, test: PairedTest
) -> float | None:
    """The paired test of candidate against base on per-query ``metric`` at ``dim``."""
    try:
        candidate = per_query_scores(per_query, CANDIDATE, dim, metric)
        base = per_query_scores(per_query, BASE, dim, metric)
    except KeyError:
        return None
    return paired_test_p_value(
        candidate, base, method=test.method, n_resamples=test.n_resamples, seed=test.seed
    )


def headline(
    summary: Mapping[str, Any], per_query: pd.DataFrame, test: PairedTest | None
) -> dict[str, Any]:
    """``metrics/headline.json``: candidate, base and delta of each headline metric at the
    primary dimension, rounded, and the paired test's p-value of each (None without a test).

    The metric names follow :func:`headline_metrics` (``mrr@10``, ``ndcg@10``; @max(ks) on
    a corpus under 10 passages).
    """
    dim = summary["primary_dim"]
    candidate = summary[CANDIDATE][dim_key(dim)]
    base = summary.get(BASE, {}).get(dim_key(dim), {})
    values: dict[str, Any] = {"queries": int(summary["n_queries"])}
    metrics = headline_metrics(summary["ks"])
    for metric in metrics:
        values[f"candidate_{metric}"] = round_score(candidate[metric])
        values[f"base_{metric}"] = round_score(base[metric]) if metric in base else None
        values[f"delta_{metric}"] = (
            round_score(candidate[metric] - base[metric]) if metric in base else None
        )
    for metric in metrics:
        p_value = paired_p_value(per_query, dim, metric, test) if test else None
        values[f"p_{metric}"] = round_p_value(p_value)
    # The meaning sets (named is the lines above) side by side: MRR@10 of the candidate,
    # the base model and BM25, and the candidate's p against the base.
    for query_set, block in summary.get("sets", {}).items():
        if query_set not in MEANING_SETS:
            continue
        values[f"{query_set}_queries"] = int(block["n_queries"])
        for row in (CANDIDATE, BASE, "bm25"):
            score = block["scores"].get(row, {}).get("mrr@10")
            values[f"{query_set}_{row}_mrr@10"] = None if score is None else round_score(score)
        values[f"{query_set}_p_mrr@10"] = block["p_value"].get(BASE)
    return values


def write_headline(path: Path, values: Mapping[str, Any]) -> None:
    """Write the headline in :func:`headline`'s key order, not sorted: ``dvc exp show``
    keeps a file's order, so the table opens on the queries and the candidate's MRR@10."""
    io.write_json(path, dict(values), sort_keys=False)


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
