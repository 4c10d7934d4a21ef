"""How results are written for people (pipelines.registry.reporting): one spelling of every
metric family, one reading of the recorded decision."""

from __future__ import annotations

from pathlib import Path

from pipelines.common.allowed import METRIC_FAMILIES
from pipelines.common.io import write_json
from pipelines.common.paths import Paths
from pipelines.registry.metric_records import PromotionRecord
from pipelines.registry.reporting import (
    FAMILY_LABELS,
    FAMILY_TITLES,
    NOT_PROMOTED,
    PROMOTED,
    format_delta,
    format_score,
    metric_label,
    mlflow_name,
    promotion_file,
)


def test_every_metric_family_has_one_label_and_one_title() -> None:
    assert set(FAMILY_LABELS) == set(FAMILY_TITLES) == set(METRIC_FAMILIES)
    assert [metric_label(f"{family}@10") for family in METRIC_FAMILIES] == [
        "MRR@10",
        "NDCG@10",
        "Recall@10",
        "Precision@10",
        "MAP@10",
        "Hit@10",
    ]
    assert FAMILY_TITLES["hit"] == "Hit rate"  # a figure's panel says it in full
    assert mlflow_name("mrr@10") == "mrr_at_10"  # MLflow keys may not hold "@"


def test_scores_have_four_decimals_and_differences_a_sign() -> None:
    assert (format_score(0.65571), format_delta(0.05467), format_delta(-0.0032)) == (
        "0.6557",
        "+0.0547",
        "-0.0032",
    )


def test_the_decision_is_read_from_the_record_or_its_older_flag(tmp_path: Path) -> None:
    path = promotion_file(Paths(tmp_path))
    assert PromotionRecord.read(path) is None  # no promotion yet
    write_json(path, {"decision": NOT_PROMOTED, "promoted": True})
    record = PromotionRecord.read(path)
    assert record is not None and record.decision == NOT_PROMOTED  # the decision wins
    assert PromotionRecord.from_json({"promoted": True}).decision == PROMOTED
    assert PromotionRecord.from_json({"decision": "maybe"}).decision == NOT_PROMOTED
