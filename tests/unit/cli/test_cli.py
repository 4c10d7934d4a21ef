"""The ``mathembed`` command line and the offline switches it applies at startup."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from repo import REPO as REPO_ROOT
from typer.testing import CliRunner

from mathembed.cli import app as mathembed_app
from pipelines import cli
from pipelines.common import offline

# The switches ARCHITECTURE.md requires, with the values it gives.
REQUIRED_SWITCHES = {
    "DO_NOT_TRACK": "true",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DVC_NO_ANALYTICS": "1",
    "HF_HUB_OFFLINE": "1",
}

runner = CliRunner()


def _env_without_switches() -> dict[str, str]:
    switches = offline.parse_env_file()
    return {
        key: value
        for key, value in os.environ.items()
        if key not in switches and key not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL"}
    }


@pytest.fixture
def fake_bench_script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Stand in for benchmarks/bench_metrics.py: record argv and env, exit with 3."""
    record = tmp_path / "record.json"
    script = tmp_path / "bench_metrics.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import json, os, sys
            with open({str(record)!r}, "w") as handle:
                json.dump({{"argv": sys.argv[1:], "executable": sys.executable,
                           "env": dict(os.environ)}}, handle)
            sys.exit(3)
            """
        )
    )
    monkeypatch.setattr(cli, "BENCH_METRICS_SCRIPT", script)
    return record


def test_help_lists_the_commands() -> None:
    result = runner.invoke(cli.app, ["--help"])
    assert result.exit_code == 0, result.output
    assert "bench-metrics" in result.output
    assert "version" in result.output


def test_no_arguments_shows_help() -> None:
    result = runner.invoke(cli.app, [])
    assert "bench-metrics" in result.output


def test_version_prints_mathembed_and_metrics_rs_versions() -> None:
    import metrics_rs

    result = runner.invoke(cli.app, ["version"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert f"mathembed {metadata.version('mathembed')}" in lines
    assert f"metrics_rs {metrics_rs.__version__}" in lines
    assert metrics_rs.__version__ == metadata.version("metrics_rs")


def test_bench_metrics_forwards_flags_and_exit_code(fake_bench_script: Path) -> None:
    result = runner.invoke(cli.app, ["bench-metrics", "--quick", "--out", "somewhere.json"])
    assert result.exit_code == 3
    recorded = json.loads(fake_bench_script.read_text())
    assert recorded["argv"] == ["--quick", "--out", "somewhere.json"]
    assert recorded["executable"] == sys.executable


def test_bench_metrics_without_flags_passes_none(fake_bench_script: Path) -> None:
    runner.invoke(cli.app, ["bench-metrics"])
    assert json.loads(fake_bench_script.read_text())["argv"] == []


def test_cli_startup_applies_switches_without_overriding(
    fake_bench_script: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in offline.parse_env_file():
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    runner.invoke(cli.app, ["bench-metrics"])
    child_env = json.loads(fake_bench_script.read_text())["env"]
    assert child_env["HF_HUB_OFFLINE"] == "0"
    for key, value in REQUIRED_SWITCHES.items():
        if key != "HF_HUB_OFFLINE":
            assert child_env[key] == value


def test_bench_metrics_names_a_missing_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nowhere" / "bench_metrics.py"
    monkeypatch.setattr(cli, "BENCH_METRICS_SCRIPT", missing)
    result = runner.invoke(cli.app, ["bench-metrics", "--quick"])
    assert result.exit_code == 2
    assert str(missing) in result.stderr


def test_real_bench_script_path_points_into_the_checkout() -> None:
    assert REPO_ROOT / "benchmarks" / "bench_metrics.py" == cli.BENCH_METRICS_SCRIPT


def test_offline_env_file_holds_the_required_switches() -> None:
    switches = offline.parse_env_file()
    assert {key: switches.get(key) for key in REQUIRED_SWITCHES} == REQUIRED_SWITCHES


def test_test_session_runs_with_the_switches_set() -> None:
    # conftest.py applied them; a value the developer set explicitly is kept.
    assert set(offline.parse_env_file()) <= set(os.environ)


def test_apply_keeps_values_that_are_already_set() -> None:
    environ = {"HF_HUB_OFFLINE": "0", "DO_NOT_TRACK": "", "UNRELATED": "x"}
    newly_set = offline.apply(environ)
    switches = offline.parse_env_file()
    assert environ["HF_HUB_OFFLINE"] == "0"
    assert environ["DO_NOT_TRACK"] == ""
    assert environ["UNRELATED"] == "x"
    assert "HF_HUB_OFFLINE" not in newly_set
    assert "DO_NOT_TRACK" not in newly_set
    assert newly_set == {
        k: v for k, v in switches.items() if k not in {"HF_HUB_OFFLINE", "DO_NOT_TRACK"}
    }
    assert all(environ[key] == value for key, value in newly_set.items())


@pytest.mark.parametrize(
    "line",
    ['FOO="bar"', "FOO=a b", "FOO=$HOME", "lower=1", "FOO", "FOO=a=b", "export FOO=1"],
)
def test_parse_rejects_lines_make_and_python_would_read_differently(
    tmp_path: Path, line: str
) -> None:
    env_file = tmp_path / "offline.env"
    env_file.write_text(f"# comment\n\nOK=1\n{line}\n")
    with pytest.raises(ValueError, match=r"offline\.env:4: expected KEY=VALUE"):
        offline.parse_env_file(env_file)


def test_parse_rejects_a_repeated_key(tmp_path: Path) -> None:
    env_file = tmp_path / "offline.env"
    env_file.write_text("FOO=1\nFOO=2\n")
    with pytest.raises(ValueError, match="offline.env:2: FOO is set twice"):
        offline.parse_env_file(env_file)


def test_the_command_line_loads_no_heavy_library_until_a_command_runs() -> None:
    # Every command module is imported to build `mathembed --help`: it must stay quick
    # and work before the Rust extension is built.
    heavy = ("pandas", "torch", "sentence_transformers", "mlflow", "prefect", "metrics_rs")
    code = f"import sys, mathembed.cli; print([m for m in {heavy!r} if m in sys.modules])"
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT
    )
    assert completed.stdout.strip() == "[]"


def test_importing_the_packages_changes_no_environment_variable() -> None:
    code = (
        "import json, os; before = dict(os.environ); "
        "import pipelines, pipelines.cli, pipelines.common.offline, flows, mathembed.cli; "
        "print(json.dumps(dict(os.environ) == before))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code],
        env=_env_without_switches(),
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO_ROOT,
    )
    assert json.loads(completed.stdout) is True


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
@pytest.mark.parametrize("preset", [{}, {"HF_HUB_OFFLINE": "0"}])
def test_makefile_exports_the_same_switches(preset: dict[str, str]) -> None:
    completed = subprocess.run(
        ["make", "--no-print-directory", "-s", "offline-env"],
        env=_env_without_switches() | preset,
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO_ROOT,
    )
    exported = dict(line.split("=", 1) for line in completed.stdout.splitlines())
    assert exported == offline.parse_env_file() | preset


def registered_commands() -> list[str]:
    """The ``mathembed`` console script's commands: the pipelines' app and the flows'."""
    return sorted(str(info.name) for info in mathembed_app.registered_commands)


def test_every_stage_in_dvc_yaml_runs_a_mathembed_command() -> None:
    stages = yaml.safe_load((REPO_ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    for name, stage in stages.items():
        program, command, *_options = stage["cmd"].split()
        assert (program, command) == ("mathembed", name)
        assert command in registered_commands()


@pytest.mark.parametrize(
    "command",
    ["sample", "ingest", "prepare", "graph", "pairs", "validate", "train", "evaluate"]
    + ["promote", "status", "rollback", "search", "report", "summary", "services"]
    + ["nightly", "serve", "pools"],
)
def test_every_command_shows_its_own_usage(command: str) -> None:
    assert command in registered_commands()
    result = runner.invoke(mathembed_app, [command, "--help"], prog_name="mathembed")
    assert result.exit_code == 0, result.output
    assert f"Usage: mathembed {command} [OPTIONS]" in result.output


@pytest.mark.parametrize(
    "command", ["ingest", "prepare", "graph", "pairs", "validate", "train", "evaluate", "promote"]
)
def test_a_configuration_error_exits_2_and_names_the_key(command: str, tmp_path: Path) -> None:
    params = tmp_path / "params.yaml"
    params.write_text("train:\n  batch_sise: 4\n", encoding="utf-8")
    result = runner.invoke(cli.app, [command, "--params", str(params), "--root", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert f"{command}: " in result.stderr and "batch_sise" in result.stderr
    assert "Traceback" not in result.output


def test_stage_command_passes_the_exit_code_through(tmp_path: Path) -> None:
    # graph on an empty root has no processed tables: a clear error, a non-zero exit.
    result = runner.invoke(cli.app, ["graph", "--root", str(tmp_path)])
    assert result.exit_code != 0
    assert "processed" in result.output


@pytest.mark.parametrize(
    "args",
    [["sample"], ["ingest"], ["prepare"], ["graph"], ["pairs"], ["validate"], ["train"]]
    + [["evaluate"], ["promote"], ["status"], ["rollback"], ["search", "graph colouring"]],
)
def test_a_relative_params_is_read_from_root_not_the_cwd(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The root's params file has a typo, so reading it (and only it) exits 2 naming the key
    # before any work starts; the cwd has no such file.
    root = tmp_path / "project"
    root.mkdir()
    (root / "night.yaml").write_text("train:\n  batch_sise: 4\n", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = runner.invoke(cli.app, [*args, "--params", "night.yaml", "--root", str(root)])
    assert result.exit_code == 2, result.output
    assert "batch_sise" in result.stderr, result.stderr


def test_params_path_keeps_an_absolute_path_and_joins_a_relative_one(tmp_path: Path) -> None:
    from pipelines.common.cli import params_path

    (tmp_path / "params.yaml").write_text("{}\n", encoding="utf-8")
    assert params_path(Path("params.yaml"), tmp_path) == tmp_path / "params.yaml"
    assert params_path(Path("conf/x.yaml"), tmp_path) == tmp_path / "conf" / "x.yaml"
    assert params_path(tmp_path / "x.yaml", Path("/elsewhere")) == tmp_path / "x.yaml"


def test_a_root_without_params_yaml_runs_on_the_project_file(tmp_path: Path) -> None:
    from pipelines.common.cli import params_path
    from pipelines.common.config import PROJECT_PARAMS_FILE

    assert params_path(Path("params.yaml"), tmp_path) == PROJECT_PARAMS_FILE
    # A file named explicitly must exist where it is said to be.
    assert params_path(Path("night.yaml"), tmp_path) == tmp_path / "night.yaml"
