"""How mathembed writes numbers for people and for metric files: scores to four decimals,
p-values to two significant digits (``p = 0.0001``, ``p = 0.92``, ``p < 0.0001``). One place,
so the evaluate line, the report, the promotion reason and the model card agree.
"""

from __future__ import annotations

import numpy as np

#: Decimals of a headline score: differences below 1e-4 mean nothing on a few hundred queries.
SCORE_DECIMALS = 4
#: Significant digits of a headline p-value.
P_SIGNIFICANT = 2
#: Below this a p-value is written "p < 0.0001".
P_FLOOR = 1e-4


def round_score(value: float) -> float:
    return round(float(value), SCORE_DECIMALS)


def round_p_value(p_value: float | None) -> float | None:
    """``p_value`` to two significant digits (9.999e-05 -> 0.0001, 0.92211 -> 0.92)."""
    if p_value is None or not np.isfinite(p_value):
        return None
    return float(f"{p_value:.{P_SIGNIFICANT}g}")


def format_p_value(p_value: float | None) -> str:
    """A p-value as people read it: ``p = 0.92``, ``p = 0.0012``, ``p < 0.0001``, ``p n/a``."""
    rounded = round_p_value(p_value)
    if rounded is None:
        return "p n/a"
    if rounded < P_FLOOR:
        return f"p < {P_FLOOR:.4f}"
    text = np.format_float_positional(rounded, trim="-")
    if len(text.partition(".")[2]) > SCORE_DECIMALS:  # 0.00012: four decimals are enough
        text = f"{rounded:.{SCORE_DECIMALS}f}"
    return f"p = {text}"
