"""DVC's ``.dvc/tmp/rwlock``, checked before the flow runs ``dvc`` (issue 23, finding 10).

DVC records there, as JSON, which of its processes reads or writes which outputs. A file
left corrupt (a crash or a full disk mid-write) makes every ``dvc repro`` fail with "JSON
structure is corrupted", every night, until someone deletes it. DVC itself drops entries of
processes that are gone, but only from a file it can read.

So before each ``dvc`` command: when the file is corrupt and no ``dvc`` process runs in the
project, it is removed (under DVC's own guard, ``rwlock.lock``) with a warning, which is
what DVC's message asks a person to do; when one does run, it cannot be told whether that
process is about to rewrite the file, so :class:`RwlockError` says in one line what to do.
:func:`rwlock_problem` and :func:`is_dvc_command` are pure; :func:`recover_rwlock` is the
shell.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

#: Where DVC keeps the lock, relative to the project root (dvc.rwlock.RWLOCK_FILE).
RWLOCK = Path(".dvc") / "tmp" / "rwlock"
#: How much of a running dvc's command line a message shows.
COMMAND_CHARS = 80


class RwlockError(RuntimeError):
    """The rwlock is corrupt and a dvc process still runs in the project."""


def rwlock_problem(text: str) -> str | None:
    """What makes ``text`` (the rwlock's content) unreadable to DVC; None when it reads.

    Checked with DVC's own schema, so "readable" means what it means to DVC.
    """
    from dvc.rwlock import SCHEMA  # type: ignore[import-untyped]
    from voluptuous import Invalid  # DVC's schema library

    try:
        SCHEMA(json.loads(text))
    except json.JSONDecodeError as error:
        return f"not JSON: {error}"
    except Invalid as error:
        return f"not the shape DVC writes: {error}"
    return None


def is_dvc_command(cmdline: Sequence[str]) -> bool:
    """Whether a process's command line runs dvc (``dvc ...``, ``python -m dvc ...``)."""
    launcher = [Path(argument).name for argument in cmdline[:2]]
    pairs = zip(cmdline, cmdline[1:], strict=False)
    module = any(first == "-m" and second == "dvc" for first, second in pairs)
    return "dvc" in launcher or module


def dvc_processes(root: Path) -> list[tuple[int, str]]:
    """(pid, command line) of the dvc processes whose working folder is in ``root``.

    One whose folder cannot be read (another user's) counts: it may be in ``root``.
    """
    import psutil  # type: ignore[import-untyped]  # DVC's own dependency (its rwlock uses it)

    root = root.resolve()
    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        cmdline = process.info["cmdline"] or []
        if process.info["pid"] == os.getpid() or not is_dvc_command(cmdline):
            continue
        try:
            folder: Path | None = Path(process.cwd()).resolve()
        except psutil.NoSuchProcess:
            continue  # it ended meanwhile
        except (psutil.AccessDenied, OSError):
            folder = None
        if folder is None or folder == root or root in folder.parents:
            found.append((process.info["pid"], " ".join(cmdline)))
    return found


def recover_rwlock(root: Path, log: Callable[[str], None] = print) -> None:
    """Remove ``root``'s rwlock if it is corrupt and no dvc runs there; else raise
    :class:`RwlockError` saying what to do. A readable (or missing) one is left alone."""
    path = root / RWLOCK
    try:
        problem = rwlock_problem(path.read_text(encoding="utf-8", errors="replace"))
    except FileNotFoundError:
        return
    if problem is None:
        return
    running = dvc_processes(root)
    if running:
        pid, command = running[0]
        if len(command) > COMMAND_CHARS:
            command = command[: COMMAND_CHARS - 1] + "…"
        raise RwlockError(
            f"{path} is corrupt ({problem}) and dvc still runs in {root} (PID {pid}: "
            f"{command}): let it finish or stop it, then delete {path} and rerun"
        )
    from dvc.lock import LockError, make_lock  # type: ignore[import-untyped]

    guard = path.with_name("rwlock.lock")
    try:
        # DVC's guard around editing the file: a dvc starting now waits for this removal.
        with make_lock(str(guard), tmp_dir=str(path.parent)):
            path.unlink(missing_ok=True)
    except LockError:
        raise RwlockError(
            f"{path} is corrupt ({problem}) and {guard} is held (a dvc starting?): "
            f"rerun in a minute, or delete {path} once no dvc runs in {root}"
        ) from None
    log(f"warning: removed {path}: it was corrupt ({problem}) and no dvc process runs here")
