"""The headline's numbers: rounding, p-values as people read them, the paired test."""

from __future__ import annotations

import math

import numpy as np
import pytest

import metrics_rs
from pipelines.evaluate.scoring import paired_test_p_value
from pipelines.registry.metric_records import EvalSetBlock, SetHeadline
from pipelines.registry.reporting import format_p_value, round_p_value


@pytest.mark.parametrize(
    ("p_value", "text"),
    [
        (0.922107789221078, "p = 0.92"),  # the summary printed p=0.922107789221078
        (9.999000099990002e-05, "p = 0.0001"),  # 1 / 10001: the floor of 10,000 resamples
        (0.05, "p = 0.05"),
        (0.0123, "p = 0.012"),
        (0.00123, "p = 0.0012"),
        (0.000123, "p = 0.0001"),  # never more than four decimals
        (4e-6, "p < 0.0001"),
        (1.0, "p = 1"),
        (None, "p n/a"),
        (math.nan, "p n/a"),
    ],
)
def test_p_values_read_as_people_write_them(p_value: float | None, text: str) -> None:
    assert format_p_value(p_value) == text


def test_p_values_keep_two_significant_digits() -> None:
    assert round_p_value(9.999000099990002e-05) == 0.0001
    assert round_p_value(0.922107789221078) == 0.92
    assert round_p_value(0.0456) == 0.046
    assert round_p_value(None) is None and round_p_value(math.nan) is None


def test_the_paired_test_skips_queries_without_a_score_on_both_sides() -> None:
    candidate = [1.0, 0.5, 1.0, math.nan, 0.25, 1.0]
    base = [0.5, 0.5, 0.2, math.nan, 0.2, 0.1]
    expected = metrics_rs.paired_test(
        np.array([1.0, 0.5, 1.0, 0.25, 1.0]),
        np.array([0.5, 0.5, 0.2, 0.2, 0.1]),
        method="randomization",
        n_resamples=500,
        seed=1,
    )["p_value"]
    found = paired_test_p_value(
        np.array(candidate), np.array(base), method="randomization", n_resamples=500, seed=1
    )
    assert found == expected


def test_a_sets_headline_without_a_test_or_a_base_score_says_null() -> None:
    block = EvalSetBlock.from_json(
        {
            "n_queries": 3,
            "words_in_relevant": 0.5,
            # a corpus under 10 passages: the headline is @5
            "scores": {"candidate": {"mrr@5": 0.123456, "ndcg@5": 0.5, "recall@5": 0.7}},
            "delta": {},
            "p_value": {},
        }
    )
    found = block.headline("masked", ["mrr@5", "ndcg@5"], "mrr@5")
    assert found.to_json() == {
        "queries": 3,
        "mrr@5": 0.1235,
        "ndcg@5": 0.5,
        "base_mrr@5": None,
        "base_ndcg@5": None,
        "p_mrr@5": None,
    }
    assert SetHeadline.from_json("masked", found.to_json()) == SetHeadline(
        "masked", 3, {"mrr@5": 0.1235, "ndcg@5": 0.5}, {}, "mrr@5", None, ("mrr@5", "ndcg@5")
    )
