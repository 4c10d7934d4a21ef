"""Training on several processes (DDP), tested as CI can: two CPU processes on the gloo
backend, launched the way a person does (``mathembed train`` with ``train.processes: 2``,
which re-runs itself under torchrun). Compared with one process on the same data and seed;
what rank 1 writes is recorded by an audit hook the test installs in the children; a rank
killed mid-training must fail the run and publish nothing. Plus the knob's pure parts."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from proc_table import rank_pid
from test_train import make_root, toy_params
from test_train_record import empty_store, local_store  # noqa: F401  (fixtures)

from pipelines.common import io
from pipelines.common.config import ConfigError, PromoteParams, params_from_mapping
from pipelines.common.paths import TRAINING_RUN_FILE, Paths
from pipelines.train.distributed import (
    World,
    check_batch_split,
    current_world,
    resolve_processes,
    torchrun_command,
)
from pipelines.train.setup import TrainError
from pipelines.train.stage import run_train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

EPOCHS = 2

#: Installed in every child through PYTHONPATH: each rank but 0 appends to its own log the
#: files it creates, writes, renames or removes under AUDIT_ROOT, and the databases it opens.
SITECUSTOMIZE = """
import os, sys

_rank = os.environ.get("RANK")
if _rank not in (None, "0"):
    _root = os.path.realpath(os.environ["AUDIT_ROOT"])
    _log = open(os.path.join(os.environ["AUDIT_DIR"], f"rank-{_rank}.log"), "a", buffering=1)
    _WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
    _EVENTS = {"os.remove", "os.rmdir", "os.mkdir", "os.rename", "os.truncate",
               "shutil.rmtree", "os.chmod", "os.utime", "sqlite3.connect"}

    def _inside(path):
        try:
            return os.path.realpath(os.fsdecode(path)).startswith(_root)
        except (TypeError, ValueError):
            return False

    def _audit(event, args):
        if event == "open":
            path, _mode, flags = args
            if isinstance(path, (str, bytes)) and flags & _WRITE and _inside(path):
                _log.write(f"open {os.path.realpath(os.fsdecode(path))}\\n")
        elif event in _EVENTS and args and isinstance(args[0], (str, bytes)) and _inside(args[0]):
            _log.write(f"{event} {os.path.realpath(os.fsdecode(args[0]))}\\n")

    sys.addaudithook(_audit)
"""


def two_process_project(root: Path, model_dir: Path, **changes: Any) -> Path:
    """The toy training set (tests/unit/train/test_train.py) with ``train.processes: 2`` on CPU."""
    make_root(root)
    params = toy_params(model_dir, **{"epochs": EPOCHS, "processes": 2, **changes})
    train = {
        key: list(value) if isinstance(value, tuple) else value
        for key, value in dataclasses.asdict(params).items()
    }
    (root / "params.yaml").write_text(json.dumps({"train": train}), encoding="utf-8")
    return root


def audited_environment(audit_dir: Path, root: Path) -> dict[str, str]:
    audit_dir.mkdir()
    (audit_dir / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    env = dict(os.environ)
    env.pop("MLFLOW_TRACKING_URI", None)  # the project's own mlruns/
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(audit_dir), env.get("PYTHONPATH")]))
    env.update({"AUDIT_ROOT": str(root), "AUDIT_DIR": str(audit_dir), "OMP_NUM_THREADS": "1"})
    return env


def train_command(root: Path) -> list[str]:
    return [sys.executable, "-m", "pipelines", "train", "--root", str(root), "--no-progress"]


def only_run(root: Path) -> Any:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlruns' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name(PromoteParams().experiment)
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 1, [run.info.run_id for run in runs]
    return client, runs[0]


# --------------------------------------------------------------------------- pure parts


def test_the_world_comes_from_torchruns_variables() -> None:
    assert current_world({}) == World(rank=0, local_rank=0, size=1)
    world = current_world({"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4"})
    assert world == World(rank=3, local_rank=1, size=4) and not world.is_main


def test_processes_follow_the_gpus_or_name_the_knob() -> None:
    assert resolve_processes("auto", "auto", cuda_devices=4) == 4
    assert resolve_processes("auto", "auto", cuda_devices=0) == 1
    assert resolve_processes("auto", "cpu", cuda_devices=4) == 1
    assert resolve_processes(2, "cpu", cuda_devices=0) == 2  # gloo, as CI runs it
    assert resolve_processes(2, "cuda", cuda_devices=2) == 2
    with pytest.raises(TrainError, match=r"train\.processes is 2 but torch sees no CUDA device"):
        resolve_processes(2, "auto", cuda_devices=0)
    with pytest.raises(TrainError, match=r"train\.processes is 8 .* only 2 CUDA") as raised:
        resolve_processes(8, "cuda", cuda_devices=2)
    assert "\n" not in str(raised.value)


def test_the_batch_must_split_evenly_and_the_knob_has_a_range() -> None:
    check_batch_split(16, 2)
    with pytest.raises(TrainError, match=r"train\.batch_size 10 .* train\.processes 4"):
        check_batch_split(10, 4)
    assert params_from_mapping({"train": {"processes": 2}}).train.processes == 2
    with pytest.raises(ConfigError, match=r"^params: train\.processes: got 0; allowed: "):
        params_from_mapping({"train": {"processes": 0}})
    with pytest.raises(ConfigError, match=r"^params: train\.processes: expected 'auto', got 'x'$"):
        params_from_mapping({"train": {"processes": "x"}})


def test_the_relaunch_runs_this_command_under_torchrun() -> None:
    assert torchrun_command(2, ["train", "--root", "r"]) == [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node=2",
        "-m",
        "pipelines",
        "train",
        "--root",
        "r",
    ]


def test_a_gpu_run_on_a_machine_without_one_is_one_line_naming_the_knob(
    tiny_bert_dir: Path, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from pipelines import cli

    if _cuda_devices() > 0:
        pytest.skip("this machine has a GPU")
    make_root(tmp_path)
    train = {"base_model": str(tiny_bert_dir), "processes": 2}  # device: auto
    (tmp_path / "params.yaml").write_text(json.dumps({"train": train}), encoding="utf-8")
    result = CliRunner().invoke(cli.app, ["train", "--root", str(tmp_path), "--no-progress"])
    assert result.exit_code == 1
    message = result.output.strip()
    assert message.startswith("train: train.processes is 2 but torch sees no CUDA device")
    assert "\n" not in message
    assert not (tmp_path / "mlruns").exists()  # refused before anything started


def _cuda_devices() -> int:
    import torch

    return torch.cuda.device_count()


# --------------------------------------------------------------------------- two processes


def test_two_processes_train_as_one_does_and_only_rank_0_writes(
    tiny_bert_dir: Path,
    tmp_path: Path,
    local_store: None,  # noqa: F811  (fixture)
) -> None:
    mixing_weights = (0.5, 1.0)  # rank 0 alone mixes with the base model
    root = two_process_project(tmp_path, tiny_bert_dir, mixing_weights=mixing_weights)
    env = audited_environment(tmp_path.parent / f"{tmp_path.name}-audit", root)
    result = subprocess.run(
        train_command(root), env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr[-4000:]

    # The same training in this process, one rank, same data, params and seed.
    single_root = tmp_path.parent / f"{tmp_path.name}-single"
    single = run_train(
        toy_params(tiny_bert_dir, epochs=EPOCHS, mixing_weights=mixing_weights),
        make_root(single_root),
        progress=False,
    )

    paths = Paths(root)
    metrics = io.read_json(paths.metric_file("train"))
    assert metrics["processes"] == 2
    assert metrics["steps"] == single.steps  # the global batch is train.batch_size
    two_curve = [point["loss"] for point in metrics["loss_curve"]]
    one_curve = [point["loss"] for point in single.metrics["loss_curve"]]
    assert two_curve[-1] < two_curve[0] / 4  # it learns
    # The same batches, split between the ranks, and the same in-batch negatives (gathered).
    assert two_curve == pytest.approx(one_curve, rel=1e-3, abs=1e-4)
    assert metrics["kept_checkpoint"]["step"] == single.metrics["kept_checkpoint"]["step"]
    assert metrics["mixing"]["chosen"] == single.metrics["mixing"]["chosen"]

    # One candidate, no checkpoint or staging folder left, one progress log.
    assert (paths.candidate / "model.safetensors").is_file()
    assert not list(paths.checkpoints.glob("checkpoint-*"))
    assert not list(paths.candidate.parent.glob(".candidate.*"))
    assert result.stderr.count("train: step 1/") == 1
    assert result.stdout.count("train: starting fresh") == 1
    assert "2 process(es)" in result.stdout

    # The model rank 0 published embeds as the single process's does.
    from sentence_transformers import SentenceTransformer

    texts = ["group ring field", "the prime is prime prime", "a lattice of code"]
    two = SentenceTransformer(str(paths.candidate), device="cpu").encode(texts)
    one = SentenceTransformer(str(single.candidate_dir), device="cpu").encode(texts)
    np.testing.assert_allclose(two, one, atol=1e-3)

    # One MLflow run, FINISHED, with rank 0's loss curve; the candidate names it.
    client, run = only_run(root)
    assert run.info.status == "FINISHED"
    assert io.read_json(paths.candidate / TRAINING_RUN_FILE)["run_id"] == run.info.run_id
    logged = client.get_metric_history(run.info.run_id, "train.loss")
    assert [metric.value for metric in logged] == pytest.approx(two_curve)

    # Rank 1 made only the checkpoint folders its random state goes in (transformers'
    # resume reads rng_state_1.pth back): no model files, metrics, run record, MLflow store
    # or lock. (torch.save and safetensors write from C++, unseen by the hook; a model save
    # shows in the configuration files written beside the weights.)
    audit_log = Path(env["AUDIT_DIR"]) / "rank-1.log"
    assert audit_log.is_file()  # the hook ran in rank 1
    prefix = f"{root.resolve()}/"
    written = {line.replace(prefix, "", 1) for line in audit_log.read_text().splitlines()}
    own_state = re.compile(
        r"(os\.mkdir models/checkpoints/checkpoint-\d+"
        r"|open models/checkpoints/checkpoint-\d+/rng_state_1\.pth)"
    )
    assert sorted(line for line in written if not own_state.fullmatch(line)) == []
    assert any(line.startswith("os.mkdir models/checkpoints/") for line in written)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the rank in /proc")
def test_a_rank_that_dies_fails_the_run_and_publishes_nothing(
    tiny_bert_dir: Path,
    tmp_path: Path,
    local_store: None,  # noqa: F811  (fixture)
) -> None:
    root = two_process_project(tmp_path, tiny_bert_dir, epochs=100, max_steps=-1, eval_steps=2)
    previous = Paths(root).candidate
    previous.mkdir(parents=True)
    (previous / "marker").write_text("previous candidate", encoding="utf-8")
    env = audited_environment(tmp_path.parent / f"{tmp_path.name}-audit", root)
    killed = None
    with subprocess.Popen(train_command(root), env=env, stderr=subprocess.PIPE, text=True) as run:
        watchdog = threading.Timer(240, run.kill)  # a hung launch fails the test, not CI
        watchdog.start()
        try:
            assert run.stderr is not None
            for line in run.stderr:
                if line.startswith("train: step 3/"):  # after the first checkpoint
                    killed = rank_pid(run.pid, rank=1)
                    assert killed is not None
                    os.kill(killed, signal.SIGKILL)
                    break
            rest = run.stderr.read()
            returncode = run.wait(timeout=120)
        finally:
            watchdog.cancel()
            run.kill()
    assert killed is not None, rest[-3000:]
    assert returncode != 0
    # The previous candidate is untouched; nothing was staged or published.
    assert (previous / "marker").read_text(encoding="utf-8") == "previous candidate"
    assert not list(previous.parent.glob(".candidate.*"))
    assert not Paths(root).metric_file("train").exists()
    _client, mlflow_run = only_run(root)
    assert mlflow_run.info.status in {"KILLED", "FAILED"}
