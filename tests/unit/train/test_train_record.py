"""What training leaves for a person to read: progress lines in the log (step n/N, time
left), the live MLflow run (loss history, FINISHED / FAILED / KILLED, ``mlflow_run.json``),
training without a reachable store, and the candidate's own model card."""

from __future__ import annotations

import json
import logging
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from test_train import PoisonWeights, make_root, toy_params
from transformers import TrainerCallback
from typer.testing import CliRunner

from pipelines import cli
from pipelines.common import io
from pipelines.common.config import PromoteParams, TrainParams
from pipelines.common.paths import TRAINING_RUN_FILE, Paths
from pipelines.retrieval.models import OFFLINE_MINILM, model_fingerprint
from pipelines.train.card import OFFLINE_MINILM_HUB_ID, card_base_model
from pipelines.train.progress import finished_line, step_line, validation_line
from pipelines.train.setup import TrainError
from pipelines.train.stage import run_train
from pipelines.train.tracking import (
    TrainingRun,
    run_params,
    start_training_run,
    trainer_metrics,
)

pytestmark = [pytest.mark.usefixtures("one_torch_thread"), pytest.mark.slow]

STEP_LINE = re.compile(
    r"train: step (\d+)/(\d+) \((\d+) %\), loss \d+\.\d{4}, lr \S+, \d+ s elapsed, ~\d+ s left"
)


@pytest.fixture(scope="module")
def empty_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An initialised, empty MLflow sqlite store, made once: creating one (its schema
    migrations) takes seconds, copying it none."""
    from mlflow import MlflowClient

    db = tmp_path_factory.mktemp("store") / "mlflow.db"
    MlflowClient(tracking_uri=f"sqlite:///{db}").search_experiments()
    return db


@pytest.fixture
def local_store(tmp_path: Path, empty_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """MLflow's default store, sqlite under the test project's mlruns/, already initialised."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    (tmp_path / "mlruns").mkdir()
    shutil.copyfile(empty_store, tmp_path / "mlruns" / "mlflow.db")


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# --------------------------------------------------------------------------- pure parts


def test_step_line_says_where_training_is_and_how_long_is_left() -> None:
    logs = {"loss": 1.23456, "learning_rate": 8e-5, "grad_norm": 2.0, "epoch": 0.5}
    line = step_line(logs, step=20, max_steps=100, first_step=0, elapsed=12.0)
    assert line == "step 20/100 (20 %), loss 1.2346, lr 8.0e-05, 12 s elapsed, ~48 s left"
    # Resumed at step 50: 10 steps in 12 s here, 40 to go.
    resumed = step_line(logs, step=60, max_steps=100, first_step=50, elapsed=12.0)
    assert resumed is not None and resumed.endswith("~48 s left")
    assert step_line({"eval_loss": 0.5}, step=1, max_steps=2, first_step=0, elapsed=1) is None


def test_validation_and_final_lines() -> None:
    line = validation_line({"eval_loss": 0.123456, "epoch": 1.0}, step=5, max_steps=10)
    assert line == "validation loss 0.1235 at step 5/10, epoch 1.00"
    scored = {"eval_loss": 0.5, "eval_validation_cosine_mrr@10": 0.61234, "epoch": 2.0}
    assert validation_line(scored, step=10, max_steps=10) == (
        "validation loss 0.5000, MRR@10 0.6123 at step 10/10, epoch 2.00"
    )
    by_format = scored | {
        "eval_validation_cosine_passages_mrr@10": 0.7,
        "eval_validation_cosine_windows_mrr@10": 0.52468,
    }
    assert validation_line(by_format, step=10, max_steps=10) == (
        "validation loss 0.5000, MRR@10 0.6123 (passages 0.7000, windows 0.5247) at step 10/10, "
        "epoch 2.00"
    )
    ir_only = {"eval_validation_cosine_ndcg@10": 0.5}
    assert (
        validation_line(ir_only, step=3, max_steps=10) == "validation NDCG@10 0.5000 at step 3/10"
    )
    assert validation_line({"loss": 1.0}, step=5, max_steps=10) is None
    assert finished_line(100, 83.0, 0.25) == (
        "trained 100 steps in 1 min 23 s (0.83 s/step), final loss 0.2500"
    )


def test_trainer_metrics_keeps_what_a_person_reads() -> None:
    logs = {"loss": 1.5, "grad_norm": 3, "learning_rate": 1e-4, "epoch": 0.2, "total_flos": 9e9}
    assert trainer_metrics(logs) == {
        "train.loss": 1.5,
        "train.grad_norm": 3.0,
        "train.learning_rate": 1e-4,
        "train.epoch": 0.2,
    }
    evaluation = {
        "eval_loss": 0.4,
        "eval_runtime": 2.0,
        "eval_validation_cosine_mrr@10": 0.5,
        "eval_validation_cosine_ndcg@10": 0.6,
        "eval_validation_cosine_recall@10": 0.9,
        "eval_validation_cosine_windows_mrr@10": 0.45,
    }
    # MLflow refuses "@" in a key.
    assert trainer_metrics(evaluation) == {
        "train.validation_loss": 0.4,
        "train.validation_ir.mrr_at_10": 0.5,
        "train.validation_ir.ndcg_at_10": 0.6,
        "train.validation_ir.windows_mrr_at_10": 0.45,
    }


def test_run_params_are_flat_train_keys_with_lists_as_json(tiny_bert_dir: Path) -> None:
    logged = run_params(toy_params(tiny_bert_dir, matryoshka_dims=(32, 16)))
    assert logged["train.matryoshka_dims"] == "[32, 16]"
    assert logged["train.batch_size"] == "8"
    assert logged["train.base_model"] == str(tiny_bert_dir)


def test_the_card_names_the_bundled_model_by_its_hub_id() -> None:
    assert card_base_model(OFFLINE_MINILM) == OFFLINE_MINILM_HUB_ID
    assert card_base_model("allenai/specter2_base") == "allenai/specter2_base"


# --------------------------------------------------------------------------- a run


def test_training_logs_progress_and_writes_its_own_model_card(
    tiny_bert_dir: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.INFO, logger="pipelines")
    paths = make_root(tmp_path)
    report = run_train(toy_params(tiny_bert_dir, epochs=2), paths, progress=False)

    messages = caplog.messages
    steps = [STEP_LINE.fullmatch(message) for message in messages]
    seen = [(int(match[1]), int(match[2])) for match in steps if match]
    assert seen == [(step, report.steps) for step in range(1, report.steps + 1)]
    # Every eval_steps (one epoch here): the validation loss and the IR scores.
    validations = [message for message in messages if "train: validation loss" in message]
    assert len(validations) == 2
    assert all("MRR@10" in message and "NDCG@10" in message for message in validations)
    assert messages[-1].startswith(f"train: trained {report.steps} steps in ")
    # The trainer's own printer (a dict per log entry on stdout) is gone.
    assert "'loss'" not in capsys.readouterr().out

    readme = (paths.candidate / "README.md").read_text(encoding="utf-8")
    assert f"**Base model:** [{tiny_bert_dir}]" in readme
    assert f"mathembed pairs (data/validated/pairs.parquet, sha256 {report.data_hash[:12]})" in (
        readme
    )
    assert "Unnamed Dataset" not in readme
    assert "Base model:** Unknown" not in readme
    assert "sentence_transformers_model_id" not in readme
    kept = report.metrics["kept_checkpoint"]
    assert f"## Checkpoint kept\n\nStep {kept['step']}, by validation MRR@10" in readme
    assert 'SentenceTransformer("models/candidate")' in readme
    assert "# mathembed candidate" in readme
    assert "language:\n- en" in readme
    assert not (paths.candidate / TRAINING_RUN_FILE).exists()  # no MLflow run was given
    # Every file, the weights included (safetensors writes them 0600), as the umask says.
    files = [path for path in paths.candidate.rglob("*") if path.is_file()]
    assert paths.candidate / "model.safetensors" in files
    assert {stat.S_IMODE(path.stat().st_mode) for path in files} == {io.plain_file_mode()}


def test_training_logs_live_to_mlflow_and_names_the_run(
    tiny_bert_dir: Path, tmp_path: Path, local_store: None
) -> None:
    from mlflow import MlflowClient

    paths = make_root(tmp_path)
    params = toy_params(tiny_bert_dir, epochs=2, validation_windows=True)
    promote = PromoteParams()
    tracking = start_training_run(paths, promote, params)
    assert tracking is not None
    report = run_train(params, paths, progress=False, tracking=tracking)

    record = io.read_json(paths.candidate / TRAINING_RUN_FILE)
    assert record == {
        "run_id": tracking.run_id,
        "tracking_uri": f"sqlite:///{(tmp_path / 'mlruns' / 'mlflow.db').resolve()}",
        "experiment": promote.experiment,
    }
    # The record sits in the candidate without breaking its recorded fingerprint.
    assert io.read_json(paths.candidate / "mathembed.json")["fingerprint"] == model_fingerprint(
        paths.candidate
    )
    client = MlflowClient(tracking_uri=record["tracking_uri"])
    run = client.get_run(record["run_id"])
    assert run.info.status == "FINISHED"
    assert run.info.run_name == f"candidate-{report.fingerprint[:12]}"
    assert run.data.params["train.learning_rate"] == str(params.learning_rate)
    assert run.data.tags["data_version"] == report.data_hash
    loss = client.get_metric_history(run.info.run_id, "train.loss")
    assert [metric.step for metric in loss] == list(range(1, report.steps + 1))
    assert [metric.value for metric in loss] == pytest.approx(
        [point["loss"] for point in report.metrics["loss_curve"]]
    )
    assert len(client.get_metric_history(run.info.run_id, "train.learning_rate")) == report.steps
    assert len(client.get_metric_history(run.info.run_id, "train.validation_loss")) == 2
    # The IR score beside the loss, live, as train.json records it.
    mrr = client.get_metric_history(run.info.run_id, "train.validation_ir.mrr_at_10")
    assert [(metric.step, metric.value) for metric in mrr] == [
        (point["step"], pytest.approx(point["mrr@10"])) for point in report.metrics["validation_ir"]
    ]
    assert len(mrr) == 2
    # Each validation format's own score too, under the name promotion gives train.json's.
    windows = client.get_metric_history(run.info.run_id, "train.validation_ir.windows_mrr_at_10")
    assert [metric.value for metric in windows] == [
        pytest.approx(point["windows_mrr@10"]) for point in report.metrics["validation_ir"]
    ]
    assert run.data.metrics["train.kept_step"] == report.metrics["kept_checkpoint"]["step"]
    assert run.data.metrics["train.mixing_weight"] == report.metrics["mixing"]["chosen"] == 1.0
    assert run.data.metrics["train.pairs_per_second"] > 0
    experiment = client.get_experiment(run.info.experiment_id)
    assert experiment.name == promote.experiment
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"


def started_toy_run(tiny_bert_dir: Path, tmp_path: Path) -> tuple[Paths, TrainParams, TrainingRun]:
    """A project with the toy training set-up and its MLflow run started."""
    paths = make_root(tmp_path)
    params = toy_params(tiny_bert_dir)
    tracking = start_training_run(paths, PromoteParams(), params)
    assert tracking is not None
    return paths, params, tracking


def test_a_diverged_training_ends_its_run_failed(
    tiny_bert_dir: Path, tmp_path: Path, local_store: None
) -> None:
    paths, params, tracking = started_toy_run(tiny_bert_dir, tmp_path)
    with pytest.raises(TrainError, match="diverged"):
        run_train(params, paths, progress=False, callbacks=[PoisonWeights()], tracking=tracking)
    run = tracking.client.get_run(tracking.run_id)
    assert run.info.status == "FAILED"
    assert len(tracking.client.get_metric_history(tracking.run_id, "train.loss")) >= 1
    assert not paths.candidate.exists()


class Interrupt(TrainerCallback):
    """Ctrl-C after the second step."""

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.global_step == 2:
            raise KeyboardInterrupt


def test_an_interrupted_training_ends_its_run_killed(
    tiny_bert_dir: Path, tmp_path: Path, local_store: None
) -> None:
    paths, params, tracking = started_toy_run(tiny_bert_dir, tmp_path)
    with pytest.raises(KeyboardInterrupt):
        run_train(params, paths, progress=False, callbacks=[Interrupt()], tracking=tracking)
    assert tracking.client.get_run(tracking.run_id).info.status == "KILLED"


def test_train_command_trains_without_a_reachable_tracking_server(
    tiny_bert_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    make_root(tmp_path)
    train = {
        "base_model": str(tiny_bert_dir),
        "batch_size": 8,
        "max_seq_length": 16,
        "epochs": 1,
        "logging_steps": 1,
        "device": "cpu",
    }
    (tmp_path / "params.yaml").write_text(json.dumps({"train": train}), encoding="utf-8")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://user:secret@127.0.0.1:{closed_port()}")
    caplog.set_level(logging.INFO, logger="pipelines")
    result = CliRunner().invoke(cli.app, ["train", "--root", str(tmp_path), "--no-progress"])

    assert result.exit_code == 0, result.output
    paths = Paths(tmp_path)
    assert (paths.candidate / "model.safetensors").is_file()
    assert not (paths.candidate / TRAINING_RUN_FILE).exists()
    warnings = [record.getMessage() for record in caplog.records if record.levelname == "WARNING"]
    assert any("not logging to MLflow" in message for message in warnings)
    assert not any("secret" in message for message in caplog.messages)
    assert any(STEP_LINE.fullmatch(message) for message in caplog.messages)
    # The card is titled after the registered model.
    readme = (paths.candidate / "README.md").read_text(encoding="utf-8")
    assert f"# {PromoteParams().registered_model} (mathembed)" in readme


def test_a_terminated_train_command_ends_its_run_killed(
    tiny_bert_dir: Path, tmp_path: Path, local_store: None
) -> None:
    """SIGTERM (how the flow's supervisor ends a step) marks the run KILLED, not RUNNING."""
    from mlflow import MlflowClient

    make_root(tmp_path)
    train = {
        "base_model": str(tiny_bert_dir),
        "batch_size": 8,
        "max_seq_length": 16,
        "epochs": 100,  # far longer than the test waits
        "max_steps": -1,
        "logging_steps": 1,
        "device": "cpu",
    }
    (tmp_path / "params.yaml").write_text(json.dumps({"train": train}), encoding="utf-8")
    command = [sys.executable, "-m", "pipelines", "train", "--root", str(tmp_path), "--no-progress"]
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True) as process:
        watchdog = threading.Timer(120, process.kill)  # a hung child fails the test, not CI
        watchdog.start()
        try:
            assert process.stderr is not None
            for line in process.stderr:
                if line.startswith("train: step 2/"):
                    process.send_signal(signal.SIGTERM)
                    break
            returncode = process.wait(timeout=60)
        finally:
            watchdog.cancel()
            process.kill()
    assert returncode != 0
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name(PromoteParams().experiment)
    assert experiment is not None
    [run] = client.search_runs([experiment.experiment_id])
    assert run.info.status == "KILLED"
    assert client.get_metric_history(run.info.run_id, "train.loss")  # logged live till then
    assert not Paths(tmp_path).candidate.exists()
