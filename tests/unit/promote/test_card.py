"""The pure parts of the MLflow record: headline numbers, the model card, the README
section, and the decision a version's tags record (both layouts)."""

from __future__ import annotations

import json

import pytest

from pipelines.promote.card import CardFacts, decision_line, model_card, model_readme
from pipelines.promote.decision import Decision
from pipelines.promote.headline import (
    evaluate_extras,
    evaluate_headline,
    promotion_headline,
    run_metrics,
)
from pipelines.promote.run_inputs import dvc_md5_of
from pipelines.promote.tags import recorded_base_scores, recorded_decision

WON = Decision(
    promote=True,
    reason="promoted over the champion: mrr@10 0.6560 > 0.6010 (+0.0550)",
    p_value=0.0001,
    compared_against="champion",
    deltas={"mrr@10": 0.055, "ndcg@10": 0.03},
    candidate={"mrr@10": 0.656, "ndcg@10": 0.61},
    other={"mrr@10": 0.601, "ndcg@10": 0.58},
)


def facts(decision: Decision = WON) -> CardFacts:
    return CardFacts(
        registered_model="math-embed",
        fingerprint="f" * 64,
        decision=decision,
        base_scores={"mrr@10": 0.47, "ndcg@10": 0.45},
        compared_version="2" if decision.compared_against == "champion" else None,
        queries=194,
        relevance_scope="defining",
        base_model="offline-minilm",
        training_data_hash="d" * 64,
        pairs=1421,
        pairs_dvc_md5="0123456789abcdef0123456789abcdef.dir",
        corpus_passages=3393,
        test_method="randomization",
        significance_metric="mrr@10",
        training_params={"epochs": 3, "learning_rate": 2e-5},
    )


def test_the_headline_is_derived_from_eval_json_when_evaluate_wrote_none() -> None:
    eval_json = {
        "n_queries": 194,
        "primary_dim": 384,
        "candidate": {"dim_384": {"mrr@10": 0.65612, "ndcg@10": 0.6}, "dim_64": {"mrr@10": 0.1}},
        "base": {"dim_384": {"mrr@10": 0.47, "ndcg@10": 0.5}},
    }
    assert evaluate_headline(None, eval_json) == {
        "queries": 194,
        "candidate_mrr@10": 0.6561,
        "base_mrr@10": 0.47,
        "delta_mrr@10": 0.1861,
        "p_mrr@10": None,
        "candidate_ndcg@10": 0.6,
        "base_ndcg@10": 0.5,
        "delta_ndcg@10": 0.1,
        "p_ndcg@10": None,
    }
    written = {"queries": 3, "candidate_mrr@10": 0.5}
    assert evaluate_headline(written, eval_json) == written  # evaluate's file wins
    # Evaluate adds its p-values, and only when it scored the queries promotion did.
    extras = {"queries": 194, "p_mrr@10": 0.01, "candidate_mrr@10": 0.7}
    assert evaluate_extras(extras, {"queries": 194}) == {"p_mrr@10": 0.01}
    assert evaluate_extras(extras, {"queries": 19}) == {}  # a stale eval.json


def test_promotion_headline_and_run_metrics_are_flat_and_mlflow_safe() -> None:
    flat = promotion_headline(WON, {"mrr@10": 0.47, "ndcg@10": 0.45})
    assert flat["decision"] == "promoted"
    assert flat["champion_mrr@10"] == 0.601
    assert flat["delta_champion_mrr@10"] == pytest.approx(0.055)
    assert flat["delta_base_ndcg@10"] == pytest.approx(0.16)
    assert flat["p_value"] == 0.0001
    metrics = run_metrics({"queries": 194, "p_mrr@10": None, "x": True}, flat)
    assert "@" not in "".join(metrics)
    assert metrics["candidate_mrr_at_10"] == 0.656 and metrics["queries"] == 194.0
    assert "p_mrr_at_10" not in metrics and "x" not in metrics and "decision" not in metrics
    against_base = promotion_headline(
        Decision(False, "no", None, "base", {"mrr@10": -0.1}, {"mrr@10": 0.4}, {"mrr@10": 0.5}),
        {"mrr@10": 0.5},
    )
    assert against_base["decision"] == "not promoted"
    assert against_base["champion_mrr@10"] is None


def test_the_card_puts_the_decision_first_and_describes_the_eval_set() -> None:
    card = model_card(facts(), version="3")
    first = card.splitlines()[0]
    assert first == (
        "**Promoted math-embed v3 to @champion over champion v2: "
        "MRR@10 0.6560 vs 0.6010 (+0.0550, p = 0.0001)**"
    )
    assert "| MRR@10 | 0.6560 | 0.4700 (+0.1860) | 0.6010 (+0.0550) |" in card
    assert "194 queries, one per held-out concept" in card
    assert "`pairs.qrels_scope = defining`" in card and "defines or states" in card
    assert "over 3393 passages" in card
    assert "Base model: `offline-minilm`" in card
    assert "1421 pairs" in card and "0123456789abcdef0123456789abcdef.dir" in card
    assert 'load_model("models:/math-embed/3")' in card
    lost = Decision(False, "not promoted", None, "base", {"mrr@10": -0.1}, {"mrr@10": 0.4},
                    {"mrr@10": 0.5})  # fmt: skip
    assert decision_line(facts(lost)).startswith("Not promoted: math-embed loses to the base")
    assert "champion v" not in model_card(facts(lost))  # no champion column without one


def test_the_readme_keeps_the_front_matter_and_replaces_its_own_section() -> None:
    original = "---\ntags:\n- sentence-transformers\n---\n\n# SentenceTransformer\n\nBody.\n"
    once = model_readme(original, "**Promoted** card")
    assert once.startswith("---\ntags:\n- sentence-transformers\n---\n<!-- mathembed:card -->")
    assert once.index("**Promoted** card") < once.index("# SentenceTransformer")
    twice = model_readme(once, "**Not promoted** card")
    assert "**Promoted** card" not in twice and twice.count("<!-- mathembed:card -->") == 1
    assert "Body." in twice
    assert model_readme(None, "card").startswith("<!-- mathembed:card -->\n# mathembed")


def test_a_decision_is_read_back_from_either_tag_layout() -> None:
    record = {
        "promote": True,
        "reason": WON.reason,
        "p_value": WON.p_value,
        "compared_against": "champion",
        "candidate": WON.candidate,
        "other": WON.other,
        "deltas": WON.deltas,
        "base": {"mrr@10": 0.47},
    }
    assert recorded_decision({"decision_record": json.dumps(record)}) == WON
    assert recorded_base_scores({"decision_record": json.dumps(record)}) == {"mrr@10": 0.47}
    legacy = {  # a version registered before decision_record existed
        "decision": "promoted",
        "reason": WON.reason,
        "p_value": "0.0001",
        "compared_against": "champion",
        "metrics": "mrr@10,ndcg@10",
        **{f"candidate.{m.replace('@', '_at_')}": repr(v) for m, v in WON.candidate.items()},
        **{f"champion.{m.replace('@', '_at_')}": repr(v) for m, v in WON.other.items()},
        **{f"delta.{m.replace('@', '_at_')}": repr(v) for m, v in WON.deltas.items()},
    }
    assert recorded_decision(legacy) == WON
    assert recorded_base_scores(legacy) == {}  # the old layout kept no base scores then


def test_a_file_gets_the_dvc_hash_of_the_closest_tracked_path() -> None:
    hashes = {"data/validated": "aaa.dir", "data/validated/pairs.parquet": "bbb", "data/x": "c"}
    assert dvc_md5_of("data/validated/pairs.parquet", hashes) == "bbb"
    assert dvc_md5_of("data/validated/queries.parquet", hashes) == "aaa.dir"
    assert dvc_md5_of("data/validatedX/q.parquet", hashes) is None
