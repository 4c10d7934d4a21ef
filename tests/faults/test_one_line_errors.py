"""One line where one line was promised (issue 23, finding 6).

A truncated embedding store is rebuilt with a warning, not a LanceDB error; a
champion whose files were deleted is named by ``mathembed status`` and refused by
``mathembed search`` in one line with the fix, not ``MlflowException: No such artifact``;
a checkpoint that the disk refuses is the CLI's one-line refused-write message, not a
``SafetensorError`` traceback. Each hostile state is built in the test: a file cut in half,
an artifact folder removed, a file-size limit (``RLIMIT_FSIZE``, the same refusal a full
disk gives the writer, through the real safetensors library).
"""

from __future__ import annotations

import json
import logging
import resource
import shutil
import signal
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd
import pytest
from fixtures_models import TINY_WORDS
from typer.testing import CliRunner
from validated_pairs import write_validated_pairs

from pipelines import cli
from pipelines.common import io
from pipelines.common.config import PromoteParams, SearchParams
from pipelines.common.paths import Paths
from pipelines.promote.run_log import pip_requirements
from pipelines.retrieval.vector_store import EmbeddingStore, StoreKey
from pipelines.search.index import IndexUpdate, open_search_index
from pipelines.search.query import corpus_dir


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


# -------------------------------------------------------------------- a truncated index


def test_a_truncated_embedding_store_is_rebuilt_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, bounded_in_time: None
) -> None:
    texts = [f"passage {i}" for i in range(4)]
    embedded: list[str] = []

    class Encoder:
        def encode(self, missing: list[str], **_: object) -> npt.NDArray[np.float32]:
            embedded.extend(missing)
            return np.eye(len(missing), 8, dtype=np.float32)

    params = SearchParams(ann_threshold=10**6, ann_nprobes=1)

    def open_index() -> IndexUpdate:
        store = EmbeddingStore(tmp_path / "embeddings")
        return open_search_index(store, Encoder(), "model", texts, params=params, batch_size=8)

    open_index()
    table = tmp_path / "embeddings" / f"{StoreKey('model').table_name()}.lance"
    [data_file] = (table / "data").iterdir()
    data_file.write_bytes(data_file.read_bytes()[: data_file.stat().st_size // 2])  # cut short
    embedded.clear()

    with caplog.at_level(logging.WARNING, logger="pipelines.retrieval.vector_store"):
        update = open_index()
    assert update.embedded == 4 and update.reused == 0 and embedded == texts
    [message] = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert message.startswith(f"embedding store table {table.stem} (model model) is not trusted: ")
    assert message.endswith("; rebuilding it") and "\n" not in message
    again = open_index()  # the rebuilt table reads back
    assert again.reused == 4 and again.embedded == 0


# -------------------------------------------------------------- deleted champion files


@pytest.fixture
def champion_without_files(
    tmp_path: Path, tiny_model_dir: Path, empty_mlflow_db: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A project whose registry's @champion (a tiny model, logged as promotion logs one)
    lost its files: ``mlruns/artifacts`` was deleted. Returns the project root."""
    import mlflow
    import mlflow.sentence_transformers
    from sentence_transformers import SentenceTransformer

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_REGISTRY_URI", raising=False)
    root = tmp_path / "project"
    paths = Paths(root)
    chunks = pd.DataFrame(
        {"chunk_id": ["2401.00001v1#c0000"], "paper_id": ["2401.00001"], "text": ["a lattice"]}
    )
    io.write_parquet(corpus_dir(paths) / "chunks.parquet", chunks)
    name = PromoteParams().registered_model
    uri = f"sqlite:///{paths.mlflow_store / 'mlflow.db'}"
    paths.mlflow_store.mkdir(parents=True)
    shutil.copy(empty_mlflow_db, paths.mlflow_store / "mlflow.db")  # migrated once a session
    client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
    artifacts = paths.mlflow_store / "artifacts"
    experiment = client.create_experiment("faults", artifact_location=artifacts.as_uri())
    model = SentenceTransformer(str(tiny_model_dir), device="cpu")
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    try:
        with mlflow.start_run(experiment_id=experiment):
            mlflow.sentence_transformers.log_model(
                model,
                name="model",
                registered_model_name=name,
                pip_requirements=pip_requirements(),  # not inferred: that takes a minute
            )
    finally:
        mlflow.set_tracking_uri("")
        monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
        monkeypatch.delenv("MLFLOW_REGISTRY_URI", raising=False)
    client.set_registered_model_alias(name, "champion", "1")
    shutil.rmtree(artifacts)
    return root


def test_status_and_search_name_a_champion_whose_files_are_gone(
    champion_without_files: Path, bounded_in_time: None
) -> None:
    root = str(champion_without_files)
    status = CliRunner().invoke(cli.app, ["status", "--root", root])
    assert status.exit_code == 0, status.output
    champion_lines = status.stdout.splitlines()[:2]
    assert champion_lines[0].startswith("champion   v1")
    assert champion_lines[1].strip().startswith("FILES MISSING: math-embed v1 is registered")
    assert "mathembed rollback" in champion_lines[1]

    search = CliRunner().invoke(cli.app, ["search", "lattice", "--root", root])
    assert search.exit_code == 1
    assert isinstance(search.exception, SystemExit)  # handled, not a traceback
    line = one_line(search.stderr)
    assert line.startswith("search: math-embed v1 is registered but its files are gone from")
    assert "mlruns/artifacts" in line and "mathembed rollback" in line
    assert "mathembed promote" in line


# ----------------------------------------------------------------- a full disk in training


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def file_size_limit(limit_bytes: int) -> Iterator[None]:
    """Writes past ``limit_bytes`` fail with EFBIG, as writes to a full disk fail with
    ENOSPC (SIGXFSZ ignored, so the write returns the error instead of killing us)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)


def test_a_refused_checkpoint_write_is_the_one_line_disk_message(
    tiny_bert_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bounded_in_time: None,
) -> None:
    words = TINY_WORDS[:24]
    pairs = pd.DataFrame(
        [{"anchor": w, "positive": f"the {w} is {w}", "split": "train"} for w in words[:16]]
        + [
            {"anchor": f"a {w}", "positive": f"{w} of {w}", "split": "validation"}
            for w in words[16:]
        ]
    )
    pairs["kind"] = "name"
    pairs["concept"] = pairs["anchor"]
    pairs["positive_id"] = [f"2401.{i:05d}v1#c0000" for i in range(len(pairs))]
    write_validated_pairs(Paths(tmp_path), pairs)
    train = {"base_model": str(tiny_bert_dir), "batch_size": 8, "max_seq_length": 16}
    train |= {"epochs": 1, "device": "cpu"}
    (tmp_path / "params.yaml").write_text(json.dumps({"train": train}), encoding="utf-8")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://127.0.0.1:{closed_port()}")

    # The weights are 73 KB: the first checkpoint cannot be written, everything before can.
    with file_size_limit(32 * 1024):
        result = CliRunner().invoke(cli.app, ["train", "--root", str(tmp_path), "--no-progress"])

    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit)  # handled, not a traceback
    assert "Traceback" not in result.output and "SafetensorError" not in result.output
    # The last line is the command's (a progress bar of the model card may come first).
    line = result.stderr.strip().splitlines()[-1]
    checkpoints = Paths(tmp_path).checkpoints
    assert line == (
        f"train: cannot write or read {checkpoints}: File too large; make it writable by "
        "this user (and check the disk has space), then rerun"
    )
    assert not Paths(tmp_path).candidate.exists()
