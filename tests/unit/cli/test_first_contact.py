"""First contact (issue 13, item 10): each command's own usage, and a missing extension
that says `make build` instead of a traceback."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest
import typer
from repo import REPO
from typer.testing import CliRunner

from pipelines import cli
from pipelines.common.cli import MISSING_EXTENSION, is_missing_extension

runner = CliRunner()


def every_command() -> list[str]:
    group = typer.main.get_command(cli.app)
    assert isinstance(group, typer.core.TyperGroup)
    return sorted(group.commands)


def test_every_command_is_headed_mathembed_and_shows_its_own_options() -> None:
    commands = every_command()
    assert {"status", "promote", "search", "evaluate"} <= set(commands)
    for command in commands:
        result = runner.invoke(cli.app, [command, "--help"])  # the app's own name, no prog_name
        assert result.exit_code == 0, (command, result.output)
        assert f"Usage: mathembed {command} [OPTIONS]" in result.output, result.output
    status_help = runner.invoke(cli.app, ["status", "--help"]).output
    assert "--lock-timeout" not in status_help and "Usage: mathembed promote" not in status_help


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``command`` as a process, its output captured as text; a hang fails after 60 s."""
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=60, check=False)


LAUNCHERS = {
    "module": [sys.executable, "-m", "pipelines"],
    "python -c": [sys.executable, "-c", "from pipelines.cli import app; app()"],
    "console script": [str(Path(sys.executable).with_name("mathembed"))],
}


@pytest.mark.parametrize("launcher", LAUNCHERS.values(), ids=LAUNCHERS.keys())
def test_a_real_process_is_headed_mathembed(launcher: list[str]) -> None:
    completed = run([*launcher, "status", "--help"], cwd=REPO)
    assert completed.returncode == 0, completed.stderr
    assert "Usage: mathembed status [OPTIONS]" in completed.stdout


BLOCK_EXTENSION = (
    "import sys; sys.modules['metrics_rs'] = None; "  # `import metrics_rs` now fails
    "from pipelines.cli import app; app(sys.argv[1:])"
)


# Commands that need the extension (search does not: it ranks with numpy).
@pytest.mark.parametrize("args", [["evaluate"], ["status"], ["version"]])
def test_a_command_without_the_extension_says_run_make_build(
    args: list[str], tmp_path: Path
) -> None:
    root = ["--root", str(tmp_path)] if args[0] != "version" else []
    completed = run([sys.executable, "-c", BLOCK_EXTENSION, *args, *root], cwd=tmp_path)
    if args[0] == "version":  # version reports the extension itself, as before
        assert completed.returncode == 1 and "make build" in completed.stderr
        return
    assert completed.returncode == 2, completed.stderr
    assert completed.stderr.strip() == f"{args[0]}: {MISSING_EXTENSION}"
    assert "Traceback" not in completed.stderr


def test_help_works_without_the_extension(tmp_path: Path) -> None:
    completed = run([sys.executable, "-c", BLOCK_EXTENSION, "promote", "--help"], cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert "Usage: mathembed promote" in completed.stdout


def test_which_errors_mean_the_extension_is_missing() -> None:
    assert is_missing_extension(ModuleNotFoundError("no", name="metrics_rs"))
    assert is_missing_extension(ImportError("cannot import name", name="metrics_rs"))
    assert not is_missing_extension(ModuleNotFoundError("no", name="torch"))
    unbuilt = types.ModuleType("metrics_rs")  # the source folder as a namespace package
    assert is_missing_extension(AttributeError("no ndcg", name="ndcg", obj=unbuilt))
    built = types.ModuleType("metrics_rs")
    built.__file__ = "/site-packages/metrics_rs/_native.so"
    assert not is_missing_extension(AttributeError("no ndcg", name="ndcg", obj=built))
    assert not is_missing_extension(AttributeError("other", name="x", obj=object()))
    assert not is_missing_extension(ValueError("metrics_rs"))
