"""`dvc exp run -S`, DVC's own way to try a knob, on a float, an int and a list.

DVC (ruamel.yaml, YAML 1.2) writes `-S train.learning_rate=2e-5` into params.yaml as
`2e-05`, which YAML 1.1 (PyYAML) reads as a string: the loader used to refuse it. Here a
real experiment runs dvc.yaml's train stage (`dvc exp run train`) in a fresh copy of the
project, on a tiny BERT for two optimizer steps, so the values DVC wrote are the ones the
stage read: the candidate's metadata records them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from fixtures_models import TINY_HIDDEN_SIZE, TINY_WORDS
from projects import dvc, new_project, run
from repo import REPO
from validated_pairs import write_validated_pairs

from pipelines.common import io
from pipelines.common.config import load_params
from pipelines.common.paths import MODEL_METADATA_FILE, Paths

LEARNING_RATE = 2e-5  # the method's own; below 1e-4 every value is written `Ne-05`-style
EPOCHS = 2
DIMS = [TINY_HIDDEN_SIZE, TINY_HIDDEN_SIZE // 2]


def dvc_stdout(*args: str, cwd: Path) -> str:
    """DVC's standard output alone (its warnings go to stderr), for ``--json``."""
    result = subprocess.run(
        [sys.executable, "-m", "dvc", *args],
        cwd=cwd,
        env={**os.environ, "DVC_NO_ANALYTICS": "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"dvc {' '.join(args)} failed: {result.stderr}"
    return result.stdout


def toy_pairs() -> pd.DataFrame:
    """A word -> a sentence naming it: enough rows for a few batches of 4 (the pair contract's
    columns, as validate would write them)."""
    words = TINY_WORDS[:16]
    frame = pd.DataFrame(
        {
            "anchor": words,
            "positive": [f"the {word} is a {word}" for word in words],
            "split": ["train"] * 12 + ["validation"] * 4,
        }
    )
    frame["kind"] = "name"
    frame["concept"] = frame["anchor"]
    frame["positive_id"] = [f"2401.{i:05d}v1#c0000" for i in range(len(frame))]
    return frame


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, tiny_bert_dir: Path) -> Path:
    """A committed git + DVC copy of the project whose train stage needs seconds."""
    root = new_project(
        tmp_path_factory.mktemp("exp-set"),
        {
            "train": {
                "base_model": str(tiny_bert_dir),
                "batch_size": 4,
                "max_seq_length": 16,
                "max_steps": 2,
                "logging_steps": 1,
                "max_validation_pairs": 4,
                "device": "cpu",
            }
        },
    )
    # dvc.yaml's own train stage alone: its input, validate's output, is written here and
    # committed to git (as a stage's output, DVC would remove it for having no hash yet).
    pipeline = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))
    only_train = {"stages": {"train": pipeline["stages"]["train"]}}
    (root / "dvc.yaml").write_text(yaml.safe_dump(only_train, sort_keys=False), encoding="utf-8")
    write_validated_pairs(Paths(root), toy_pairs())
    run("git", "add", "-A", cwd=root)
    identity = ("-c", "user.name=mathembed tests", "-c", "user.email=tests@mathembed.invalid")
    run("git", *identity, "commit", "-q", "-m", "project", cwd=root)
    return root


def test_dvc_exp_run_sets_a_float_an_int_and_a_list(project: Path) -> None:
    output = dvc(
        "exp",
        "run",
        "train",
        "--name",
        "small-lr",
        "-S",
        "train.learning_rate=2e-5",
        "-S",
        f"train.epochs={EPOCHS}",
        "-S",
        f"train.matryoshka_dims=[{DIMS[0]},{DIMS[1]}]",
        cwd=project,
    )
    assert "Running stage 'train'" in output

    # What DVC wrote is YAML 1.2's float, which PyYAML's YAML 1.1 rules read as a string.
    text = (project / "params.yaml").read_text(encoding="utf-8")
    assert "learning_rate: 2e-05" in text
    params = load_params(project / "params.yaml").train
    assert (params.learning_rate, params.epochs, params.matryoshka_dims) == (
        LEARNING_RATE,
        EPOCHS,
        tuple(DIMS),
    )

    # ... and the stage DVC ran read the same values.
    metadata = io.read_json(Paths(project).candidate / MODEL_METADATA_FILE)
    assert metadata["params"]["learning_rate"] == LEARNING_RATE
    assert metadata["params"]["epochs"] == EPOCHS
    assert metadata["matryoshka_dims"] == DIMS

    # DVC recorded the experiment with the values it set.
    shown = json.loads(dvc_stdout("exp", "show", "--json", cwd=project))
    experiments = [
        experiment
        for commit in shown
        for experiment in commit.get("experiments") or []
        if experiment.get("name") == "small-lr"
    ]
    assert experiments, f"experiment small-lr not in dvc exp show: {shown}"
    recorded = experiments[0]["revs"][0]["data"]["params"]["params.yaml"]["data"]["train"]
    assert recorded["learning_rate"] == LEARNING_RATE
    assert recorded["epochs"] == EPOCHS
    assert recorded["matryoshka_dims"] == DIMS
