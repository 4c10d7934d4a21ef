"""pipelines.common.config on pydantic: what a value's type may be, YAML 1.2 numbers as DVC
writes them, and every documented knob through DVC's own ``-S`` rewriting of params.yaml."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import pytest
from repo import REPO

from pipelines.common.config import (
    ConfigError,
    PairsParams,
    Params,
    TrainParams,
    load_params,
    params_from_mapping,
)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "params.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("written", "value"),
    [("2e-05", 2e-5), ("1E5", 1e5), ("-3.5e+2", -350.0), (".5e1", 5.0), ("2.0e-05", 2e-5)],
)
def test_yaml_12_floats_are_floats(tmp_path: Path, written: str, value: float) -> None:
    # YAML 1.1 (PyYAML) wants a dot in the mantissa; DVC (YAML 1.2) writes `2e-05`.
    params = load_params(write(tmp_path, f"train:\n  learning_rate: {written}\n"))
    assert params.train.learning_rate == value
    assert type(params.train.learning_rate) is float


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # Quoted, it is the string the author asked for.
        ("train:\n  learning_rate: '2e-05'\n", "train.learning_rate: expected float, got '2e-05'"),
        ("ingest:\n  delay_seconds: abc\n", "ingest.delay_seconds: expected float, got 'abc'"),
        ("ingest:\n  delay_seconds: true\n", "ingest.delay_seconds: expected float, got True"),
        ("train:\n  epochs: true\n", "train.epochs: expected int, got True"),
        ("train:\n  epochs: '3'\n", "train.epochs: expected int, got '3'"),
        ("train:\n  epochs: 3.0\n", "train.epochs: expected int, got 3.0"),
        ("evaluate:\n  ks: [1, true]\n", r"evaluate.ks[1]: expected int, got True"),
        ("evaluate:\n  ks: 10\n", "evaluate.ks: expected a list, got 10"),
        ("evaluate:\n  cache: 1\n", "evaluate.cache: expected bool, got 1"),
        ("graph:\n  llm_model: 7\n", "graph.llm_model: expected str, got 7"),
        ("train:\n  pooling: max\n", "train.pooling: expected 'cls' or 'mean', got 'max'"),
        ("train: 3\n", "train: expected a section (mapping), got 3"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_the_key(
    tmp_path: Path, text: str, message: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as raised:
        load_params(path)
    assert str(raised.value) == f"{path}: {message}"


def test_an_int_is_a_float_and_a_list_a_tuple() -> None:
    params = params_from_mapping({"ingest": {"delay_seconds": 3}, "evaluate": {"ks": [1, 10]}})
    assert params.ingest.delay_seconds == 3.0 and type(params.ingest.delay_seconds) is float
    assert params.evaluate.ks == (1, 10)


def test_every_problem_is_named_on_one_line() -> None:
    raw = {"train": {"epochs": "x", "epochz": 1}, "pairs": {"seed": -1}, "trian": {}}
    with pytest.raises(ConfigError) as raised:
        params_from_mapping(raw, where="p.yaml")
    text = str(raised.value)
    assert "\n" not in text and text.startswith("p.yaml: ")
    for part in (
        "train.epochs: expected int, got 'x'",
        "pairs.seed: got -1; allowed: a finite number >= 0",
        "train: unknown key(s) ['epochz']; known keys are ['base_model', ",
        "unknown key(s) ['trian']; known keys are ['sample', 'ingest', ",
    ):
        assert part in text


def test_a_section_built_in_code_checks_types_not_ranges() -> None:
    # Tests build corner cases on purpose (everything held out); a file may not ask for them.
    assert PairsParams(held_out_fraction=1.0).held_out_fraction == 1.0
    with pytest.raises(ConfigError, match=r"pairs\.held_out_fraction: got 1\.0; allowed"):
        params_from_mapping({"pairs": {"held_out_fraction": 1.0}})
    with pytest.raises(ConfigError, match=r"^TrainParams\(\.\.\.\): train\.epochs: expected int"):
        TrainParams(epochs="3")
    with pytest.raises(ConfigError, match=r"train: unknown key\(s\) \['epochz'\]"):
        TrainParams(epochz=3)  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match=r"train\.pooling: expected 'cls' or 'mean'"):
        dataclasses.replace(TrainParams(), pooling="max")


def test_sections_stay_frozen_hashable_dataclasses() -> None:
    params = Params()
    with pytest.raises(dataclasses.FrozenInstanceError):
        params.train.epochs = 1  # type: ignore[misc]
    assert hash(params) == hash(Params()) and params == Params()
    assert dataclasses.asdict(params)["evaluate"]["ks"] == params.evaluate.ks
    changed = dataclasses.replace(params, train=dataclasses.replace(params.train, epochs=99))
    assert changed.train.epochs == 99 and changed.evaluate == params.evaluate


def hydra_value(value: Any) -> str:
    """``value`` as ``dvc exp run -S key=VALUE`` takes it (Hydra's override grammar)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    assert isinstance(value, tuple | list), value
    return "[" + ",".join(hydra_value(item) for item in value) + "]"


def test_every_documented_knob_survives_dvc_exp_run_set(tmp_path: Path) -> None:
    # `dvc exp run -S` rewrites params.yaml through this function (Hydra parses the value,
    # ruamel.yaml writes the file: quotes, lists, floats all in its own style).
    from dvc.utils.hydra import apply_overrides

    path = tmp_path / "params.yaml"
    shutil.copy(REPO / "params.yaml", path)
    project = load_params(path)
    overrides = [
        f"{section}.{key}={hydra_value(value)}"
        for section, values in dataclasses.asdict(project).items()
        for key, value in values.items()
    ]
    apply_overrides(path, overrides)
    assert load_params(path) == project

    small = ["train.learning_rate=2e-5", "train.warmup_ratio=5e-2", "promote.min_margin=1e-3"]
    apply_overrides(path, small)
    assert "learning_rate: 2e-05" in path.read_text(encoding="utf-8")
    changed = load_params(path)
    assert (changed.train.learning_rate, changed.train.warmup_ratio) == (2e-5, 0.05)
    assert changed.promote.min_margin == 1e-3
