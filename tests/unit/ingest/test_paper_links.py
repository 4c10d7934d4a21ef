"""The rules that give a paper its link when ingest stores it: only links that are true."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from hostile_arxiv import PARAMS, atom_entry, feed_answer, hostile_arxiv, tex_eprint

from pipelines.common.io import read_json, write_json
from pipelines.common.paths import Paths
from pipelines.common.raw_layout import RAW_META_FILE, version_folder
from pipelines.ingest.arxiv.atom import abs_page
from pipelines.ingest.harvest import no_link
from pipelines.ingest.sample.corpus_manifest import (
    STACKS_SOURCE,
    ChapterRecord,
    CorpusManifest,
    paper_links,
)
from pipelines.ingest.sample.layout import MANIFEST_FILE
from pipelines.ingest.stage import run_from_source


def stacks_mirror(folder: Path, chapters: dict[str, str]) -> Path:
    """A Stacks mirror's manifest naming ``chapters`` (paper id -> chapter file)."""
    records = tuple(
        ChapterRecord(
            paper_id=paper_id,
            version=1,
            chapter=chapter,
            chapter_sha256="0" * 64,
            title=chapter.removesuffix(".tex").title(),
            updated="2024-01-01T12:00:00Z",
            eprint=f"e-print/{paper_id.replace('/', '_')}v1",
            content_type="application/x-eprint-tar",
            encoding="",
            main_file=chapter,
            files=(chapter, "preamble.tex"),
        )
        for paper_id, chapter in chapters.items()
    )
    manifest = CorpusManifest("stacks-project", "2024-01-01", "2024-03-31", records)
    write_json(folder / MANIFEST_FILE, manifest.to_json())
    return folder


def test_arxiv_papers_link_to_their_abstract_only_when_harvested_from_arxiv(
    tmp_path: Path,
) -> None:
    assert abs_page("2401.00007") == "https://arxiv.org/abs/2401.00007"
    assert abs_page("math/0501001") == "https://arxiv.org/abs/math/0501001"
    # The synthetic sample's ids look like arXiv ids but name other people's papers.
    synthetic = tmp_path / "synthetic"
    write_json(synthetic / MANIFEST_FILE, {"format": 1, "generator": "pipelines.sample"})
    assert paper_links(synthetic).get("2401.00007") is None
    assert no_link("2401.00007") is None


def test_a_paper_harvested_from_arxiv_records_its_abstract_page(tmp_path: Path) -> None:
    answers = {
        "/api/query": feed_answer([atom_entry("2401.00001v1")]),
        "/e-print/2401.00001v1": tex_eprint(),
    }
    paths = Paths(tmp_path)
    with hostile_arxiv(answers) as base_url:  # ingest.source arxiv, at a local address
        params = dataclasses.replace(PARAMS, base_url=base_url)
        report = run_from_source(params, paths, progress=False)
    assert report.stored == ["2401.00001v1"]
    meta = read_json(version_folder(paths.raw, "2401.00001", 1) / RAW_META_FILE)
    assert meta["url"] == "https://arxiv.org/abs/2401.00001"


def test_stacks_chapters_link_to_their_source_at_the_copied_commit(tmp_path: Path) -> None:
    chapters = {"stacks/2607001": "categories.tex", "stacks/2607002": "fields.tex"}
    links = paper_links(stacks_mirror(tmp_path / "stacks", chapters))
    assert links["stacks/2607002"] == STACKS_SOURCE + "fields.tex"
    assert STACKS_SOURCE.startswith("https://github.com/stacks/stacks-project/blob/")
    commit = STACKS_SOURCE.rstrip("/").rsplit("/", 1)[1]
    readme = Path(__file__).parents[3] / "corpora" / "stacks-project" / "README.md"
    assert f"`{commit}`" in readme.read_text()  # the commit the chapters were copied from
    # A chapter the manifest does not name gets no link rather than a guessed one.
    assert links.get("stacks/2607099") is None


def test_chapters_come_from_a_stacks_mirror_and_nothing_else(tmp_path: Path) -> None:
    stacks = stacks_mirror(tmp_path / "stacks", {"stacks/2607001": "categories.tex"})
    assert paper_links(stacks) == {"stacks/2607001": STACKS_SOURCE + "categories.tex"}

    synthetic = tmp_path / "synthetic"
    write_json(synthetic / MANIFEST_FILE, {"format": 1, "generator": "pipelines.sample"})
    assert paper_links(synthetic) == {}
    assert paper_links(tmp_path / "no-mirror") == {}
