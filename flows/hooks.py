"""Failure reporting for the flows: which step failed and why, in the log and to a webhook.

Flows raise :class:`StepFailed` around each step, so the final state's message starts with
the step's name; the hook parses it back out, logs one line, and POSTs a small JSON
document to the URL in the environment variable ``flow.webhook_env`` names (if set).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import requests
from prefect import Flow
from prefect.client.schemas.objects import FlowRun
from prefect.logging.loggers import flow_run_logger
from prefect.states import State

from flows.redaction import redact_flow_logs
from pipelines.common.config import ConfigError, FlowParams, load_params
from pipelines.common.redact import HIDDEN, redact, redact_url

WEBHOOK_TIMEOUT_SECONDS = 10.0
_STEP_PATTERN = re.compile(r"step '([^']+)' failed")

T = TypeVar("T")


class StepFailed(RuntimeError):
    """A named step of a flow failed; the message names it and carries the cause."""

    def __init__(self, step: str, cause: BaseException) -> None:
        # Redacted here: the message becomes the run's state, its log lines and the webhook.
        super().__init__(redact(f"step '{step}' failed: {type(cause).__name__}: {cause}"))
        self.step = step

    @classmethod
    def combine(cls, failures: list[StepFailed]) -> StepFailed:
        """One error for several independent steps that failed in the same run."""
        if len(failures) == 1:
            return failures[0]
        steps = " and ".join(failure.step for failure in failures)
        return cls(steps, RuntimeError(" | ".join(str(failure) for failure in failures)))


def run_step(step: str, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call one step (a Prefect task); its failure becomes :class:`StepFailed` naming it."""
    try:
        return function(*args, **kwargs)
    except StepFailed:
        raise
    except Exception as error:
        raise StepFailed(step, error) from error


def failure_report(flow_name: str, flow_run: FlowRun, state: State[Any]) -> dict[str, Any]:
    """What the hook logs and posts (pure): flow, run, failed step and the reason.

    The message is redacted: a step's error can quote a URL with a password in it.
    """
    message = redact(state.message or "")
    match = _STEP_PATTERN.search(message)
    return {
        "flow": flow_name,
        "flow_run": flow_run.name,
        "flow_run_id": str(flow_run.id),
        "state": state.name,
        "step": match.group(1) if match else None,
        "message": message,
    }


def post_webhook(url: str, report: dict[str, Any], logger: logging.Logger | Any) -> bool:
    """POST the report; a webhook that fails is logged, never raised (the run already failed)."""
    try:
        response = requests.post(url, json=report, timeout=WEBHOOK_TIMEOUT_SECONDS)
        response.raise_for_status()
    except requests.RequestException as error:
        logger.warning(
            f"failure webhook {redact_url(url, keep_path=False)} did not accept the report: "
            f"{without_url(str(error), url)}"
        )
        return False
    return True


def without_url(text: str, url: str) -> str:
    """``text`` without ``url``'s secret parts (pure): a webhook's path is its key.

    HTTP errors quote the whole URL, connection errors only its path (``with url: /...``).
    """
    text = text.replace(url, redact_url(url, keep_path=False))
    parts = urlsplit(url)
    secret_path = parts.path + (f"?{parts.query}" if parts.query else "")
    if secret_path.strip("/"):
        text = text.replace(secret_path, f"/{HIDDEN}")
    return redact(text)


def report_failure(flow: Flow[Any, Any], flow_run: FlowRun, state: State[Any]) -> None:
    """Prefect ``on_failure`` / ``on_crashed`` hook."""
    redact_flow_logs()
    logger = flow_run_logger(flow_run, flow)
    report = failure_report(flow.name, flow_run, state)
    step = report["step"] or "unknown step"
    logger.error(f"{flow.name} run {flow_run.name} failed at {step}: {report['message']}")
    url = os.environ.get(_webhook_env(flow_run), "").strip()
    if url:
        post_webhook(url, report, logger)


def _webhook_env(flow_run: FlowRun) -> str:
    """The variable ``flow.webhook_env`` names in the run's params.yaml (else the default)."""
    parameters = flow_run.parameters or {}
    params_file = Path(str(parameters.get("root", "."))) / str(
        parameters.get("params_path", "params.yaml")
    )
    try:
        return load_params(params_file).flow.webhook_env
    except ConfigError:
        return FlowParams().webhook_env
