"""A password in ``MLFLOW_TRACKING_URI`` is never printed or stored by promotion (issue 14)."""

from __future__ import annotations

import json

import pytest
from promotion_worlds import Models, World
from typer.testing import CliRunner

from pipelines import cli
from pipelines.promote.decision import Decision
from pipelines.promote.formatting import format_promotion
from pipelines.promote.promotion import PromotionResult

SECRET = "s3cr3t-pw"
# Port 9 (discard) on the loopback: nothing answers, so the health check fails at once.
URI = f"http://alice:{SECRET}@127.0.0.1:9"


pytestmark = pytest.mark.usefixtures("bounded_in_time")


@pytest.mark.parametrize("command", [("promote",), ("status",), ("rollback",), ("search", "x")])
def test_an_unreachable_server_s_password_is_not_printed(
    world: World, bow_models: Models, monkeypatch: pytest.MonkeyPatch, command: tuple[str, ...]
) -> None:
    if command == ("promote",):
        world.install_candidate(bow_models.knows_4)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", URI)
    params_file = world.root / "params.yaml"
    params_file.write_text("evaluate:\n  ks: [1, 5, 10]\n")
    result = CliRunner().invoke(
        cli.app, [*command, "--root", str(world.root), "--params", str(params_file)]
    )
    assert result.exit_code == 1
    assert "127.0.0.1:9" in result.stderr  # the server is still named
    assert SECRET not in result.output
    assert SECRET not in result.stderr


def test_a_promotion_result_never_carries_the_password() -> None:
    decision = Decision(
        promote=True,
        reason="promoted over the base",
        compared_against="base",
        candidate={"mrr@10": 0.5},
        other={"mrr@10": 0.25},
        deltas={"mrr@10": 0.25},
        p_value=0.01,
    )
    result = PromotionResult(
        registered_model="math-embed",
        version="1",
        fingerprint="f" * 64,
        run_id="r1",
        decision=decision,
        compared_version=None,
        aliases={"champion": "1"},
        already_registered=False,
        tracking_uri=URI,
        decided_at="2026-01-01T00:00:00+00:00",
    )
    assert SECRET not in json.dumps(result.as_json())
    assert SECRET not in format_promotion(result)
    assert "127.0.0.1:9" in format_promotion(result)  # where it went is still said
