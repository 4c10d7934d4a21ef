"""Resuming a killed run: ``models/checkpoints/run.json`` says which data and params the
checkpoints belong to; a rerun with the same ones resumes from the newest complete one.
Saving one on a full disk is an :class:`OSError` naming the folder (:func:`disk_errors`),
which every command reports as one line."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pipelines.common import io

RUN_FILE = "run.json"  # in the checkpoints folder: which data + params its checkpoints are for
#: How safetensors (Rust) words a refused write: "... I/O error: No space left on device
#: (os error 28)".
_OS_ERROR = re.compile(r"\(os error (\d+)\)")


def prepare_checkpoints(folder: Path, key: dict[str, Any]) -> tuple[Path | None, str]:
    """The checkpoint to resume from (or None) and a sentence saying what was decided.

    Checkpoints for other data or params, and incomplete ones (killed while saving: no
    readable ``trainer_state.json``), are removed; ``run.json`` is (re)written for ``key``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    run_file = folder / RUN_FILE
    checkpoints = sorted(
        (path for path in folder.glob("checkpoint-*") if path.is_dir()),
        key=lambda path: checkpoint_step(path),
    )
    recorded = io.read_json_or_none(run_file)
    if checkpoints and recorded != key:
        reason = "no run.json" if recorded is None else _difference(recorded, key)
        for path in checkpoints:
            shutil.rmtree(path)
        io.write_json(run_file, key)
        return None, f"starting fresh: removed checkpoints from another run ({reason})"
    io.write_json(run_file, key)
    complete = [path for path in checkpoints if _is_complete(path)]
    for path in checkpoints:
        if path not in complete:
            shutil.rmtree(path)
    if not complete:
        return None, "starting fresh: no checkpoint to resume"
    latest = complete[-1]
    return latest, f"resuming from {latest} (step {checkpoint_step(latest)})"


def checkpoint_step(path: Path) -> int:
    suffix = path.name.rpartition("-")[2]
    return int(suffix) if suffix.isdigit() else -1


def _is_complete(checkpoint: Path) -> bool:
    # The trainer writes trainer_state.json last.
    state = io.read_json_or_none(checkpoint / "trainer_state.json")
    return isinstance(state, dict) and "global_step" in state


def _difference(recorded: Any, key: dict[str, Any]) -> str:
    if not isinstance(recorded, dict):
        return "unreadable run.json"
    if recorded.get("data_hash") != key["data_hash"]:
        return "different data"
    old_params = recorded.get("params") or {}
    changed = sorted(name for name, value in key["params"].items() if old_params.get(name) != value)
    return f"different params: {', '.join(changed)}" if changed else "different params"


def refused_write(error: BaseException, where: Path) -> OSError | None:
    """The :class:`OSError` a safetensors error stands for, naming ``where`` (pure);
    ``None`` when ``error`` is not a refused write.

    safetensors raises its own ``SafetensorError`` (not an ``OSError``) when the disk is
    full, with the errno only in its message.
    """
    from safetensors import SafetensorError

    match = _OS_ERROR.search(str(error)) if isinstance(error, SafetensorError) else None
    if match is None:
        return None
    code = int(match[1])
    return OSError(code, os.strerror(code), str(where))


@contextmanager
def disk_errors(where: Path) -> Iterator[None]:
    """Saving model weights into ``where``: a write the system refused (a full disk) leaves
    as an :class:`OSError` naming ``where``, which the CLI turns into its one line
    (:func:`pipelines.common.cli.refused_message`), not a ``SafetensorError`` traceback."""
    try:
        yield
    except Exception as error:
        refused = refused_write(error, where)
        if refused is None:
            raise
        raise refused from error
