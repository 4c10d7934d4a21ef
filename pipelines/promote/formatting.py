"""The lines ``mathembed promote``, ``status`` and ``rollback`` print (the nightly flow
logs the same promotion summary)."""

from __future__ import annotations

from pipelines.common.redact import redact_url
from pipelines.promote.aliases import AliasStatus, RollbackResult
from pipelines.promote.promotion import PromotionResult
from pipelines.promote.tags import TAG_ROLLED_BACK
from pipelines.registry.metric_records import UNRECORDED
from pipelines.registry.reporting import format_delta, format_p_value, format_score
from pipelines.retrieval.vector_store import TableCheck


def format_promotion(result: PromotionResult) -> str:
    """A few lines: decided what, against whom, the metrics, where the aliases point."""
    decision = result.decision
    if decision.promote:
        outcome = "PROMOTED to @champion"
    elif result.aliases.get("challenger") == result.version:
        outcome = "not promoted: @challenger"
    else:  # e.g. withdrawn by a rollback: it holds no alias
        outcome = "not promoted"
    if result.redecided:
        again = " (registered before; decided again on new evaluation data)"
    elif result.already_registered:
        again = " (already registered; recorded decision)"
    else:
        again = ""
    against = (
        f"champion v{result.compared_version}"
        if decision.compared_against == "champion"
        else "the base model"
    )
    lines = [
        f"{result.registered_model} v{result.version} {outcome}{again}",
        f"  compared with {against}: {decision.reason}",
        f"  on the {decision.query_set} set:",
    ]
    for metric, delta in decision.deltas.items():
        lines.append(
            f"    {metric}: candidate {format_score(decision.candidate[metric])}  "
            f"{decision.compared_against} {format_score(decision.other[metric])}  "
            f"({format_delta(delta)})"
        )
    if decision.p_value is not None and "test p " not in decision.reason:
        lines.append(f"  paired test: {format_p_value(decision.p_value)}")  # said once
    lines.append("  aliases: " + _aliases_line(result.aliases))
    lines.append(f"  run {result.run_id} at {redact_url(result.tracking_uri)}")
    return "\n".join(lines)


def format_status(entries: list[AliasStatus]) -> str:
    """One line per alias: version and the metrics it scored when it was decided on, with
    the set they are on (``masked: mrr@10 0.2711``); a version whose model files are
    missing gets a second line saying so and what to do."""
    lines = []
    for entry in entries:
        if entry.version is None:
            lines.append(f"{entry.alias:<10} -")
            continue
        metrics = "  ".join(
            f"{name} {format_score(value)}" for name, value in entry.metrics.items()
        )
        if metrics and entry.query_set != UNRECORDED:  # the set the scores are on
            metrics = f"{entry.query_set}: {metrics}"
        notes = []
        if TAG_ROLLED_BACK in entry.tags:
            notes.append(f"rolled back {entry.tags[TAG_ROLLED_BACK]}")
        if "restored_at" in entry.tags:
            notes.append(f"restored {entry.tags['restored_at']}")
        suffix = f"  ({'; '.join(notes)})" if notes else ""
        decided = entry.tags.get("decided_at", "")
        lines.append(f"{entry.alias:<10} v{entry.version:<4} {metrics}  {decided}{suffix}")
        if entry.files_problem is not None:
            lines.append(f"{'':<10} FILES MISSING: {entry.files_problem}")
    return "\n".join(lines)


def format_store_checks(checks: list[TableCheck]) -> str:
    """The embedding store in one line when every table is sound, else a line per
    damaged table saying what was wrong and that it was dropped."""
    if not checks:
        return "embedding store: no tables yet"
    sound = [check for check in checks if check.problem is None]
    rows = sum(check.rows for check in sound)
    lines = [f"embedding store: {len(sound)} table(s), {rows:,} vectors checked, sound"]
    lines += [
        f"embedding store: table {check.name} (model {check.fingerprint[:12]}) DAMAGED: "
        f"{check.problem}; dropped, rebuilt when next used"
        for check in checks
        if check.problem is not None
    ]
    return "\n".join(lines)


def format_rollback(result: RollbackResult) -> str:
    return (
        f"@champion moved back to v{result.restored} (v{result.demoted} demoted) "
        f"by {result.actor} at {result.at}: {result.reason}"
    )


def _aliases_line(aliases: dict[str, str | None]) -> str:
    return ", ".join(f"@{alias} v{version}" for alias, version in aliases.items() if version)
