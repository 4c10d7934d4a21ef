"""Failure reporting for the flows: which step failed and why, in the log, to a webhook and
in MLflow.

Flows raise :class:`StepFailed` around each step, so the final state's message starts with
the step's name; the hook parses it back out, logs one line, POSTs a small JSON document
to the URL in the environment variable ``flow.webhook_env`` names (if set; the nightly
flow posts its promotion decisions there too) and records the night as ``failed`` in
MLflow (:func:`pipelines.promote.nights.record_night`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, unquote, urlsplit

import requests
from prefect import Flow
from prefect.client.schemas.objects import FlowRun
from prefect.logging.loggers import flow_run_logger
from prefect.states import State

from flows.outcome import failure_reason
from flows.redaction import redact_flow_logs
from flows.stopping import note_step
from pipelines.common.config import ConfigError, FlowParams, Params, load_params
from pipelines.common.paths import Paths
from pipelines.common.redact import HIDDEN, redact, redact_url
from pipelines.promote.headline import FAILED

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
    """Call one step (a Prefect task); its failure becomes :class:`StepFailed` naming it.

    A signal that stops the night in it (SIGTERM, Ctrl-C) goes on as it is, noted with the
    step's name (:func:`flows.stopping.note_step`).
    """
    try:
        return function(*args, **kwargs)
    except StepFailed:
        raise
    except Exception as error:
        raise StepFailed(step, error) from error
    except BaseException as stop:
        note_step(stop, step)
        raise


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
        "outcome": FAILED,
        "step": match.group(1) if match else None,
        "message": message,
    }


def post_webhook(url: str, report: dict[str, Any], logger: logging.Logger | Any) -> bool:
    """POST the report; a webhook that fails is logged, never raised (a notice is a
    courtesy: it neither fails a night nor hides why one failed).

    Redirects are not followed: a redirect's target is a URL this code never saw, so
    nothing could hide its key from the error that names it; the webhook's URL must be
    its final one.
    """
    problem: str | None = None
    try:
        response = requests.post(
            url, json=report, timeout=WEBHOOK_TIMEOUT_SECONDS, allow_redirects=False
        )
        response.raise_for_status()
        if 300 <= response.status_code < 400:
            problem = (
                f"it answered HTTP {response.status_code}, a redirect, which is not "
                "followed; set the webhook's final URL"
            )
    except requests.RequestException as error:
        problem = without_url(str(error), url)
    if problem is None:
        return True
    logger.warning(
        f"webhook {redact_url(url, keep_path=False)} did not accept the report: {problem}"
    )
    return False


def without_url(text: str, url: str) -> str:
    """``text`` without ``url``'s secret parts, in any form (pure): a webhook's path is its key.

    HTTP errors quote the whole URL, connection errors only its path (``with url: /...``),
    and both quote it as ``requests`` sent it, not as it was given: ``%41`` unquoted to
    ``A``, a space quoted to ``%20``, dot segments resolved. Each of those forms is hidden,
    the longest first, then every URL's credentials.
    """
    for form in sorted(_secret_forms(url), key=len, reverse=True):
        text = text.replace(form, f"/{HIDDEN}")
    return redact(text)


def _secret_forms(url: str) -> set[str]:
    """Every way an error may quote ``url``'s path, query and fragment (pure)."""
    sent = [url]
    # A URL requests refuses is never sent, so it is quoted only as given.
    with contextlib.suppress(requests.RequestException, ValueError):
        sent.append(str(requests.Request("POST", url).prepare().url))
    forms: set[str] = set()
    for address in sent:
        parts = urlsplit(address)
        path_url = parts.path + (f"?{parts.query}" if parts.query else "")
        for secret in (path_url, path_url + (f"#{parts.fragment}" if parts.fragment else "")):
            if secret.strip("/"):
                decoded = unquote(secret)
                forms |= {secret, decoded, quote(decoded, safe="/?&=#:@!$'()*+,;~")}
    return forms


def report_failure(flow: Flow[Any, Any], flow_run: FlowRun, state: State[Any]) -> None:
    """Prefect ``on_failure`` / ``on_crashed`` hook: the log line and the webhook."""
    redact_flow_logs()
    logger = flow_run_logger(flow_run, flow)
    report = failure_report(flow.name, flow_run, state)
    step = report["step"] or "unknown step"
    logger.error(f"{flow.name} run {flow_run.name} failed at {step}: {report['message']}")
    _root, params = _run_params(flow_run)
    webhook_env = params.flow.webhook_env if params else FlowParams().webhook_env
    url = os.environ.get(webhook_env, "").strip()
    if url:
        post_webhook(url, report, logger)


def report_failed_night(flow: Flow[Any, Any], flow_run: FlowRun, state: State[Any]) -> None:
    """The nightly flow's failure hook: :func:`report_failure`, then the night's record in
    MLflow (outcome ``failed``, the step and its error as the reason)."""
    report_failure(flow, flow_run, state)
    root, params = _run_params(flow_run)
    if params is None:
        flow_run_logger(flow_run, flow).warning(
            "this night is not recorded in MLflow: its params.yaml did not load"
        )
        return
    from pipelines.promote.nights import record_night

    message = failure_report(flow.name, flow_run, state)["message"]
    record_night(Paths(root), params, FAILED, failure_reason(message))


def _run_params(flow_run: FlowRun) -> tuple[Path, Params | None]:
    """The run's root and params.yaml (``None`` when that file is what failed to load)."""
    parameters = flow_run.parameters or {}
    root = Path(str(parameters.get("root", ".")))
    params_file = root / str(parameters.get("params_path", "params.yaml"))
    try:
        return root, load_params(params_file)
    except ConfigError:
        return root, None
