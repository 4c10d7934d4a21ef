"""Ingest's quarantine records: writing one with its reason, and reading back what it decides.

A rejected listing entry or paper version goes to ``data/quarantine/ingest/`` as a JSON
record (reason, details) with, when there is one, its payload beside it (the e-print, the
unreadable entry's XML). ``details.retryable`` says whether a later run may succeed: a
failed download is retried, a paper the extractor refused stands.

A paper refused by a configured cap (``ingest.max_archive_bytes``, ``max_file_bytes``,
``max_archive_files``) is recorded with the key and value that refused it, its listing
entry and its e-print, so every later run whose cap is larger re-extracts it from the
quarantined e-print (:func:`raised_cap_refusals`): a cap never loses a paper for good.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.common import io
from pipelines.common.config import IngestParams
from pipelines.ingest.arxiv.atom import Entry, RejectedEntry
from pipelines.ingest.report import STAGE


def _record_path(quarantine_dir: Path, item_id: str) -> Path:
    return io.quarantine_record_path(quarantine_dir, STAGE, item_id)


# -- writing --------------------------------------------------------------------------


def quarantine_entry(
    quarantine_dir: Path,
    entry: Entry,
    reason: str,
    *,
    retryable: bool,
    payload: bytes | None = None,
    content_type: str | None = None,
    extra: dict[str, Any] | None = None,
) -> None:
    """Record the version ``entry`` lists as rejected for ``reason`` (``extra``: more details)."""
    details: dict[str, Any] = {
        "retryable": retryable,
        "paper_id": entry.paper_id,
        "version": entry.version,
        "updated": entry.updated,
        "title": entry.title,
        **(extra or {}),
    }
    if content_type is not None:
        details["content_type"] = content_type
    io.quarantine(quarantine_dir, STAGE, entry.versioned_id, reason, payload, details=details)


def quarantine_unreadable(quarantine_dir: Path, rejected: RejectedEntry) -> tuple[str, str]:
    """Record a listing entry that could not be read; returns its (item id, reason)."""
    # The same feed gives the same entry next time: rejected for good.
    item_id = rejected.entry_id.rsplit("/abs/", 1)[-1] or (
        "entry-" + io.sha256_hex(rejected.xml)[:12]
    )
    reason = f"unreadable listing entry: {rejected.reason}"
    io.quarantine(
        quarantine_dir,
        STAGE,
        item_id,
        reason,
        rejected.xml,
        details={"retryable": False, "entry_id": rejected.entry_id},
    )
    return item_id, reason


def cap_details(entry: Entry, key: str, value: int) -> dict[str, Any]:
    """The ``extra`` details of a paper refused by the cap ``key`` set to ``value``: enough
    for a run with a larger cap to re-extract it (:func:`raised_cap_refusals`)."""
    fields = dataclasses.asdict(entry)
    if fields["source_url"] is None:
        del fields["source_url"]  # most listings give none: the record says what there is
    return {"limit": key, "limit_value": value, "entry": fields}


def clear_record(quarantine_dir: Path, item_id: str) -> None:
    """Drop a stale record of a failed download once the paper is stored after all."""
    path = _record_path(quarantine_dir, item_id)
    path.unlink(missing_ok=True)
    path.with_suffix(".bin").unlink(missing_ok=True)


# -- reading back ---------------------------------------------------------------------


def recorded_details(quarantine_dir: Path, item_id: str) -> dict[str, Any] | None:
    """The ``details`` of ``item_id``'s quarantine record; None when it has none.

    An unreadable record comes back as retryable (``io.read_quarantine_record``): the
    paper is redone, never skipped because of a broken file.
    """
    path = _record_path(quarantine_dir, item_id)
    if not path.is_file():
        return None
    details = io.read_quarantine_record(path).get("details", {})
    return details if isinstance(details, dict) else {}


def is_final(details: dict[str, Any], params: IngestParams | None = None) -> bool:
    """Whether a refusal recorded with ``details`` stands: not retryable, and not refused
    by a cap that ``params`` has since raised."""
    if params is not None and limit_raised(details, params):
        return False
    return not bool(details.get("retryable", False))


def rejected_for_good(
    quarantine_dir: Path, item_id: str, params: IngestParams | None = None
) -> bool:
    """Whether ``item_id`` was quarantined earlier for a reason a retry cannot fix."""
    details = recorded_details(quarantine_dir, item_id)
    return details is not None and is_final(details, params)


def limit_raised(details: dict[str, Any], params: IngestParams) -> bool:
    """Whether the cap that refused a paper (``details``) is larger in ``params`` now."""
    key, refused_at = details.get("limit"), details.get("limit_value")
    if not isinstance(key, str) or not isinstance(refused_at, int):
        return False
    current = getattr(params, key.removeprefix("ingest."), None)
    return isinstance(current, int) and current > refused_at


def _entry_from_details(details: dict[str, Any]) -> Entry | None:
    fields = details.get("entry")
    if not isinstance(fields, dict):
        return None
    try:
        return Entry(
            **{
                **fields,
                "authors": tuple(fields["authors"]),
                "categories": tuple(fields["categories"]),
            }
        )
    except (KeyError, TypeError):
        return None


@dataclass(frozen=True)
class CapRefusal:
    """A paper an earlier run's cap refused, as its quarantine record keeps it."""

    item_id: str
    entry: Entry
    limit: str  # the key that refused it: "ingest.max_archive_bytes"
    content_type: str  # the e-print's, as it was served
    payload: Path  # the quarantined e-print


def raised_cap_refusals(quarantine_dir: Path, params: IngestParams) -> Iterator[CapRefusal]:
    """The papers an earlier run's caps refused whose cap is larger in ``params`` now.

    The watermark has passed them, so the listing will not bring them back; their
    quarantined e-print and entry are enough to re-extract them.
    """
    for record in io.quarantined(quarantine_dir, STAGE):
        details = record.get("details", {})
        entry = _entry_from_details(details)
        # Only a file beside the record: the name comes from a file on disk.
        payload = quarantine_dir / STAGE / Path(str(record.get("payload", ""))).name
        if entry is None or not limit_raised(details, params) or not payload.is_file():
            continue
        yield CapRefusal(
            item_id=str(record["id"]),
            entry=entry,
            limit=details["limit"],
            content_type=str(details.get("content_type", "")),
            payload=payload,
        )
