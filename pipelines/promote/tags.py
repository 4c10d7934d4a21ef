"""What a registered version's tags record about its decision, and how a re-decision
rewrites them without losing the superseded one (``decision_history``).

Tag keys may not contain "@", so metric names are spelled with "_at_"
(``mrr@10`` -> ``candidate.mrr_at_10``); the ``metrics`` tag keeps the real names.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.common.config import PromoteParams
from pipelines.promote.decision import Decision, Side
from pipelines.promote.provenance import git_commit

if TYPE_CHECKING:
    from mlflow.entities.model_registry import ModelVersion

    from pipelines.promote.candidate import Candidate
    from pipelines.promote.scoring import ScoredModels
    from pipelines.promote.store import Registry


TAG_FINGERPRINT = "fingerprint"
TAG_DECISION = "decision"
TAG_SETTLED = "settled"
#: The evaluation data a decision was made on; written last when a decision is rewritten.
TAG_EVAL_DATA = "eval_data_hash"
#: JSON list of the decisions a re-decision superseded, oldest first.
TAG_HISTORY = "decision_history"
#: How many superseded decisions the history keeps (a tag value holds 100,000 characters).
HISTORY_LIMIT = 20
#: The per-side metric tags of a decision (``candidate.mrr_at_10``, ``delta.ndcg_at_10``...).
METRIC_TAG_PREFIXES = ("candidate.", "champion.", "base.", "delta.")
#: Set on the version a rollback demoted: it never gets an alias back by itself.
TAG_ROLLED_BACK = "rolled_back_at"
PROMOTED = "promoted"
REJECTED = "rejected"


def metric_tag(metric: str) -> str:
    """A metric name as MLflow accepts it in a key: ``mrr@10`` -> ``mrr_at_10``."""
    return metric.replace("@", "_at_")


def decision_tags(
    decision: Decision,
    scored: ScoredModels,
    candidate: Candidate,
    champion: ModelVersion | None,
    promote: PromoteParams,
    decided_at: str,
    root: Path,
) -> dict[str, str]:
    """Every tag a decision writes on its version (``eval_data_hash`` among them)."""
    side = decision.compared_against
    tags = {
        TAG_FINGERPRINT: candidate.fingerprint,
        TAG_DECISION: PROMOTED if decision.promote else REJECTED,
        "reason": decision.reason,
        "compared_against": side,
        "compared_version": str(champion.version) if champion is not None else "",
        "p_value": "" if decision.p_value is None else repr(decision.p_value),
        "test_method": promote.test_method,
        "metrics": ",".join(decision.deltas),
        "data_version": candidate.data_hash or "unknown",
        TAG_EVAL_DATA: scored.eval_data_hash,
        "base_model": candidate.base_model,
        "decided_at": decided_at,
        "git_commit": git_commit(root),
    }
    for metric in decision.deltas:
        key = metric_tag(metric)
        tags[f"candidate.{key}"] = repr(decision.candidate[metric])
        tags[f"{side}.{key}"] = repr(decision.other[metric])
        tags[f"delta.{key}"] = repr(decision.deltas[metric])
        if side != "base" and metric in scored.base.means:
            tags[f"base.{key}"] = repr(float(scored.base.means[metric]))
    return tags


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


def rewrite_decision(registry: Registry, existing: ModelVersion, tags: Mapping[str, str]) -> None:
    """Replace a registered version's decision tags, crash-safely.

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
    # Per-side metrics of the superseded decision (say, `champion.*` when it is now
    # compared with the base) would read as part of the new one.
    for key in existing.tags:
        if key.startswith(METRIC_TAG_PREFIXES) and key not in tags:
            client.delete_model_version_tag(name, version, key)
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
            "compared_version",
            TAG_EVAL_DATA,
            "decided_at",
            "reason",
        )
    }
    if not history or history[-1] != entry:
        history.append(entry)
    return json.dumps(history[-HISTORY_LIMIT:])


def recorded_decision(tags: Mapping[str, str]) -> Decision:
    """The decision a version's tags record (what :func:`decision_tags` wrote)."""
    metrics = [metric for metric in tags.get("metrics", "").split(",") if metric]
    side: Side = "champion" if tags.get("compared_against") == "champion" else "base"

    def values(prefix: str) -> dict[str, float]:
        return {
            metric: float(tags[f"{prefix}.{metric_tag(metric)}"])
            for metric in metrics
            if f"{prefix}.{metric_tag(metric)}" in tags
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
