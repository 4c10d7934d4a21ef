"""What the blueprints mirror's ``manifest.json`` records (per paper, the project and chapter
it was built from), read back.

Its own module, apart from building the mirror (:mod:`.blueprints`), like the Stacks
mirror's (:mod:`.corpus_manifest`): what a mirror holds is read without the code that
reads LaTeX projects.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pipelines.common.io import read_json
from pipelines.ingest.sample.layout import MANIFEST_FILE

CORPUS = "blueprints"
MANIFEST_FORMAT = 1


@dataclass(frozen=True)
class BlueprintRecord:
    """One paper of the blueprints mirror and the chapter it was built from."""

    paper_id: str
    version: int
    project: str  # the project folder, "teorth-pfr"
    chapter: str  # path inside the project folder, "chapter/entropy.tex"
    chapter_sha256: str
    title: str
    updated: str
    eprint: str  # path relative to the mirror folder
    content_type: str
    encoding: str
    main_file: str  # blueprints.MAIN_FILE: ingest must pick it
    files: tuple[str, ...]
    repository: str
    commit: str
    licence: str

    @property
    def versioned_id(self) -> str:
        return f"{self.paper_id}v{self.version}"


@dataclass(frozen=True)
class BlueprintManifest:
    start: str
    end: str
    versions: tuple[BlueprintRecord, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "format": MANIFEST_FORMAT,
            "corpus": CORPUS,
            "window": {"start": self.start, "end": self.end},
            "counts": {
                "papers": len(self.versions),
                "projects": len({record.project for record in self.versions}),
            },
            "versions": [
                {**asdict(record), "files": list(record.files)} for record in self.versions
            ],
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> BlueprintManifest:
        if raw.get("corpus") != CORPUS or raw.get("format") != MANIFEST_FORMAT:
            raise ValueError(
                f"manifest holds corpus {raw.get('corpus', 'synthetic')!r} (format "
                f"{raw.get('format')!r}), not {CORPUS!r} format {MANIFEST_FORMAT}; rebuild "
                f"the mirror with mathembed sample (sample.corpus: {CORPUS})"
            )
        versions = tuple(
            BlueprintRecord(**{**item, "files": tuple(item["files"])}) for item in raw["versions"]
        )
        return cls(raw["window"]["start"], raw["window"]["end"], versions)


def load_blueprint_manifest(mirror_dir: Path) -> BlueprintManifest:
    """Read the ``manifest.json`` of a mirror built by
    :func:`~pipelines.ingest.sample.blueprints.build_blueprint_mirror`."""
    path = mirror_dir / MANIFEST_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; run mathembed sample first")
    return BlueprintManifest.from_json(read_json(path))
