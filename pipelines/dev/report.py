"""What the last run did and why, for a person: ``mathembed report``.

The first line is the decision (promoted, not promoted, or no decision yet and why), from
``metrics/promotion.json`` (written by ``mathembed promote``) and ``metrics/headline.json``
(the evaluate stage's headline); then one line per stage with its counts, rounded, from
the stages' metrics files; then where the reports are. It reads files only and changes
nothing; a missing file is said, not an error. The p-value appears once, on the first line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pipelines.common import io
from pipelines.common.paths import Paths
from pipelines.common.reporting import (
    PROMOTED,
    decision_of,
    format_delta,
    format_p_value,
    format_score,
    metric_label,
    promotion_file,
    read_promotion,
)
from pipelines.common.tables import QUERY_SETS
from pipelines.validate.summaries import quality_lines, read_quality_record

#: The metrics a decision line shows, the first on the first line.
DECISION_METRICS = ("mrr@10", "ndcg@10")

# --------------------------------------------------------------------------- values


def _lookup(data: Mapping[str, Any], dotted: str) -> Any:
    """``data["a"]["b"]`` for ``"a.b"``; None where any part is missing."""
    value: Any = data
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _number(value: Any) -> str:
    """An int as it is, a float as a score (:func:`format_score`), anything else as text."""
    return format_score(value) if isinstance(value, float) else str(value)


# --------------------------------------------------------------------------- decision


def _side_score(promotion: Mapping[str, Any], side: str, metric: str) -> float | None:
    """A side's score: the flat ``<side>_<metric>`` key, else the nested ``<side>.<metric>``."""
    score = promotion.get(f"{side}_{metric}")
    if score is None and isinstance(promotion.get(side), Mapping):
        score = promotion[side].get(metric)
    return float(score) if isinstance(score, int | float) and not isinstance(score, bool) else None


def _comparison(
    candidate: float | None, other: float | None, side: str, metric: str, p_text: str | None
) -> str | None:
    if candidate is None or other is None:
        return None
    detail = format_delta(candidate - other) + (f", {p_text}" if p_text else "")
    return (
        f"{metric_label(metric)} {format_score(candidate)} vs {side} {format_score(other)} "
        f"({detail})"
    )


def _promotion_is_current(promotion: Mapping[str, Any], train: Mapping[str, Any]) -> bool:
    """Whether the decision is about the candidate train last wrote (same fingerprint)."""
    decided, trained = promotion.get("fingerprint"), train.get("fingerprint")
    return not decided or not trained or decided == trained


def decision_lines(
    promotion: Mapping[str, Any] | None,
    headline: Mapping[str, Any] | None,
    train: Mapping[str, Any],
) -> list[str]:
    """The decision first, then its reason and where it is recorded."""
    if promotion and _promotion_is_current(promotion, train):
        return _decided(promotion)
    lines = [_undecided(headline, promotion)]
    if promotion:
        lines.append(
            f"  the last decision, for an earlier candidate (v{promotion.get('version', '?')}), "
            f"was: {decision_of(promotion)}"
        )
    return lines


def _decided(promotion: Mapping[str, Any]) -> list[str]:
    decision = decision_of(promotion)
    model = f"{promotion.get('registered_model', 'the model')} v{promotion.get('version', '?')}"
    side = str(promotion.get("compared_against") or "champion")
    p_value = promotion.get("p_value")
    comparisons = [
        _comparison(
            _side_score(promotion, "candidate", metric),
            _side_score(promotion, side, metric),
            side,
            metric,
            format_p_value(p_value) if index == 0 and p_value is not None else None,
        )
        for index, metric in enumerate(DECISION_METRICS)
    ]
    first, *rest = comparisons
    if decision == PROMOTED:
        head = f"Promoted {model} to @champion"
    else:
        head = f"Not promoted: {model} stays @challenger"
    lines = [f"{head}: {first}" if first else head]
    lines.extend(f"  {comparison}" for comparison in rest if comparison)
    if promotion.get("reason"):
        lines.append(f"  why: {promotion['reason']}")
    recorded = [f"decided {promotion['decided_at']}"] if promotion.get("decided_at") else []
    if promotion.get("run_id"):
        recorded.append(f"MLflow run {promotion['run_id']}")
    if recorded:
        lines.append(f"  {', '.join(recorded)}")
    return lines


def _undecided(headline: Mapping[str, Any] | None, promotion: Mapping[str, Any] | None) -> str:
    if not headline:
        return (
            "No decision yet: no metrics/headline.json (run `make repro`, then `mathembed promote`)"
        )
    metric = DECISION_METRICS[0]
    comparison = _comparison(
        headline.get(f"candidate_{metric}"),
        headline.get(f"base_{metric}"),
        "base",
        metric,
        format_p_value(headline.get(f"p_{metric}")),
    )
    why = "this candidate has not been through" if promotion else "run"
    return f"No decision yet ({why} `mathembed promote`): {comparison or 'no scores'}"


# --------------------------------------------------------------------------- stages

#: One line per stage: (name, metrics file stem, parts); a part is (dotted key, how to say
#: it); a part whose key the file lacks is left out.
Part = tuple[str, Callable[[Any], str]]


def _says(template: str) -> Callable[[Any], str]:
    return lambda value: template.format(_number(value))


STAGE_LINES: tuple[tuple[str, str, Sequence[Part]], ...] = (
    (
        "ingest",
        "ingest",
        (
            ("listed", _says("{} papers listed")),
            ("fetched", _says("{} fetched")),
            ("skipped", _says("{} skipped")),
            ("quarantined", _says("{} quarantined")),
            ("withdrawn", _says("{} withdrawn")),
        ),
    ),
    (
        "prepare",
        "prepare",
        (
            ("prepared", _says("{} papers prepared")),
            ("reused", _says("{} reused unchanged")),
            ("chunks", _says("{} passages")),
            ("statements", _says("{} statements")),
            ("quarantined", _says("{} quarantined")),
        ),
    ),
    (
        "graph",
        "graph",
        (
            ("concepts", _says("{} concepts")),
            ("edges", _says("{} edges")),
            ("mentions", _says("{} mentions")),
            ("extractor", _says("extractor: {}")),
        ),
    ),
    (
        "pairs",
        "data",
        (
            ("pairs.by_split.train", _says("{} training pairs")),
            ("pairs.by_split.validation", _says("{} validation pairs")),
            ("queries", _says("{} held-out queries")),
            ("qrels.total", _says("{} relevant passages")),
            ("qrels.unseen", _says("{} of them in unseen papers")),
        ),
    ),
    (
        "validate",
        "data_quality",
        (
            ("passed", lambda passed: "checks passed" if passed else "checks FAILED"),
            ("totals.rows_in", _says("{} rows in")),
            ("totals.kept", _says("{} kept")),
            ("totals.quarantined", _says("{} quarantined")),
        ),
    ),
    (
        "train",
        "train",
        (
            ("steps", _says("{} steps")),
            ("device", _says("on {}")),
            ("wall_seconds", lambda seconds: f"{float(seconds):.0f} s"),
            ("final_loss", _says("final loss {}")),
            ("validation_loss", _says("validation loss {}")),
        ),
    ),
)


def stage_line(name: str, metrics: Mapping[str, Any] | None, parts: Sequence[Part]) -> str:
    if metrics is None:
        return f"  {name:<9} not run yet (run `make repro`)"
    said = [say(value) for key, say in parts if (value := _lookup(metrics, key)) is not None]
    return f"  {name:<9} {', '.join(said) if said else 'done'}"


def evaluate_line(headline: Mapping[str, Any] | None, evaluation: Mapping[str, Any]) -> str:
    """Candidate and base at the full dimension; the p-value is on the decision line."""
    if headline is None:
        return stage_line("evaluate", None, ())
    scope = [f"{headline.get('queries', '?')} held-out queries"]
    if "corpus_size" in evaluation:
        scope.append(f"{evaluation['corpus_size']} passages")
    if "primary_dim" in evaluation:
        scope.append(f"dim {evaluation['primary_dim']}")
    models = []
    for model in ("candidate", "base"):
        scores = [
            f"{metric_label(metric)} {_number(headline[f'{model}_{metric}'])}"
            for metric in DECISION_METRICS
            if isinstance(headline.get(f"{model}_{metric}"), int | float)
        ]
        if scores:
            models.append(f"{model} {' '.join(scores)}")
    return f"  {'evaluate':<9} {', '.join(scope)}: {'; '.join(models)}"


def set_lines(evaluation: Mapping[str, Any]) -> list[str]:
    """One line per evaluation set: its size, how often its words give it away, and MRR@10
    of the candidate, the base model and BM25 side by side, with the candidate's p."""
    lines = []
    sets = evaluation.get("sets", {})
    for name in (name for name in QUERY_SETS if name in sets):
        block = sets[name]
        if not block.get("n_queries"):
            lines.append(f"    {name:<9} no queries")
            continue
        scores = block.get("scores", {})
        metric = DECISION_METRICS[0]
        shown = ", ".join(
            f"{row} {_number(scores[row][metric])}"
            for row in ("candidate", "base", "bm25")
            if metric in scores.get(row, {})
        )
        p_value = format_p_value(block.get("p_value", {}).get("base"))
        lines.append(
            f"    {name:<9} {block['n_queries']} queries, "
            f"{block.get('words_in_relevant', 0):.0%} with their words in a relevant passage: "
            f"{metric_label(metric)} {shown} (candidate vs base {p_value})"
        )
    return lines


# --------------------------------------------------------------------------- report

REPORTS = (
    "reports/eval/compare.png, dims.png, wins_losses.png (candidate vs base, quality vs "
    "dimension, per-query wins and losses)",
    "reports/eval/metrics.csv (every score: subset, model, dim, metric, k)",
    "reports/data_quality/index.html (data quality)",
    "`dvc plots show` (dvc_plots/index.html), `dvc exp show`, `dvc metrics show`",
)


def _read(paths: Paths, stem: str) -> dict[str, Any] | None:
    path = paths.metric_file(stem)
    return io.read_json_object(path) if path.is_file() else None


def render_report(paths: Paths) -> str:
    """The report; its first line is the decision (see the module docstring)."""
    headline = _read(paths, "headline")
    train = _read(paths, "train") or {}
    lines = decision_lines(read_promotion(promotion_file(paths)), headline, train)
    lines.append("What ran:")
    for name, stem, parts in STAGE_LINES:
        metrics = _read(paths, stem)
        lines.append(stage_line(name, metrics, parts))
        if name == "validate" and (record := read_quality_record(metrics or {})):
            lines.extend(f"    {line}" for line in quality_lines(record))
    evaluation = _read(paths, "eval") or {}
    lines.append(evaluate_line(headline, evaluation))
    lines.extend(set_lines(evaluation))
    lines.append("Reports:")
    lines.extend(f"  {where}" for where in REPORTS)
    return "\n".join(lines)
