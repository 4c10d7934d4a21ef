"""The gate on meaning: a significant win on a meaning set (alpha split between them), no
significant loss on any set; and the pooled scores the record shows."""

from __future__ import annotations

import numpy as np
import pytest

from pipelines.common.config import PromoteParams
from pipelines.promote.decision import (
    Decision,
    Scores,
    decide,
    decide_on_meaning,
    describe_sets,
    guard_named,
)
from pipelines.promote.scoring import MEANING, pooled

RULE = PromoteParams(significance=True, alpha=0.01, n_resamples=2000, seed=3)


def scores(prefix: str, mrr: list[float]) -> Scores:
    values = np.asarray(mrr, dtype=np.float64)
    ids = tuple(f"{prefix}{i}" for i in range(len(values)))
    if not ids:
        return Scores((), {}, {})
    return Scores(
        ids,
        {"mrr@10": float(values.mean()), "ndcg@10": float(values.mean())},
        {
            "mrr@10": values,
            "ndcg@10": values,
        },
    )


def test_pooled_is_both_sets_queries_with_prefixed_ids_and_the_overall_mean() -> None:
    masked, described = scores("q", [1.0, 0.0]), scores("q", [0.5, 0.5, 0.5, 0.5])
    both = pooled([("masked", masked), ("described", described)])
    assert both.query_ids == ("masked:q0", "masked:q1", *(f"described:q{i}" for i in range(4)))
    assert both.means["mrr@10"] == 0.5
    np.testing.assert_array_equal(both.per_query["mrr@10"], [1, 0, 0.5, 0.5, 0.5, 0.5])
    assert pooled([("masked", scores("q", [])), ("described", described)]).query_ids[0] == (
        "described:q0"
    )
    assert pooled([("masked", scores("q", []))]).query_ids == ()


def test_a_meaning_win_with_a_significant_named_loss_is_refused() -> None:
    candidate_meaning, base_meaning = scores("m", [0.9] * 40), scores("m", [0.3] * 40)
    decision = decide(candidate_meaning, None, base_meaning, RULE)
    assert decision.promote

    # Named: a loss on every query (significant) refuses; a small noisy loss does not.
    big_loss = guard_named(decision, scores("n", [0.2] * 40), scores("n", [0.8] * 40), RULE)
    assert not big_loss.promote
    assert "on the named set mrr@10 0.2000 < 0.8000" in big_loss.reason
    noisy = [0.5, 0.6] * 20
    small_loss = guard_named(decision, scores("n", noisy), scores("n", noisy[1:] + noisy[:1]), RULE)
    assert small_loss.promote and small_loss.reason == decision.reason
    gain = guard_named(decision, scores("n", [0.8] * 40), scores("n", [0.2] * 40), RULE)
    assert gain.promote


def test_a_refusal_stays_a_refusal_and_every_set_is_described() -> None:
    refused = decide(scores("m", [0.3] * 40), None, scores("m", [0.3] * 40), RULE)
    assert not refused.promote
    assert guard_named(refused, scores("n", [0.9] * 3), scores("n", [0.1] * 3), RULE) is refused
    sets = {
        "candidate": {"named": scores("n", [0.6]), MEANING: scores("m", [0.5, 0.7])},
        "base": {"named": scores("n", [0.4]), MEANING: scores("m", [0.1, 0.3])},
    }
    line = describe_sets(sets, "base", "mrr@10")
    assert line == (
        "named (1 queries): mrr@10 candidate 0.6000 vs base 0.4000; "
        "meaning (2 queries): mrr@10 candidate 0.6000 vs base 0.2000"
    )


def sets(named: list[float], masked: list[float], described: list[float]) -> dict[str, Scores]:
    return {
        "named": scores("n", named),
        "masked": scores("m", masked),
        "described": scores("d", described),
    }


def meaning(candidate: dict[str, Scores], base: dict[str, Scores]) -> Decision:
    return decide_on_meaning(
        candidate,
        None,
        base,
        RULE,
        meaning_sets=("masked", "described"),
        guarded_sets=("named", "masked", "described"),
    )


def test_a_significant_win_on_one_meaning_set_promotes_unless_a_set_is_lost() -> None:
    flat = [0.5, 0.6] * 20
    base = sets(flat, [0.2] * 40, flat)
    won = meaning(sets(flat, [0.8] * 40, flat[1:] + flat[:1]), base)
    assert won.promote and won.reason.startswith("on the masked set: promoted over the base")
    lost = meaning(sets(flat, [0.8] * 40, [0.1] * 40), base)
    assert not lost.promote and "on the described set mrr@10 0.1000 < 0.5500" in lost.reason
    # Nothing moved anywhere: refused, each set's shortfall said, alpha split in two.
    nothing = meaning(sets(flat, [0.2] * 40, flat), base)
    assert not nothing.promote and "each needs p < 0.005" in nothing.reason
    assert "masked:" in nothing.reason and "described:" in nothing.reason


def test_the_win_must_clear_the_split_alpha() -> None:
    # 8 of 40 queries better by 0.5, the rest tied: p near 0.008, under alpha, over alpha / 2.
    base_masked = [0.2] * 40
    candidate_masked = [0.7] * 8 + [0.2] * 32
    base = sets([0.5] * 40, base_masked, [0.5] * 40)
    decision = meaning(sets([0.5] * 40, candidate_masked, [0.5] * 40), base)
    single = decide(scores("m", candidate_masked), None, scores("m", base_masked), RULE)
    assert single.p_value is not None and 0.005 <= single.p_value < 0.01
    assert single.promote and not decision.promote


def test_no_meaning_query_at_all_is_a_clear_error() -> None:
    empty = sets([0.5] * 4, [], [])
    with pytest.raises(ValueError, match="promote.gate: named"):
        meaning(empty, empty)
