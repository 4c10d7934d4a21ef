"""The one rule that links a hit to its paper: only links that are true."""

from __future__ import annotations

from pathlib import Path

from pipelines.common.io import write_json
from pipelines.ingest.sample.corpus import ChapterRecord, CorpusManifest
from pipelines.ingest.sample.layout import MANIFEST_FILE
from pipelines.search.links import STACKS_SOURCE, paper_url, stacks_chapters

CHAPTERS = {"stacks/2607001": "categories.tex", "stacks/2607002": "fields.tex"}


def test_arxiv_papers_link_to_their_abstract_only_when_harvested_from_arxiv() -> None:
    assert paper_url("2401.00007", from_arxiv=True, stacks_chapters={}) == (
        "https://arxiv.org/abs/2401.00007"
    )
    assert paper_url("math/0501001", from_arxiv=True, stacks_chapters={}) == (
        "https://arxiv.org/abs/math/0501001"
    )
    # The synthetic sample's ids look like arXiv ids but name other people's papers.
    assert paper_url("2401.00007", from_arxiv=False, stacks_chapters=CHAPTERS) is None


def test_stacks_chapters_link_to_their_source_at_the_copied_commit() -> None:
    for from_arxiv in (False, True):
        url = paper_url("stacks/2607002", from_arxiv=from_arxiv, stacks_chapters=CHAPTERS)
        assert url == STACKS_SOURCE + "fields.tex"
    assert STACKS_SOURCE.startswith("https://github.com/stacks/stacks-project/blob/")
    commit = STACKS_SOURCE.rstrip("/").rsplit("/", 1)[1]
    readme = Path(__file__).parents[3] / "corpora" / "stacks-project" / "README.md"
    assert f"`{commit}`" in readme.read_text()  # the commit the chapters were copied from
    # A chapter the manifest does not name gets no link rather than a guessed one.
    assert paper_url("stacks/2607099", from_arxiv=True, stacks_chapters=CHAPTERS) is None


def test_chapters_come_from_a_stacks_mirror_and_nothing_else(tmp_path: Path) -> None:
    record = ChapterRecord(
        paper_id="stacks/2607001",
        version=1,
        chapter="categories.tex",
        chapter_sha256="0" * 64,
        title="Categories",
        updated="2024-01-01T12:00:00Z",
        eprint="e-print/stacks_2607001v1",
        content_type="application/x-eprint-tar",
        encoding="",
        main_file="categories.tex",
        files=("categories.tex", "preamble.tex"),
    )
    manifest = CorpusManifest("stacks-project", "2024-01-01", "2024-03-31", (record,))
    stacks = tmp_path / "stacks"
    write_json(stacks / MANIFEST_FILE, manifest.to_json())
    assert stacks_chapters(stacks) == {"stacks/2607001": "categories.tex"}

    synthetic = tmp_path / "synthetic"
    write_json(synthetic / MANIFEST_FILE, {"format": 1, "generator": "pipelines.sample"})
    assert stacks_chapters(synthetic) == {}
    assert stacks_chapters(tmp_path / "no-mirror") == {}
