"""What a night ended with, said for people (pure): the promotion as a table (the Prefect
artifact ``promotion``), the notice the webhook gets, and the short reason a failed
night's MLflow record carries.

The numbers come from ``metrics/promotion.json``'s record
(:class:`~pipelines.registry.metric_records.PromotionRecord`): each query set's figures, the
deciding set first, labelled as everywhere else (:mod:`pipelines.registry.reporting`).
"""

from __future__ import annotations

import re
from typing import Any

from pipelines.promote.headline import FAILED
from pipelines.registry.metric_records import PromotionRecord
from pipelines.registry.reporting import metric_label, round_p_value, round_score

#: The longest reason a failed night's record carries (the log has the rest).
MAX_REASON_CHARS = 300
_STEP_FAILED = re.compile(r"step '[^']+' failed.*", re.DOTALL)


def promotion_table(promotion: PromotionRecord) -> list[dict[str, Any]]:
    """One row per query set and metric the rule compared, the deciding set first, every
    number in a row on that row's set: candidate, base and champion, the gain over what the
    candidate was compared with, the p-value (on the significance metric's row) and the
    decision. A side that was not scored (no champion yet) is ``None``."""
    against = promotion.compared_against
    rows = []
    for found in promotion.sets:
        for metric, value in found.candidate.items():
            tested = metric == promotion.significance_metric
            rows.append(
                {
                    "query set": found.query_set,
                    "queries": found.queries,
                    "metric": metric_label(metric),
                    "candidate": round_score(value),
                    "base": _rounded(found.base.get(metric)),
                    "champion": _rounded((found.champion or {}).get(metric)),
                    f"gain over {against}": found.delta(metric, against),
                    "p": round_p_value(found.p_value) if tested else None,
                    "decision": promotion.decision,
                }
            )
    return rows


def outcome_notice(
    flow_name: str,
    flow_run_name: str,
    flow_run_id: str,
    promotion: PromotionRecord,
    decision_line: str,
) -> dict[str, Any]:
    """What the webhook gets after a promotion decision; the failure report's keys, plus
    the outcome, the version and the rule's reason."""
    return {
        "flow": flow_name,
        "flow_run": flow_run_name,
        "flow_run_id": flow_run_id,
        "state": "Completed",
        "outcome": promotion.decision,
        "step": None,
        "message": decision_line,
        "version": promotion.version,
        "reason": promotion.reason,
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


def _rounded(value: float | None) -> float | None:
    return None if value is None else round_score(value)
