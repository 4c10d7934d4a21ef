"""``mathembed nightly`` and ``mathembed serve`` refuse what they cannot honour (issue 14).

``--params`` other than the root's params.yaml (DVC reads that one only) and ``serve``
without a Prefect server (its schedule would never run) exit 2 with the fix, before any
work starts.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prefect.settings import PREFECT_API_URL, temporary_settings
from prefect.states import Completed
from repo import REPO
from typer.testing import CliRunner, Result

from flows import nightly
from mathembed import cli


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "params.yaml").write_text((REPO / "params.yaml").read_text())
    (tmp_path / "alt.yaml").write_text((REPO / "params.yaml").read_text())
    return tmp_path


@pytest.fixture
def flow_runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """The nightly runs started, instead of running them; a Prefect API URL is set."""
    runs: list[dict[str, Any]] = []

    def fake_run(**parameters: Any) -> Any:
        runs.append(parameters)
        return Completed(message="nothing to do")

    monkeypatch.setattr(nightly, "nightly_retrain", fake_run)
    with temporary_settings({PREFECT_API_URL: "http://127.0.0.1:9/api"}):
        yield runs


def invoke(*arguments: str) -> Result:
    return CliRunner().invoke(cli.app, list(arguments))


@pytest.mark.parametrize("params", ["alt.yaml", "../params.yaml", "sub/params.yaml"])
def test_nightly_refuses_another_params_file(
    project: Path, flow_runs: list[dict[str, Any]], params: str
) -> None:
    result = invoke("nightly", "--root", str(project), "--params", params)
    assert result.exit_code == 2
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1 and message.startswith(f"nightly: --params {params}")
    assert str(project.resolve() / "params.yaml") in message and "dvc repro" in message
    assert flow_runs == []  # refused before the flow started


@pytest.mark.parametrize("params", ["params.yaml", "./params.yaml"])
def test_nightly_runs_on_the_root_s_params_yaml(
    project: Path, flow_runs: list[dict[str, Any]], params: str
) -> None:
    result = invoke("nightly", "--root", str(project), "--params", params)
    assert result.exit_code == 0, result.output
    assert len(flow_runs) == 1


def test_the_flow_itself_refuses_another_params_file(project: Path) -> None:
    # A deployment passes params_path without the CLI: the first step refuses it too.
    from flows import orchestration as orch
    from pipelines.common.config import ConfigError

    with pytest.raises(ConfigError, match="dvc repro"):
        orch.dvc_params_file(project, "alt.yaml")
    assert orch.dvc_params_file(project, "params.yaml") == project.resolve() / "params.yaml"


def test_serve_without_a_prefect_server_refuses_to_start(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def serve(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("served on a temporary server")

    monkeypatch.setattr(nightly.nightly_retrain, "serve", serve)
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        result = invoke("serve", "--root", str(project))
    assert result.exit_code == 2
    assert "serving" not in result.stdout
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1 and message.startswith("serve: PREFECT_API_URL")
    assert "make services" in message and "source .services/env.sh" in message


def test_serve_refuses_another_params_file(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nightly.nightly_retrain, "serve", lambda *a, **k: None)
    with temporary_settings({PREFECT_API_URL: "http://127.0.0.1:9/api"}):
        result = invoke("serve", "--root", str(project), "--params", "alt.yaml")
    assert result.exit_code == 2 and "serving" not in result.stdout
    assert result.stderr.startswith("serve: --params alt.yaml")


def test_serve_with_a_prefect_server_serves(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    served: list[dict[str, Any]] = []
    monkeypatch.setattr(nightly.nightly_retrain, "serve", lambda **kwargs: served.append(kwargs))
    with temporary_settings({PREFECT_API_URL: "http://127.0.0.1:9/api"}):
        result = invoke("serve", "--root", str(project))
    assert result.exit_code == 0, result.output
    assert "serving nightly-retrain" in result.stdout
    assert served[0]["parameters"]["params_path"] == "params.yaml"


def test_nightly_ends_with_the_report_decision_first(
    project: Path, flow_runs: list[dict[str, Any]]
) -> None:
    result = invoke("nightly", "--root", str(project))
    assert result.exit_code == 0, result.output
    state_line, decision_line, *rest = result.stdout.splitlines()
    assert state_line == "nightly-retrain: Completed: nothing to do"
    assert decision_line.startswith("No decision yet: ")  # this project never promoted
    assert "What ran:" in rest


def test_a_failed_night_prints_no_stale_report(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect.states import Failed

    monkeypatch.setattr(nightly, "nightly_retrain", lambda **_: Failed(message="step 'x' failed"))
    with temporary_settings({PREFECT_API_URL: "http://127.0.0.1:9/api"}):
        result = invoke("nightly", "--root", str(project))
    assert result.exit_code == 1
    assert result.stdout.splitlines() == ["nightly-retrain: Failed: step 'x' failed"]


def test_pools_without_a_prefect_server_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        result = invoke("pools")
    assert result.exit_code == 2
    assert result.stderr.startswith("pools: PREFECT_API_URL is not set")
    assert "make services" in result.stderr
