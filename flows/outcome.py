"""What a night ended with, said for people (pure): the promotion as a table (the Prefect
artifact ``promotion``), the notice the webhook gets, and the short reason a failed
night's MLflow record carries.

The numbers come from ``metrics/promotion.json``'s flat headline keys
(:func:`pipelines.promote.headline.promotion_headline`): ``decision``,
``candidate_<metric>``, ``base_<metric>``, ``champion_<metric>``, ``delta_champion_<metric>``,
``delta_base_<metric>``, ``p_value``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pipelines.promote.headline import FAILED, NOT_PROMOTED, PROMOTED

#: Digits in the table: what the report prints too.
DECIMALS = 4
#: The longest reason a failed night's record carries (the log has the rest).
MAX_REASON_CHARS = 300
_STEP_FAILED = re.compile(r"step '[^']+' failed.*", re.DOTALL)
_ACRONYMS = {"mrr": "MRR", "ndcg": "NDCG", "map": "MAP"}


def promotion_outcome(promotion: Mapping[str, Any]) -> str:
    """``promoted`` or ``not promoted`` (older records have only the ``promoted`` flag)."""
    decision = promotion.get("decision")
    if decision in (PROMOTED, NOT_PROMOTED):
        return str(decision)
    return PROMOTED if promotion.get("promoted") else NOT_PROMOTED


def promotion_table(promotion: Mapping[str, Any], significance_metric: str) -> list[dict[str, Any]]:
    """One row per metric the rule compared: candidate, base and champion, the gain over
    what the candidate was compared with, the p-value (on the rule's significance metric's
    row) and the decision. A side that was not scored (no champion yet) is ``None``."""
    outcome = promotion_outcome(promotion)
    against = "champion" if promotion.get("compared_against") == "champion" else "base"
    metrics = [key.removeprefix("candidate_") for key in promotion if key.startswith("candidate_")]
    rows = []
    for metric in metrics:
        p_value = promotion.get("p_value") if metric == significance_metric else None
        rows.append(
            {
                "metric": metric_label(metric),
                "candidate": _rounded(promotion.get(f"candidate_{metric}")),
                "base": _rounded(promotion.get(f"base_{metric}")),
                "champion": _rounded(promotion.get(f"champion_{metric}")),
                f"gain over {against}": _rounded(promotion.get(f"delta_{against}_{metric}")),
                "p": _significant(p_value),
                "decision": outcome,
            }
        )
    return rows


def metric_label(metric: str) -> str:
    """``mrr@10`` → ``MRR@10``, ``recall@100`` → ``Recall@100`` (pure)."""
    name, _, cutoff = metric.partition("@")
    label = _ACRONYMS.get(name, name.capitalize())
    return f"{label}@{cutoff}" if cutoff else label


def outcome_notice(
    flow_name: str,
    flow_run_name: str,
    flow_run_id: str,
    promotion: Mapping[str, Any],
    decision_line: str,
) -> dict[str, Any]:
    """What the webhook gets after a promotion decision; the failure report's keys, plus
    the outcome, the version and the rule's reason."""
    return {
        "flow": flow_name,
        "flow_run": flow_run_name,
        "flow_run_id": flow_run_id,
        "state": "Completed",
        "outcome": promotion_outcome(promotion),
        "step": None,
        "message": decision_line,
        "version": promotion.get("version"),
        "reason": promotion.get("reason"),
    }


def failure_reason(message: str) -> str:
    """A failed night's reason, short enough for an MLflow tag: from the failed step's
    name, its first line and, when the error went on, its last line (the error itself)."""
    found = _STEP_FAILED.search(message)
    lines = [line.strip() for line in (found.group(0) if found else message).splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        return f"the run {FAILED} without a message"
    reason = lines[0] if len(lines) == 1 else f"{lines[0]} … {lines[-1]}"
    if len(reason) > MAX_REASON_CHARS:
        reason = reason[: MAX_REASON_CHARS - 1] + "…"
    return reason


def _rounded(value: Any) -> float | None:
    return round(float(value), DECIMALS) if isinstance(value, int | float) else None


def _significant(value: Any) -> float | None:
    """A p-value to two significant digits (0.000099990001 → 0.0001)."""
    return float(f"{value:.2g}") if isinstance(value, int | float) else None
