"""File I/O every stage shares: atomic writes, Parquet tables and the quarantine.

Every write goes to a temporary file in the destination's folder and is renamed over
the destination only once complete, so a run killed at any point leaves either the old
file or the new one, never half of one. The file gets the mode a plain ``open(path, "w")``
would give it (``0666`` less the umask), not ``mkstemp``'s private ``0600``. Rejected
inputs go to ``data/quarantine/`` with their reason, so nothing is dropped silently.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import pandas as pd

logger = logging.getLogger(__name__)


#: What ``open()`` asks the kernel for; the umask then takes bits away.
_PLAIN_FILE_MODE = 0o666
_PROC_STATUS = Path("/proc/self/status")


def current_umask() -> int:
    """The process's umask, read without changing it.

    ``os.umask`` can only be read by setting it (twice), and between the two calls every
    other thread creates files with the wrong mask; Linux reports it in
    ``/proc/self/status`` (since 4.7), so read it there. Elsewhere, fall back to the
    set-and-restore pair: a brief race, but only on systems without that line.
    """
    try:
        status = _PROC_STATUS.read_text(encoding="ascii")
    except OSError:
        status = ""
    parsed = umask_from_status(status)
    if parsed is not None:
        return parsed
    previous = os.umask(0o022)
    os.umask(previous)
    return previous


def umask_from_status(status: str) -> int | None:
    """The ``Umask:`` value (octal) of a ``/proc/<pid>/status`` text, or None (pure)."""
    match = re.search(r"^Umask:\s*([0-7]+)\s*$", status, flags=re.MULTILINE)
    return int(match.group(1), 8) if match else None


def plain_file_mode(umask: int | None = None) -> int:
    """The mode ``open(path, "w")`` would give a new file under ``umask`` (default: ours)."""
    return _PLAIN_FILE_MODE & ~(current_umask() if umask is None else umask)


@contextmanager
def atomic_output(path: Path, mode: str = "wb") -> Iterator[IO[Any]]:
    """Open a temporary file next to ``path``; on success fsync it and rename it to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, mode) as handle:
            # mkstemp makes the file 0600 whatever the umask; readers sharing the volume (a
            # web server, another user) should see it as they would any file we write.
            os.fchmod(handle.fileno(), plain_file_mode())
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def restore_plain_modes(folder: Path, pattern: str = "*.safetensors") -> list[Path]:
    """Give the files under ``folder`` matching ``pattern`` the mode a plain write would.

    For files a library writes privately whatever the umask: safetensors (0.8 here)
    writes each ``*.safetensors`` through a temporary file created 0600 and renames it
    into place (safetensors issue #782), so a saved model's weights are unreadable to
    anyone else while its ``config.json`` beside them is. Returns the files changed.
    """
    mode = plain_file_mode()
    changed: list[Path] = []
    for path in sorted(folder.rglob(pattern)):
        if path.is_file() and not path.is_symlink() and stat.S_IMODE(path.stat().st_mode) != mode:
            path.chmod(mode)
            changed.append(path)
    return changed


def write_bytes(path: Path, data: bytes) -> None:
    with atomic_output(path, "wb") as handle:
        handle.write(data)


def write_text(path: Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_json(path: Path, value: Any, *, sort_keys: bool = True) -> None:
    """``value`` as indented JSON; ``sort_keys=False`` keeps the order a reader should see
    (a DVC metric file: ``dvc exp show`` shows its columns in file order)."""
    text = json.dumps(value, indent=2, sort_keys=sort_keys, ensure_ascii=False)
    write_text(path, text + "\n")


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def read_json_or_none(path: Path) -> Any:
    """The JSON value in ``path``, or None when the file is missing or unreadable."""
    try:
        return read_json(path)
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None


def read_json_object(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; empty when the file is missing, unreadable or not one."""
    value = read_json_or_none(path)
    return value if isinstance(value, dict) else {}


def write_parquet(path: Path, frame: pd.DataFrame) -> None:
    with atomic_output(path, "wb") as handle:
        frame.to_parquet(handle, index=False)


def read_parquet(path: Path) -> pd.DataFrame:
    return pd.read_parquet(path)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
# File systems refuse names past 255 bytes, and atomic_output's temporary file adds 14
# characters to the name and a caller a suffix (".json"): 160 leaves room for both.
MAX_NAME_CHARS = 160
_NAME_HASH_CHARS = 16


def safe_name(identifier: str) -> str:
    """A file name for an arbitrary id (``math/0501001v2`` -> ``math_0501001v2``).

    An id too long for a file name (a hostile listing's 300-character ``<id>``) keeps its
    start and ends with a hash of the whole id, so distinct ids keep distinct names.
    """
    name = _UNSAFE.sub("_", identifier).strip("._") or "unnamed"
    if len(name) <= MAX_NAME_CHARS:
        return name
    digest = sha256_hex(identifier.encode("utf-8"))[:_NAME_HASH_CHARS]
    return f"{name[: MAX_NAME_CHARS - _NAME_HASH_CHARS - 1]}-{digest}"


def quarantine(
    quarantine_dir: Path,
    stage: str,
    item_id: str,
    reason: str,
    payload: bytes | None = None,
    details: dict[str, Any] | None = None,
) -> Path:
    """Record a rejected item under ``quarantine_dir/stage/`` with its reason.

    Writes ``<id>.json`` (id, stage, reason, time, details) and, when given, the raw
    ``payload`` beside it as ``<id>.bin`` so it can be inspected or replayed.
    Returns the path of the JSON record.
    """
    record_path = quarantine_record_path(quarantine_dir, stage, item_id)
    name = record_path.stem
    record: dict[str, Any] = {
        "id": item_id,
        "stage": stage,
        "reason": reason,
        "quarantined_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "details": details or {},
    }
    if payload is not None:
        write_bytes(record_path.with_suffix(".bin"), payload)
        record["payload"] = f"{name}.bin"
        record["payload_sha256"] = sha256_hex(payload)
    write_json(record_path, record)
    return record_path


def quarantine_record_path(quarantine_dir: Path, stage: str, item_id: str) -> Path:
    """Where :func:`quarantine` records ``item_id`` for ``stage``."""
    return quarantine_dir / stage / f"{safe_name(item_id)}.json"


def ensure_quarantine(quarantine_dir: Path, stage: str) -> Path:
    """Create ``stage``'s quarantine folder, empty if nothing is rejected.

    DVC tracks each stage's quarantine folder as an output, so it must exist after
    every run, not only after one that rejected something.
    """
    folder = quarantine_dir / stage
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def quarantined(quarantine_dir: Path, stage: str) -> list[dict[str, Any]]:
    """The quarantine records of ``stage``, sorted by id.

    A record that cannot be read (corrupt, truncated, not an object) is not dropped: it
    comes back as a retryable record naming the file (see :func:`read_quarantine_record`),
    with a warning, so one bad file neither aborts the caller nor loses the item.
    """
    folder = quarantine_dir / stage
    if not folder.is_dir():
        return []
    records = [read_quarantine_record(path) for path in folder.glob("*.json")]
    return sorted(records, key=lambda record: str(record["id"]))


def read_quarantine_record(path: Path) -> dict[str, Any]:
    """The quarantine record in ``path``; an unreadable one as a record to redo.

    The stand-in keeps the id the file name gives, says what is wrong with the file and
    is marked ``retryable`` (whoever reads it redoes the item rather than skip it for good).
    """
    try:
        record = read_json(path)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        problem = f"{type(error).__name__}: {error}"
    else:
        if _is_record(record):
            return dict(record)
        problem = "not a quarantine record (an object with id and reason)"
    logger.warning(
        "unreadable quarantine record %s (%s): treated as retryable, so the item is redone",
        path,
        problem,
    )
    return {
        "id": path.stem,
        "stage": path.parent.name,
        "reason": f"unreadable quarantine record {path}: {problem}",
        "details": {"retryable": True, "unreadable_record": str(path)},
    }


def _is_record(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and "id" in value
        and "reason" in value
        and isinstance(value.get("details", {}), dict)
    )
