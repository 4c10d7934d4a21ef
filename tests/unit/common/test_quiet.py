"""The libraries' bars and INFO lines stay out of a command's output (issue 13, item 6).

A real ``mathembed`` process (the app, its startup callback, a command registered for the
test) loads and saves a tiny sentence-transformers model and opens a new MLflow sqlite
store: the three sources of "Loading weights", "Writing model shards" and MLflow's INFO
lines. The same process with the documented overrides shows them, so the check can fail.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.common.quiet import QUIET_ENVIRONMENT, QUIET_LOGGERS, silence_library_noise

NOISY_WORK = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    from pipelines.cli import app

    @app.command("noisy-work")
    def noisy_work(model_dir: Path, folder: Path) -> None:
        import mlflow
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(model_dir), device="cpu")  # "Loading weights"
        model.save(str(folder / "saved"))  # "Writing model shards"
        mlflow.set_tracking_uri(f"sqlite:///{folder}/mlflow.db")  # INFO: creating tables
        mlflow.set_experiment("noise")  # INFO: experiment does not exist, creating it
        print("work done")

    app(sys.argv[1:])
    """
)
NOISE = ("Loading weights", "Writing model shards", "INFO")


def start(model_dir: Path, folder: Path, overrides: dict[str, str]) -> subprocess.Popen[str]:
    folder.mkdir()
    environment = {key: value for key, value in os.environ.items() if key not in QUIET_ENVIRONMENT}
    return subprocess.Popen(
        [sys.executable, "-c", NOISY_WORK, "noisy-work", str(model_dir), str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**environment, **overrides},
    )


def finish(process: subprocess.Popen[str]) -> tuple[str, str]:
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr[-3000:]
    assert "work done" in stdout
    return stdout, stderr


@pytest.mark.slow  # two processes importing torch, transformers and MLflow
def test_a_command_prints_no_library_bars_or_info_lines(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    # Both at once: each spends most of its time importing torch and MLflow.
    quiet = start(tiny_model_dir, tmp_path / "quiet", {})
    loud = start(
        tiny_model_dir,
        tmp_path / "loud",
        {"HF_HUB_DISABLE_PROGRESS_BARS": "0", "MLFLOW_LOGGING_LEVEL": "INFO"},
    )
    _, quiet_stderr = finish(quiet)
    _, loud_stderr = finish(loud)
    assert all(noise in loud_stderr for noise in NOISE), loud_stderr  # the work is noisy
    assert [noise for noise in NOISE if noise in quiet_stderr] == [], quiet_stderr
    assert (tmp_path / "quiet" / "saved" / "model.safetensors").is_file()


@pytest.fixture
def library_levels() -> Iterator[None]:
    """Put the libraries' logger levels back: other tests read MLflow's INFO lines."""
    levels = {name: logging.getLogger(name).level for name in QUIET_LOGGERS}
    yield
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


@pytest.mark.usefixtures("library_levels")
def test_silencing_keeps_what_is_set_and_touches_no_own_logger() -> None:
    environment = {"HF_HUB_DISABLE_PROGRESS_BARS": "0"}
    ours = logging.getLogger("pipelines.ingest")
    before = ours.level
    silence_library_noise(environment)
    assert environment["HF_HUB_DISABLE_PROGRESS_BARS"] == "0"  # a person's choice wins
    assert environment["MLFLOW_LOGGING_LEVEL"] == "WARNING"
    assert logging.getLogger("mlflow").level == logging.WARNING
    assert ours.level == before
    assert "TQDM_DISABLE" not in environment  # our own bars stay
