"""The one writer of a mirror: every corpus hands it its paper versions, and it writes them
in the layout every mirror shares (:mod:`.layout`).

``write_mirror(out_dir, versions, describe)`` builds the mirror in a fresh folder beside
``out_dir`` and swaps it in with two renames, so a build killed at any point leaves the
previous mirror (or nothing), never half of a new one; single files are not fsynced one by
one, which keeps 10,000 papers fast. For each :class:`PaperVersion` it writes the listing
entry (``entries.jsonl``), the e-print and its sidecar (none for a withdrawn version) and
the version's :class:`~.manifest.PaperRecord`; then ``manifest.json``.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pipelines.common.io import current_umask
from pipelines.mirror.layout import (
    ENTRIES_FILE,
    EPRINT_DIR,
    MANIFEST_FILE,
    MirrorEntry,
    eprint_name,
    listing_line,
)
from pipelines.mirror.manifest import Manifest, Origin, PaperRecord

T = TypeVar("T")


@dataclass(frozen=True)
class Eprint:
    """A version's e-print: the bytes arXiv's ``/e-print/`` would send, and what they hold."""

    data: bytes
    content_type: str
    encoding: str | None  # "gzip" or None
    main_file: str | None  # the .tex ingest must pick, when there is one
    files: tuple[str, ...]  # archive member names (one name for a single file)


@dataclass(frozen=True)
class PaperVersion:
    """One paper version as a corpus gives it to the writer."""

    entry: MirrorEntry
    eprint: Eprint | None  # None: withdrawn, no e-print (the server answers 404)
    origin: Origin = field(default_factory=lambda: Origin())


def write_mirror(
    out_dir: Path,
    versions: Iterable[PaperVersion],
    describe: Callable[[tuple[PaperRecord, ...]], Manifest],
) -> Manifest:
    """Write ``versions`` as the mirror in ``out_dir`` (replacing it) and return its
    manifest, ``describe`` of the records written. ``versions`` is read once, inside the
    build: a generator does its work there, and a failure leaves the old mirror."""

    def write(folder: Path) -> Manifest:
        eprints = folder / EPRINT_DIR
        eprints.mkdir()
        lines: list[str] = []
        records: list[PaperRecord] = []
        for version in versions:
            entry, eprint = version.entry, version.eprint
            path = (
                write_eprint(eprints, entry.paper_id, entry.version, eprint)
                if eprint is not None
                else None
            )
            lines.append(listing_line(entry))
            records.append(
                PaperRecord(
                    paper_id=entry.paper_id,
                    version=entry.version,
                    updated=entry.updated,
                    eprint=path,
                    content_type=eprint.content_type if eprint else None,
                    encoding=eprint.encoding if eprint else None,
                    main_file=eprint.main_file if eprint else None,
                    files=eprint.files if eprint else (),
                    **version.origin,
                )
            )
        manifest = describe(tuple(records))
        write_index(folder, lines, manifest)
        return manifest

    return built_in_staging(out_dir, write)


def write_eprint(eprints: Path, paper_id: str, version: int, eprint: Eprint) -> str:
    """Write a version's e-print and its sidecar into ``eprints``; its path relative to
    the mirror folder (``e-print/<name>``)."""
    name = eprint_name(paper_id, version)
    (eprints / name).write_bytes(eprint.data)
    sidecar = {"content_type": eprint.content_type, "encoding": eprint.encoding}
    (eprints / f"{name}.json").write_text(
        json.dumps(sidecar, sort_keys=True) + "\n", encoding="utf-8"
    )
    return f"{EPRINT_DIR}/{name}"


def write_index(folder: Path, lines: Sequence[str], manifest: Manifest) -> None:
    """Write ``entries.jsonl`` (lines from :func:`~.layout.listing_line`) and ``manifest.json``."""
    (folder / ENTRIES_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / MANIFEST_FILE).write_text(
        json.dumps(manifest.to_json(), indent=1, sort_keys=True, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )


def built_in_staging(out_dir: Path, write: Callable[[Path], T]) -> T:
    """Run ``write`` on a fresh folder beside ``out_dir``, then swap it in: a mirror is
    replaced whole or not at all (a failed build leaves the old one and no debris)."""
    out_dir = out_dir.resolve()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        # mkdtemp's folder is private (0700); the mirror is served and shared like any
        # folder mkdir would make, so give it the umask's mode (0777 less the umask).
        staging.chmod(0o777 & ~current_umask())
        result = write(staging)
        swap_in(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return result


def swap_in(staging: Path, out_dir: Path) -> None:
    """Replace ``out_dir`` by ``staging`` with two renames; the old tree is then deleted."""
    old: Path | None = None
    if out_dir.exists():
        old = out_dir.with_name(f".{out_dir.name}.old-{os.getpid()}")
        os.replace(out_dir, old)
    os.replace(staging, out_dir)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
