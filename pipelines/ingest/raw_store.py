"""What ingest writes to the raw store: the watermark, and one folder per paper version.

A version folder gets ``eprint.bin``, ``source.tex``, then ``meta.json`` last, each written
atomically, so a folder without ``meta.json`` is an interrupted write that the next run
redoes (the layout prepare reads too: :mod:`pipelines.common.raw_layout`). The store is
append-only: a version already stored is never written again. The watermark
(``data/raw/watermark.json``) says how far the harvest has come.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pipelines.common import io
from pipelines.common.raw_layout import (
    RAW_EPRINT_FILE,
    RAW_META_FILE,
    RAW_SOURCE_FILE,
    WATERMARK_FILE,
    version_folder,
)
from pipelines.ingest.arxiv.archive import Source
from pipelines.ingest.arxiv.atom import Entry, format_timestamp, parse_timestamp


def read_watermark(raw_dir: Path) -> str | None:
    path = raw_dir / WATERMARK_FILE
    if not path.is_file():
        return None
    try:
        value = io.read_json(path)["updated"]
        return format_timestamp(parse_timestamp(str(value)))
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(
            f'{path} is not a watermark like {{"updated": "2024-01-03T10:00:00Z"}} '
            f"({error}); fix it or delete it to restart from ingest.from_date"
        ) from error


def write_watermark(raw_dir: Path, updated: str) -> None:
    io.write_json(raw_dir / WATERMARK_FILE, {"updated": updated})


def clear_watermark(raw_dir: Path) -> None:
    """No watermark: the next run starts again from ``ingest.from_date``."""
    (raw_dir / WATERMARK_FILE).unlink(missing_ok=True)


def meta_record(
    entry: Entry,
    *,
    source_kind: Literal["tex", "abstract_only", "withdrawn"],
    source: Source | None,
    fetched_at: str,
    url: str | None,
) -> dict[str, Any]:
    """``meta.json`` as the data contract defines it."""
    return {
        "paper_id": entry.paper_id,
        "version": entry.version,
        "title": entry.title,
        "authors": list(entry.authors),
        "abstract": entry.abstract,
        "categories": list(entry.categories),
        "primary_category": entry.primary_category,
        "published": entry.published,
        "updated": entry.updated,
        "comment": entry.comment,
        "source_kind": source_kind,
        "main_file": source.main_file if source else None,
        "source_sha256": io.sha256_hex(source.text.encode("utf-8")) if source else None,
        "encoding": source.encoding if source else None,
        # \input/\include targets not in the archive: the text is kept with them left as
        # written, and this says what is missing (a chapter's \input{chapters}, say).
        "unresolved_includes": list(source.unresolved) if source else [],
        "fetched_at": fetched_at,
        # Where a reader finds the paper (its abstract page on arXiv, a mirror's
        # equivalent); prepare carries it to the papers table, search links hits to it.
        "url": url,
    }


def store_version(
    raw_dir: Path,
    entry: Entry,
    *,
    source_kind: Literal["tex", "abstract_only", "withdrawn"],
    eprint: bytes | None,
    source: Source | None,
    fetched_at: str,
    url: str | None,
) -> Path:
    """Write one version folder: ``eprint.bin``, ``source.tex``, then ``meta.json``."""
    folder = version_folder(raw_dir, entry.paper_id, entry.version)
    if (folder / RAW_META_FILE).exists():
        raise FileExistsError(f"{folder} is already stored; the raw store is append-only")
    if eprint is not None:
        io.write_bytes(folder / RAW_EPRINT_FILE, eprint)
    if source is not None:
        io.write_text(folder / RAW_SOURCE_FILE, source.text)
    meta = meta_record(
        entry, source_kind=source_kind, source=source, fetched_at=fetched_at, url=url
    )
    io.write_json(folder / RAW_META_FILE, meta)
    return folder
