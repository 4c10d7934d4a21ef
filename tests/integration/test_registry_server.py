"""Promotion against a real ``mlflow server`` process on 127.0.0.1 (SQLite backend,
proxied artifacts)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import requests
from promotion_worlds import MODEL_NAME, Models, World, aliases, folder_digest

from flows.services import free_port
from pipelines.promote.nights import record_night
from pipelines.registry import mlflow_registry
from pipelines.registry.mlflow_registry import RegistryError, tracking_uri

# ----------------------------------------------------------------------------- real server


def wait_until_up(
    process: subprocess.Popen[bytes], ready_url: str, log_path: Path, name: str
) -> None:
    """Poll ``ready_url`` until it answers 200; the server's log if it exits or takes > 180 s."""
    deadline = time.monotonic() + 180
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited early:\n{log_path.read_text()}")
        try:
            if requests.get(ready_url, timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{name} not ready in time:\n{log_path.read_text()}")
        time.sleep(0.25)


@contextmanager
def mlflow_server(folder: Path, port: int, template_db: Path) -> Iterator[str]:
    """A real ``mlflow server`` (SQLite backend, proxied artifacts) on 127.0.0.1:``port``."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(template_db, folder / "mlflow.db")
    command = [
        str(Path(sys.executable).with_name("mlflow")),
        "server",
        "--backend-store-uri",
        f"sqlite:///{folder / 'mlflow.db'}",
        "--artifacts-destination",
        str(folder / "artifacts"),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_TRACKING")}
    log_path = folder / "server.log"
    with log_path.open("wb") as log:
        # Its own process group: the server forks uvicorn, and both must stop with the test.
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(process, f"{url}/health", log_path, "mlflow server")
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def test_with_a_real_mlflow_server_unreachable_first_then_rerun_once_it_is_up(
    world: World,
    bow_models: Models,
    empty_mlflow_db: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    candidate = world.install_candidate(bow_models.knows_4)
    before = folder_digest(candidate)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", url)

    with pytest.raises(
        RegistryError,
        match=rf"tracking server at {url} is unreachable .*candidate left as it is on disk"
        r".*rerun `mathembed promote`",
    ):
        world.promote()
    assert folder_digest(candidate) == before
    assert not (world.root / "metrics" / "promotion.json").exists()

    with mlflow_server(tmp_path / "server", port, empty_mlflow_db):
        first = world.promote()
        assert first.promoted and first.version == "1" and first.tracking_uri == url
        worse = world.promote(world.install_candidate(bow_models.knows_2, "second"))
        assert not worse.promoted
        assert aliases(world) == {"champion": "1", "challenger": "2", "previous": None}

        from mlflow import MlflowClient

        client = MlflowClient(tracking_uri=url, registry_uri=url)
        rejected = client.get_model_version(MODEL_NAME, "2")
        assert rejected.tags["decision"] == "rejected"
        assert rejected.description.startswith("**Not promoted: math-embed v2 loses to champion v1")
        # The record reads the same through a server: datasets, outcome, the trend figure.
        run = client.get_run(worse.run_id)
        assert {entry.dataset.name for entry in run.inputs.dataset_inputs} == {
            "pairs",
            "queries",
            "qrels",
        }
        assert run.data.tags["mathembed.outcome"] == "not promoted"
        assert "trend.png" in {artifact.path for artifact in client.list_artifacts(worse.run_id)}
        night = record_night(world.paths, world.params, "nothing to do", "no new papers")
        assert night is not None
        assert client.get_run(night).data.tags["mathembed.outcome"] == "nothing to do"
        connected = mlflow_registry.connect(world.paths, world.params.promote, create=False)
        assert connected is not None
        champion = connected.version_by_alias("champion")
        assert champion is not None
        loaded = mlflow_registry.load_registered_model(connected, champion)
        from sentence_transformers import SentenceTransformer

        original = SentenceTransformer(str(bow_models.knows_4), device="cpu")
        texts = ["prime alpha", "graph", "lattice beta"]
        np.testing.assert_allclose(loaded.encode(texts), original.encode(texts), atol=1e-6)
    assert folder_digest(candidate) == before

    # The registry lived on the server: the local store saw nothing.
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    assert aliases(world) == {"champion": None, "challenger": None, "previous": None}


def test_mlflow_models_serve_answers_with_the_champions_float32_embeddings(
    world: World, bow_models: Models
) -> None:
    """``mlflow models serve`` of ``models:/math-embed@champion`` (local env, no install)."""
    assert world.promote(world.install_candidate(bow_models.knows_4)).promoted
    port = free_port()
    bin_dir = Path(sys.executable).parent  # it execs `uvicorn`: as from an activated venv
    env = {
        **os.environ,
        "MLFLOW_TRACKING_URI": tracking_uri(world.paths),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    command = [
        str(bin_dir / "mlflow"),
        "models",
        "serve",
        "-m",
        f"models:/{MODEL_NAME}@champion",
        "--env-manager",
        "local",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    log_path = world.root / "serve.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(process, f"{url}/ping", log_path, "mlflow models serve")
        answer = requests.post(
            f"{url}/invocations", json={"inputs": ["prime alpha", "graph"]}, timeout=60
        )
        assert answer.status_code == 200, answer.text
        predictions = np.asarray(answer.json()["predictions"])
        assert predictions.shape == (2, 16)
        from sentence_transformers import SentenceTransformer

        expected = SentenceTransformer(str(bow_models.knows_4), device="cpu").encode(
            ["prime alpha", "graph"]
        )
        np.testing.assert_allclose(predictions, expected, atol=1e-6)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
