"""The evaluate stage's reports under ``reports/eval/`` (DVC plots and figures), all at the
primary (full) dimension unless said otherwise.

``compare.csv`` (``metric`` and one column per model), ``dims.csv`` (``dim`` and
``<model>_<metric>`` for the headline metrics MRR@10 and NDCG@10), ``per_query.csv``
(``query_id``, ``query``, ``<model>_<metric>`` and ``delta_<reference>_<metric>`` =
candidate minus reference, per headline metric), and the figures ``compare.png`` (every
metric and cut-off, one bar per model), ``dims.png`` (headline metrics against the
dimension) and ``wins_losses.png`` (per-query differences, sorted, one panel per
reference model and headline metric).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from pipelines.common import io
from pipelines.common.allowed import METRIC_FAMILIES
from pipelines.common.reporting import FAMILY_TITLES, metric_label
from pipelines.evaluate.eval_set import EvalSet
from pipelines.evaluate.scoring import dim_key
from pipelines.evaluate.sources import BASE, CANDIDATE

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# The metrics promotion decides on; the figures show them.
HEADLINE_FAMILIES = ("mrr", "ndcg")


def headline_metrics(ks: Sequence[int]) -> list[str]:
    """MRR@10 and NDCG@10 (the promotion metrics), or @max(ks) on a corpus under 10."""
    k = 10 if 10 in ks else max(ks)
    return [f"{family}@{k}" for family in HEADLINE_FAMILIES]


def write_reports(
    summary: Mapping[str, Any],
    per_query: pd.DataFrame,
    eval_set: EvalSet,
    reports: Path,
    *,
    figures: bool = True,
) -> list[Path]:
    """The DVC plot data and, with ``figures``, the PNGs; returns the figure paths."""
    model_names = list(summary["models"])
    primary = dim_key(summary["primary_dim"])
    ks = summary["ks"]
    headline = headline_metrics(ks)

    compare = pd.DataFrame(
        {"metric": list(summary[CANDIDATE][primary])}
        | {
            model: [
                summary[model].get(primary, {}).get(m, math.nan)
                for m in summary[CANDIDATE][primary]
            ]
            for model in model_names
        }
    )
    _write_csv(reports / "compare.csv", compare)

    dims_rows = []
    for dim in summary["dims"]:
        row: dict[str, Any] = {"dim": dim}
        for model in model_names:
            for metric in headline:
                row[f"{model}_{metric}"] = (
                    summary[model].get(dim_key(dim), {}).get(metric, math.nan)
                )
        dims_rows.append(row)
    _write_csv(reports / "dims.csv", pd.DataFrame(dims_rows))

    wins = wins_losses_table(per_query, eval_set, summary["primary_dim"], headline, model_names)
    _write_csv(reports / "per_query.csv", wins)

    if not figures:
        return []
    return [
        _save_figure(reports / "compare.png", compare_figure(summary)),
        _save_figure(reports / "dims.png", dims_figure(summary, headline)),
        _save_figure(reports / "wins_losses.png", wins_losses_figure(wins, model_names, headline)),
    ]


def wins_losses_table(
    per_query: pd.DataFrame,
    eval_set: EvalSet,
    dim: int,
    metrics: Sequence[str],
    model_names: Sequence[str],
) -> pd.DataFrame:
    """One row per query of a stored set (named, described): ``<model>_<metric>`` at ``dim``,
    and ``delta_<reference>_<metric>`` (candidate minus that reference) for every reference
    model."""
    table = pd.DataFrame(
        {"query_id": eval_set.query_ids, "query": eval_set.query_texts, "set": eval_set.query_sets}
    )
    keys = list(zip(eval_set.query_sets, eval_set.query_ids, strict=True))
    for metric in metrics:
        for model in model_names:
            rows = per_query[
                (per_query["model"] == model)
                & (per_query["dim"] == dim)
                & (per_query["metric"] == metric)
            ]
            row_keys = (
                zip(rows["set"], rows["query_id"], strict=True)
                if "set" in rows
                else (("named", query) for query in rows["query_id"])
            )
            values = dict(zip(row_keys, rows["value"], strict=True))
            table[f"{model}_{metric}"] = [values.get(key, math.nan) for key in keys]
        for model in model_names:
            if model != CANDIDATE:
                table[f"delta_{model}_{metric}"] = (
                    table[f"{CANDIDATE}_{metric}"] - table[f"{model}_{metric}"]
                )
    return table


def _write_csv(path: Path, frame: pd.DataFrame) -> None:
    io.write_text(path, frame.to_csv(index=False, float_format="%.6f"))


# --------------------------------------------------------------------------- figures
# Drawn on matplotlib.figure.Figure directly (Agg canvas), never through pyplot: no global
# state, no display backend, nothing configured at import time.

MODEL_COLOURS = {CANDIDATE: "#1f77b4", BASE: "#8c8c8c", "champion": "#ff7f0e"}
OTHER_COLOURS = ("#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf")
WIN, LOSS, TIE = "#2ca02c", "#d62728", "#bdbdbd"


def _colour(model: str, model_names: Sequence[str]) -> str:
    if model in MODEL_COLOURS:
        return MODEL_COLOURS[model]
    others = [m for m in model_names if m not in MODEL_COLOURS]
    return OTHER_COLOURS[others.index(model) % len(OTHER_COLOURS)]


def _save_figure(path: Path, figure: Figure) -> Path:
    with io.atomic_output(path, "wb") as handle:
        figure.savefig(handle, format="png", dpi=120)
    return path


def compare_figure(summary: Mapping[str, Any]) -> Figure:
    """Every metric family at every cut-off, one bar per model, at the primary dimension."""
    from matplotlib.figure import Figure

    model_names = [m for m in summary["models"] if m in summary]
    dim = dim_key(summary["primary_dim"])
    ks = summary["ks"]
    figure = Figure(figsize=(12, 6.5), layout="constrained")
    axes = figure.subplots(2, 3, sharey=True)
    width = 0.8 / len(model_names)
    positions = np.arange(len(ks))
    for ax, family in zip(axes.flat, METRIC_FAMILIES, strict=True):
        for index, model in enumerate(model_names):
            values = [summary[model].get(dim, {}).get(f"{family}@{k}", math.nan) for k in ks]
            bars = ax.bar(
                positions + (index - (len(model_names) - 1) / 2) * width,
                values,
                width,
                label=model,
                color=_colour(model, model_names),
            )
            if len(model_names) * len(ks) <= 16:
                ax.bar_label(bars, fmt="%.2f", fontsize=7, padding=1)
        ax.set_title(FAMILY_TITLES[family])
        ax.set_xticks(positions, [f"@{k}" for k in ks])
        ax.set_xlabel("cut-off k")
        ax.set_ylim(0, 1.1)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel("score (mean over queries)")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncols=len(model_names))
    figure.suptitle(
        f"Retrieval quality by model at dimension {summary['primary_dim']} "
        f"({summary['n_queries']} queries, {summary['corpus_size']} passages)"
    )
    return figure


def dims_figure(summary: Mapping[str, Any], headline: Sequence[str]) -> Figure:
    """The headline metrics of every model against the (Matryoshka) embedding dimension."""
    from matplotlib.figure import Figure

    model_names = [m for m in summary["models"] if m in summary]
    dims = sorted(summary["dims"])
    figure = Figure(figsize=(11, 4.5), layout="constrained")
    axes = figure.subplots(1, len(headline), squeeze=False)[0]
    for ax, metric in zip(axes, headline, strict=True):
        for model in model_names:
            points = [
                (dim, summary[model][dim_key(dim)][metric])
                for dim in dims
                if dim_key(dim) in summary[model]
            ]
            ax.plot(
                [dim for dim, _ in points],
                [value for _, value in points],
                marker="o",
                label=model,
                color=_colour(model, model_names),
            )
        ax.set_xscale("log", base=2)
        ax.set_xticks(dims, [str(dim) for dim in dims])
        ax.minorticks_off()
        ax.set_xlabel("embedding dimension (Matryoshka truncation, log scale)")
        ax.set_ylabel(metric_label(metric))
        ax.set_title(f"{metric_label(metric)} vs dimension")
        ax.grid(alpha=0.3)
        ax.legend()
    figure.suptitle(f"Quality vs embedding dimension ({summary['n_queries']} queries)")
    return figure


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}es" if noun.endswith("s") else f"{n} {noun}s"


def wins_losses_figure(
    wins: pd.DataFrame, model_names: Sequence[str], metrics: Sequence[str]
) -> Figure:
    """Per query, candidate minus each reference on each headline metric, sorted.

    One panel per (reference, metric). A tie has no bar, so it is drawn as a grey dot on
    the zero line: every query stays visible.
    """
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    panels = [(ref, metric) for ref in model_names if ref != CANDIDATE for metric in metrics]
    n_queries = len(wins)
    label_queries = n_queries <= 40
    figure = Figure(
        figsize=(
            max(8.0, 0.3 * n_queries + 2),
            (3.0 + (1.3 if label_queries else 0.3)) * len(panels),
        ),
        layout="constrained",
    )
    axes = figure.subplots(len(panels), 1, squeeze=False)[:, 0]
    legend_handles = [
        Patch(color=WIN),
        Patch(color=LOSS),
        Line2D([], [], marker="o", linestyle="", color=TIE, markeredgecolor="dimgray"),
    ]
    for ax, (reference, metric) in zip(axes, panels, strict=True):
        column = f"delta_{reference}_{metric}"
        ordered = wins.sort_values(column, ascending=False, kind="stable")
        delta = ordered[column].to_numpy(dtype=np.float64)
        n_win, n_loss = int((delta > 0).sum()), int((delta < 0).sum())
        positions = np.arange(n_queries)
        ax.bar(positions, delta, color=[WIN if d > 0 else LOSS if d < 0 else TIE for d in delta])
        ax.axhline(0, color="black", linewidth=0.8)
        ties = delta == 0
        ax.scatter(positions[ties], delta[ties], color=TIE, edgecolors="dimgray", zorder=3, s=30)
        if label_queries:
            names = [text if len(text) <= 28 else text[:27] + "…" for text in ordered["query"]]
            ax.set_xticks(positions, names, rotation=60, ha="right", fontsize=7)
        else:
            ax.set_xticks([])
        ax.set_xlabel("queries, sorted by difference")
        ax.set_ylabel(f"Δ {metric_label(metric)}\n(candidate − {reference})")
        ax.set_ylim(-1.05, 1.05)
        ax.grid(axis="y", alpha=0.3)
        ax.set_title(
            f"Candidate vs {reference}, per-query {metric_label(metric)}: {_count(n_win, 'win')}, "
            f"{_count(n_loss, 'loss')}, {_count(n_queries - n_win - n_loss, 'tie')}"
        )
        ax.legend(legend_handles, ["candidate better", "candidate worse", "tie"], loc="upper right")
    return figure
