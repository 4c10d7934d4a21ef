"""The promotion rule: should a candidate model replace the current one? Pure, no I/O.

:func:`decide` compares the candidate's retrieval scores with the champion's (or, while
there is no champion yet, the base model's) under the rule from ``params.yaml``
(:class:`~pipelines.common.config.PromoteParams`):

* every metric in ``rule.metrics`` (default MRR@10 and NDCG@10) must be higher by more
  than ``rule.min_margin`` (default 0: strictly higher; a tie is not an improvement);
* with ``rule.significance`` on, the paired test (``metrics_rs.paired_test``) on the
  per-query ``rule.significance_metric`` must also give ``p < rule.alpha``.

Both sides must have been scored on the same queries, in the same order: comparing means
over different query sets says nothing about which model is better, so :func:`decide`
refuses (:class:`QueryMismatchError`) instead. The registry shell
(:mod:`pipelines.promote.promotion`) gathers the scores and acts on the :class:`Decision`.

:func:`decide_for_champion` covers the one case :func:`decide` cannot: the champion itself
presented again on new evaluation data. It stays champion (a model compared with itself
always ties, which would demote it for nothing) and the record says how it does against
the base model on the new data.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from pipelines.common.config import PromoteParams
from pipelines.registry.metric_records import UNRECORDED, SetFigures
from pipelines.registry.reporting import format_delta, format_p_value, format_score

Side = Literal["champion", "base"]


class QueryMismatchError(ValueError):
    """The two models were scored on different query lists; their means do not compare."""


@dataclass(frozen=True)
class Scores:
    """One model's retrieval scores on one query set.

    ``means`` maps a metric name (``metrics_rs.evaluate``'s, e.g. ``"mrr@10"``) to its
    mean over the queries; ``per_query`` maps a metric name to one value per query,
    aligned with ``query_ids``.
    """

    query_ids: tuple[str, ...]
    means: Mapping[str, float]
    per_query: Mapping[str, npt.NDArray[np.float64]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for metric, values in self.per_query.items():
            if len(values) != len(self.query_ids):
                raise ValueError(
                    f"per-query {metric} has {len(values)} values for "
                    f"{len(self.query_ids)} query ids"
                )


@dataclass(frozen=True)
class Decision:
    """The outcome of :func:`decide`.

    ``deltas`` maps each rule metric to ``candidate - other``; ``candidate`` and
    ``other`` hold the two sides' means of the rule metrics, both on ``query_set``'s
    queries. ``p_value`` comes from the paired test on ``rule.significance_metric``
    whenever both sides have per-query values for it (reported even when the gate is
    off), else ``None``.
    """

    promote: bool
    reason: str
    p_value: float | None
    compared_against: Side
    deltas: dict[str, float]
    candidate: dict[str, float]
    other: dict[str, float]
    #: The query set every number above comes from (the caller names it: :func:`decide`
    #: sees only scores).
    query_set: str = UNRECORDED


def decide(
    candidate: Scores, champion: Scores | None, base: Scores, rule: PromoteParams
) -> Decision:
    """Promote ``candidate`` over ``champion`` (or over ``base`` when there is no champion)?

    Raises :class:`QueryMismatchError` when the two compared sides were scored on
    different query lists, and ``ValueError`` when a rule metric is missing from either.
    """
    side: Side = "champion" if champion is not None else "base"
    other = champion if champion is not None else base
    _require_same_queries(candidate, other, side)
    if not rule.metrics:
        raise ValueError("promote.metrics is empty: name at least one metric, e.g. mrr@10")
    candidate_means = {metric: _mean(candidate, metric, "candidate") for metric in rule.metrics}
    other_means = {metric: _mean(other, metric, side) for metric in rule.metrics}
    deltas = {metric: candidate_means[metric] - other_means[metric] for metric in rule.metrics}

    p_value = _p_value(candidate, other, rule)
    failures = [
        _shortfall(metric, candidate_means[metric], other_means[metric], side, rule.min_margin)
        for metric in rule.metrics
        # `c > o + margin`, not `c - o > margin`: 0.55 - 0.50 > 0.05 in floating point.
        # Both are False for NaN, so a NaN metric never promotes.
        if not candidate_means[metric] > other_means[metric] + rule.min_margin
    ]
    if rule.significance:
        if p_value is None:
            raise ValueError(
                f"the significance gate needs per-query {rule.significance_metric} for the "
                f"candidate and the {side}; one of them has none"
            )
        if not p_value < rule.alpha:
            failures.append(
                f"the gain in {rule.significance_metric} is not significant "
                f"({rule.test_method} test {format_p_value(p_value)}, needs p < {rule.alpha})"
            )
    if failures:
        return Decision(
            promote=False,
            reason=f"not promoted over the {side}: " + "; ".join(failures),
            p_value=p_value,
            compared_against=side,
            deltas=deltas,
            candidate=candidate_means,
            other=other_means,
        )
    gains = ", ".join(
        f"{metric} {format_score(candidate_means[metric])} > "
        f"{format_score(other_means[metric])} ({format_delta(deltas[metric])})"
        for metric in rule.metrics
    )
    significance = (
        f"; {rule.test_method} test {format_p_value(p_value)}" if p_value is not None else ""
    )
    return Decision(
        promote=True,
        reason=f"promoted over the {side}: {gains}{significance}",
        p_value=p_value,
        compared_against=side,
        deltas=deltas,
        candidate=candidate_means,
        other=other_means,
    )


def decide_for_champion(champion: Scores, base: Scores, rule: PromoteParams) -> Decision:
    """The current champion re-presented (new evaluation data): it stays champion.

    It is compared with the base model for the record only: ``promote`` is true whatever
    that comparison says, because demoting the champion without a replacement would leave
    no model to serve. A person withdraws a champion with ``mathembed rollback``; the
    reason says when the champion no longer beats its base model on the new data.
    """
    against_base = decide(champion, None, base, rule)
    verdict = "still beats" if against_base.promote else "NO LONGER beats"
    return dataclasses.replace(
        against_base,
        promote=True,
        reason=(
            f"kept as champion (it is the champion, so it is not compared with itself); on "
            f"this evaluation data it {verdict} the base model ({against_base.reason})"
        ),
    )


def _require_same_queries(candidate: Scores, other: Scores, side: str) -> None:
    if candidate.query_ids == other.query_ids:
        return
    only_candidate = sorted(set(candidate.query_ids) - set(other.query_ids))
    only_other = sorted(set(other.query_ids) - set(candidate.query_ids))
    detail = (
        "the same queries in a different order"
        if not only_candidate
        and not only_other
        and len(candidate.query_ids) == len(other.query_ids)
        else (
            f"{len(candidate.query_ids)} vs {len(other.query_ids)} queries; only the "
            f"candidate's: {_preview(only_candidate)}; only the {side}'s: {_preview(only_other)}"
        )
    )
    raise QueryMismatchError(
        f"the candidate and the {side} were not scored on the same query list ({detail}); "
        "score both on the same queries in the same run (rerun `dvc repro` and "
        "`mathembed promote`)"
    )


def _preview(ids: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(ids[:limit]) or "none"
    return shown + (f" (+{len(ids) - limit} more)" if len(ids) > limit else "")


def _mean(scores: Scores, metric: str, side: str) -> float:
    if metric not in scores.means:
        raise ValueError(
            f"the {side}'s scores have no {metric!r} (they have {sorted(scores.means)}); "
            "check promote.metrics against the evaluate stage's metric names"
        )
    return float(scores.means[metric])


def _shortfall(metric: str, candidate: float, other: float, side: str, margin: float) -> str:
    if math.isnan(candidate) or math.isnan(other):
        return f"{metric} is NaN (candidate {candidate}, {side} {other})"
    needed = "higher than" if margin == 0 else f"more than {margin} above"
    return (
        f"{metric} {format_score(candidate)} is not {needed} the {side}'s "
        f"{format_score(other)} ({format_delta(candidate - other)})"
    )


def _p_value(candidate: Scores, other: Scores, rule: PromoteParams) -> float | None:
    metric = rule.significance_metric
    if metric not in candidate.per_query or metric not in other.per_query:
        return None
    # Imported here: the registry modules import this one, and reading the registry
    # (train's live run, `mathembed status`) must not need the extension built.
    from pipelines.evaluate.scoring import paired_test_p_value

    return paired_test_p_value(
        candidate.per_query[metric],
        other.per_query[metric],
        method=rule.test_method,
        n_resamples=rule.n_resamples,
        seed=rule.seed,
    )


def guard_named(
    decision: Decision,
    candidate: Scores,
    other: Scores,
    rule: PromoteParams,
    query_set: str = "named",
    against: Side | None = None,
) -> Decision:
    """A promotion stands only without a significant loss on ``query_set`` (the
    candidate's mean below the other side's with the paired test's p < alpha): finding
    statements from other words must not cost finding them by name, nor the reverse.
    ``other`` is the side compared (``decision.compared_against``) unless ``against``
    names another (the base, beside a champion)."""
    against = against or decision.compared_against
    if not decision.promote or not candidate.query_ids:
        return decision
    _require_same_queries(candidate, other, against)
    metric = rule.significance_metric
    if metric not in candidate.means or metric not in other.means:
        return decision
    p_value = _p_value(candidate, other, rule)
    loss = candidate.means[metric] < other.means[metric]
    if not (loss and p_value is not None and p_value < rule.alpha):
        return decision
    assert p_value is not None
    return dataclasses.replace(
        decision,
        promote=False,
        reason=(
            f"not promoted over the {decision.compared_against}: on the {query_set} set "
            f"{metric} {format_score(candidate.means[metric])} < the {against}'s "
            f"{format_score(other.means[metric])}, a "
            f"significant loss ({rule.test_method} test {format_p_value(p_value)}); the "
            f"gain alone said: {decision.reason}"
        ),
    )


def describe_sets(sets: Mapping[str, Mapping[str, Scores]], side: str, metric: str) -> str:
    """One line per set: the candidate's ``metric`` against ``side``'s and the base's."""
    lines = []
    for name, candidate in sets.get("candidate", {}).items():
        if not candidate.query_ids or metric not in candidate.means:
            continue
        others = [
            f"{other_side} {format_score(sets[other_side][name].means[metric])}"
            for other_side in dict.fromkeys((side, "base"))
            if other_side in sets and metric in sets[other_side][name].means
        ]
        lines.append(
            f"{name} ({len(candidate.query_ids)} queries): {metric} candidate "
            f"{format_score(candidate.means[metric])}"
            + (f" vs {', '.join(others)}" if others else "")
        )
    return "; ".join(lines)


def decide_on_meaning(
    candidate: Mapping[str, Scores],
    champion: Mapping[str, Scores] | None,
    base: Mapping[str, Scores],
    rule: PromoteParams,
    *,
    meaning_sets: Sequence[str],
    guarded_sets: Sequence[str],
) -> Decision:
    """The gate on meaning: promote when the candidate wins significantly on at least one
    of ``meaning_sets`` and loses significantly on none of ``guarded_sets``.

    Each meaning set with queries is decided by :func:`decide` at ``alpha / k`` (Bonferroni
    over the k sets tried, so the chance of promoting on noise stays ``alpha``); the
    decision kept is the winning set's with the smallest p (or, without a winner, every
    set's shortfall). Then :func:`guard_named`'s rule runs on each guarded set: a
    significant loss anywhere refuses.
    """
    tried = [name for name in meaning_sets if candidate[name].query_ids]
    if not tried:
        raise ValueError(
            f"no query in the meaning sets {list(meaning_sets)}: the gate on meaning has "
            "nothing to decide on; check validate.min_described_queries or set "
            "promote.gate: named"
        )
    share = dataclasses.replace(rule, alpha=rule.alpha / len(tried))
    decided = {
        name: decide(
            candidate[name], champion[name] if champion is not None else None, base[name], share
        )
        for name in tried
    }

    def p_of(name: str) -> float:
        p_value = decided[name].p_value
        return 1.0 if p_value is None else p_value

    winners = sorted((name for name, found in decided.items() if found.promote), key=p_of)
    if winners:
        chosen = decided[winners[0]]
        decision = dataclasses.replace(
            chosen, reason=f"on the {winners[0]} set: {chosen.reason}", query_set=winners[0]
        )
    else:
        first = decided[tried[0]]
        decision = dataclasses.replace(
            first,
            query_set=tried[0],
            reason=f"not promoted over the {first.compared_against}: no meaning set shows a "
            f"significant gain (each needs p < {share.alpha:g}, alpha split over "
            f"{len(tried)} sets): "
            + "; ".join(f"{name}: {decided[name].reason}" for name in tried),
        )
    other = champion if champion is not None else base
    for name in guarded_sets:
        decision = guard_named(decision, candidate[name], other[name], rule, name)
    return decision


def guard_transfer(
    decision: Decision,
    sets: Mapping[str, Mapping[str, Scores]],
    rule: PromoteParams,
    transfer_sets: Sequence[str],
) -> Decision:
    """A promotion stands only without a significant loss on any of ``transfer_sets``
    against the champion **or** the base (``sets``: side -> set -> scores), whichever
    gate decided: a model must not forget, where it was not tuned, what either knew."""
    candidate = sets["candidate"]
    sides: tuple[Side, ...] = ("champion", "base")
    for name in transfer_sets:
        for against in sides:
            if against in sets and name in candidate and name in sets[against]:
                decision = guard_named(
                    decision, candidate[name], sets[against][name], rule, name, against
                )
    return decision


def transfer_caveats(
    candidate: Mapping[str, Scores], transfer_sets: Sequence[str], min_queries: int
) -> list[str]:
    """What the transfer guard could not see: a set with fewer than ``min_queries``
    queries (``promote.min_transfer_queries``) is guarded all the same, but a loss there
    may be too small to show."""
    caveats = []
    for name in transfer_sets:
        found = len(candidate[name].query_ids) if name in candidate else 0
        if found < min_queries:
            caveats.append(
                f"{name}: {found} queries, fewer than promote.min_transfer_queries "
                f"({min_queries}): too few to decide, a loss there may go unseen"
            )
    return caveats


def set_figures(
    decision: Decision, sets: Mapping[str, Mapping[str, Scores]], rule: PromoteParams
) -> tuple[SetFigures, ...]:
    """The decision's figures, one :class:`SetFigures` per set the candidate was scored
    on, the deciding set (``decision.query_set``) first: each side's rule metrics on that
    set's queries and the paired test's p of the candidate against the side compared.
    ``sets`` maps a side (``candidate``, ``base``, ``champion``) to set -> scores."""
    candidate_sets = sets.get("candidate", {})
    order = [decision.query_set, *(name for name in candidate_sets if name != decision.query_set)]
    figures = []
    for name in order:
        if name not in candidate_sets or not candidate_sets[name].query_ids:
            continue
        candidate = candidate_sets[name]
        base = sets["base"][name]
        champion = sets["champion"][name] if "champion" in sets else None
        compared = champion if decision.compared_against == "champion" else base
        figures.append(
            SetFigures(
                query_set=name,
                queries=len(candidate.query_ids),
                candidate=_rule_means(candidate, rule),
                base=_rule_means(base, rule),
                champion=None if champion is None else _rule_means(champion, rule),
                p_value=None if compared is None else _p_value(candidate, compared, rule),
            )
        )
    return tuple(figures)


def _rule_means(scores: Scores, rule: PromoteParams) -> dict[str, float]:
    return {
        metric: float(scores.means[metric]) for metric in rule.metrics if metric in scores.means
    }
