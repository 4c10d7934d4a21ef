"""What the flows' steps share: redacted logging, ``dvc`` bounded by the task, time limits, retries.

Each Prefect task gets its time limit from params.yaml (:func:`bounded`); a ``dvc`` command
it runs is bounded by the same limit (:func:`dvc`), so that the command's process group
ends with the task even where Prefect cannot interrupt a blocking read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from prefect import Task, get_run_logger
from prefect.context import TaskRunContext
from prefect.states import State

from flows import orchestration as orch
from pipelines.common.config import FlowParams
from pipelines.common.redact import redact

P = ParamSpec("P")
R = TypeVar("R")


def log(line: str) -> None:
    get_run_logger().info(redact(line))


def task_timeout() -> float | None:
    """The running task's time limit, if any."""
    context = TaskRunContext.get()
    return context.task.timeout_seconds if context is not None else None


def dvc(arguments: list[str], root: Path) -> list[str]:
    """``dvc`` bounded by the running task's timeout, so its processes end with the task."""
    return orch.run_dvc(arguments, root, log=log, timeout_seconds=task_timeout())


def bounded(step: Task[P, R], flow_params: FlowParams) -> Task[P, R]:
    """A step with its time limit from params.yaml: a stuck step fails the night, with why."""
    return step.with_options(timeout_seconds=orch.step_timeout_seconds(step.name, flow_params))


def retry_unless_permanent(_task: Any, _task_run: Any, state: State[Any]) -> bool:
    """Retry a network step, but not what a retry cannot fix (:func:`orch.worth_retrying`)."""
    try:
        state.result()
    except Exception as error:
        return orch.worth_retrying(error)
    return False
