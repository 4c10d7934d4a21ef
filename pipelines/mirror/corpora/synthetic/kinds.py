"""The synthetic sample's ground truth: the kinds of paper version the generator writes,
what its manifest counts, and the well-formed sources tests read back.

The manifest itself is every mirror's (:class:`pipelines.mirror.manifest.Manifest`): each
version's record carries its ``kind`` and true ``concepts`` (display names from
:mod:`.ontology`), and the manifest's header the seed, the number of papers and
:data:`KINDS`.
"""

from __future__ import annotations

import gzip
import io
import tarfile
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pipelines.mirror.manifest import PaperRecord

# -- kinds of paper versions ----------------------------------------------------------

TEX_TAR = "tex_tar"
TEX_GZ = "tex_gz"
PDF_ONLY = "pdf_only"
WITHDRAWN = "withdrawn"
LATIN1 = "latin1"
TRUNCATED_GZIP = "truncated_gzip"
PATH_TRAVERSAL = "path_traversal"
ABSOLUTE_PATH = "absolute_path"
SYMLINK = "symlink"
BOMB = "bomb"
NO_TEX = "no_tex"

KINDS: Mapping[str, str] = {
    TEX_TAR: "gzip'd tar: main file with \\documentclass plus \\input/\\include sub-files",
    TEX_GZ: "a single gzip'd .tex file (UTF-8)",
    PDF_ONLY: "no source: the e-print is a PDF (application/pdf)",
    WITHDRAWN: "withdrawn version: comment says so, no e-print (the server answers 404)",
    LATIN1: "a single gzip'd .tex file encoded in latin-1 (not valid UTF-8)",
    TRUNCATED_GZIP: "a gzip'd tar cut in half: the gzip stream ends early",
    PATH_TRAVERSAL: "gzip'd tar with a member named ../../evil.tex",
    ABSOLUTE_PATH: "gzip'd tar with a member at an absolute path (/tmp/...)",
    SYMLINK: "gzip'd tar whose secret.tex is a symlink to /etc/passwd (and is \\input)",
    BOMB: "compression bomb: a small gzip'd single file inflating to 200 MiB",
    NO_TEX: "gzip'd tar without any .tex file (a PDF, a PNG and a README)",
}
MALFORMED_KINDS = (TRUNCATED_GZIP, PATH_TRAVERSAL, ABSOLUTE_PATH, SYMLINK, BOMB, NO_TEX)

BOMB_INFLATED_BYTES = 200 * 1024 * 1024
#: The manifest's "generator", as the first generator wrote it.
GENERATOR = "pipelines.sample.generator"


def synthetic_counts(records: Sequence[PaperRecord]) -> dict[str, Any]:
    """The synthetic manifest's counts: papers, versions, revised papers, kinds, concepts."""
    kinds = Counter(record.kind for record in records)
    newest: dict[str, int] = {}
    for record in records:
        newest[record.paper_id] = max(newest.get(record.paper_id, 0), record.version)
    return {
        "papers": len(newest),
        "versions": len(records),
        "revised_papers": sum(1 for version in newest.values() if version > 1),
        "kinds": {kind: kinds.get(kind, 0) for kind in KINDS},
        "concepts_used": len({name for record in records for name in record.concepts or ()}),
    }


def iter_tex_sources(
    mirror_dir: Path, records: Iterable[PaperRecord]
) -> Iterable[tuple[PaperRecord, dict[str, str]]]:
    """For tests and benchmarks: the text files of well-formed tex e-prints (name → text)."""
    for record in records:
        if record.kind not in (TEX_TAR, TEX_GZ, LATIN1) or record.eprint is None:
            continue
        data = (mirror_dir / record.eprint).read_bytes()
        encoding = "latin-1" if record.kind == LATIN1 else "utf-8"
        if record.kind == TEX_TAR:
            texts = {}
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
                for member in archive.getmembers():
                    if member.isfile() and member.name.endswith((".tex", ".bbl")):
                        handle = archive.extractfile(member)
                        assert handle is not None
                        texts[member.name] = handle.read().decode(encoding)
            yield record, texts
        else:
            assert record.main_file is not None
            yield record, {record.main_file: gzip.decompress(data).decode(encoding)}
