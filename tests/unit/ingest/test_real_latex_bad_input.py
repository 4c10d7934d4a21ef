"""Real LaTeX that is awkward, through the whole ingest path (mirror → HTTP → raw store):
a missing ``\\input`` file, a chapter in latin-1, a chapter without definitions, and a
chapter-sized source. Each is kept with what is there, says what it lacks, and the counts
add up: listed = tex + abstract-only + withdrawn + skipped + quarantined."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import pytest
from repo import REPO

from benchmarks.real_corpus import SHARED_CORPUS
from pipelines.common import io
from pipelines.common.config import IngestParams
from pipelines.common.paths import Paths
from pipelines.common.raw_layout import RAW_META_FILE, RAW_SOURCE_FILE, version_folder
from pipelines.ingest.arxiv.archive import Source, extract_source
from pipelines.ingest.harvest import archive_limits
from pipelines.ingest.report import COUNT_KEYS
from pipelines.ingest.stage import run_from_source
from pipelines.mirror.corpora.stacks import CORPUS_DIR, PREAMBLE, build_stacks_mirror
from pipelines.mirror.layout import tar_gz
from pipelines.mirror.manifest import Manifest

CORPUS = REPO / CORPUS_DIR
DEFINITION = re.compile(r"\\begin\{definition\}.*?\\end\{definition\}\n?", re.DOTALL)
ACCENTED = "% Zürich, Besançon, Orsay: \\'etale à la Grothendieck\nÉtale morphisms are open.\n"
START, END = date(2024, 1, 1), date(2024, 3, 31)


def ingest_params() -> IngestParams:
    # params.yaml's caps (max_file_bytes, max_archive_bytes, ...): what the demo runs with.
    return IngestParams(source="sample", delay_seconds=0.0, timeout_seconds=20.0)


def harvest(mirror: Path, root: Path) -> tuple[Paths, dict[str, object]]:
    paths = Paths(root)
    paths.mirror.parent.mkdir(parents=True)
    paths.mirror.symlink_to(mirror)
    return paths, run_from_source(ingest_params(), paths, progress=False).metrics()


def assert_counts_add_up(metrics: dict[str, object], listed: int) -> None:
    assert metrics["listed"] == listed
    assert metrics["listed"] == sum(int(str(metrics[key])) for key in COUNT_KEYS)


def stored(paths: Paths, manifest: Manifest, chapter: str) -> tuple[dict[str, object], str]:
    record = next(record for record in manifest.versions if record.chapter == chapter)
    folder = version_folder(paths.raw, record.paper_id, record.version)
    meta = io.read_json(folder / RAW_META_FILE)
    return meta, (folder / RAW_SOURCE_FILE).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def awkward(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Manifest]:
    """A mirror of three real chapters made awkward, plus one whose e-print lacks the preamble."""
    corpus = tmp_path_factory.mktemp("awkward") / "corpus"
    corpus.mkdir()
    (corpus / PREAMBLE).write_bytes((CORPUS / PREAMBLE).read_bytes())
    quotients = (CORPUS / "groupoids-quotients.tex").read_text(encoding="utf-8")
    assert quotients.isascii()
    latin1 = quotients.replace(
        "\\section{Introduction}\n", f"\\section{{Introduction}}\n{ACCENTED}", 1
    )
    (corpus / "latin1.tex").write_bytes(latin1.encode("latin-1"))
    topologies = (CORPUS / "spaces-topologies.tex").read_text(encoding="utf-8")
    assert DEFINITION.search(topologies)
    (corpus / "no-definitions.tex").write_text(DEFINITION.sub("", topologies), encoding="utf-8")
    (corpus / "no-preamble.tex").write_bytes((CORPUS / "schemes.tex").read_bytes())
    mirror = tmp_path_factory.mktemp("awkward") / "mirror"
    manifest = build_stacks_mirror(mirror, corpus, start=START, end=END)
    # The e-print of no-preamble.tex as an author might upload it: the chapter alone.
    record = next(record for record in manifest.versions if record.chapter == "no-preamble.tex")
    chapter = (corpus / record.chapter).read_bytes()
    (mirror / record.eprint).write_bytes(tar_gz([(record.chapter, chapter)], 0))
    return mirror, manifest


@pytest.fixture(scope="module")
def awkward_run(
    awkward: tuple[Path, Manifest], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Paths, dict[str, object]]:
    return harvest(awkward[0], tmp_path_factory.mktemp("awkward-run") / "root")


def test_every_awkward_chapter_is_kept_and_the_counts_add_up(
    awkward: tuple[Path, Manifest], awkward_run: tuple[Paths, dict[str, object]]
) -> None:
    paths, metrics = awkward_run
    assert_counts_add_up(metrics, listed=3)
    assert metrics["tex"] == 3 and metrics["quarantined"] == 0
    assert io.quarantined(paths.quarantine, "ingest") == []
    assert len(list(paths.raw.glob("*/v1/meta.json"))) == 3


def test_a_missing_input_file_keeps_the_chapter_and_records_what_is_missing(
    awkward: tuple[Path, Manifest], awkward_run: tuple[Paths, dict[str, object]]
) -> None:
    meta, source = stored(awkward_run[0], awkward[1], "no-preamble.tex")
    assert meta["source_kind"] == "tex"
    assert meta["main_file"] == "no-preamble.tex"
    assert meta["unresolved_includes"] == ["preamble", "chapters"]
    # Processed with what is there: the chapter as written, the \input left in place.
    assert source == (CORPUS / "schemes.tex").read_text(encoding="utf-8")
    assert source.startswith("\\input{preamble}") and "\\documentclass" not in source


def test_a_latin1_chapter_is_decoded_and_stored_as_utf8(
    awkward: tuple[Path, Manifest], awkward_run: tuple[Paths, dict[str, object]]
) -> None:
    meta, source = stored(awkward_run[0], awkward[1], "latin1.tex")
    assert meta["encoding"] == "latin-1"
    assert meta["main_file"] == "latin1.tex"
    assert "Étale morphisms are open." in source and "Zürich, Besançon" in source
    assert meta["title"] == "Quotients of Groupoids"


def test_a_chapter_without_definitions_is_still_a_paper(
    awkward: tuple[Path, Manifest], awkward_run: tuple[Paths, dict[str, object]]
) -> None:
    meta, source = stored(awkward_run[0], awkward[1], "no-definitions.tex")
    assert meta["source_kind"] == "tex" and meta["main_file"] == "no-definitions.tex"
    assert "\\begin{definition}" not in source
    assert "\\begin{lemma}" in source  # the rest of the chapter is all there


@pytest.mark.skipif(
    not (SHARED_CORPUS / "algebra.tex").is_file(),
    reason="../shared/corpora (with algebra.tex) is not beside the checkout",
)
def test_the_biggest_chapter_is_within_the_limits(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("algebra.tex", PREAMBLE):
        (corpus / name).write_bytes((SHARED_CORPUS / name).read_bytes())
    algebra = (corpus / "algebra.tex").read_text(encoding="utf-8")
    assert len(algebra.encode("utf-8")) > 1_500_000  # ~1.8 MB: the largest chapter
    manifest = build_stacks_mirror(tmp_path / "mirror", corpus, start=START, end=END)
    record = manifest.versions[0]

    # The archive reader with the demo's caps takes it whole.
    result = extract_source(
        (tmp_path / "mirror" / record.eprint).read_bytes(), archive_limits(ingest_params())
    )
    assert isinstance(result, Source) and result.main_file == "algebra.tex"

    paths, metrics = harvest(tmp_path / "mirror", tmp_path / "root")
    assert_counts_add_up(metrics, listed=1)
    assert metrics["tex"] == 1
    meta, source = stored(paths, manifest, "algebra.tex")
    preamble = (corpus / PREAMBLE).read_text(encoding="utf-8")
    assert source == preamble + algebra.removeprefix("\\input{preamble}")
    assert meta["unresolved_includes"] == ["chapters"]
