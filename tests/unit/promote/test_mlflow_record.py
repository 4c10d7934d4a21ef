"""The MLflow record of a promotion, as a person opens it (real SQLite store): few metrics
and the headline first, the decision as tags and description, the inputs as datasets
with their DVC hashes, the model's card and float32 signature, and train's own run
resumed when train logged one."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import pandas as pd
import pytest
from promotion_worlds import MODEL_NAME, Models, World, client_of

from pipelines.common.io import plain_file_mode, write_json
from pipelines.promote.candidate import Candidate
from pipelines.promote.run_log import training_run_id
from pipelines.registry.candidate_metadata import CandidateMetadata
from pipelines.registry.mlflow_registry import connect, fluent_uri, tracking_uri
from pipelines.retrieval.models import model_fingerprint

DVC_DIR_MD5 = "0123456789abcdef0123456789abcdef.dir"  # promotion_worlds' dvc.lock


def test_a_promotion_run_is_a_record_a_person_can_read(world: World, bow_models: Models) -> None:
    (world.root / "reports" / "eval" / "metrics.csv").write_text(
        "model,dim,metric,value\ncandidate,16,mrr@10,0.9\nbase,16,mrr@10,0.2\n"
    )
    result = world.promote(world.install_candidate(bow_models.knows_4))
    assert result.promoted

    client = client_of(world)
    run = client.get_run(result.run_id)
    metrics = run.data.metrics
    # The headline only (and train's loss curve): MLflow's chart view opens on them. Per set
    # at most its queries, p and two metrics for each of two sides (no champion yet).
    per_set = {name.split(".", 1)[0] for name in metrics} - {"train"}
    assert len(metrics) <= 6 * len(per_set) + 4, sorted(metrics)
    assert {"transfer_papers", "transfer_named"} <= per_set
    assert not [name for name in metrics if name.startswith("eval.")]
    # Each named by its set (this world's gate, named, decided).
    assert metrics["named.queries"] == 10
    assert metrics["named.p_value"] == pytest.approx(result.decision.p_value)
    assert metrics["named.candidate_mrr_at_10"] == pytest.approx(
        result.decision.candidate["mrr@10"]
    )
    assert metrics["named.base_ndcg_at_10"] == pytest.approx(result.decision.other["ndcg@10"])
    assert "named.champion_mrr_at_10" not in metrics  # no champion yet: nothing to log

    tags = run.data.tags
    assert tags["mathembed.outcome"] == "promoted"
    assert tags["mathembed.reason"].startswith("promoted over the base: mrr@10")
    assert tags["mlflow.note.content"].startswith("**Promoted math-embed v1 to @champion")
    experiment = client.get_experiment(run.info.experiment_id)
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"

    inputs = {
        entry.dataset.name: (entry.dataset, {tag.key: tag.value for tag in entry.tags})
        for entry in run.inputs.dataset_inputs
    }
    assert set(inputs) == {"pairs", "queries", "qrels"}
    pairs, pairs_tags = inputs["pairs"]
    assert pairs.digest == DVC_DIR_MD5 and pairs.source_type == "local"
    assert json.loads(pairs.profile)["num_rows"] == 2
    # The schema is inferred (MLflow drops it when its inference warns: here it must not).
    qrels_schema = json.loads(inputs["qrels"][0].schema)["mlflow_colspec"]
    assert {"name": "grade", "type": "long", "required": True} in qrels_schema
    assert pairs_tags["mlflow.data.context"] == "training"
    assert inputs["qrels"][1]["mlflow.data.context"] == "evaluation"

    artifacts = {artifact.path for artifact in client.list_artifacts(result.run_id)}
    assert {"trend.png", "model_card.md", "eval"} <= artifacts
    table = client.list_artifacts(result.run_id, "eval")
    assert [artifact.path for artifact in table] == ["eval/metrics_table.json"]

    version = client.get_model_version(MODEL_NAME, "1")
    description = version.description
    assert description.startswith("**Promoted math-embed v1 to @champion over the base model")
    assert "Query sets: named (10 queries)" in description
    assert "over 20 passages" in description and "2 pairs" in description
    assert 'load_model("models:/math-embed/1")' in description
    assert (world.root / "reports" / "nightly" / "trend.png").read_bytes()[:4] == b"\x89PNG"

    import mlflow

    with fluent_uri(tracking_uri(world.paths)):
        info = mlflow.models.get_model_info(f"models:/{MODEL_NAME}/1")
        [output] = info.signature.outputs.inputs
        assert output.type == np.dtype(np.float32) and output.shape == (-1, 16)
        served = mlflow.pyfunc.load_model(f"models:/{MODEL_NAME}@champion")
        embeddings = served.predict(pd.DataFrame({"text": ["prime alpha", "graph"]}))
        local = mlflow.artifacts.download_artifacts(f"models:/{MODEL_NAME}/1")
        stored = urlparse(mlflow.get_logged_model(info.model_id).artifact_location).path
    # The stored weights are readable as the umask says (safetensors writes them 0600).
    weights = list(Path(stored).rglob("*.safetensors"))
    assert weights, "the logged model holds no safetensors file"
    assert {stat.S_IMODE(path.stat().st_mode) for path in weights} == {plain_file_mode()}
    assert embeddings.dtype == np.float32 and embeddings.shape == (2, 16)
    [readme] = list(Path(local).rglob("README.md"))
    text = readme.read_text()
    assert text.startswith("---\n")  # sentence-transformers' front matter stays first
    assert "<!-- mathembed:card -->\n# mathembed\n\n**Promoted math-embed to @champion" in text
    assert "Relevant passages (`pairs.qrels_scope = " in text


def test_promotion_logs_into_the_run_train_logged_live(world: World, bow_models: Models) -> None:
    client = client_of(world)
    experiment = client.create_experiment(
        world.params.promote.experiment,
        artifact_location=(world.root / "mlruns" / "artifacts").resolve().as_uri(),
    )
    train_run = client.create_run(experiment, run_name="train").info.run_id
    client.log_param(train_run, "learning_rate", "2e-05")
    client.log_param(train_run, "train.epochs", "1")  # a key promotion logs too: kept
    for step, loss in ((1, 2.0), (2, 1.0)):
        client.log_metric(train_run, "loss", loss, step=step)
    client.set_terminated(train_run)
    candidate = world.install_candidate(bow_models.knows_4)
    write_json(
        candidate / "mlflow_run.json",
        {"run_id": train_run, "tracking_uri": tracking_uri(world.paths), "experiment": "x"},
    )
    metadata = json.loads((candidate / "mathembed.json").read_text())
    metadata["fingerprint"] = model_fingerprint(candidate)  # as train writes it: file first
    write_json(candidate / "mathembed.json", metadata)

    result = world.promote()

    assert result.run_id == train_run
    assert len(client.search_runs([experiment])) == 1  # one run: training and decision
    # An experiment made before, untagged, is marked as model training by the writer.
    assert client.get_experiment(experiment).tags["mlflow.experimentKind"] == (
        "custom_model_development"
    )
    run = client.get_run(train_run)
    assert run.info.status == "FINISHED"
    assert run.data.params["learning_rate"] == "2e-05"
    assert run.data.params["train.epochs"] == "1"
    assert run.data.params["promote.metrics"] == '["mrr@10", "ndcg@10"]'
    assert [point.value for point in client.get_metric_history(train_run, "loss")] == [2.0, 1.0]
    assert "train.loss" not in run.data.metrics  # train logged its curve live
    assert run.data.tags["mathembed.outcome"] == "promoted"
    assert client.get_model_version(MODEL_NAME, "1").run_id == train_run

    # A train run this store does not hold (logged elsewhere) is not resumed.
    registry = connect(world.paths, world.params.promote, create=False)
    assert registry is not None
    write_json(candidate / "mlflow_run.json", {"run_id": "0" * 32, "tracking_uri": "elsewhere"})
    recorded = CandidateMetadata.from_json(metadata)
    assert (
        training_run_id(registry, Candidate(candidate, metadata["fingerprint"], recorded)) is None
    )


def test_a_promotion_that_happened_is_not_reported_failed_for_its_trend_figure(
    world: World,
    bow_models: Models,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from pipelines.promote import promotion

    def disk_full(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(promotion, "publish_trend", disk_full)
    result = world.promote(world.install_candidate(bow_models.knows_4))
    assert result.promoted and result.aliases["champion"] == "1"
    assert client_of(world).get_model_version(MODEL_NAME, "1").tags["settled"] == "true"
    assert "the promotion is done, but tonight's record or trend figure" in caplog.text
    assert "No space left on device" in caplog.text
