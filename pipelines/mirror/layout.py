"""What every offline mirror holds on disk, and the byte-stable pieces its corpora build.

A mirror (``data/mirror``) is an arXiv look-alike that :class:`~.server.MirrorServer`
serves and ingest harvests. Its three corpora (:mod:`.corpora`) are written by one writer
(:func:`.writer.write_mirror`) in this layout:

``entries.jsonl``
    One arXiv listing entry (:class:`MirrorEntry`) per line and per paper version, keys
    sorted.
``e-print/<safe_name(paper_id)>v<version>``
    The bytes arXiv's ``/e-print/`` would send, and beside each a sidecar ``<name>.json``:
    ``{"content_type": ..., "encoding": "gzip" | null}``.
``manifest.json``
    What the corpus built, per paper version (:mod:`.manifest`); ``"corpus"`` names the
    corpus (a synthetic manifest predates the key and omits it).

Writes are byte-stable (tar members with fixed metadata, gzip without a time stamp, JSON
with sorted keys), so the same input gives the same bytes and DVC's hash of the mirror
stays put.
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from pipelines.common.io import safe_name

ENTRIES_FILE = "entries.jsonl"
MANIFEST_FILE = "manifest.json"
EPRINT_DIR = "e-print"

# The Content-Type arXiv's /e-print/ answers with, per kind of e-print.
CONTENT_TYPE_TAR = "application/x-eprint-tar"
CONTENT_TYPE_SINGLE = "application/x-eprint"
CONTENT_TYPE_PDF = "application/pdf"


# -- the listing entries --------------------------------------------------------------


@dataclass(frozen=True)
class MirrorEntry:
    """One line of ``entries.jsonl``: a paper version as arXiv's listing describes it."""

    paper_id: str
    version: int
    title: str
    summary: str
    authors: tuple[str, ...]
    categories: tuple[str, ...]
    primary_category: str
    published: str  # the first version's time, "2024-01-03T10:00:00Z"
    updated: str  # this version's
    comment: str
    withdrawn: bool

    # Parsed once per entry: a listing compares every entry's dates on every page.
    @cached_property
    def updated_at(self) -> datetime:
        return parse_time(self.updated)

    @cached_property
    def published_at(self) -> datetime:
        return parse_time(self.published)

    def to_json(self) -> dict[str, Any]:
        return {
            "paper_id": self.paper_id,
            "version": self.version,
            "title": self.title,
            "summary": self.summary,
            "authors": list(self.authors),
            "categories": list(self.categories),
            "primary_category": self.primary_category,
            "published": self.published,
            "updated": self.updated,
            "comment": self.comment,
            "withdrawn": self.withdrawn,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> MirrorEntry:
        return cls(
            paper_id=raw["paper_id"],
            version=int(raw["version"]),
            title=raw["title"],
            summary=raw["summary"],
            authors=tuple(raw["authors"]),
            categories=tuple(raw["categories"]),
            primary_category=raw["primary_category"],
            published=raw["published"],
            updated=raw["updated"],
            comment=raw["comment"],
            withdrawn=bool(raw["withdrawn"]),
        )


def listing_line(entry: MirrorEntry) -> str:
    """One line of ``entries.jsonl``."""
    return json.dumps(entry.to_json(), ensure_ascii=False, sort_keys=True)


def load_entries(mirror_dir: Path) -> list[MirrorEntry]:
    """The entries of the mirror in ``mirror_dir``, in file order."""
    path = mirror_dir / ENTRIES_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; run mathembed sample first")
    entries = []
    for line_number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entries.append(MirrorEntry.from_json(json.loads(line)))
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{path}:{line_number}: not a mirror entry ({error})") from error
    return entries


def parse_time(text: str) -> datetime:
    """ISO 8601 → aware UTC datetime (``Z`` or an offset; naive times are taken as UTC)."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as error:
        raise ValueError(
            f"{text!r} is not an ISO 8601 time such as 2024-01-03T10:00:00Z"
        ) from error
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def format_time(moment: datetime) -> str:
    """A listing time as arXiv writes it: ``2024-01-03T10:00:00Z`` (UTC)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- e-prints -------------------------------------------------------------------------


def eprint_name(paper_id: str, version: int) -> str:
    """File name of a version's e-print inside ``e-print/`` (the sidecar adds ``.json``)."""
    return f"{safe_name(paper_id)}v{version}"


def gzip_bytes(data: bytes) -> bytes:
    # mtime=0 and no file name: the same bytes in give the same bytes out.
    return gzip.compress(data, compresslevel=6, mtime=0)


def tar_gz(members: Sequence[tarfile.TarInfo | tuple[str, bytes]], mtime: int) -> bytes:
    """A gzip'd tar of ``members`` (name and bytes, or a prepared member such as a
    symlink), every member dated ``mtime``: byte-stable."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                member.mtime = mtime
                archive.addfile(member)
                continue
            name, data = member
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = mtime
            info.mode = 0o644
            archive.addfile(info, io.BytesIO(data))
    return gzip_bytes(buffer.getvalue())
