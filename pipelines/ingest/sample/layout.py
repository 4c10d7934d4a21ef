"""What every offline mirror holds on disk, and how a builder writes one.

A mirror (``data/mirror``) is an arXiv look-alike that :class:`~.server.MirrorServer`
serves and ingest harvests. Three builders write it: the real corpora
(:mod:`.corpus`, :mod:`.blueprints`) and the synthetic generator
(:mod:`pipelines.dev.synthetic`); they share this layout:

``entries.jsonl``
    One arXiv listing entry per line and per paper version (keys sorted).
``e-print/<safe_name(paper_id)>v<version>``
    The bytes arXiv's ``/e-print/`` would send, and beside each a sidecar ``<name>.json``:
    ``{"content_type": ..., "encoding": "gzip" | null}``.
``manifest.json``
    The builder's own record of what it wrote; ``"corpus"`` names the builder (a
    synthetic manifest predates the key and omits it: :func:`mirror_corpus`).

Writes are byte-stable (tar members with fixed metadata, gzip without a time stamp, JSON
with sorted keys), so the same input gives the same bytes and DVC's hash of the mirror
stays put; a mirror is replaced whole or not at all (:func:`built_in_staging`).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import tarfile
import tempfile
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from pipelines.common.io import current_umask, read_json, safe_name

ENTRIES_FILE = "entries.jsonl"
MANIFEST_FILE = "manifest.json"
EPRINT_DIR = "e-print"

#: What manifest.json's "corpus" says when it says nothing: the synthetic sample's.
SYNTHETIC = "synthetic"

# The Content-Type arXiv's /e-print/ answers with, per kind of e-print.
CONTENT_TYPE_TAR = "application/x-eprint-tar"
CONTENT_TYPE_SINGLE = "application/x-eprint"
CONTENT_TYPE_PDF = "application/pdf"

T = TypeVar("T")


# -- reading --------------------------------------------------------------------------


def mirror_corpus(mirror_dir: Path) -> str:
    """Which corpus the mirror in ``mirror_dir`` holds: ``synthetic`` or the real corpus's name."""
    path = mirror_dir / MANIFEST_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; run mathembed sample first")
    return str(read_json(path).get("corpus", SYNTHETIC))


def eprint_name(paper_id: str, version: int) -> str:
    """File name of a version's e-print inside ``e-print/`` (the sidecar adds ``.json``)."""
    return f"{safe_name(paper_id)}v{version}"


# -- writing --------------------------------------------------------------------------


def iso_time(moment: datetime) -> str:
    """A listing time as arXiv writes it: ``2024-01-03T10:00:00Z``."""
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


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


def write_eprint(
    eprints: Path,
    paper_id: str,
    version: int,
    data: bytes,
    content_type: str,
    encoding: str | None,
) -> str:
    """Write a version's e-print and its sidecar into ``eprints``; its path relative to
    the mirror folder (``e-print/<name>``)."""
    name = eprint_name(paper_id, version)
    (eprints / name).write_bytes(data)
    sidecar = {"content_type": content_type, "encoding": encoding}
    (eprints / f"{name}.json").write_text(
        json.dumps(sidecar, sort_keys=True) + "\n", encoding="utf-8"
    )
    return f"{EPRINT_DIR}/{name}"


def listing_line(entry: Mapping[str, Any]) -> str:
    """One line of ``entries.jsonl``."""
    return json.dumps(entry, ensure_ascii=False, sort_keys=True)


def write_index(folder: Path, entries: Sequence[str], manifest: Mapping[str, Any]) -> None:
    """Write ``entries.jsonl`` (lines from :func:`listing_line`) and ``manifest.json``."""
    (folder / ENTRIES_FILE).write_text("\n".join(entries) + "\n", encoding="utf-8")
    (folder / MANIFEST_FILE).write_text(
        json.dumps(manifest, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
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
