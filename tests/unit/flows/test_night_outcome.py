"""What a night tells people (issue 13): the promotion table, the webhook notices, the MLflow
record of a failed night, and the work pools ``prefect deploy`` needs."""

from __future__ import annotations

from pathlib import Path
from uuid import uuid4

import pytest
import yaml
from mlflow import MlflowClient
from prefect.client.schemas.objects import FlowRun
from prefect.states import Failed
from repo import REPO
from webhook import receiving_webhook

from flows import hooks
from flows.outcome import failure_reason, outcome_notice, promotion_table
from flows.pools import deployment_pools, read_deployment_pools
from pipelines.common.config import load_params
from pipelines.common.paths import Paths
from pipelines.promote.decision import Decision
from pipelines.promote.promotion import PromotionResult
from pipelines.promote.run_log import OUTCOME_TAG, REASON_TAG
from pipelines.registry.metric_records import PromotionRecord, SetFigures
from pipelines.registry.mlflow_registry import tracking_uri
from pipelines.registry.reporting import metric_label


def promotion(*, promote: bool, against: str, tested: str = "mrr@10") -> PromotionRecord:
    """``metrics/promotion.json`` as promote writes it."""
    result = promotion_result(promote=promote, against=against, tested=tested)
    return PromotionRecord.from_json(result.as_json())


def promotion_result(
    *, promote: bool, against: str, already_registered: bool = False, tested: str = "mrr@10"
) -> PromotionResult:
    base = {"mrr@10": 0.5468, "ndcg@10": 0.5404}
    other = {"mrr@10": 0.601, "ndcg@10": 0.58} if against == "champion" else base
    candidate = {"mrr@10": 0.65612, "ndcg@10": 0.62418}
    decision = Decision(
        promote=promote,
        reason="better on every metric" if promote else "NDCG@10 did not improve",
        p_value=9.999000099990002e-05,
        compared_against="champion" if against == "champion" else "base",
        deltas={metric: candidate[metric] - other[metric] for metric in candidate},
        candidate=candidate,
        other=other,
        query_set="masked",
    )
    champion = other if against == "champion" else None
    figures = (
        SetFigures("masked", 194, candidate, base, champion, decision.p_value),
        SetFigures(  # the named set follows with its own figures
            "named",
            194,
            {"mrr@10": 0.7444, "ndcg@10": 0.716},
            {"mrr@10": 0.6094, "ndcg@10": 0.6131},
            None if champion is None else {"mrr@10": 0.7401, "ndcg@10": 0.7111},
            0.62,
        ),
    )
    return PromotionResult(
        registered_model="math-embed",
        version="3",
        fingerprint="f" * 64,
        run_id="r" * 32,
        decision=decision,
        compared_version="2" if against == "champion" else None,
        aliases={"champion": "3" if promote else "2", "challenger": None if promote else "3"},
        already_registered=already_registered,
        tracking_uri="sqlite:///mlruns/mlflow.db",
        decided_at="2026-11-24T02:00:00+00:00",
        figures=figures,
        significance_metric=tested,
    )


def test_the_promotion_table_has_every_side_the_gain_p_and_decision() -> None:
    rows = promotion_table(promotion(promote=True, against="champion"))
    assert rows == [
        {
            "query set": "masked",
            "queries": 194,
            "metric": "MRR@10",
            "candidate": 0.6561,
            "base": 0.5468,
            "champion": 0.601,
            "gain over champion": 0.0551,
            "p": 0.0001,
            "decision": "promoted",
        },
        {
            "query set": "masked",
            "queries": 194,
            "metric": "NDCG@10",
            "candidate": 0.6242,
            "base": 0.5404,
            "champion": 0.58,
            "gain over champion": 0.0442,
            "p": None,  # the test ran on MRR@10 only
            "decision": "promoted",
        },
        {  # each other set on rows of its own, every number on its queries
            "query set": "named",
            "queries": 194,
            "metric": "MRR@10",
            "candidate": 0.7444,
            "base": 0.6094,
            "champion": 0.7401,
            "gain over champion": 0.0043,
            "p": 0.62,
            "decision": "promoted",
        },
        {
            "query set": "named",
            "queries": 194,
            "metric": "NDCG@10",
            "candidate": 0.716,
            "base": 0.6131,
            "champion": 0.7111,
            "gain over champion": 0.0049,
            "p": None,
            "decision": "promoted",
        },
    ]


def test_without_a_champion_the_gain_is_over_the_base_model() -> None:
    rows = promotion_table(promotion(promote=False, against="base", tested="ndcg@10"))
    assert [row["champion"] for row in rows] == [None, None, None, None]
    assert [row["gain over base"] for row in rows] == [0.1093, 0.0838, 0.135, 0.1029]
    assert [row["p"] for row in rows] == [None, 0.0001, None, 0.62]
    assert {row["decision"] for row in rows} == {"not promoted"}


def test_metric_labels() -> None:
    assert [metric_label(m) for m in ("mrr@10", "ndcg@10", "recall@100", "hit")] == [
        "MRR@10",
        "NDCG@10",
        "Recall@100",
        "Hit",
    ]


@pytest.mark.parametrize(("promote", "outcome"), [(True, "promoted"), (False, "not promoted")])
def test_a_decision_notice_reaches_the_webhook(promote: bool, outcome: str) -> None:
    record = promotion(promote=promote, against="champion")
    notice = outcome_notice("nightly-retrain", "brave-otter", "id-1", record, "Promoted ...")
    with receiving_webhook() as webhook:
        assert hooks.post_webhook(webhook.url, notice, None)
    (received,) = webhook.reports
    assert received["outcome"] == outcome and received["version"] == "3"
    assert received["reason"] == record.reason and received["message"] == "Promoted ..."
    assert received["step"] is None  # the failure report's keys, so one receiver reads both


def test_a_failed_night_s_reason_is_short_and_names_the_step() -> None:
    tail = "\n".join(f"line {n}" for n in range(40))
    message = (
        "Flow run encountered an exception: StepFailed: step 'train' failed: DvcError: "
        f"`dvc repro train` exited with 1:\n{tail}\nERROR: failed to reproduce 'train'"
    )
    assert failure_reason(message) == (
        "step 'train' failed: DvcError: `dvc repro train` exited with 1: … "
        "ERROR: failed to reproduce 'train'"
    )
    assert len(failure_reason("x" * 5000)) == 300
    assert failure_reason("") == "the run failed without a message"


def project_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with this checkout's params.yaml whose MLflow store is its own sqlite."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "params.yaml").write_text((REPO / "params.yaml").read_text())
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    return root


def test_a_failed_night_is_recorded_in_mlflow_and_posted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project_root(tmp_path, monkeypatch)
    monkeypatch.setattr(hooks, "flow_run_logger", lambda *_args: _Silent())
    flow_run = FlowRun(
        id=uuid4(), name="brave-otter", flow_id=uuid4(), parameters={"root": str(root)}
    )
    failed = Failed(
        message="Flow run encountered an exception: StepFailed: step 'validate' failed: "
        "DvcError: `dvc repro validate` exited with 1:\n3 rows failed the schema"
    )
    with receiving_webhook() as webhook:
        monkeypatch.setenv("MATHEMBED_WEBHOOK_URL", webhook.url)
        from flows import nightly

        hooks.report_failed_night(nightly.nightly_retrain, flow_run, failed)
    assert [(r["outcome"], r["step"]) for r in webhook.reports] == [("failed", "validate")]

    params = load_params(root / "params.yaml")
    client = MlflowClient(tracking_uri(Paths(root)))
    experiment = client.get_experiment_by_name(params.promote.experiment)
    assert experiment is not None
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.data.tags[OUTCOME_TAG] == "failed"
    assert run.data.tags[REASON_TAG].startswith("step 'validate' failed")
    assert run.info.status == "FAILED"


def test_the_deployments_name_the_pools_that_get_created() -> None:
    prefect_yaml = yaml.safe_load((REPO / "infra" / "prefect.yaml").read_text())
    assert deployment_pools(prefect_yaml) == ["cpu", "gpu"]
    assert read_deployment_pools() == ["cpu", "gpu"]  # this checkout's file by default
    assert deployment_pools({"deployments": [{"name": "x"}, {"work_pool": {"name": "a"}}]}) == ["a"]
    assert deployment_pools({}) == []


class _Silent:
    def error(self, _message: str) -> None:
        pass

    def warning(self, _message: str) -> None:
        pass


def test_a_night_that_finds_its_candidate_decided_is_recorded_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows import nightly

    root = project_root(tmp_path, monkeypatch)
    params = load_params(root / "params.yaml")
    fresh = promotion_result(promote=True, against="base")
    assert nightly.record_decided_before(root, params, fresh) is None  # promote logged it

    decided = promotion_result(promote=False, against="champion", already_registered=True)
    run_id = nightly.record_decided_before(root, params, decided)
    assert run_id is not None
    run = MlflowClient(tracking_uri(Paths(root))).get_run(run_id)
    assert run.data.tags[OUTCOME_TAG] == "not promoted"
    assert run.data.tags[REASON_TAG] == "decided before: NDCG@10 did not improve"
