"""A decision's record never mixes sets: every number beside a set's name is on that set's
queries, the deciding set's figures lead, and each other set follows on its own line.

The demo's first line said ``MRR@10 0.2711 vs base 0.1970``: the candidate on the masked
set against the base model on the pooled meaning set. Here the sets differ on purpose, so
a figure taken from the wrong set shows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from flows.report import decision_lines
from pipelines.common.config import PromoteParams
from pipelines.common.io import write_json
from pipelines.common.tables import MEANING_SETS, PASSAGE_SETS
from pipelines.promote.decision import Scores, decide_on_meaning, set_figures
from pipelines.promote.scoring import MEANING, pooled
from pipelines.registry.metric_records import PromotionRecord, SetFigures
from pipelines.registry.reporting import PROMOTED, round_p_value

RULE = PromoteParams(
    metrics=("mrr@10", "ndcg@10"),
    significance=True,
    significance_metric="mrr@10",
    alpha=0.01,
    n_resamples=2000,
    seed=3,
)


def scores(prefix: str, mrr: list[float]) -> Scores:
    values = np.asarray(mrr, dtype=np.float64)
    ids = tuple(f"{prefix}{i}" for i in range(len(values)))
    return Scores(
        ids,
        {"mrr@10": float(values.mean()), "ndcg@10": float(values.mean()) / 2},
        {"mrr@10": values, "ndcg@10": values / 2},
    )


def sides() -> dict[str, dict[str, Scores]]:
    """Masked wins clearly; described does not; every set's base differs from the others."""
    candidate = {
        "named": scores("n", [0.75] * 30),
        "masked": scores("m", [0.375] * 30),
        "described": scores("d", [0.25, 0.375] * 15),
    }
    base = {
        "named": scores("n", [0.625] * 30),
        "masked": scores("m", [0.125] * 30),
        "described": scores("d", [0.375, 0.25] * 15),
    }
    for side in (candidate, base):
        side[MEANING] = pooled([(name, side[name]) for name in MEANING_SETS])
    return {"candidate": candidate, "base": base}


def decided() -> tuple[PromotionRecord, dict[str, dict[str, Scores]]]:
    sets = sides()
    decision = decide_on_meaning(
        sets["candidate"],
        None,
        sets["base"],
        RULE,
        meaning_sets=MEANING_SETS,
        guarded_sets=PASSAGE_SETS,
    )
    record = PromotionRecord(
        decision=PROMOTED if decision.promote else "not promoted",
        reason=decision.reason,
        compared_against=decision.compared_against,
        decided_on=decision.query_set,
        sets=set_figures(decision, sets, RULE),
        significance_metric=RULE.significance_metric,
        registered_model="math-embed",
        version="1",
    )
    return record, sets


def test_the_deciding_sets_base_figure_is_that_sets() -> None:
    record, sets = decided()
    assert record.decided_on == "masked" and record.promoted
    deciding = record.sets[0]
    assert deciding.query_set == "masked"
    # The masked base (0.125), not the pooled meaning set's (0.21875) nor another set's.
    assert deciding.base == {"mrr@10": 0.125, "ndcg@10": 0.0625}
    assert sets["base"][MEANING].means["mrr@10"] == 0.21875
    assert deciding.candidate == {"mrr@10": 0.375, "ndcg@10": 0.1875}
    assert deciding.delta("mrr@10", "base") == 0.25
    assert deciding.p_value is not None and deciding.p_value < 0.01


def test_every_set_follows_with_only_its_own_figures() -> None:
    record, sets = decided()
    assert [found.query_set for found in record.sets] == ["masked", "named", "described", MEANING]
    for found in record.sets:
        for metric in RULE.metrics:
            assert found.candidate[metric] == sets["candidate"][found.query_set].means[metric]
            assert found.base[metric] == sets["base"][found.query_set].means[metric]
        assert found.queries == len(sets["candidate"][found.query_set].query_ids)
        assert found.champion is None


def test_the_reports_first_line_compares_one_set_named_beside_it() -> None:
    record, _ = decided()
    lines = decision_lines(record, [], {})
    assert lines[0] == (
        "Promoted math-embed v1 to @champion on the masked set (30 queries): "
        "MRR@10 0.3750 vs base 0.1250 (+0.2500, p = 0.0005)"
    )
    assert lines[1] == "  NDCG@10 0.1875 vs base 0.0625 (+0.1250)"
    assert lines[2] == (
        "  on the named set (30 queries): MRR@10 0.7500 vs base 0.6250 (+0.1250, p = 0.0005), "
        "NDCG@10 0.3750 vs base 0.3125 (+0.0625)"
    )
    assert lines[3].startswith("  on the described set (30 queries): MRR@10 0.3125 vs base 0.3125")
    assert lines[4].startswith("  on the meaning set (60 queries): MRR@10 0.3438 vs base 0.2188")


def test_the_record_reads_back_what_it_wrote(tmp_path: Path) -> None:
    record, _ = decided()
    path = tmp_path / "promotion.json"
    write_json(path, record.to_json(), sort_keys=False)
    read = PromotionRecord.read(path)
    assert read is not None
    assert read.decided_on == "masked" and [f.query_set for f in read.sets][0] == "masked"
    assert read.sets[0] == SetFigures(
        "masked",
        30,
        {"mrr@10": 0.375, "ndcg@10": 0.1875},
        {"mrr@10": 0.125, "ndcg@10": 0.0625},
        None,
        round_p_value(record.sets[0].p_value),
    )
    assert read.to_json() == record.to_json()
    assert PromotionRecord.read(tmp_path / "none.json") is None


def test_an_older_record_keeps_only_figures_from_one_set() -> None:
    # The old flat keys put the pooled set's base beside the masked candidate: not read.
    old = {
        "decision": "promoted",
        "candidate_mrr@10": 0.2711,
        "base_mrr@10": 0.197,
        "compared_against": "base",
        "candidate": {"mrr@10": 0.2711},
        "base": {"mrr@10": 0.1464},
        "p_value": 0.0001,
    }
    record = PromotionRecord.from_json(old)
    assert record.decided_on == "unrecorded"
    assert record.sets == (
        SetFigures("unrecorded", 0, {"mrr@10": 0.2711}, {"mrr@10": 0.1464}, None, 0.0001),
    )
