"""What the nightly flow needs besides the stages: DVC as a subprocess, its state, a run lock.

The flows' decisions live here as pure functions (:func:`nightly_work`), next to thin
shells over ``dvc`` (:func:`run_dvc`) and the small record of what the last nightly run
pushed (``metrics/nightly.json``); the Prefect wiring is in ``nightly.py``.
"""

from __future__ import annotations

import hashlib
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from flows import processes
from flows.rwlock import RwlockError, recover_rwlock
from pipelines.common import io
from pipelines.common.config import PARAMS_FILE, ConfigError, FlowParams
from pipelines.common.locks import held_lock, since_now
from pipelines.common.parts import stage_names
from pipelines.common.paths import MODEL_METADATA_FILE, Paths
from pipelines.common.redact import redact, redact_url
from pipelines.registry.metric_records import PromotionRecord
from pipelines.retrieval.models import model_fingerprint

#: The DVC stages the night's ``data-stages`` step runs (prepare, graph, pairs): the
#: stages between ingest and validate.
DATA_STAGES = stage_names("data-stages")
#: The data stages with a stage-wide time budget, which may leave papers for the next night.
DEFERRING_STAGES = ("prepare", "graph")
#: How much of a failed command's output goes into the error message.
ERROR_TAIL_LINES = 20
#: The steps that train (in place or on the GPU pool): flow.train_timeout_seconds bounds them.
TRAINING_STEPS = ("train", "train-on-gpu-pool")
#: What DVC's status makes pygtrie warn about (DVC's use of it, nothing to fix here).
DVC_TRIE_DEPRECATION = r"_NoneStep\.value will soon raise AttributeError"
#: The state name of a run that found another one in progress on its root.
SKIPPED = "Skipped"
#: What ``dvc`` says (lower-cased) when it runs outside a DVC project.
NOT_A_DVC_PROJECT = "not inside of a dvc repository"


class DvcError(RuntimeError):
    """A ``dvc`` command failed; the message has the command and the end of its output."""


class DvcTimeoutError(DvcError):
    """A ``dvc`` command ran past its time limit; it and its processes were ended."""


class DvcSetupError(DvcError):
    """``dvc`` cannot run here at all (no DVC project): a retry would fail the same way."""


class NightlyBusyError(RuntimeError):
    """Another nightly run holds the lock on this root."""


def dvc_params_file(root: Path, params_path: str | Path) -> Path:
    """``root``'s params.yaml, the only one a flow can run on; a :class:`ConfigError` else.

    The stages run through ``dvc repro``, and DVC reads ``<root>/params.yaml`` whatever
    the flow was given: another file would be half honoured, so it is refused.
    """
    expected = (root / PARAMS_FILE).resolve()
    given = (root / params_path).resolve()
    if given != expected:
        raise ConfigError(
            f"--params {params_path}: the nightly flow runs its stages through `dvc repro`, "
            f"which reads {expected} only; put the settings there (or copy the project "
            "and run it there)"
        )
    return expected


def step_timeout_seconds(step: str, flow: FlowParams) -> float:
    """How long the step named ``step`` may run before it fails the night (pure)."""
    return flow.train_timeout_seconds if step in TRAINING_STEPS else flow.task_timeout_seconds


def worth_retrying(error: BaseException) -> bool:
    """Whether a network step that failed with ``error`` may succeed on a retry (pure).

    Not when there is no DVC project (the same command fails the same way) and not after a
    timeout (the night is bounded; retrying a stuck step would multiply the bound).
    """
    return not isinstance(error, DvcSetupError | DvcTimeoutError | TimeoutError)


def dvc_environment() -> dict[str, str]:
    """The environment for ``dvc``: this interpreter's folder first on PATH.

    dvc.yaml's commands say ``python -m ...``; putting the venv's bin first makes them run
    with the interpreter (and packages) of the caller, as ``make repro`` does.
    """
    environment = dict(os.environ)
    bin_dir = str(Path(sys.executable).parent)
    environment["PATH"] = os.pathsep.join([bin_dir, environment.get("PATH", "")])
    return environment


def run_dvc(
    arguments: list[str],
    root: Path,
    log: Callable[[str], None] = print,
    timeout_seconds: float | None = None,
) -> list[str]:
    """Run ``dvc <arguments>`` in ``root``, passing each output line to ``log``.

    Returns the output lines. ``dvc`` and the stage it runs are one process group that
    ends with this call: after ``timeout_seconds``, on an exception, or when this process
    dies (:mod:`flows.processes`). Raises :class:`DvcError` naming the command and the
    last lines of its output when it fails; :class:`DvcTimeoutError` when it ran out of
    time; :class:`DvcSetupError` when ``root`` is no DVC project or its corrupt rwlock
    cannot be removed yet (retrying cannot help).
    """
    _recover_rwlock(root, log)
    command = [sys.executable, "-m", "dvc", *arguments]
    finished = processes.run_in_group(command, root, dvc_environment(), log, timeout_seconds)
    shown = f"`dvc {' '.join(arguments)}`"
    tail = redact("\n".join(finished.lines[-ERROR_TAIL_LINES:]))  # dvc may print a URI
    if finished.timed_out:
        raise DvcTimeoutError(
            f"{shown} ran longer than its {timeout_seconds:g} s limit (params.yaml "
            "flow.task_timeout_seconds or flow.train_timeout_seconds) and was stopped with "
            f"every process it started:\n{tail}"
        )
    if finished.code != 0:
        if any(NOT_A_DVC_PROJECT in line.lower() for line in finished.lines):
            raise DvcSetupError(
                _not_a_dvc_project(f"{shown} exited with {finished.code}", root, tail)
            )
        raise DvcError(f"{shown} exited with {finished.code}:\n{tail}")
    return finished.lines


def _recover_rwlock(root: Path, log: Callable[[str], None]) -> None:
    """A corrupt ``.dvc/tmp/rwlock`` removed, or a :class:`DvcSetupError` saying what to do
    (:mod:`flows.rwlock`): otherwise every dvc command of every night fails on it."""
    try:
        recover_rwlock(root, log)
    except RwlockError as error:
        raise DvcSetupError(str(error)) from None


def _not_a_dvc_project(what: str, root: Path, detail: str) -> str:
    return (
        f"{what}: {root.resolve()} is not inside a DVC project; pass --root the project "
        f"folder (the one with dvc.yaml and .dvc/), or run `dvc init` there:\n{detail}"
    )


def stale_stages(root: Path, target: str, log: Callable[[str], None] = print) -> list[str]:
    """The stages ``dvc repro target`` would run: changed code, data or params upstream.

    DVC's own ``Repo.status`` (the dict ``dvc status --json`` prints), in this process: a
    third of the time of the command (0.7 s against 2.0 s on the demo project, most of it
    the interpreter's start), and no output to pick the JSON out of. It takes the repository
    lock only for the call, as the command does; the task's time limit interrupts it.
    """
    from dvc.exceptions import DvcException, NotDvcRepoError  # type: ignore[import-untyped]
    from dvc.repo import Repo  # type: ignore[import-untyped]

    _recover_rwlock(root, log)
    try:
        with Repo(str(root)) as repo, warnings.catch_warnings():
            # DVC 3.67's outputs trie reads pygtrie's deprecated `_NoneStep.value`; not ours.
            warnings.filterwarnings("ignore", DVC_TRIE_DEPRECATION, DeprecationWarning)
            # Addressed by its dvc.yaml: a bare stage name is looked up from the cwd.
            status = repo.status(targets=[f"{root / 'dvc.yaml'}:{target}"], with_deps=True)
    except NotDvcRepoError as error:
        message = _not_a_dvc_project(f"`dvc status {target}`", root, str(error))
        raise DvcSetupError(message) from error
    except DvcException as error:
        raise DvcError(f"`dvc status {target}` failed: {redact(str(error))}") from error
    stages = sorted(str(name).rsplit(":", 1)[-1] for name in status)
    log(f"stale stages up to {target}: {', '.join(stages) if stages else 'none'}")
    return stages


def cached_outputs_digest(root: Path) -> str | None:
    """A digest of what ``dvc push`` would send: every cached output's hash in dvc.lock.

    Outputs marked ``cache: false`` in dvc.yaml (the small metrics files, rewritten by
    every ingest) are left out: they are in git, not in the remote, so a run that changed
    only them has nothing new to push.
    """
    lock_file = Paths(root).dvc_lock
    if not lock_file.is_file():
        return None
    uncached = _uncached_outputs(yaml.safe_load((root / "dvc.yaml").read_text(encoding="utf-8")))
    lock = yaml.safe_load(lock_file.read_text(encoding="utf-8")) or {}
    entries = sorted(
        f"{out['path']}={out.get('md5', '')}"
        for stage in (lock.get("stages") or {}).values()
        for out in stage.get("outs", [])
        if out["path"] not in uncached
    )
    return hashlib.sha256("\n".join(entries).encode("utf-8")).hexdigest()


def _uncached_outputs(dvc_yaml: dict[str, Any]) -> set[str]:
    uncached: set[str] = set()
    for stage in (dvc_yaml.get("stages") or {}).values():
        for kind in ("outs", "metrics", "plots"):
            for entry in stage.get(kind, []):
                if isinstance(entry, dict):
                    uncached.update(
                        path for path, opts in entry.items() if opts.get("cache") is False
                    )
    return uncached


@dataclass(frozen=True)
class NightlyWork:
    """What a nightly run has to do after ingest; ``reason`` says why, for the log and UI.
    ``rerun``: data stages to run even though DVC sees nothing changed (they left papers
    for the next night)."""

    reproduce: bool
    promote: bool
    push: bool
    reason: str
    rerun: tuple[str, ...] = ()

    @property
    def nothing_to_do(self) -> bool:
        return not (self.reproduce or self.promote or self.push)


def nightly_work(
    *,
    stale: list[str],
    candidate_fingerprint: str | None,
    decided_fingerprint: str | None,
    outputs_digest: str | None,
    pushed_outputs_digest: str | None,
    force: bool,
    deferred: Sequence[str] = (),
) -> NightlyWork:
    """Decide the work of a nightly run from the state after ingest (pure).

    * stale DVC stages (new papers, changed params or code) or ``force``: reproduce,
      promote and push;
    * data stages that left papers for the next night (``deferred``: past their stage
      budget): those stages rerun, forced, then the rest as for stale stages;
    * a candidate without a recorded decision (say MLflow was down last night): promote;
    * a dvc.lock that was never pushed (say S3 was down): push;
    * otherwise nothing.
    """
    rerun = tuple(deferred)
    if force:
        return NightlyWork(True, True, True, "forced: retrain whatever the state", rerun)
    if stale or rerun:
        reasons = [f"stale stages: {', '.join(stale)}"] if stale else []
        if rerun:
            reasons.append(f"papers deferred to this night by: {', '.join(rerun)}")
        return NightlyWork(True, True, True, "; ".join(reasons), rerun)
    if candidate_fingerprint is None:
        return NightlyWork(True, True, True, "no candidate model yet")
    promote = candidate_fingerprint != decided_fingerprint
    push = outputs_digest != pushed_outputs_digest
    reasons = []
    if promote:
        reasons.append("the candidate has no recorded promotion decision")
    if push:
        reasons.append("the current data and model were not pushed yet")
    if not reasons:
        return NightlyWork(False, False, False, "no new papers; params and code unchanged")
    return NightlyWork(False, promote, push, "; ".join(reasons))


def deferred_stages(paths: Paths) -> list[str]:
    """The data stages whose last run left papers for the next night: a ``deferred``
    count (prepare) or papers (graph) in their metrics file."""
    return [
        stage
        for stage in DEFERRING_STAGES
        if paths.metric_file(stage).is_file()
        and io.read_json_object(paths.metric_file(stage)).get("deferred")
    ]


def candidate_fingerprint(candidate_dir: Path) -> str | None:
    return (
        model_fingerprint(candidate_dir)
        if (candidate_dir / MODEL_METADATA_FILE).is_file()
        else None
    )


def decided_fingerprint(promotion_file: Path, tracking_uri: str) -> str | None:
    """The fingerprint the last promotion decision in this registry was about, if any.

    A decision recorded against another tracking server does not count: this one has
    never seen the candidate. The record holds the URI without its credentials.
    """
    record = PromotionRecord.read(promotion_file)
    if record is None or not record.fingerprint or record.tracking_uri != redact_url(tracking_uri):
        return None
    return record.fingerprint


def pushed_outputs_digest(paths: Paths, remote: str) -> str | None:
    """The :func:`cached_outputs_digest` the last successful push to ``remote`` sent."""
    pushed = io.read_json_object(paths.nightly_state).get("pushed", {})
    entry = pushed.get(remote or "default") if isinstance(pushed, dict) else None
    digest = entry.get("outputs_digest") if isinstance(entry, dict) else None
    return str(digest) if digest else None


def record_push(paths: Paths, remote: str, outputs_digest: str | None) -> None:
    state = io.read_json_object(paths.nightly_state)
    pushed = state.setdefault("pushed", {})
    pushed[remote or "default"] = {
        "outputs_digest": outputs_digest,
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    io.write_json(paths.nightly_state, state)


def push_arguments(remote: str, targets: list[str] | None = None) -> list[str]:
    return ["push", *(["-r", remote] if remote else []), *(targets or [])]


def pull_arguments(remote: str, targets: list[str] | None = None) -> list[str]:
    return ["pull", *(["-r", remote] if remote else []), *(targets or [])]


@contextmanager
def nightly_lock(root: Path) -> Iterator[None]:
    """One nightly run per root at a time; a second one fails at once, it does not queue.

    Waiting would only rerun the same work after the first run; the scheduler starts the
    next run anyway. The lock is an OS file lock, so a killed run leaves no stale lock.
    """
    lock_path = root / "data" / "nightly.lock"

    def busy(holder: str) -> NightlyBusyError:
        return NightlyBusyError(
            f"another nightly run is in progress on {root.resolve()} ({holder}); "
            "this one exits without doing anything"
        )

    with held_lock(lock_path, f"pid {os.getpid()} since {since_now()}", busy):
        yield
