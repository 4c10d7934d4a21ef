"""The promotion rule (pipelines.promote.decision.decide): a decision table, no registry."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pipelines.common.config import PromoteParams
from pipelines.promote.decision import (
    Decision,
    QueryMismatchError,
    Scores,
    decide,
    decide_for_champion,
)

QUERY_IDS = tuple(f"q{i:02d}" for i in range(12))


def scores(mrr: float, ndcg: float, per_query_mrr: list[float] | None = None) -> Scores:
    per_query = {} if per_query_mrr is None else {"mrr@10": np.array(per_query_mrr)}
    return Scores(QUERY_IDS, {"mrr@10": mrr, "ndcg@10": ndcg, "recall@10": 0.5}, per_query)


def rule(**changes: object) -> PromoteParams:
    """The metric rule alone unless a test asks for the significance gate (its own tests)."""
    settings: dict[str, object] = {"significance": False, **changes}
    return dataclasses.replace(PromoteParams(), **settings)  # type: ignore[arg-type]


BASE = scores(0.20, 0.25)


@pytest.mark.parametrize(
    ("candidate", "champion", "promote", "reason_part"),
    [
        ((0.60, 0.55), (0.50, 0.45), True, "promoted over the champion"),
        ((0.60, 0.40), (0.50, 0.45), False, "ndcg@10 0.4000 is not higher than"),
        ((0.40, 0.55), (0.50, 0.45), False, "mrr@10 0.4000 is not higher than"),
        ((0.50, 0.55), (0.50, 0.45), False, "mrr@10 0.5000 is not higher than"),  # a tie
        ((0.50, 0.45), (0.50, 0.45), False, "not promoted over the champion"),
        ((float("nan"), 0.55), (0.50, 0.45), False, "mrr@10 is NaN"),
    ],
)
def test_both_metrics_must_be_strictly_higher_than_the_champion(
    candidate: tuple[float, float],
    champion: tuple[float, float],
    promote: bool,
    reason_part: str,
) -> None:
    decision = decide(scores(*candidate), scores(*champion), BASE, rule())
    assert decision.promote is promote
    assert decision.compared_against == "champion"
    assert reason_part in decision.reason
    assert decision.candidate["mrr@10"] == pytest.approx(candidate[0], nan_ok=True)
    assert decision.other == {"mrr@10": champion[0], "ndcg@10": champion[1]}


def test_deltas_are_candidate_minus_the_compared_side() -> None:
    decision = decide(scores(0.60, 0.55), scores(0.50, 0.45), BASE, rule())
    assert decision.deltas == pytest.approx({"mrr@10": 0.10, "ndcg@10": 0.10})
    assert decision.p_value is None  # no per-query scores, gate off: nothing to test


def test_with_no_champion_the_candidate_must_beat_the_base_model() -> None:
    beats_base = decide(scores(0.30, 0.30), None, BASE, rule())
    assert beats_base.promote
    assert beats_base.compared_against == "base"
    assert "over the base" in beats_base.reason
    assert beats_base.deltas == pytest.approx({"mrr@10": 0.10, "ndcg@10": 0.05})

    below_base = decide(scores(0.30, 0.20), None, BASE, rule())
    assert not below_base.promote
    assert below_base.compared_against == "base"
    assert "ndcg@10 0.2000 is not higher than the base's 0.2500" in below_base.reason


def test_a_champion_is_the_bar_even_when_the_base_is_lower() -> None:
    decision = decide(scores(0.30, 0.30), scores(0.40, 0.40), BASE, rule())
    assert not decision.promote
    assert decision.compared_against == "champion"


@pytest.mark.parametrize(
    ("delta", "promote"), [(0.051, True), (0.05, False), (0.03, False), (-0.01, False)]
)
def test_minimum_margin(delta: float, promote: bool) -> None:
    champion = scores(0.50, 0.50)
    candidate = scores(0.50 + delta, 0.60)
    decision = decide(candidate, champion, BASE, rule(min_margin=0.05))
    assert decision.promote is promote
    if not promote:
        assert "more than 0.05 above" in decision.reason


def test_the_rule_metrics_come_from_params() -> None:
    candidate = scores(0.60, 0.40)
    champion = scores(0.50, 0.45)
    assert not decide(candidate, champion, BASE, rule()).promote
    mrr_only = decide(candidate, champion, BASE, rule(metrics=("mrr@10",)))
    assert mrr_only.promote
    assert set(mrr_only.deltas) == {"mrr@10"}


def test_a_rule_metric_missing_from_the_scores_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"no 'map@10'.*promote.metrics"):
        decide(scores(0.6, 0.6), scores(0.5, 0.5), BASE, rule(metrics=("mrr@10", "map@10")))
    with pytest.raises(ValueError, match="promote.metrics is empty"):
        decide(scores(0.6, 0.6), scores(0.5, 0.5), BASE, rule(metrics=()))


# Per-query MRR: the candidate wins on every one of 12 queries (p = 2/4096 exactly under the
# sign-flip test), or wins on 7 and loses on 5 (far from significant).
CLEAR_WIN = ([1.0] * 12, [0.5] * 12)
MIXED = ([1.0] * 7 + [0.5] * 5, [0.5] * 7 + [1.0] * 5)


def test_significance_gate_passes_a_consistent_win() -> None:
    candidate_pq, champion_pq = CLEAR_WIN
    decision = decide(
        scores(1.0, 0.9, candidate_pq), scores(0.5, 0.5, champion_pq), BASE, rule(significance=True)
    )
    assert decision.promote
    assert decision.p_value == pytest.approx(2 / 4096)
    assert "p = " in decision.reason


def test_significance_gate_blocks_a_noisy_win() -> None:
    candidate_pq, champion_pq = MIXED
    candidate = scores(float(np.mean(candidate_pq)), 0.9, candidate_pq)
    champion = scores(float(np.mean(champion_pq)), 0.5, champion_pq)
    assert decide(candidate, champion, BASE, rule()).promote  # higher means alone suffice
    gated = decide(candidate, champion, BASE, rule(significance=True, alpha=0.05))
    assert not gated.promote
    assert gated.p_value is not None and gated.p_value > 0.05
    assert "not significant" in gated.reason
    # The gate's alpha is the param: a lax alpha lets the same scores through.
    assert decide(candidate, champion, BASE, rule(significance=True, alpha=0.9)).promote


@pytest.mark.parametrize("method", ["randomization", "bootstrap", "t"])
def test_the_test_method_comes_from_params(method: str) -> None:
    candidate_pq, champion_pq = MIXED
    candidate = scores(float(np.mean(candidate_pq)), 0.9, candidate_pq)
    champion = scores(float(np.mean(champion_pq)), 0.5, champion_pq)
    decision = decide(candidate, champion, BASE, rule(test_method=method))
    assert decision.p_value is not None and 0.0 < decision.p_value <= 1.0
    t_test = decide(candidate, champion, BASE, rule(test_method="t"))
    if method != "t":
        assert decision.p_value != t_test.p_value


def test_significance_gate_without_per_query_scores_is_an_error() -> None:
    with pytest.raises(ValueError, match="per-query mrr@10"):
        decide(scores(0.6, 0.6), scores(0.5, 0.5), BASE, rule(significance=True))


def test_queries_skipped_by_both_sides_do_not_enter_the_test() -> None:
    nan = float("nan")
    candidate = scores(1.0, 0.9, [1.0] * 11 + [nan])
    champion = scores(0.5, 0.5, [0.5] * 11 + [nan])
    decision = decide(candidate, champion, BASE, rule(significance=True))
    assert decision.p_value == pytest.approx(2 / 2048)


def test_different_query_lists_are_refused() -> None:
    champion = Scores(QUERY_IDS[:-1] + ("q99",), {"mrr@10": 0.1, "ndcg@10": 0.1})
    with pytest.raises(
        QueryMismatchError, match=r"only the candidate's: q11; only the champion's: q99"
    ):
        decide(scores(0.9, 0.9), champion, BASE, rule())


def test_the_same_queries_in_another_order_are_refused() -> None:
    champion = Scores(tuple(reversed(QUERY_IDS)), {"mrr@10": 0.1, "ndcg@10": 0.1})
    with pytest.raises(QueryMismatchError, match="different order"):
        decide(scores(0.9, 0.9), champion, BASE, rule())


def test_a_base_scored_on_other_queries_is_refused_when_there_is_no_champion() -> None:
    base = Scores(QUERY_IDS[:3], {"mrr@10": 0.1, "ndcg@10": 0.1})
    with pytest.raises(QueryMismatchError, match=r"12 vs 3 queries.*q03.*\(\+4 more\)"):
        decide(scores(0.9, 0.9), None, base, rule())


def test_a_champion_on_other_queries_is_refused_even_if_the_base_matches() -> None:
    champion = Scores(QUERY_IDS[:3], {"mrr@10": 0.1, "ndcg@10": 0.1})
    with pytest.raises(QueryMismatchError, match="champion"):
        decide(scores(0.9, 0.9), champion, BASE, rule())


def test_per_query_values_must_align_with_the_query_ids() -> None:
    with pytest.raises(ValueError, match="per-query mrr@10 has 2 values for 12 query ids"):
        Scores(QUERY_IDS, {"mrr@10": 0.5}, {"mrr@10": np.array([0.1, 0.2])})


def test_decision_is_a_plain_record() -> None:
    decision = decide(scores(0.6, 0.6), None, BASE, rule())
    assert isinstance(decision, Decision)
    assert dataclasses.asdict(decision)["compared_against"] == "base"


@pytest.mark.parametrize(
    ("champion", "verdict", "reason_part"),
    [
        ((0.30, 0.30), "still beats the base model", "promoted over the base"),
        ((0.30, 0.20), "NO LONGER beats the base model", "ndcg@10 0.2000 is not higher"),
        ((0.20, 0.25), "NO LONGER beats the base model", "mrr@10 0.2000 is not higher"),
    ],
)
def test_the_champion_presented_again_stays_champion_and_is_measured_against_the_base(
    champion: tuple[float, float], verdict: str, reason_part: str
) -> None:
    decision = decide_for_champion(scores(*champion), BASE, rule())
    assert decision.promote  # no replacement: it keeps the alias whatever the base scores
    assert decision.compared_against == "base"
    assert "not compared with itself" in decision.reason
    assert verdict in decision.reason and reason_part in decision.reason
    assert decision.other == {"mrr@10": 0.20, "ndcg@10": 0.25}
    assert decision.deltas == pytest.approx(
        {"mrr@10": champion[0] - 0.20, "ndcg@10": champion[1] - 0.25}
    )


def test_the_champion_presented_again_keeps_the_rule_checks() -> None:
    with pytest.raises(QueryMismatchError, match="base"):
        decide_for_champion(scores(0.9, 0.9), Scores(QUERY_IDS[:3], BASE.means), rule())
    with pytest.raises(ValueError, match="promote.metrics is empty"):
        decide_for_champion(scores(0.9, 0.9), BASE, rule(metrics=()))
