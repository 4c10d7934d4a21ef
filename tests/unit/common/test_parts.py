"""The stage sequence is declared once (:mod:`pipelines.common.parts`) and every reader
follows it: dvc.yaml (the file DVC reads) lists the same stages in the same order, the
command line registers each stage's commands in that order, the nightly flow has a task
for each step and runs the data stages the declaration names."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

from pipelines import cli
from pipelines.common.parts import DVC_STAGES, STAGES, WINGS, stage_names, stages_from

REPO = Path(__file__).resolve().parents[3]


def test_dvc_yaml_runs_the_declared_stages_in_the_declared_order() -> None:
    declared = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    assert tuple(declared) == DVC_STAGES
    for name in DVC_STAGES:  # each runs its own command
        assert declared[name]["cmd"].startswith(f"mathembed {name}"), name


def test_the_command_line_registers_each_stage_s_commands_in_the_declared_order() -> None:
    assert set(cli.STAGE_COMMANDS) == {stage.commands for stage in STAGES}
    commands = [command.name for command in cli.new_app().registered_commands]
    positions = [commands.index(stage.name) for stage in STAGES]
    assert positions == sorted(positions), commands


def test_the_nightly_flow_has_a_task_for_each_step_and_runs_the_declared_data_stages() -> None:
    from flows import orchestration

    source = (REPO / "flows" / "nightly.py").read_text(encoding="utf-8")
    tasks = [
        keyword.value.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "task"
        for keyword in node.keywords
        if keyword.arg == "name" and isinstance(keyword.value, ast.Constant)
    ]
    steps = list(dict.fromkeys(stage.step for stage in STAGES if stage.step is not None))
    assert [task for task in tasks if task in steps] == steps
    assert orchestration.DATA_STAGES == ("prepare", "graph", "pairs")


def test_the_helpers_read_slices_of_the_sequence_and_refuse_an_unknown_step() -> None:
    assert stage_names("data-stages") == ("prepare", "graph", "pairs")
    assert stages_from("ingest", "pairs") == ("ingest", "prepare", "graph", "pairs")
    assert stages_from("evaluate", "search") == ("evaluate", "promote", "search")
    with pytest.raises(KeyError, match="no stage is run by the step 'deploy'"):
        stage_names("deploy")


def test_every_wing_and_stage_is_a_package_of_pipelines() -> None:
    for wing in WINGS:
        assert (REPO / "pipelines" / wing / "__init__.py").is_file(), wing
    for stage in STAGES:
        folder = REPO.joinpath(*stage.package.split("."))
        assert (folder / "__init__.py").is_file() and (folder / "cli.py").is_file(), stage
