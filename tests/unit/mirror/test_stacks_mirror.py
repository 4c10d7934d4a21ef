"""The demo's real corpus: the copied Stacks Project chapters, the mirror built from them,
and ingest harvesting that mirror over HTTP exactly as from arXiv."""

from __future__ import annotations

import gzip
import io
import json
import re
import tarfile
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from repo import REPO
from typer.testing import CliRunner

from benchmarks.real_corpus import SHARED_CORPUS
from pipelines import cli
from pipelines.common import io as common_io
from pipelines.common.config import ConfigError, IngestParams, SampleParams, load_params
from pipelines.common.io import safe_name
from pipelines.common.paths import Paths
from pipelines.common.raw_layout import RAW_META_FILE, RAW_SOURCE_FILE, version_folder
from pipelines.ingest.arxiv.atom import parse_paper_id
from pipelines.ingest.stage import run_from_source
from pipelines.mirror.corpora.stacks import (
    AUTHORS,
    CATEGORY,
    CORPUS_DIR,
    PREAMBLE,
    STACKS_SOURCE,
    build_stacks_mirror,
    chapter_paper_id,
    chapter_summary,
    chapter_title,
    corpus_chapters,
    latex_to_plain,
    spread_times,
)
from pipelines.mirror.manifest import SYNTHETIC, Manifest, mirror_corpus, read_manifest
from pipelines.validate.schemas import ARXIV_ID

CORPUS = REPO / CORPUS_DIR
# The brief of issue 11: definition-dense chapters, small enough for the CPU demo.
CHAPTERS = {
    f"{name}.tex"
    for name in (
        *("categories", "homology", "topology", "sites", "sites-modules", "topologies"),
        *("fields", "schemes", "groupoids", "modules", "sheaves", "simplicial"),
        *("spaces-groupoids", "groupoids-quotients", "spaces-topologies", "morphisms"),
    )
}
START, END = date(2024, 1, 1), date(2024, 3, 31)


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Manifest]:
    folder = tmp_path_factory.mktemp("real") / "mirror"
    return folder, build_stacks_mirror(folder, CORPUS, start=START, end=END)


def tree(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def entries(folder: Path) -> list[dict[str, object]]:
    lines = (folder / "entries.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


# -- the copied corpus ----------------------------------------------------------------


def test_the_corpus_folder_holds_the_chosen_chapters_with_licence_and_origin() -> None:
    names = {path.name for path in CORPUS.iterdir()}
    assert names == CHAPTERS | {PREAMBLE, "COPYING", "CONTRIBUTORS", "README.md", "tags"}
    assert set(corpus_chapters(CORPUS)) == CHAPTERS
    # the book's tags of these chapters' results (search links a statement to its page)
    lines = (CORPUS / "tags").read_text(encoding="utf-8").splitlines()
    labels = [line.split(",", 1)[1] for line in lines if not line.startswith("#")]
    prefixes = tuple(f"{chapter.removesuffix('.tex')}-" for chapter in CHAPTERS)
    assert labels and all(label.startswith(prefixes) for label in labels)
    assert "GNU Free Documentation License" in (CORPUS / "COPYING").read_text(encoding="utf-8")
    assert "Version 1.2" in (CORPUS / "COPYING").read_text(encoding="utf-8")
    readme = (CORPUS / "README.md").read_text(encoding="utf-8")
    assert "4ac4815d5a00dc2eacab7824cf4e4baafe2773ac" in readme and "COPYING" in readme
    for chapter in CHAPTERS:
        assert (CORPUS / chapter).read_bytes().startswith(b"\\input{preamble}")
    assert b"\\documentclass" in (CORPUS / PREAMBLE).read_bytes()


@pytest.mark.skipif(
    not SHARED_CORPUS.is_dir(), reason="../shared/corpora is not beside the checkout"
)
def test_the_copied_files_are_unchanged_byte_for_byte() -> None:
    for path in CORPUS.iterdir():
        if path.name not in ("README.md", "tags"):  # our note of origin; a subset, below
            assert path.read_bytes() == (SHARED_CORPUS / path.name).read_bytes(), path.name
    # the book's tags file, cut to these chapters' lines: each line as the book has it
    book = (SHARED_CORPUS / "tags").read_text(encoding="utf-8").splitlines()
    kept = (CORPUS / "tags").read_text(encoding="utf-8").splitlines()
    assert set(kept) <= set(book)


# -- pure parts -----------------------------------------------------------------------


def test_paper_ids_are_valid_everywhere_and_never_real_arxiv_ids() -> None:
    ids = [chapter_paper_id(position) for position in range(1, 17)]
    assert ids[:2] == ["stacks/2607001", "stacks/2607002"] and ids[-1] == "stacks/2607016"
    for paper_id in ids:
        assert re.fullmatch(ARXIV_ID, paper_id)  # validate's schemas
        assert parse_paper_id(f"http://arxiv.org/abs/{paper_id}v1") == (paper_id, 1)  # Atom
        assert safe_name(paper_id) == paper_id.replace("/", "_")  # raw store folder
    with pytest.raises(ValueError, match="1..999"):
        chapter_paper_id(1000)


def test_times_are_distinct_inside_the_window_and_deterministic() -> None:
    times = spread_times(15, START, END)
    assert times == spread_times(15, START, END)
    assert len(set(times)) == 15 and times == sorted(times)
    assert datetime(2024, 1, 1, tzinfo=UTC) < times[0] and times[-1] < datetime(
        2024, 4, 1, tzinfo=UTC
    )
    assert len(set(spread_times(15, START, START))) == 15  # one day still fits 15 papers
    with pytest.raises(ValueError, match="before"):
        spread_times(3, END, START)


def test_title_and_summary_are_plain_text_from_the_chapter() -> None:
    fields = (CORPUS / "fields.tex").read_text(encoding="utf-8")
    assert chapter_title(fields, fallback="fields") == "Fields"
    summary = chapter_summary(fields)
    assert summary.startswith("In this chapter, we shall discuss the theory of fields.")
    assert "a field is a nonzero ring" in summary  # {\it field} lost its markup
    assert "$(0)$" in summary  # math kept as written, like arXiv abstracts
    assert "\\" not in re.sub(r"\$[^$]*\$", "", summary)  # no LaTeX outside math
    assert len(summary) <= 600
    assert chapter_title("no title here", fallback="x") == "x"
    assert latex_to_plain("{\\it \\'Etale} site \\cite[4.1]{SGA4}, see Lemma \\ref{l}.") == (
        "Étale site [SGA4], see Lemma."
    )
    sites = (CORPUS / "sites.tex").read_text(encoding="utf-8")
    assert "étale topology" in chapter_summary(sites)


# -- the mirror -----------------------------------------------------------------------


def test_the_mirror_has_one_paper_per_chapter_with_its_metadata(
    mirror: tuple[Path, Manifest],
) -> None:
    folder, manifest = mirror
    assert read_manifest(folder, "stacks-project") == manifest
    assert mirror_corpus(folder) == "stacks-project"
    records = manifest.versions
    assert [record.chapter for record in records] == sorted(CHAPTERS)
    assert [record.paper_id for record in records] == [
        chapter_paper_id(position) for position in range(1, 17)
    ]
    listed = entries(folder)
    assert [entry["paper_id"] for entry in listed] == [record.paper_id for record in records]
    for entry, record in zip(listed, records, strict=True):
        chapter = (CORPUS / record.chapter).read_bytes()
        assert record.chapter_sha256 == common_io.sha256_hex(chapter)
        assert entry["title"] == record.title and entry["title"]
        assert entry["version"] == 1 and entry["withdrawn"] is False
        assert entry["authors"] == list(AUTHORS)
        assert entry["categories"] == [CATEGORY] and entry["primary_category"] == CATEGORY
        assert str(entry["published"]) == str(entry["updated"]) == record.updated
        assert START.isoformat() <= record.updated[:10] <= END.isoformat()
        assert 40 <= len(str(entry["summary"])) <= 600
        # The e-print: the chapter and the preamble, unchanged, nothing else.
        data = (folder / record.eprint).read_bytes()
        with tarfile.open(fileobj=io.BytesIO(gzip.decompress(data))) as archive:
            members = {m.name: archive.extractfile(m).read() for m in archive}  # type: ignore[union-attr]
        assert members == {record.chapter: chapter, PREAMBLE: (CORPUS / PREAMBLE).read_bytes()}
        assert record.main_file == record.chapter
        sidecar = json.loads((folder / f"{record.eprint}.json").read_text(encoding="utf-8"))
        assert sidecar == {"content_type": "application/x-eprint-tar", "encoding": "gzip"}
    assert len({entry["updated"] for entry in listed}) == len(listed)
    assert "math.AG" in load_params(REPO / "params.yaml").ingest.categories


def test_a_second_build_is_byte_identical(mirror: tuple[Path, Manifest], tmp_path: Path) -> None:
    folder, _ = mirror
    build_stacks_mirror(tmp_path / "again", CORPUS, start=START, end=END)
    assert tree(tmp_path / "again") == tree(folder)
    # Rebuilding in place replaces the mirror with the same bytes.
    build_stacks_mirror(tmp_path / "again", CORPUS, start=START, end=END)
    assert tree(tmp_path / "again") == tree(folder)


def test_a_reader_asking_for_the_synthetic_sample_refuses_a_real_corpus_mirror(
    mirror: tuple[Path, Manifest],
) -> None:
    with pytest.raises(ValueError, match="stacks-project"):
        read_manifest(mirror[0], SYNTHETIC)


def test_a_missing_corpus_or_preamble_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="sample.corpus: synthetic"):
        build_stacks_mirror(tmp_path / "m", tmp_path / "nowhere", start=START, end=END)
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.tex").write_text("\\input{preamble}\n", encoding="utf-8")
    with pytest.raises(FileNotFoundError, match="preamble.tex"):
        build_stacks_mirror(tmp_path / "m", tmp_path / "corpus", start=START, end=END)
    assert not (tmp_path / "m").exists()


# -- the command ----------------------------------------------------------------------


def test_the_default_corpus_is_the_real_one(tmp_path: Path) -> None:
    assert load_params(REPO / "params.yaml").sample.corpus == "stacks-project"
    assert SampleParams().corpus == "stacks-project"
    params = tmp_path / "params.yaml"
    params.write_text("sample:\n  corpus: stacks\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"sample\.corpus.*synthetic"):
        load_params(params)


def test_mathembed_sample_builds_the_real_mirror_from_the_root(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "corpora").mkdir(parents=True)
    (root / "corpora" / "stacks-project").symlink_to(CORPUS)
    params = tmp_path / "params.yaml"
    params.write_text("sample:\n  corpus: stacks-project\n", encoding="utf-8")
    result = CliRunner().invoke(
        cli.app, ["sample", "--params", str(params), "--root", str(root), "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    assert "16 chapters of the stacks-project corpus" in result.stdout
    assert len(read_manifest(Paths(root).mirror, "stacks-project").versions) == 16
    # --n-papers means nothing for the real corpus: said, not ignored.
    result = CliRunner().invoke(
        cli.app, ["sample", "--params", str(params), "--root", str(root), "--n-papers", "30"]
    )
    assert result.exit_code == 2 and "--corpus synthetic" in result.stderr
    # No corpus under the root: exit 2 with the way out.
    result = CliRunner().invoke(
        cli.app, ["sample", "--params", str(params), "--root", str(tmp_path / "empty")]
    )
    assert result.exit_code == 2 and "sample.corpus: synthetic" in result.stderr


# -- ingest over HTTP -----------------------------------------------------------------


def test_ingest_harvests_every_chapter_as_its_own_main_file(
    mirror: tuple[Path, Manifest], tmp_path: Path
) -> None:
    folder, manifest = mirror
    paths = Paths(tmp_path / "root")
    paths.mirror.parent.mkdir(parents=True)
    paths.mirror.symlink_to(folder)
    params = IngestParams(source="sample", delay_seconds=0.0, timeout_seconds=10.0)
    report = run_from_source(params, paths, progress=False)

    counts = report.metrics()
    assert counts["listed"] == counts["tex"] == len(manifest.versions) == 16
    assert counts["quarantined"] == counts["abstract_only"] == counts["skipped"] == 0
    assert common_io.quarantined(paths.quarantine, "ingest") == []
    preamble = (CORPUS / PREAMBLE).read_text(encoding="utf-8")
    for record in manifest.versions:
        stored = version_folder(paths.raw, record.paper_id, record.version)
        assert stored.name == "v1" and stored.parent.name == safe_name(record.paper_id)
        meta = common_io.read_json(stored / RAW_META_FILE)
        assert meta["paper_id"] == record.paper_id and meta["title"] == record.title
        assert meta["main_file"] == record.chapter  # not preamble.tex
        assert meta["encoding"] == "utf-8"
        assert meta["unresolved_includes"] == ["chapters"]  # recorded, not lost
        assert meta["url"] == STACKS_SOURCE + record.chapter  # where a reader finds it
        source = (stored / RAW_SOURCE_FILE).read_text(encoding="utf-8")
        chapter = (CORPUS / record.chapter).read_text(encoding="utf-8")
        body = chapter[chapter.index("\\begin{document}") :]
        assert source.count("\\begin{document}") == 1
        assert source == preamble + chapter.removeprefix("\\input{preamble}")
        assert source.endswith(body)
    # A second run fetches nothing: only the paper at the watermark is listed again.
    again = run_from_source(params, paths, progress=False).metrics()
    assert (again["listed"], again["skipped"], again["fetched"]) == (1, 1, 0)
