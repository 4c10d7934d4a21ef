"""The gate on meaning: decided on the masked + described queries pooled, refused on a
significant loss on the named set."""

from __future__ import annotations

import numpy as np

from pipelines.common.config import PromoteParams
from pipelines.promote.decision import Scores, decide, describe_sets, guard_named
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
