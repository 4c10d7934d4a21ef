"""The raw store as prepare reads it: the version folders ingest wrote, their
``meta.json`` checked against the contract, the latest version of each paper, and the
hash that says whether a paper changed."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.common.raw_layout import (
    RAW_META_FILE,
    RAW_SOURCE_FILE,
    folder_names,
    is_version_folder,
)
from pipelines.common.tables import SOURCE_KINDS


@dataclass(frozen=True)
class RawPaper:
    """One version folder of the raw store, with its validated metadata."""

    paper_id: str
    version: int
    folder: Path
    meta: dict[str, Any]

    @property
    def key(self) -> str:
        return f"{self.paper_id}v{self.version}"

    @property
    def source_kind(self) -> str:
        return str(self.meta["source_kind"])

    @property
    def source(self) -> Path:
        return self.folder / RAW_SOURCE_FILE


def validate_meta(meta: Any, folder: Path) -> dict[str, Any]:
    """Check a ``meta.json`` against the raw-store contract; raise ValueError naming the fault."""
    if not isinstance(meta, dict):
        raise ValueError("meta.json is not a JSON object")
    paper_id = meta.get("paper_id")
    version = meta.get("version")
    if not isinstance(paper_id, str) or not paper_id:
        raise ValueError("meta.json has no paper_id string")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"meta.json version {version!r} is not an integer >= 1")
    if meta.get("source_kind") not in SOURCE_KINDS:
        raise ValueError(f"meta.json source_kind {meta.get('source_kind')!r} not in {SOURCE_KINDS}")
    if (folder.parent.name, folder.name) != folder_names(paper_id, version):
        raise ValueError(
            f"meta.json says {paper_id}v{version} but lies in {folder.parent.name}/{folder.name}"
        )
    for key in ("authors", "categories"):
        value = meta.get(key) or []
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ValueError(f"meta.json {key} is not a list of strings")
    for key in ("title", "abstract", "primary_category", "published", "updated", "url"):
        value = meta.get(key)
        if value is not None and not isinstance(value, str):
            raise ValueError(f"meta.json {key} is not a string")
    return meta


def scan_raw_store(raw_dir: Path) -> tuple[list[RawPaper], list[tuple[Path, str]], int]:
    """All complete version folders: (valid ones, (folder, reason) for invalid ones, count).

    A folder without ``meta.json`` is still being written by ingest and is ignored.
    (os.scandir and plain strings rather than Path.glob: this runs over every paper of
    the store on every nightly run.)
    """
    valid: list[RawPaper] = []
    invalid: list[tuple[Path, str]] = []
    seen = 0
    for paper_dir in _sorted_dirs(str(raw_dir)):
        for version_dir in _sorted_dirs(paper_dir):
            if not is_version_folder(os.path.basename(version_dir)):
                continue
            meta_path = os.path.join(version_dir, RAW_META_FILE)
            try:
                with open(meta_path, "rb") as handle:
                    data = json.loads(handle.read())
            except FileNotFoundError:
                continue  # incomplete: ingest writes meta.json last
            except (OSError, ValueError) as error:
                seen += 1
                invalid.append((Path(version_dir), f"{meta_path}: {error}"))
                continue
            seen += 1
            folder = Path(version_dir)
            try:
                meta = validate_meta(data, folder)
            except ValueError as error:
                invalid.append((folder, f"{meta_path}: {error}"))
                continue
            valid.append(RawPaper(meta["paper_id"], meta["version"], folder, meta))
    return valid, invalid, seen


def _sorted_dirs(folder: str) -> list[str]:
    try:
        with os.scandir(folder) as entries:
            return sorted(entry.path for entry in entries if entry.is_dir())
    except FileNotFoundError:
        return []


def latest_versions(papers: Iterable[RawPaper]) -> list[RawPaper]:
    """The newest version of each paper, sorted by paper id."""
    latest: dict[str, RawPaper] = {}
    for paper in papers:
        current = latest.get(paper.paper_id)
        if current is None or paper.version > current.version:
            latest[paper.paper_id] = paper
    return [latest[paper_id] for paper_id in sorted(latest)]


#: A SHA-256 as ``hexdigest`` spells it: what a recorded ``source_sha256`` must look like.
SHA256_HEX = re.compile(r"[0-9a-f]{64}")


def content_hash(raw: RawPaper) -> str:
    """sha256 of ``source.tex`` (of the abstract when abstract-only; of nothing if missing).

    Ingest records it in ``meta.json`` (``source_sha256``: the hash of the bytes it wrote)
    and the raw store is append-only, so when it is there, well formed and the file exists,
    it is taken as it is rather than the file read and hashed again each night; a store
    written before ingest recorded it, or a value that is not a SHA-256, is hashed here."""
    if raw.source_kind == "abstract_only":
        abstract = raw.meta.get("abstract") or ""
        return hashlib.sha256(abstract.encode("utf-8")).hexdigest()
    recorded = raw.meta.get("source_sha256")
    if isinstance(recorded, str) and SHA256_HEX.fullmatch(recorded) and raw.source.is_file():
        return recorded
    try:
        data = raw.source.read_bytes()
    except FileNotFoundError:
        data = b""
    return hashlib.sha256(data).hexdigest()
