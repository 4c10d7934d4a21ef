"""What a night ended with, said for people (pure): the promotion as a table (the Prefect
artifact ``promotion``), the notice the webhook gets, and the short reason a failed
night's MLflow record carries.

The numbers come from ``metrics/promotion.json``'s flat headline keys
(:func:`pipelines.promote.headline.promotion_headline`): ``decision``,
``candidate_<metric>``, ``base_<metric>``, ``champion_<metric>``, ``delta_champion_<metric>``,
``delta_base_<metric>``, ``p_value``; read, rounded and labelled as everywhere else
(:mod:`pipelines.common.reporting`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pipelines.common.reporting import decision_of, metric_label, round_p_value, round_score
from pipelines.promote.headline import FAILED

#: The longest reason a failed night's record carries (the log has the rest).
MAX_REASON_CHARS = 300
_STEP_FAILED = re.compile(r"step '[^']+' failed.*", re.DOTALL)


def promotion_table(promotion: Mapping[str, Any], significance_metric: str) -> list[dict[str, Any]]:
    """One row per metric the rule compared: candidate, base and champion, the gain over
    what the candidate was compared with, the p-value (on the rule's significance metric's
    row) and the decision. A side that was not scored (no champion yet) is ``None``."""
    outcome = decision_of(promotion)
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
        "outcome": decision_of(promotion),
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
    return round_score(value) if isinstance(value, int | float) else None


def _significant(value: Any) -> float | None:
    return round_p_value(value) if isinstance(value, int | float) else None
