"""Where the mirror says a reader finds each paper (:func:`pipelines.mirror.links.source_links`):
a Stacks chapter's source at the copied commit, and for anything else nothing."""

from __future__ import annotations

from pathlib import Path

from repo import REPO

from pipelines.common.io import write_json
from pipelines.mirror.corpora.stacks import CORPUS, STACKS_SOURCE, source_link
from pipelines.mirror.layout import MANIFEST_FILE
from pipelines.mirror.links import source_links
from pipelines.mirror.manifest import Manifest, PaperRecord, read_manifest


def stacks_mirror(folder: Path, chapters: dict[str, str]) -> Path:
    """A Stacks mirror's manifest naming ``chapters`` (paper id -> chapter file)."""
    records = tuple(
        PaperRecord(
            paper_id=paper_id,
            version=1,
            updated="2024-01-01T12:00:00Z",
            eprint=f"e-print/{paper_id.replace('/', '_')}v1",
            content_type="application/x-eprint-tar",
            encoding="gzip",
            main_file=chapter,
            files=(chapter, "preamble.tex"),
            title=chapter.removesuffix(".tex").title(),
            chapter=chapter,
            chapter_sha256="0" * 64,
        )
        for paper_id, chapter in chapters.items()
    )
    counts = {"papers": len(records), "versions": len(records)}
    manifest = Manifest(CORPUS, "2024-01-01", "2024-03-31", records, counts)
    write_json(folder / MANIFEST_FILE, manifest.to_json())
    assert read_manifest(folder, CORPUS) == manifest
    return folder


def test_stacks_chapters_link_to_their_source_at_the_copied_commit(tmp_path: Path) -> None:
    chapters = {"stacks/2607001": "categories.tex", "stacks/2607002": "fields.tex"}
    links = source_links(stacks_mirror(tmp_path / "stacks", chapters))
    assert links["stacks/2607002"] == STACKS_SOURCE + "fields.tex"
    assert STACKS_SOURCE.startswith("https://github.com/stacks/stacks-project/blob/")
    commit = STACKS_SOURCE.rstrip("/").rsplit("/", 1)[1]
    readme = REPO / "corpora" / "stacks-project" / "README.md"
    assert f"`{commit}`" in readme.read_text()  # the commit the chapters were copied from
    # A chapter the manifest does not name gets no link rather than a guessed one.
    assert links.get("stacks/2607099") is None


def test_chapters_come_from_a_stacks_mirror_and_nothing_else(tmp_path: Path) -> None:
    stacks = stacks_mirror(tmp_path / "stacks", {"stacks/2607001": "categories.tex"})
    assert source_links(stacks) == {"stacks/2607001": STACKS_SOURCE + "categories.tex"}
    # The synthetic sample's ids look like arXiv ids but name other people's papers.
    synthetic = tmp_path / "synthetic"
    write_json(synthetic / MANIFEST_FILE, {"format": 1, "generator": "pipelines.sample"})
    assert source_links(synthetic) == {}
    assert source_links(tmp_path / "no-mirror") == {}
    record = PaperRecord("stacks/2607001", 1, "2024-01-01T12:00:00Z", None, None, None, None, ())
    assert source_link(record) is None  # no chapter, no link
