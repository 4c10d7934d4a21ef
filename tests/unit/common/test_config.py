"""pipelines.common.config: params.yaml into typed sections, and the one place defaults live."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml
from repo import REPO

from pipelines.common import config
from pipelines.common.config import (
    FROM_PARAMS_YAML,
    PROJECT_PARAMS_FILE,
    ConfigError,
    Params,
    TrainParams,
    load_params,
    params_from_mapping,
)

SECTIONS = [field.name for field in dataclasses.fields(Params)]


def project_yaml() -> dict[str, Any]:
    loaded = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def test_the_project_file_is_the_repository_params_yaml() -> None:
    assert PROJECT_PARAMS_FILE == REPO / "params.yaml"


@pytest.mark.parametrize("section", SECTIONS)
def test_no_default_is_written_in_code(section: str) -> None:
    section_type = type(getattr(Params(), section))
    for field in dataclasses.fields(section_type):
        assert field.default is FROM_PARAMS_YAML, f"{section}.{field.name} has a code default"


@pytest.mark.parametrize("section", SECTIONS)
def test_a_section_built_in_code_equals_the_project_file(section: str) -> None:
    built = getattr(Params(), section)
    from_file = getattr(load_params(REPO / "params.yaml"), section)
    assert built == from_file
    assert set(project_yaml()[section]) == {f.name for f in dataclasses.fields(built)}


def test_a_key_left_out_of_another_file_takes_the_project_value(tmp_path: Path) -> None:
    other = tmp_path / "params.yaml"
    other.write_text("train:\n  epochs: 1\n", encoding="utf-8")
    params = load_params(other)
    assert params.train.epochs == 1
    project = project_yaml()["train"]
    assert params.train.learning_rate == pytest.approx(project["learning_rate"])
    assert params.train.base_model == project["base_model"]
    assert params.train.matryoshka_dims == tuple(project["matryoshka_dims"])
    assert params.ingest.categories == tuple(project_yaml()["ingest"]["categories"])


def test_keyword_arguments_override_the_project_value() -> None:
    assert TrainParams(epochs=7).epochs == 7
    assert TrainParams(epochs=7).batch_size == project_yaml()["train"]["batch_size"]


def test_unknown_keys_and_wrong_types_name_the_key() -> None:
    with pytest.raises(ConfigError, match=r"train: unknown key\(s\) \['epochz'\]"):
        params_from_mapping({"train": {"epochz": 1}})
    with pytest.raises(ConfigError, match=r"train\.epochs: expected int, got 'three'"):
        params_from_mapping({"train": {"epochs": "three"}})


def test_a_knob_missing_from_the_project_file_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    without = project_yaml()
    del without["train"]["seed"]
    monkeypatch.setattr(config, "_project_params", lambda: without)
    with pytest.raises(ConfigError, match=r"lacks train\.seed"):
        TrainParams()
    assert TrainParams(seed=5).seed == 5  # given explicitly, the project file is not asked


def test_a_repeated_section_is_refused_not_merged(tmp_path: Path) -> None:
    # A second `train:` block used to replace the first one whole, resetting its settings.
    path = tmp_path / "params.yaml"
    path.write_text("train:\n  epochs: 1\n  seed: 3\ntrain:\n  epochs: 2\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"duplicate key 'train' at line 4 \(first at line 1\)"):
        load_params(path)


def test_a_yaml_error_is_one_line_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "params.yaml"
    path.write_text("train:\n  epochs: [1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="is not valid YAML") as raised:
        load_params(path)
    assert str(path) in str(raised.value) and "\n" not in str(raised.value)


@pytest.mark.parametrize("kind", ["folder", "binary"])
def test_an_unreadable_params_file_is_a_config_error(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "params.yaml"
    if kind == "folder":
        path.mkdir()
    else:
        path.write_bytes(b"\xff\xfe\x00train: {}\n")
    with pytest.raises(ConfigError, match=r"params\.yaml (cannot be read|is not UTF-8)"):
        load_params(path)
