"""The synthetic mirror's ground truth: the kinds of paper version the generator writes,
and the manifest (what each version is, and is about) that tests check against.

Written by :func:`pipelines.dev.synthetic.generate_mirror`, read by tests and benchmarks.
A mirror of a real corpus (:mod:`pipelines.ingest.sample.corpus`) has the same files
(:mod:`pipelines.ingest.sample.layout`); its manifest names its corpus and has no
generator ground truth, so :func:`load_manifest` refuses it.
"""

from __future__ import annotations

import gzip
import io
import tarfile
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.common.io import read_json
from pipelines.ingest.sample.layout import MANIFEST_FILE, SYNTHETIC

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
MANIFEST_FORMAT = 1

# -- the manifest ---------------------------------------------------------------------


@dataclass(frozen=True)
class VersionRecord:
    """Ground truth about one paper version of the mirror."""

    paper_id: str
    version: int
    kind: str
    concepts: tuple[str, ...]  # display names, focus concept first
    updated: str
    eprint: str | None  # path relative to the mirror folder; None when withdrawn
    content_type: str | None
    encoding: str | None  # "gzip" or None
    main_file: str | None  # the .tex with \documentclass, when there is one
    files: tuple[str, ...]  # archive member names (one name for a single file)

    @property
    def versioned_id(self) -> str:
        return f"{self.paper_id}v{self.version}"


@dataclass(frozen=True)
class Manifest:
    seed: int
    n_papers: int
    start: str  # first day of the date window, "2024-01-01"
    end: str  # last day of the window, inclusive
    versions: tuple[VersionRecord, ...]

    def papers(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(record.paper_id for record in self.versions))

    def latest(self) -> dict[str, VersionRecord]:
        """paper id → its newest version."""
        newest: dict[str, VersionRecord] = {}
        for record in self.versions:
            if record.paper_id not in newest or record.version > newest[record.paper_id].version:
                newest[record.paper_id] = record
        return newest

    def of_kind(self, kind: str) -> tuple[VersionRecord, ...]:
        return tuple(record for record in self.versions if record.kind == kind)

    def record(self, paper_id: str, version: int) -> VersionRecord:
        for record in self.versions:
            if record.paper_id == paper_id and record.version == version:
                return record
        raise KeyError(f"{paper_id}v{version} is not in the manifest")

    def counts(self) -> dict[str, Any]:
        kinds = Counter(record.kind for record in self.versions)
        return {
            "papers": len(self.papers()),
            "versions": len(self.versions),
            "revised_papers": sum(1 for record in self.latest().values() if record.version > 1),
            "kinds": {kind: kinds.get(kind, 0) for kind in KINDS},
            "concepts_used": len({name for record in self.versions for name in record.concepts}),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "format": MANIFEST_FORMAT,
            "generator": "pipelines.sample.generator",
            "seed": self.seed,
            "n_papers": self.n_papers,
            "window": {"start": self.start, "end": self.end},
            "counts": self.counts(),
            "kinds": dict(KINDS),
            "versions": [
                {
                    "paper_id": record.paper_id,
                    "version": record.version,
                    "kind": record.kind,
                    "concepts": list(record.concepts),
                    "updated": record.updated,
                    "eprint": record.eprint,
                    "content_type": record.content_type,
                    "encoding": record.encoding,
                    "main_file": record.main_file,
                    "files": list(record.files),
                }
                for record in self.versions
            ],
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Manifest:
        if raw.get("corpus", SYNTHETIC) != SYNTHETIC:
            # A mirror of the real corpus (sample.corpus) has no generator ground truth.
            raise ValueError(
                f"this mirror holds the {raw['corpus']!r} corpus, not the synthetic sample; "
                "read it with pipelines.ingest.sample.corpus_manifest.load_corpus_manifest, or "
                "rebuild it with sample.corpus: synthetic"
            )
        if raw.get("format") != MANIFEST_FORMAT:
            raise ValueError(
                f"manifest format {raw.get('format')!r} is not {MANIFEST_FORMAT}; "
                "regenerate the mirror with mathembed sample"
            )
        versions = tuple(
            VersionRecord(
                paper_id=item["paper_id"],
                version=int(item["version"]),
                kind=item["kind"],
                concepts=tuple(item["concepts"]),
                updated=item["updated"],
                eprint=item["eprint"],
                content_type=item["content_type"],
                encoding=item["encoding"],
                main_file=item["main_file"],
                files=tuple(item["files"]),
            )
            for item in raw["versions"]
        )
        window = raw["window"]
        return cls(
            seed=int(raw["seed"]),
            n_papers=int(raw["n_papers"]),
            start=window["start"],
            end=window["end"],
            versions=versions,
        )


def load_manifest(mirror_dir: Path) -> Manifest:
    """Read ``mirror_dir/manifest.json`` (written by :func:`generate_mirror`)."""
    path = mirror_dir / MANIFEST_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; run mathembed sample first")
    return Manifest.from_json(read_json(path))


def iter_tex_sources(
    mirror_dir: Path, records: Iterable[VersionRecord]
) -> Iterable[tuple[VersionRecord, dict[str, str]]]:
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
