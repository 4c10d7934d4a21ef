"""What a mirror's ``manifest.json`` records, for every corpus: one :class:`PaperRecord` per
paper version (where its e-print lies, what it holds, and what the corpus knows of its
origin), the date window and the corpus's counts; read back by :func:`read_manifest`.

The three corpora share the record: what every version has (id, version, time, e-print,
content type, encoding, main file, members) and, left out of the file where a corpus has
no such thing, what they really differ in: a real corpus's chapter (its title, file and
SHA-256; a blueprint's project, repository, commit and licence), the synthetic sample's
ground truth (the version's kind and the concepts it is about).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypedDict

from pipelines.common.io import read_json
from pipelines.mirror.layout import MANIFEST_FILE

MANIFEST_FORMAT = 1
#: What manifest.json's "corpus" says when it says nothing: the synthetic sample's (its
#: manifest predates the key).
SYNTHETIC = "synthetic"
#: The top-level keys every manifest has; any other is the corpus's own (:attr:`Manifest.header`).
_COMMON_KEYS = frozenset({"format", "corpus", "window", "counts", "versions"})


class Origin(TypedDict, total=False):
    """What a corpus records of a version's origin: the optional fields of :class:`PaperRecord`."""

    title: str
    chapter: str
    chapter_sha256: str
    project: str
    repository: str
    commit: str
    licence: str
    kind: str
    concepts: tuple[str, ...]


@dataclass(frozen=True)
class PaperRecord:
    """One paper version of a mirror, as its manifest records it."""

    paper_id: str
    version: int
    updated: str
    eprint: str | None  # path relative to the mirror folder; None when withdrawn
    content_type: str | None
    encoding: str | None  # "gzip" or None
    main_file: str | None  # the .tex ingest must pick, when there is one
    files: tuple[str, ...]  # archive member names (one name for a single file)
    # A real corpus's paper: the chapter it was built from.
    title: str | None = None
    chapter: str | None = None  # "categories.tex"; a blueprint's "chapter/entropy.tex"
    chapter_sha256: str | None = None
    # A blueprint's project: its folder ("teorth-pfr"), where it comes from, its licence.
    project: str | None = None
    repository: str | None = None
    commit: str | None = None
    licence: str | None = None
    # The synthetic sample's ground truth: the version's kind, its concepts (focus first).
    kind: str | None = None
    concepts: tuple[str, ...] | None = None

    @property
    def versioned_id(self) -> str:
        return f"{self.paper_id}v{self.version}"

    def to_json(self) -> dict[str, Any]:
        """The record as the manifest holds it: every field a version has, and of the
        corpus's fields those it gives."""
        out: dict[str, Any] = {}
        for item in fields(self):
            value = getattr(self, item.name)
            if item.name in _ORIGIN_FIELDS and value is None:
                continue
            out[item.name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> PaperRecord:
        values = {key: raw[key] for key in _FIELDS if key in raw}
        values["version"] = int(raw["version"])
        values["files"] = tuple(raw["files"])
        if raw.get("concepts") is not None:
            values["concepts"] = tuple(raw["concepts"])
        return cls(**values)


_FIELDS = tuple(item.name for item in fields(PaperRecord))
_ORIGIN_FIELDS = frozenset(Origin.__annotations__)


@dataclass(frozen=True)
class Manifest:
    """What a corpus wrote to a mirror."""

    corpus: str  # "stacks-project", "blueprints" or "synthetic"
    start: str  # first day of the date window, "2024-01-01"
    end: str  # last day of the window, inclusive
    versions: tuple[PaperRecord, ...]
    counts: Mapping[str, Any]  # the corpus's own counts ("papers", ...)
    #: The corpus's own top-level keys (the synthetic sample's seed, n_papers, kinds).
    header: Mapping[str, Any] = field(default_factory=dict)

    def papers(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(record.paper_id for record in self.versions))

    def latest(self) -> dict[str, PaperRecord]:
        """paper id → its newest version."""
        newest: dict[str, PaperRecord] = {}
        for record in self.versions:
            if record.paper_id not in newest or record.version > newest[record.paper_id].version:
                newest[record.paper_id] = record
        return newest

    def of_kind(self, kind: str) -> tuple[PaperRecord, ...]:
        return tuple(record for record in self.versions if record.kind == kind)

    def record(self, paper_id: str, version: int) -> PaperRecord:
        for record in self.versions:
            if record.paper_id == paper_id and record.version == version:
                return record
        raise KeyError(f"{paper_id}v{version} is not in the manifest")

    def to_json(self) -> dict[str, Any]:
        out = {
            **self.header,
            "format": MANIFEST_FORMAT,
            "window": {"start": self.start, "end": self.end},
            "counts": dict(self.counts),
            "versions": [record.to_json() for record in self.versions],
        }
        if self.corpus != SYNTHETIC:
            out["corpus"] = self.corpus
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Manifest:
        if raw.get("format") != MANIFEST_FORMAT:
            raise ValueError(
                f"manifest format {raw.get('format')!r} is not {MANIFEST_FORMAT}; "
                "rebuild the mirror with mathembed sample"
            )
        window = raw["window"]
        return cls(
            corpus=str(raw.get("corpus", SYNTHETIC)),
            start=window["start"],
            end=window["end"],
            versions=tuple(PaperRecord.from_json(item) for item in raw["versions"]),
            counts=dict(raw["counts"]),
            header={key: value for key, value in raw.items() if key not in _COMMON_KEYS},
        )


def read_manifest(mirror_dir: Path, corpus: str | None = None) -> Manifest:
    """Read ``mirror_dir/manifest.json``; with ``corpus``, refuse a mirror of another one."""
    path = mirror_dir / MANIFEST_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; run mathembed sample first")
    raw = read_json(path)
    held = str(raw.get("corpus", SYNTHETIC))
    if corpus is not None and held != corpus:
        raise ValueError(
            f"this mirror holds the {held!r} corpus, not {corpus!r}; rebuild it with "
            f"mathembed sample (sample.corpus: {corpus})"
        )
    return Manifest.from_json(raw)


def mirror_corpus(mirror_dir: Path) -> str:
    """Which corpus the mirror in ``mirror_dir`` holds: ``synthetic`` or a real corpus's name."""
    path = mirror_dir / MANIFEST_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; run mathembed sample first")
    return str(read_json(path).get("corpus", SYNTHETIC))
