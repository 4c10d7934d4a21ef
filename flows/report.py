"""What the last run did and why, for a person: ``mathembed report``.

The first line is the decision (promoted, not promoted, or no decision yet and why), from
``metrics/promotion.json`` (written by ``mathembed promote``) and ``metrics/<set>.json``
(the evaluate stage's headline per query set), every number of a comparison from one
set, named beside it: the deciding set first, each other set on a line of its own. Then
one line per stage with its counts, rounded, from the stages' metrics files; then where
the reports are. It reads files only, through their records
(:mod:`pipelines.registry.metric_records`), and changes nothing; a missing file is said, not
an error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pipelines.common import io
from pipelines.common.paths import Paths
from pipelines.common.tables import QUERY_SETS
from pipelines.registry.metric_records import (
    UNRECORDED,
    EvalRecord,
    PromotionRecord,
    SetFigures,
    SetHeadline,
)
from pipelines.registry.reporting import (
    format_delta,
    format_p_value,
    format_score,
    metric_label,
    promotion_file,
)
from pipelines.validate.summaries import quality_lines, read_quality_record

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


def _comparison(
    candidate: float, other: float | None, side: str, metric: str, p_text: str | None
) -> str | None:
    if other is None:
        return None
    detail = format_delta(candidate - other) + (f", {p_text}" if p_text else "")
    return (
        f"{metric_label(metric)} {format_score(candidate)} vs {side} {format_score(other)} "
        f"({detail})"
    )


def _set_comparisons(
    candidate: Mapping[str, float],
    other: Mapping[str, float],
    side: str,
    p_value: float | None,
) -> list[str]:
    """One set's comparisons, metric by metric; the p-value (on the first) when tested."""
    found = [
        _comparison(
            value,
            other.get(metric),
            side,
            metric,
            format_p_value(p_value) if index == 0 and p_value is not None else None,
        )
        for index, (metric, value) in enumerate(candidate.items())
    ]
    return [comparison for comparison in found if comparison]


def _on(figures: SetFigures | SetHeadline) -> str:
    if figures.query_set == UNRECORDED:  # a record from before decisions named their set
        return "on the set it was decided on"
    return f"on the {figures.query_set} set ({figures.queries} queries)"


def _promotion_is_current(promotion: PromotionRecord, train: Mapping[str, Any]) -> bool:
    """Whether the decision is about the candidate train last wrote (same fingerprint)."""
    decided, trained = promotion.fingerprint, train.get("fingerprint")
    return not decided or not trained or decided == trained


def decision_lines(
    promotion: PromotionRecord | None,
    headlines: Sequence[SetHeadline],
    train: Mapping[str, Any],
) -> list[str]:
    """The decision first, then its reason and where it is recorded."""
    if promotion and _promotion_is_current(promotion, train):
        return _decided(promotion)
    lines = [_undecided(headlines, promotion)]
    if promotion:
        lines.append(
            f"  the last decision, for an earlier candidate (v{promotion.version or '?'}), "
            f"was: {promotion.decision}"
        )
    return lines


def _decided(promotion: PromotionRecord) -> list[str]:
    """The deciding set's figures on the first line (its other metrics on the next), then
    each other set on a line of its own: no line compares numbers from two sets."""
    model = f"{promotion.registered_model or 'the model'} v{promotion.version or '?'}"
    side = promotion.compared_against
    if promotion.promoted:
        head = f"Promoted {model} to @champion"
    else:
        head = f"Not promoted: {model} stays @challenger"
    lines = [head]
    for index, figures in enumerate(promotion.sets):
        comparisons = _set_comparisons(figures.candidate, figures.side(side), side, figures.p_value)
        if index == 0:
            first = f": {comparisons[0]}" if comparisons else ""
            lines = [f"{head} {_on(figures)}{first}"]
            lines.extend(f"  {comparison}" for comparison in comparisons[1:])
        elif comparisons:
            lines.append(f"  {_on(figures)}: {', '.join(comparisons)}")
    if promotion.reason:
        lines.append(f"  why: {promotion.reason}")
    recorded = [f"decided {promotion.decided_at}"] if promotion.decided_at else []
    if promotion.run_id:
        recorded.append(f"MLflow run {promotion.run_id}")
    if recorded:
        lines.append(f"  {', '.join(recorded)}")
    return lines


def _undecided(headlines: Sequence[SetHeadline], promotion: PromotionRecord | None) -> str:
    if not headlines:
        return "No decision yet: no metrics/named.json (run `make repro`, then `mathembed promote`)"
    first = headlines[0]
    comparisons = _set_comparisons(first.candidate, first.base, "base", first.p_value)
    why = "this candidate has not been through" if promotion else "run"
    shown = f"{_on(first)}: {comparisons[0]}" if comparisons else "no scores"
    return f"No decision yet ({why} `mathembed promote`): {shown}"


# --------------------------------------------------------------------------- stages

#: One line per stage: (name, metrics file stem, parts); a part is (dotted key, how to say
#: it); a part whose key the file lacks is left out.
Part = tuple[str, Callable[[Any], str]]


def _says(template: str) -> Callable[[Any], str]:
    return lambda value: template.format(_number(value))


def _started_from(init: Any) -> str:
    """Where training started (``train.json`` ``init``): a warm start names its champion."""
    if isinstance(init, Mapping) and init.get("started_from") == "champion":
        return f"from @champion v{init.get('version')}"
    return "from the base model"


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
            ("init", _started_from),
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


def evaluate_line(headlines: Sequence[SetHeadline], evaluation: EvalRecord | None) -> str:
    """The evaluation's scope; each set's scores are on the lines after."""
    if evaluation is None:
        return stage_line("evaluate", None, ())
    queries = ", ".join(f"{found.queries} {found.query_set}" for found in headlines)
    return (
        f"  {'evaluate':<9} {evaluation.corpus_size} passages, dim {evaluation.primary_dim}, "
        f"held-out queries: {queries or evaluation.n_queries}"
    )


def set_lines(evaluation: EvalRecord | None, metric: str) -> list[str]:
    """One line per evaluation set: its size, how often its words give it away, and
    ``metric`` of the candidate, the base model and BM25 side by side, with the candidate's
    p against the base."""
    lines: list[str] = []
    if evaluation is None:
        return lines
    for name in (name for name in QUERY_SETS if name in evaluation.sets):
        block = evaluation.sets[name]
        if not block.n_queries:
            lines.append(f"    {name:<9} no queries")
            continue
        shown = ", ".join(
            f"{row} {_number(block.scores[row][metric])}"
            for row in ("candidate", "base", "bm25")
            if metric in block.scores.get(row, {})
        )
        p_value = format_p_value(block.p_value.get("base"))
        lines.append(
            f"    {name:<9} {block.n_queries} queries, "
            f"{block.words_in_relevant:.0%} with their words in a relevant passage: "
            f"{metric_label(metric)} {shown} (candidate vs base {p_value})"
        )
    if evaluation.transfer:
        lines.append(f"    {'':<9} {transfer_scope(evaluation.transfer)}")
    return lines


def transfer_scope(record: Mapping[str, Any]) -> str:
    """What the transfer sets searched (eval.json's ``transfer``) and what they could not
    ask, in one line."""
    skipped = record.get("skipped") or {}
    unasked = "; not asked: " + ", ".join(f"{n} {why}" for why, n in skipped.items())
    foreign = record.get("foreign_corpus") or {}
    among = (
        f"; transfer_corpus {foreign.get('passages', 0)} passages of the foreign corpus "
        f"{foreign.get('folder')} among the passages"
        if foreign
        else ""
    )
    return (
        f"transfer_papers and transfer_named searched {record.get('windows', 0)} plain windows of "
        f"{record.get('papers', 0)} papers ({record.get('window_chars', 0)} characters, "
        f"no statement headers){among}{unasked if skipped else ''}"
    )


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
    headlines = [
        found for found in SetHeadline.read_all(paths.metrics, QUERY_SETS) if found.queries
    ]
    train = _read(paths, "train") or {}
    promotion = PromotionRecord.read(promotion_file(paths))
    lines = decision_lines(promotion, headlines, train)
    lines.append("What ran:")
    for name, stem, parts in STAGE_LINES:
        metrics = _read(paths, stem)
        lines.append(stage_line(name, metrics, parts))
        if name == "validate" and (record := read_quality_record(metrics or {})):
            lines.extend(f"    {line}" for line in quality_lines(record))
    evaluated = _read(paths, "eval")
    evaluation = EvalRecord.from_json(evaluated) if evaluated else None
    lines.append(evaluate_line(headlines, evaluation))
    metric = next(iter(headlines[0].candidate), "mrr@10") if headlines else "mrr@10"
    lines.extend(set_lines(evaluation, metric))
    lines.append("Reports:")
    lines.extend(f"  {where}" for where in REPORTS)
    return "\n".join(lines)
