"""What a registered version's tags record about its decision, and how a re-decision
rewrites them without losing the superseded one (``decision_history``).

A version carries a few short tags a person can read in the registry (``decision``,
``compared_against``, ``compared_version``, ``decided_at``...) and the exact decision as
one JSON tag (``decision_record``): the numbers a rerun needs to report a recorded
decision. What a person reads at length is the version's description (the model card,
:mod:`pipelines.promote.card`). Versions registered before ``decision_record`` existed
carry one tag per metric and side (``candidate.mrr_at_10``...): they are still read, and
a re-decision replaces them by the new layout.

Tag keys may not contain "@", so metric names are spelled with "_at_" (``mrr@10`` ->
``mrr_at_10``: :func:`pipelines.registry.reporting.mlflow_name`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.common.config import PromoteParams
from pipelines.promote.decision import Decision, Side
from pipelines.promote.provenance import git_commit
from pipelines.registry.metric_records import UNRECORDED, SetFigures, numeric_scores
from pipelines.registry.mlflow_registry import TAG_FINGERPRINT, Registry
from pipelines.registry.reporting import mlflow_name

if TYPE_CHECKING:
    from mlflow.entities.model_registry import ModelVersion

    from pipelines.promote.candidate import Candidate
    from pipelines.promote.scoring import ScoredModels


TAG_DECISION = "decision"
#: The champion's version a decision compared with; absent when it was the base model.
TAG_COMPARED_VERSION = "compared_version"
#: The exact decision (JSON): sides, deltas, p-value, reason, rule; read by a rerun.
TAG_RECORD = "decision_record"
TAG_SETTLED = "settled"
#: The evaluation data a decision was made on; written last when a decision is rewritten.
TAG_EVAL_DATA = "eval_data_hash"
#: JSON list of the decisions a re-decision superseded, oldest first.
TAG_HISTORY = "decision_history"
#: How many superseded decisions the history keeps (a tag value holds 100,000 characters).
HISTORY_LIMIT = 20
#: The per-side metric tags of the old layout (``candidate.mrr_at_10``, ``delta.ndcg_at_10``...).
METRIC_TAG_PREFIXES = ("candidate.", "champion.", "base.", "delta.")
#: Tags of the old layout that ``decision_record`` holds now: a re-decision removes them.
LEGACY_TAGS = (
    "reason",
    "p_value",
    "test_method",
    "metrics",
    "data_version",
    "base_model",
    "git_commit",
)
#: Set on the version a rollback demoted: it never gets an alias back by itself.
TAG_ROLLED_BACK = "rolled_back_at"
PROMOTED = "promoted"
REJECTED = "rejected"


def decision_tags(
    decision: Decision,
    figures: Sequence[SetFigures],
    scored: ScoredModels,
    candidate: Candidate,
    champion: ModelVersion | None,
    promote: PromoteParams,
    decided_at: str,
    root: Path,
) -> dict[str, str]:
    """Every tag a decision writes on its version (``eval_data_hash`` among them)."""
    record: dict[str, Any] = {
        "promote": decision.promote,
        "reason": decision.reason,
        "p_value": decision.p_value,
        "compared_against": decision.compared_against,
        "test_method": promote.test_method,
        "candidate": decision.candidate,
        "other": decision.other,
        "deltas": decision.deltas,
        "decided_on": decision.query_set,
        # Every set's figures, the deciding set first: the card and promotion.json show them.
        "sets": {found.query_set: found.to_json() for found in figures},
        "data_version": candidate.data_hash or "unknown",
        "base_model": candidate.base_model,
        "git_commit": git_commit(root),
    }
    return {
        TAG_FINGERPRINT: candidate.fingerprint,
        TAG_DECISION: PROMOTED if decision.promote else REJECTED,
        "compared_against": decision.compared_against,
        # Only when there was a champion: an empty tag would read as a missing value.
        **({TAG_COMPARED_VERSION: str(champion.version)} if champion is not None else {}),
        "decided_at": decided_at,
        TAG_RECORD: json.dumps(record),
        TAG_EVAL_DATA: scored.eval_data_hash,
    }


def decision_record(tags: Mapping[str, str]) -> dict[str, Any]:
    """The ``decision_record`` tag as a mapping; ``{}`` when absent (old layout) or unreadable."""
    try:
        record = json.loads(tags.get(TAG_RECORD) or "{}")
    except json.JSONDecodeError:
        return {}
    return record if isinstance(record, dict) else {}


def held_back(decision: Decision, tags: Mapping[str, str]) -> Decision:
    """A version withdrawn by rollback: scored and recorded, never re-promoted by itself.

    Otherwise each change of the evaluation data could hand ``champion`` back to a model
    a person took out of service.
    """
    return dataclasses.replace(
        decision,
        promote=False,
        reason=(
            f"withdrawn by rollback at {tags.get(TAG_ROLLED_BACK)} by "
            f"{tags.get('rolled_back_by', 'unknown')} ({tags.get('rolled_back_reason', '')}): "
            f"no alias is given back automatically; on this evaluation data: {decision.reason}"
        ),
    )


def rewrite_decision(
    registry: Registry, existing: ModelVersion, tags: Mapping[str, str], description: str
) -> None:
    """Replace a registered version's decision tags and description, crash-safely.

    Order: the superseded decision goes into the history, ``settled`` becomes ``false``
    (a rerun then decides again instead of returning a half-written record), the new
    decision tags follow with ``eval_data_hash`` last (so "decided on this data" means
    every tag is written), and the caller settles once the aliases have moved.
    """
    client, name, version = registry.client, registry.model_name, str(existing.version)
    if existing.tags.get(TAG_SETTLED) == "true":
        history = superseded_history(existing.tags)
        if history != existing.tags.get(TAG_HISTORY):
            client.set_model_version_tag(name, version, TAG_HISTORY, history)
        client.set_model_version_tag(name, version, TAG_SETTLED, "false")
    for key, value in tags.items():
        if key != TAG_EVAL_DATA:
            client.set_model_version_tag(name, version, key, value)
    # The old layout's tags would read as part of the new decision (decision_record holds
    # them now), and so would the champion compared last time when it is the base now.
    for key in existing.tags:
        replaced = key.startswith(METRIC_TAG_PREFIXES) or key in (
            *LEGACY_TAGS,
            TAG_COMPARED_VERSION,
        )
        if replaced and key not in tags:
            client.delete_model_version_tag(name, version, key)
    client.update_model_version(name, version, description=description)
    client.set_model_version_tag(name, version, TAG_EVAL_DATA, tags[TAG_EVAL_DATA])


def superseded_history(tags: Mapping[str, str]) -> str:
    """The ``decision_history`` tag with the version's current decision appended (JSON).

    Appending is idempotent (a rerun after a crash does not record the same decision
    twice), and only the last :data:`HISTORY_LIMIT` decisions are kept.
    """
    try:
        history = json.loads(tags.get(TAG_HISTORY) or "[]")
    except json.JSONDecodeError:
        history = []
    if not isinstance(history, list):
        history = []
    entry = {
        key: tags.get(key, "")
        for key in (
            TAG_DECISION,
            "compared_against",
            TAG_COMPARED_VERSION,
            TAG_EVAL_DATA,
            "decided_at",
        )
    }
    entry["reason"] = recorded_decision(tags).reason
    if not history or history[-1] != entry:
        history.append(entry)
    return json.dumps(history[-HISTORY_LIMIT:])


def recorded_decision(tags: Mapping[str, str]) -> Decision:
    """The decision a version's tags record (what :func:`decision_tags` wrote, or the old
    one-tag-per-metric layout)."""
    record = decision_record(tags)
    if record:
        side: Side = "champion" if record.get("compared_against") == "champion" else "base"
        p_value = record.get("p_value")
        return Decision(
            promote=bool(record.get("promote")),
            reason=str(record.get("reason", "")),
            p_value=float(p_value) if isinstance(p_value, int | float) else None,
            compared_against=side,
            deltas=numeric_scores(record.get("deltas")),
            candidate=numeric_scores(record.get("candidate")),
            other=numeric_scores(record.get("other")),
            query_set=str(record.get("decided_on") or UNRECORDED),
        )
    return _legacy_decision(tags)


def recorded_figures(tags: Mapping[str, str]) -> tuple[SetFigures, ...]:
    """Every set's figures a decision recorded, the deciding set first. A decision recorded
    before sets were (its ``base`` scores may come from another set than its candidate's)
    gives one set, ``unrecorded``: the candidate and the side it was compared with."""
    record = decision_record(tags)
    sets = record.get("sets")
    if isinstance(sets, Mapping):
        return tuple(
            SetFigures.from_json(str(name), block)
            for name, block in sets.items()
            if isinstance(block, Mapping)
        )
    decision = recorded_decision(tags)
    if not decision.candidate:
        return ()
    against_base = decision.compared_against == "base"
    return (
        SetFigures(
            UNRECORDED,
            0,
            decision.candidate,
            decision.other if against_base else {},
            None if against_base else decision.other,
            decision.p_value,
        ),
    )


def _legacy_decision(tags: Mapping[str, str]) -> Decision:
    metrics = [metric for metric in tags.get("metrics", "").split(",") if metric]
    side: Side = "champion" if tags.get("compared_against") == "champion" else "base"

    def values(prefix: str) -> dict[str, float]:
        return {
            metric: float(tags[f"{prefix}.{mlflow_name(metric)}"])
            for metric in metrics
            if f"{prefix}.{mlflow_name(metric)}" in tags
        }

    p_value = tags.get("p_value", "")
    return Decision(
        promote=tags.get(TAG_DECISION) == PROMOTED,
        reason=tags.get("reason", ""),
        p_value=float(p_value) if p_value else None,
        compared_against=side,
        deltas=values("delta"),
        candidate=values("candidate"),
        other=values(side),
    )
