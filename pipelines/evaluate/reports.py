"""The evaluate stage's reports under ``reports/eval/``: the figures ``dvc plots show``
embeds (PNG images, so the page reads offline) and their data, every set that can decide a
promotion side by side (``named``; ``masked`` and ``described``, the meaning gate's), all
at the primary (full) dimension unless said otherwise.

``compare.csv`` (``set``, ``metric`` and one column per model), ``dims.csv`` (``set``,
``dim`` and ``<model>_<metric>`` for the headline metrics MRR@10 and NDCG@10),
``per_query.csv`` (``set``, ``query_id``, ``query``, ``<model>_<metric>`` and
``delta_<reference>_<metric>`` = candidate minus reference, per headline metric); the
figures ``compare.png`` (every metric and cut-off, one bar per model, a row per set),
``dims.png`` (headline metrics against the dimension, a column per set) and
``wins_losses.png`` (per-query differences, sorted, a column per set and a row per
reference model and headline metric). Each is at most :data:`MAX_WIDTH_INCHES` wide at
:data:`DPI`, whatever the number of queries: a set's queries are drawn as one sorted
profile, named only when few.
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
from pipelines.common.tables import MEANING_SETS, QUERY_SETS
from pipelines.evaluate.eval_set import NAMED, EvalSet
from pipelines.evaluate.sources import BASE, CANDIDATE
from pipelines.registry.reporting import FAMILY_TITLES, metric_label

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

# The metrics promotion decides on; the figures show them.
HEADLINE_FAMILIES = ("mrr", "ndcg")
#: Every figure's width, in inches at :data:`DPI` (1,440 pixels), whatever it shows.
MAX_WIDTH_INCHES = 12.0
DPI = 120
#: A set's queries are named under its wins/losses panel up to this many.
MAX_LABELLED_QUERIES = 20


def headline_metrics(ks: Sequence[int]) -> list[str]:
    """MRR@10 and NDCG@10 (the promotion metrics), or @max(ks) on a corpus under 10."""
    k = 10 if 10 in ks else max(ks)
    return [f"{family}@{k}" for family in HEADLINE_FAMILIES]


def deciding_gate(query_set: str) -> str:
    """The ``promote.gate`` under which a set decides: ``meaning`` for the masked and
    described sets, the set's own name otherwise (``named``)."""
    return "meaning" if query_set in MEANING_SETS else query_set


def write_reports(
    summary: Mapping[str, Any],
    per_query: pd.DataFrame,
    eval_set: EvalSet,
    reports: Path,
    *,
    figures: bool = True,
) -> list[Path]:
    """The figures' data and, with ``figures``, the PNGs; returns the figure paths."""
    model_names = list(summary["models"])
    primary = summary["primary_dim"]
    headline = headline_metrics(summary["ks"])
    per_query = with_sets(per_query)

    compare = compare_table(per_query, primary, model_names)
    _write_csv(reports / "compare.csv", compare)
    dims = dims_table(per_query, summary["dims"], headline, model_names)
    _write_csv(reports / "dims.csv", dims)
    wins = wins_losses_table(per_query, eval_set, primary, headline, model_names)
    _write_csv(reports / "per_query.csv", wins)

    if not figures:
        return []
    return [
        _save_figure(reports / "compare.png", compare_figure(compare, wins, summary)),
        _save_figure(reports / "dims.png", dims_figure(dims, wins, headline)),
        _save_figure(reports / "wins_losses.png", wins_losses_figure(wins, model_names, headline)),
    ]


def with_sets(per_query: pd.DataFrame) -> pd.DataFrame:
    """``per_query`` with its ``set`` column (a table from before the sets: all ``named``)."""
    return per_query if "set" in per_query else per_query.assign(set=NAMED)


def sets_in(per_query: pd.DataFrame) -> list[str]:
    """The sets ``per_query`` scores, in :data:`QUERY_SETS` order."""
    present = set(per_query["set"])
    return [query_set for query_set in QUERY_SETS if query_set in present]


def _means(per_query: pd.DataFrame) -> pd.Series:
    return per_query.groupby(["set", "model", "dim", "metric"], sort=False)["value"].mean()


def compare_table(per_query: pd.DataFrame, dim: int, model_names: Sequence[str]) -> pd.DataFrame:
    """Per set, every metric (rows) of every model (columns) at ``dim``: mean over queries."""
    means = _means(per_query[per_query["dim"] == dim])
    metrics = list(dict.fromkeys(per_query["metric"]))
    rows = [
        {"set": query_set, "metric": metric}
        | {
            model: float(means.get((query_set, model, dim, metric), math.nan))
            for model in model_names
        }
        for query_set in sets_in(per_query)
        for metric in metrics
    ]
    return pd.DataFrame(rows, columns=["set", "metric", *model_names])


def dims_table(
    per_query: pd.DataFrame,
    dims: Sequence[int],
    metrics: Sequence[str],
    model_names: Sequence[str],
) -> pd.DataFrame:
    """Per set and dimension, ``<model>_<metric>`` for the headline metrics."""
    means = _means(per_query[per_query["metric"].isin(metrics)])
    rows = [
        {"set": query_set, "dim": dim}
        | {
            f"{model}_{metric}": float(means.get((query_set, model, dim, metric), math.nan))
            for model in model_names
            for metric in metrics
        }
        for query_set in sets_in(per_query)
        for dim in dims
    ]
    return pd.DataFrame(rows)


def wins_losses_table(
    per_query: pd.DataFrame,
    eval_set: EvalSet,
    dim: int,
    metrics: Sequence[str],
    model_names: Sequence[str],
) -> pd.DataFrame:
    """One row per query of every set scored (``masked`` asks the named queries again):
    ``<model>_<metric>`` at ``dim``, and ``delta_<reference>_<metric>`` (candidate minus
    that reference) for every reference model."""
    per_query = with_sets(per_query)
    sets = sets_in(per_query)
    rows = [
        (query_set, eval_set.holding(query_set), row)
        for query_set in sets
        for row in eval_set.holding(query_set).rows_of(query_set)
    ]
    table = pd.DataFrame(
        {
            "set": [query_set for query_set, _, _ in rows],
            "query_id": [holding.query_ids[row] for _, holding, row in rows],
            "query": [holding.query_texts[row] for _, holding, row in rows],
        }
    )
    keys = list(zip(table["set"], table["query_id"], strict=True))
    at_dim = per_query[per_query["dim"] == dim]
    for metric in metrics:
        for model in model_names:
            scored = at_dim[(at_dim["model"] == model) & (at_dim["metric"] == metric)]
            values = dict(
                zip(
                    zip(scored["set"], scored["query_id"], strict=True),
                    scored["value"],
                    strict=True,
                )
            )
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
        figure.savefig(handle, format="png", dpi=DPI)
    return path


def set_title(query_set: str, n_queries: int) -> str:
    """A set as a figure names it: its size and the gate under which it decides."""
    return (
        f"{query_set}: {_count(n_queries, 'query')} (decides under gate {deciding_gate(query_set)})"
    )


def _set_sizes(wins: pd.DataFrame) -> dict[str, int]:
    return {str(name): len(group) for name, group in wins.groupby("set", sort=False)}


def _figure(rows: int, height_per_row: float, extra: float = 1.0) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(MAX_WIDTH_INCHES, height_per_row * rows + extra), layout="constrained")


def compare_figure(compare: pd.DataFrame, wins: pd.DataFrame, summary: Mapping[str, Any]) -> Figure:
    """Every metric family at every cut-off, one bar per model, a row of panels per set."""
    model_names = [m for m in summary["models"] if m in compare.columns]
    ks = summary["ks"]
    sets = list(dict.fromkeys(compare["set"]))
    sizes = _set_sizes(wins)
    figure = _figure(len(sets), 2.5, 1.0)
    rows = figure.subfigures(len(sets), 1, squeeze=False)[:, 0]
    width = 0.8 / len(model_names)
    positions = np.arange(len(ks))
    handles: list[Any] = []
    for row, query_set in zip(rows, sets, strict=True):
        of_set = compare[compare["set"] == query_set].set_index("metric")
        row.suptitle(set_title(query_set, sizes.get(query_set, 0)), fontsize=10, fontweight="bold")
        axes = row.subplots(1, len(METRIC_FAMILIES), sharey=True)
        for ax, family in zip(axes, METRIC_FAMILIES, strict=True):
            for index, model in enumerate(model_names):
                values = [of_set[model].get(f"{family}@{k}", math.nan) for k in ks]
                ax.bar(
                    positions + (index - (len(model_names) - 1) / 2) * width,
                    values,
                    width,
                    label=model,
                    color=_colour(model, model_names),
                )
            ax.set_xticks(positions, [f"@{k}" for k in ks], fontsize=8)
            ax.set_ylim(0, 1.05)
            ax.grid(axis="y", alpha=0.3)
            ax.set_title(FAMILY_TITLES[family], fontsize=9)
        axes[0].set_ylabel("score")
        handles = handles or axes[0].get_legend_handles_labels()[0]
    figure.legend(handles, model_names, loc="outside lower center", ncols=len(model_names))
    figure.suptitle(
        f"Retrieval quality by set and model at dimension {summary['primary_dim']} "
        f"(mean over queries, {summary['corpus_size']} passages; cut-off k under each bar group)"
    )
    return figure


def dims_figure(dims: pd.DataFrame, wins: pd.DataFrame, headline: Sequence[str]) -> Figure:
    """The headline metrics of every model against the (Matryoshka) embedding dimension:
    a row per metric, a column per set."""
    model_names = list(
        dict.fromkeys(column.rsplit("_", 1)[0] for column in dims.columns if "@" in column)
    )
    sets = list(dict.fromkeys(dims["set"]))
    sizes = _set_sizes(wins)
    all_dims = sorted(set(dims["dim"]))
    figure = _figure(len(headline), 3.0, 0.8)
    axes = figure.subplots(len(headline), len(sets), sharex=True, sharey="row", squeeze=False)
    for row, metric in enumerate(headline):
        for column, query_set in enumerate(sets):
            ax = axes[row, column]
            of_set = dims[dims["set"] == query_set].sort_values("dim")
            for model in model_names:
                ax.plot(
                    of_set["dim"],
                    of_set[f"{model}_{metric}"],
                    marker="o",
                    label=model,
                    color=_colour(model, model_names),
                )
            ax.set_xscale("log", base=2)
            ax.set_xticks(all_dims, [str(dim) for dim in all_dims])
            ax.minorticks_off()
            ax.grid(alpha=0.3)
            if row == 0:
                ax.set_title(set_title(query_set, sizes.get(query_set, 0)), fontsize=9)
            if row == len(headline) - 1:
                ax.set_xlabel("embedding dimension (log scale)")
        axes[row, 0].set_ylabel(metric_label(metric))
    handles, labels = axes[0, 0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncols=len(model_names))
    figure.suptitle("Quality vs embedding dimension (Matryoshka truncation), per set")
    return figure


def _count(n: int, noun: str) -> str:
    if n == 1:
        return f"{n} {noun}"
    if noun.endswith("s"):
        return f"{n} {noun}es"
    return f"{n} {noun[:-1]}ies" if noun.endswith("y") else f"{n} {noun}s"


def wins_losses_figure(
    wins: pd.DataFrame, model_names: Sequence[str], metrics: Sequence[str]
) -> Figure:
    """Per query, candidate minus each reference on each headline metric, sorted.

    A column per set, a row per (reference, metric). Each panel is one sorted profile
    (wins green above zero, losses red below, ties a grey band on the zero line), so its
    width does not grow with the queries; a set of at most :data:`MAX_LABELLED_QUERIES`
    names them.
    """
    panels = [(ref, metric) for ref in model_names if ref != CANDIDATE for metric in metrics]
    sets = list(dict.fromkeys(wins["set"]))
    labelled = (
        max((len(group) for _, group in wins.groupby("set")), default=0) <= MAX_LABELLED_QUERIES
    )
    figure = _figure(len(panels), 2.6 + (1.4 if labelled else 0.0), 0.8)
    axes = figure.subplots(len(panels), len(sets), squeeze=False)
    for row, (reference, metric) in enumerate(panels):
        for column, query_set in enumerate(sets):
            ax = axes[row, column]
            of_set = wins[wins["set"] == query_set]
            _wins_losses_panel(ax, of_set, f"delta_{reference}_{metric}", labelled=labelled)
            title = _wins_losses_title(of_set[f"delta_{reference}_{metric}"])
            ax.set_title(
                f"{set_title(query_set, len(of_set))}\n{title}" if row == 0 else title,
                fontsize=9,
            )
            if column == 0:
                ax.set_ylabel(f"Δ {metric_label(metric)}\n(candidate − {reference})")
    figure.legend(
        _legend_handles(),
        ["candidate better", "candidate worse", "tie"],
        loc="outside lower center",
        ncols=3,
    )
    figure.suptitle("Per-query differences, sorted (each query once per panel)")
    return figure


def _wins_losses_title(delta: pd.Series) -> str:
    values = delta.dropna().to_numpy(dtype=np.float64)
    n_win, n_loss = int((values > 0).sum()), int((values < 0).sum())
    mean = f", mean {values.mean():+.3f}" if len(values) else ""
    return (
        f"{_count(n_win, 'win')}, {_count(n_loss, 'loss')}, "
        f"{_count(len(values) - n_win - n_loss, 'tie')}{mean}"
    )


def _wins_losses_panel(ax: Axes, of_set: pd.DataFrame, column: str, *, labelled: bool) -> None:
    """One sorted profile: a step per query, of width one, so any count fits the panel."""
    ordered = of_set.dropna(subset=[column]).sort_values(column, ascending=False, kind="stable")
    delta = ordered[column].to_numpy(dtype=np.float64)
    edges = np.arange(len(delta) + 1, dtype=np.float64)
    ax.stairs(np.where(delta > 0, delta, 0.0), edges, fill=True, color=WIN)
    ax.stairs(np.where(delta < 0, delta, 0.0), edges, fill=True, color=LOSS)
    ties = np.flatnonzero(delta == 0)
    if len(ties):  # contiguous once sorted: one grey band on the zero line
        ax.hlines(0, ties[0], ties[-1] + 1, color=TIE, linewidth=6, zorder=3)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xlim(0, max(len(delta), 1))
    ax.set_ylim(-1.05, 1.05)
    ax.grid(axis="y", alpha=0.3)
    if labelled:
        names = [text if len(text) <= 28 else text[:27] + "…" for text in ordered["query"]]
        ax.set_xticks(edges[:-1] + 0.5, names, rotation=60, ha="right", fontsize=7)
    else:
        ax.set_xlabel("queries, sorted by difference")
        ax.tick_params(axis="x", labelsize=8)


def _legend_handles() -> list[Any]:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    return [Patch(color=WIN), Patch(color=LOSS), Line2D([], [], color=TIE, linewidth=6)]
