"""The flows never log, print or send a password or a webhook's key (issue 14, finding 14).

A password in ``MLFLOW_TRACKING_URI`` reaches the flow in error messages and in the lines
``dvc`` prints; the failure webhook's path is its key. Both are redacted in the step's
error (the run's state), the failure hook's log line and webhook body, the webhook's own
failure warning, Prefect's log records and the CLI's last line.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from prefect.client.schemas.objects import FlowRun
from prefect.settings import PREFECT_API_URL, temporary_settings
from prefect.states import Failed
from repo import REPO
from typer.testing import CliRunner
from webhook import Webhook, receiving_webhook

from flows import hooks, nightly, steps
from flows.redaction import FLOW_LOGGERS, RedactingFilter, redact_flow_logs
from mathembed import cli

PASSWORD = "s3cr3t-pw"
TRACKING_URI = f"http://alice:{PASSWORD}@127.0.0.1:5000"
WEBHOOK_KEY = "T0KEN-9f8e7d"
FAILURE = (
    "Flow run encountered an exception: StepFailed: step 'promote' failed: "
    f"RegistryError: MLflow at {TRACKING_URI} did not answer"
)


def no_secret(text: str) -> bool:
    return PASSWORD not in text and WEBHOOK_KEY not in text


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    with receiving_webhook() as receiver:
        yield receiver


@pytest.fixture
def hook_log(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> Any:
    """What the failure hook logs (a plain logger instead of the Prefect API's)."""
    logger = logging.getLogger("test.flow_secrets.hook")
    monkeypatch.setattr(hooks, "flow_run_logger", lambda *_args: logger)
    caplog.set_level(logging.INFO, logger=logger.name)
    return caplog


def fail_the_night(monkeypatch: pytest.MonkeyPatch, webhook_url: str) -> None:
    monkeypatch.setenv("MATHEMBED_WEBHOOK_URL", webhook_url)
    flow_run = FlowRun(
        id=uuid4(), name="brave-otter", flow_id=uuid4(), parameters={"root": str(REPO)}
    )
    hooks.report_failure(nightly.nightly_retrain, flow_run, Failed(message=FAILURE))


def test_the_failure_hook_logs_and_sends_no_password(
    monkeypatch: pytest.MonkeyPatch, webhook: Webhook, hook_log: pytest.LogCaptureFixture
) -> None:
    fail_the_night(monkeypatch, f"{webhook.url}/{WEBHOOK_KEY}")
    (report,) = webhook.reports
    assert report["step"] == "promote"
    assert "127.0.0.1:5000" in report["message"]  # where, not who
    assert no_secret(json.dumps(report))
    assert "failed at promote" in hook_log.text and no_secret(hook_log.text)


@pytest.mark.parametrize("answer", [500, None])  # refused, or nothing listening at all
def test_a_failing_webhook_s_warning_hides_its_key(
    monkeypatch: pytest.MonkeyPatch,
    webhook: Webhook,
    hook_log: pytest.LogCaptureFixture,
    answer: int | None,
) -> None:
    if answer is None:
        url = f"http://127.0.0.1:9/hook/{WEBHOOK_KEY}?token={WEBHOOK_KEY}"  # discard port
    else:
        webhook.status = answer
        url = f"{webhook.url}/{WEBHOOK_KEY}"
    fail_the_night(monkeypatch, url)
    assert "did not accept the report" in hook_log.text
    assert "127.0.0.1" in hook_log.text and no_secret(hook_log.text)


def test_a_failed_step_s_error_carries_no_password() -> None:
    failure = hooks.StepFailed("promote", RuntimeError(f"cannot reach {TRACKING_URI}"))
    assert no_secret(str(failure)) and "127.0.0.1:5000" in str(failure)
    both = hooks.StepFailed.combine([failure, hooks.StepFailed("dvc-push", OSError("s3"))])
    assert no_secret(str(both))


def test_the_flow_s_log_lines_are_redacted(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    logger = logging.getLogger("test.flow_secrets.run")
    monkeypatch.setattr(steps, "get_run_logger", lambda: logger)
    caplog.set_level(logging.INFO, logger=logger.name)
    steps.log(f"promote: tracking server {TRACKING_URI}")  # a line dvc printed
    assert "tracking server http://***@127.0.0.1:5000" in caplog.text
    assert no_secret(caplog.text)


def test_prefect_s_own_records_are_redacted_before_any_handler_sees_them() -> None:
    # Prefect logs a failed task's exception and the final state itself.
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("test.flow_secrets.prefect")
    logger.propagate = False
    logger.addHandler(handler)
    try:
        redact_flow_logs((logger.name,))
        redact_flow_logs((logger.name,))  # idempotent
        assert len(handler.filters) == 1
        logger.error("Finished in state Failed(%r)", FAILURE)
        try:
            raise RuntimeError(f"MLflow at {TRACKING_URI} did not answer")
        except RuntimeError:
            logger.exception("Task run failed")
    finally:
        logger.removeHandler(handler)
    text = stream.getvalue()
    assert "Traceback" in text and "127.0.0.1:5000" in text
    assert no_secret(text)


def test_the_flow_loggers_handlers_are_covered() -> None:
    redact_flow_logs()
    handlers = [h for name in FLOW_LOGGERS for h in logging.getLogger(name).handlers]
    assert handlers  # Prefect's logging.yml: console on root, api on the run loggers
    assert all(any(isinstance(f, RedactingFilter) for f in h.filters) for h in handlers)


def test_mathembed_nightly_prints_no_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "params.yaml").write_text((REPO / "params.yaml").read_text())
    monkeypatch.setattr(nightly, "nightly_retrain", lambda **_kwargs: Failed(message=FAILURE))
    with temporary_settings({PREFECT_API_URL: "http://127.0.0.1:9/api"}):
        result = CliRunner().invoke(cli.app, ["nightly", "--root", str(tmp_path)])
    assert result.exit_code == 1
    assert "step 'promote' failed" in result.output and no_secret(result.output)
