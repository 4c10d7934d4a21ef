"""Every night leaves one MLflow run you can list with its outcome and reason, and a trend
figure of the champion's headline metrics across nights.

* A promotion's own run is a night's record (tagged by :mod:`pipelines.promote.run_log`).
* :func:`record_night` logs one for a night that registered nothing: "nothing to do",
  "failed", or a promotion that re-decided a registered version. It never raises for
  MLflow trouble: a night that failed because MLflow is down must still end cleanly.
* :func:`publish_trend` draws the champion's ``promote.metrics`` on the gate's set
  (``promote.gate``: every night scores it, so the nights compare) after each night
  (:func:`trend_points`, pure) to ``reports/nightly/trend.png`` and logs it as
  ``trend.png`` in that night's run. ``reports/nightly/`` is not a DVC output.

List them: ``mlflow runs list --experiment-id <id>`` or, in the UI, the experiment's runs
with the ``mathembed.outcome`` column.
"""

from __future__ import annotations

import io as bytes_io
import logging
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.common import io
from pipelines.common.config import Params, PromoteParams
from pipelines.common.paths import Paths
from pipelines.common.redact import redact
from pipelines.promote.headline import FAILED, OUTCOMES, metric_key
from pipelines.promote.run_log import (
    NOTE_TAG,
    OUTCOME_TAG,
    outcome_tags,
)
from pipelines.registry.mlflow_registry import (
    Registry,
    connect,
    promotion_experiment,
    registry_errors,
)
from pipelines.registry.reporting import PROMOTED, metric_label

if TYPE_CHECKING:
    from mlflow.entities import Run

logger = logging.getLogger(__name__)

#: The figure a promotion run and a night's record carry, and its copy under reports/.
TREND_FILE = "trend.png"
#: How many nights the trend looks back.
TREND_NIGHTS = 365


def trend_path(paths: Paths) -> Path:
    """``reports/nightly/trend.png``: written by promote, not a DVC output (git-ignored)."""
    return paths.reports / "nightly" / TREND_FILE


def record_night(
    paths: Paths,
    params: Params,
    outcome: str,
    reason: str,
    metrics: Mapping[str, float] | None = None,
) -> str | None:
    """Log one finished run for tonight (``night <UTC date time>``); its id.

    ``None``, with a warning, when MLflow cannot be reached or fails: the record is a
    courtesy, never the reason a night fails. ``outcome`` must be one of
    :data:`~pipelines.promote.headline.OUTCOMES`.
    """
    if outcome not in OUTCOMES:
        raise ValueError(f"outcome {outcome!r} is not one of {', '.join(OUTCOMES)}")
    try:
        registry = connect(paths, params.promote, create=True)
        assert registry is not None
        with registry_errors(registry.uri, None):
            run_id = log_night(registry, params.promote, outcome, reason, metrics or {})
            publish_trend(registry, params.promote, paths, run_id)
    # Whatever went wrong (server down, store corrupt, disk full), the night goes on.
    except Exception as error:  # noqa: BLE001
        logger.warning(
            "could not record tonight's outcome (%s) in MLflow: %s",
            outcome,
            redact(f"{type(error).__name__}: {error}"),
        )
        return None
    return run_id


def log_night(
    registry: Registry,
    promote: PromoteParams,
    outcome: str,
    reason: str,
    metrics: Mapping[str, float],
) -> str:
    """One finished run with the outcome tags, the reason as description, ``metrics``
    (MLflow names: :func:`pipelines.promote.headline.run_metrics`)."""
    from mlflow.entities import Metric, RunStatus

    client = registry.client
    experiment = promotion_experiment(registry, promote, create=True)
    assert experiment is not None
    started = datetime.now(UTC)
    run = client.create_run(
        experiment,
        run_name=f"night {started:%Y-%m-%d %H:%M} UTC",
        tags={**outcome_tags(outcome, reason), NOTE_TAG: f"**{outcome}**: {reason}"},
    )
    run_id = str(run.info.run_id)
    now_ms = int(time.time() * 1000)
    logged = [Metric(key, value, now_ms, 0) for key, value in metrics.items()]
    if logged:
        client.log_batch(run_id, metrics=logged)
    status = RunStatus.FAILED if outcome == FAILED else RunStatus.FINISHED
    client.set_terminated(run_id, RunStatus.to_string(status))
    return run_id


# ----------------------------------------------------------------------------- the trend


@dataclass(frozen=True)
class NightPoint:
    """One night: when, its outcome, and the champion's metrics after it (when known)."""

    at: datetime
    outcome: str
    champion: dict[str, float]


def trend_points(runs: Sequence[Run], query_set: str, metrics: Sequence[str]) -> list[NightPoint]:
    """The nights among ``runs`` (those with an outcome tag), oldest first, with the
    champion's ``metrics`` on ``query_set``.

    The champion after a night is the candidate when it was promoted, else the champion
    it was compared with; a night that compared nothing (nothing to do, failed, the
    first candidate losing to the base model) has no champion values.
    """
    points = []
    for run in runs:
        outcome = run.data.tags.get(OUTCOME_TAG)
        if not outcome:
            continue
        side = "candidate" if outcome == PROMOTED else "champion"
        values = {
            metric: run.data.metrics[metric_key(query_set, side, metric)]
            for metric in metrics
            if metric_key(query_set, side, metric) in run.data.metrics
        }
        at = datetime.fromtimestamp(run.info.start_time / 1000, UTC)
        points.append(NightPoint(at, outcome, values))
    return sorted(points, key=lambda point: point.at)


def trend_png(points: Sequence[NightPoint], query_set: str) -> bytes:
    """The champion's metrics after each night as a line chart; nights that compared
    nothing are vertical marks (grey: nothing to do, red: failed)."""
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter, date2num
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 4), dpi=100)
    axes = figure.subplots()
    for metric in dict.fromkeys(metric for point in points for metric in point.champion):
        measured = [point for point in points if metric in point.champion]
        axes.plot(
            [date2num(point.at) for point in measured],
            [point.champion[metric] for point in measured],
            marker="o",
            label=f"champion {metric_label(metric)}",
        )
    for point in points:
        if not point.champion:
            colour = "tab:red" if point.outcome == FAILED else "0.7"
            axes.axvline(date2num(point.at), color=colour, linestyle=":", linewidth=1)
    if points:  # a day either side, so one night is not lost in a range of years
        first, last = date2num(points[0].at), date2num(points[-1].at)
        axes.set_xlim(first - 1, last + 1)
    locator = AutoDateLocator()
    axes.xaxis.set_major_locator(locator)
    axes.xaxis.set_major_formatter(ConciseDateFormatter(locator))
    axes.set_ylim(0, 1)  # MRR and NDCG lie in [0, 1]: nights compare at a glance
    axes.set_ylabel(f"score on the {query_set} queries")
    axes.set_title("the champion after each night")
    axes.grid(alpha=0.3)
    if any(point.champion for point in points):
        axes.legend(loc="lower right")
    else:
        counts = Counter(point.outcome for point in points)
        summary = ", ".join(f"{count} {outcome}" for outcome, count in counts.items())
        axes.text(
            0.5,
            0.5,
            f"no champion yet ({summary or 'no nights recorded'})",
            transform=axes.transAxes,
            ha="center",
            va="center",
        )
    figure.tight_layout()
    buffer = bytes_io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def publish_trend(registry: Registry, promote: PromoteParams, paths: Paths, run_id: str) -> Path:
    """Draw the trend from the experiment's runs, write it under reports/, log it to ``run_id``."""
    experiment = promotion_experiment(registry, promote, create=False)
    runs = (
        registry.client.search_runs(
            [experiment], order_by=["attributes.start_time DESC"], max_results=TREND_NIGHTS
        )
        if experiment is not None
        else []
    )
    target = trend_path(paths)
    points = trend_points(runs, promote.gate, promote.metrics)
    io.write_bytes(target, trend_png(points, promote.gate))
    registry.client.log_artifact(run_id, str(target))
    return target
