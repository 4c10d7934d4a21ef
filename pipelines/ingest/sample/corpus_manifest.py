"""What the Stacks mirror's ``manifest.json`` records (per paper, the chapter it was built
from), read back; and the link each of its papers gets when ingest stores it.

Its own module, apart from building the mirror (:mod:`.corpus`), because ingest reads it
too: :func:`paper_links` gives each stored paper its ``url``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.common.io import read_json
from pipelines.ingest.sample.layout import MANIFEST_FILE

CORPUS = "stacks-project"
CORPUS_MANIFEST_FORMAT = 1
#: The commit ``corpora/stacks-project/`` was copied from, byte for byte (its README).
STACKS_COMMIT = "4ac4815d5a00dc2eacab7824cf4e4baafe2773ac"
#: A chapter's LaTeX source at that commit: ``STACKS_SOURCE + "categories.tex"``.
STACKS_SOURCE = f"https://github.com/stacks/stacks-project/blob/{STACKS_COMMIT}/"


@dataclass(frozen=True)
class ChapterRecord:
    """One paper of the real-corpus mirror and the chapter it was built from."""

    paper_id: str
    version: int
    chapter: str  # the chapter's file name in the corpus folder, "categories.tex"
    chapter_sha256: str
    title: str
    updated: str
    eprint: str  # path relative to the mirror folder
    content_type: str
    encoding: str
    main_file: str  # the chapter: ingest must pick it, not preamble.tex
    files: tuple[str, ...]

    @property
    def versioned_id(self) -> str:
        return f"{self.paper_id}v{self.version}"


@dataclass(frozen=True)
class CorpusManifest:
    corpus: str
    start: str
    end: str
    versions: tuple[ChapterRecord, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "format": CORPUS_MANIFEST_FORMAT,
            "corpus": self.corpus,
            "window": {"start": self.start, "end": self.end},
            "counts": {"papers": len(self.versions), "versions": len(self.versions)},
            "versions": [
                {
                    "paper_id": record.paper_id,
                    "version": record.version,
                    "chapter": record.chapter,
                    "chapter_sha256": record.chapter_sha256,
                    "title": record.title,
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
    def from_json(cls, raw: Mapping[str, Any]) -> CorpusManifest:
        if raw.get("corpus") != CORPUS or raw.get("format") != CORPUS_MANIFEST_FORMAT:
            raise ValueError(
                f"manifest holds corpus {raw.get('corpus', 'synthetic')!r} (format "
                f"{raw.get('format')!r}), not {CORPUS!r} format {CORPUS_MANIFEST_FORMAT}; "
                f"rebuild the mirror with mathembed sample (sample.corpus: {CORPUS})"
            )
        versions = tuple(
            ChapterRecord(**{**item, "files": tuple(item["files"])}) for item in raw["versions"]
        )
        window = raw["window"]
        return cls(raw["corpus"], window["start"], window["end"], versions)


def load_corpus_manifest(mirror_dir: Path) -> CorpusManifest:
    """Read the ``manifest.json`` of a mirror built by :func:`build_corpus_mirror`."""
    path = mirror_dir / MANIFEST_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; run mathembed sample first")
    return CorpusManifest.from_json(read_json(path))


def paper_links(mirror_dir: Path) -> dict[str, str]:
    """Paper id -> where a reader finds the paper, for the Stacks mirror in ``mirror_dir``:
    its chapter's source at the copied commit. Empty for any other mirror or none: the
    synthetic sample's ids look like arXiv ids but name no real paper, and a link is
    given only when it is true."""
    try:
        manifest = load_corpus_manifest(mirror_dir)
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return {}
    return {record.paper_id: f"{STACKS_SOURCE}{record.chapter}" for record in manifest.versions}
