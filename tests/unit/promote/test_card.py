"""The pure parts of the MLflow record: headline numbers, the model card, the README
section, and the decision a version's tags record (both layouts)."""

from __future__ import annotations

import dataclasses
import json

from pipelines.promote.card import CardFacts, decision_line, model_card, model_readme
from pipelines.promote.decision import Decision
from pipelines.promote.headline import run_metrics
from pipelines.promote.run_inputs import dvc_md5_of
from pipelines.promote.tags import recorded_decision, recorded_figures
from pipelines.registry.metric_records import SetFigures

WON = Decision(
    promote=True,
    reason="promoted over the champion: mrr@10 0.6560 > 0.6010 (+0.0550)",
    p_value=0.0001,
    compared_against="champion",
    deltas={"mrr@10": 0.055, "ndcg@10": 0.03},
    candidate={"mrr@10": 0.656, "ndcg@10": 0.61},
    other={"mrr@10": 0.601, "ndcg@10": 0.58},
    query_set="masked",
)
#: WON's figures: the masked set decided; the named set follows, its numbers its own.
FIGURES = (
    SetFigures("masked", 194, WON.candidate, {"mrr@10": 0.47, "ndcg@10": 0.45}, WON.other, 0.0001),
    SetFigures(
        "named",
        194,
        {"mrr@10": 0.74, "ndcg@10": 0.71},
        {"mrr@10": 0.61, "ndcg@10": 0.6},
        {"mrr@10": 0.73, "ndcg@10": 0.7},
        0.42,
    ),
)


def facts(decision: Decision = WON) -> CardFacts:
    return CardFacts(
        registered_model="math-embed",
        fingerprint="f" * 64,
        decision=decision,
        figures=(
            FIGURES
            if decision.compared_against == "champion"
            else (dataclasses.replace(FIGURES[0], champion=None),)
        ),
        compared_version="2" if decision.compared_against == "champion" else None,
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


def test_run_metrics_name_their_set_and_are_mlflow_safe() -> None:
    metrics = run_metrics(FIGURES)
    assert "@" not in "".join(metrics)
    assert metrics["masked.candidate_mrr_at_10"] == 0.656
    assert metrics["masked.base_mrr_at_10"] == 0.47
    assert metrics["masked.champion_ndcg_at_10"] == 0.58
    assert metrics["named.base_mrr_at_10"] == 0.61
    assert metrics["masked.p_value"] == 0.0001 and metrics["named.queries"] == 194.0
    no_champion = run_metrics([SetFigures("named", 3, {"mrr@10": 0.5}, {"mrr@10": 0.4})])
    assert no_champion == {
        "named.queries": 3.0,
        "named.candidate_mrr_at_10": 0.5,
        "named.base_mrr_at_10": 0.4,
    }


def test_the_card_puts_the_decision_first_and_describes_the_eval_set() -> None:
    card = model_card(facts(), version="3")
    first = card.splitlines()[0]
    assert first == (
        "**Promoted math-embed v3 to @champion over champion v2 on the masked set: "
        "MRR@10 0.6560 vs 0.6010 (+0.0550, p = 0.0001)**"
    )
    rows = [line for line in card.splitlines() if line.startswith("| ")]
    assert rows[2:] == [  # the deciding set first, then each other set, each its own
        "| masked | 194 | MRR@10 | 0.6560 | 0.4700 (+0.1860) | 0.6010 (+0.0550) |",
        "| masked | 194 | NDCG@10 | 0.6100 | 0.4500 (+0.1600) | 0.5800 (+0.0300) |",
        "| named | 194 | MRR@10 | 0.7400 | 0.6100 (+0.1300) | 0.7300 (+0.0100) |",
        "| named | 194 | NDCG@10 | 0.7100 | 0.6000 (+0.1100) | 0.7000 (+0.0100) |",
    ]
    assert "Query sets: masked (194 queries), named (194 queries)" in card
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
        "decided_on": "masked",
        "sets": {found.query_set: found.to_json() for found in FIGURES},
    }
    assert recorded_decision({"decision_record": json.dumps(record)}) == WON
    assert recorded_figures({"decision_record": json.dumps(record)}) == FIGURES
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
    unnamed = dataclasses.replace(WON, query_set="unrecorded")  # the old layouts named none
    assert recorded_decision(legacy) == unnamed
    # The old layouts' figures: only the candidate and the side it was compared with, from
    # the one set they were decided on (their base scores may be another set's).
    assert recorded_figures(legacy) == (
        SetFigures("unrecorded", 0, WON.candidate, {}, WON.other, WON.p_value),
    )


def test_a_file_gets_the_dvc_hash_of_the_closest_tracked_path() -> None:
    hashes = {"data/validated": "aaa.dir", "data/validated/pairs.parquet": "bbb", "data/x": "c"}
    assert dvc_md5_of("data/validated/pairs.parquet", hashes) == "bbb"
    assert dvc_md5_of("data/validated/queries.parquet", hashes) == "aaa.dir"
    assert dvc_md5_of("data/validatedX/q.parquet", hashes) is None
