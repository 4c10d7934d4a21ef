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
    guard_transfer,
    transfer_caveats,
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
    assert "on the named set mrr@10 0.2000 < the base's 0.8000" in big_loss.reason
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
    assert (
        not lost.promote and "on the described set mrr@10 0.1000 < the base's 0.5500" in lost.reason
    )
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


def transfer_sides(candidate: list[float], champion: list[float], base: list[float]) -> dict:
    return {
        side: {"transfer_named": scores("t", mrr), "transfer_papers": scores("p", [0.5] * 40)}
        for side, mrr in (("candidate", candidate), ("champion", champion), ("base", base))
    }


def test_a_significant_transfer_loss_against_the_base_refuses_even_over_a_worse_champion() -> None:
    """The champion had already forgotten what the base knew: beating it is not enough."""
    won = decide(scores("m", [0.9] * 40), scores("m", [0.3] * 40), scores("m", [0.3] * 40), RULE)
    assert won.promote and won.compared_against == "champion"
    sets = transfer_sides(candidate=[0.4] * 40, champion=[0.2] * 40, base=[0.8] * 40)
    refused = guard_transfer(won, sets, RULE, ("transfer_papers", "transfer_named"))
    assert not refused.promote
    assert refused.reason.startswith(
        "not promoted over the champion: on the transfer_named set mrr@10 0.4000 < the base's "
        "0.8000, a significant loss"
    )
    assert "\n" not in refused.reason  # one line
    # ... and against the champion, with the base behind
    sets = transfer_sides(candidate=[0.4] * 40, champion=[0.8] * 40, base=[0.2] * 40)
    refused = guard_transfer(won, sets, RULE, ("transfer_papers", "transfer_named"))
    assert "transfer_named set mrr@10 0.4000 < the champion's 0.8000" in refused.reason
    # Without a champion the base alone is asked; no loss: the decision stands unchanged.
    alone = {side: found for side, found in sets.items() if side != "champion"}
    assert guard_transfer(won, alone, RULE, ("transfer_named",)) == won
    noisy = [0.5, 0.6] * 20
    level = transfer_sides(candidate=noisy, champion=noisy[1:] + noisy[:1], base=noisy)
    assert guard_transfer(won, level, RULE, ("transfer_papers", "transfer_named")) == won


def test_a_transfer_set_too_small_to_decide_says_so_and_names_the_knob() -> None:
    candidate = {"transfer_papers": scores("p", [0.5] * 12), "transfer_named": scores("t", [])}
    caveats = transfer_caveats(candidate, ("transfer_papers", "transfer_named"), 30)
    assert caveats == [
        "transfer_papers: 12 queries, fewer than promote.min_transfer_queries (30): too few "
        "to decide, a loss there may go unseen",
        "transfer_named: 0 queries, fewer than promote.min_transfer_queries (30): too few "
        "to decide, a loss there may go unseen",
    ]
    assert transfer_caveats(candidate, ("transfer_papers",), 12) == []
