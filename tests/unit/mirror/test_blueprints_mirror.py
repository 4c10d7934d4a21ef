"""The blueprints corpus served like arXiv (issue 20): one paper per chapter of a Lean
blueprint project, its macros and licence in the e-print, ingest resolving every input.

Most tests build a small project in ``tmp_path`` laid out as the real ones are
(``print.tex`` → ``content.tex`` → ``chapter/*.tex``, macros in ``macros/``); the last
ones read the real corpus beside the checkout (skipped without it)."""

from __future__ import annotations

import gzip
import io
import json
import re
import tarfile
from datetime import date
from pathlib import Path

import pytest
from repo import REPO
from typer.testing import CliRunner

from pipelines import cli
from pipelines.common import io as common_io
from pipelines.common.config import IngestParams, SampleParams
from pipelines.common.paths import Paths
from pipelines.common.raw_layout import RAW_META_FILE, RAW_SOURCE_FILE, version_folder
from pipelines.ingest.arxiv.archive import ArchiveLimits, Source, extract_source
from pipelines.ingest.arxiv.atom import parse_paper_id
from pipelines.ingest.stage import run_from_source
from pipelines.mirror.corpora.blueprints import (
    CATEGORIES,
    KNOB,
    LICENSE,
    MAIN_FILE,
    build_blueprint_mirror,
    categories_outside,
    chapter_summary,
    chapter_title,
    paper_id,
)
from pipelines.mirror.links import source_links
from pipelines.mirror.manifest import Manifest, mirror_corpus, read_manifest
from pipelines.validate.schemas import ARXIV_ID

SHARED_BLUEPRINTS = REPO / SampleParams().blueprints_dir  # the default, beside the checkout
START, END = date(2024, 1, 1), date(2024, 3, 31)
COMMIT = "01c9b666945eaf73b3f7d8b20ffe003f8640e630"

# A project shaped like teorth/pfr's blueprint/src, with its text (Apache-2.0) cut short.
PROJECT = {
    "print.tex": (
        "% This file makes a printable version of the blueprint\n"
        "\\documentclass[a4paper]{report}\n"
        "\\usepackage{amsmath,amssymb}\n"
        "\\input{macros/common}\n"
        "\\input{macros/print}\n"
        "\\title{PFR Blueprint}\n"
        "\\author{Terence Tao \\and Ben Green}\n"
        "\\begin{document}\n\\maketitle\n\\input{content}\n\\end{document}\n"
    ),
    "web.tex": "\\documentclass{report}\n\\usepackage[showmore]{blueprint}\n"
    "\\begin{document}\n\\input{content}\n\\end{document}\n",
    "macros/common.tex": "\\newcommand{\\bbH}{\\mathbb{H}}\n",
    "macros/print.tex": "\\newcommand{\\lean}[1]{}\n\\newcommand{\\leanok}{}\n"
    "\\newcommand{\\uses}[1]{}\n",
    "content.tex": (
        "% Add chapters of the blueprint here\n"
        "\\input{chapter/entropy}\n"
        "%\\input{chapter/old} -- replaced\n"
        "\\input{chapter/distance.tex}\n"
        "\\input{chapter/biblio}\n"
    ),
    "chapter/entropy.tex": (
        "\\chapter{Shannon entropy inequalities}\n\n"
        "Random variables in this paper are measurable maps $X : \\Omega \\to S$ from a "
        "probability space $\\Omega$ to a measurable space $S$. See \\Cref{jensen}.\n\n"
        "\\begin{definition}[Entropy]\\label{entropy-def}\\lean{ProbabilityTheory.entropy}"
        "\\leanok\n If $X$ is an $S$-valued random variable, the entropy $\\bbH[X]$ of $X$ "
        "is defined by $\\bbH[X] := \\sum_{s \\in S} P[X=s] \\log \\frac{1}{P[X=s]}$.\n"
        "\\end{definition}\n"
    ),
    "chapter/distance.tex": (
        "\\chapter{Entropic Ruzsa calculus}\n\n"
        "\\begin{lemma}\\label{ruzsa-triangle}\\uses{ruz-dist-def}\\lean{rdist_triangle}"
        "\\leanok\n$d[X;Z] \\leq d[X;Y] + d[Y;Z]$.\n\\end{lemma}\n"
    ),
    "chapter/old.tex": "\\chapter{An old draft}\nNot in the book any more.\n",
    "chapter/biblio.tex": "\\bibliographystyle{plain}\n\\bibliography{refs}\n",
}
README = (
    "| folder | repository | commit (date) | licence |\n|---|---|---|---|\n"
    f"| `teorth-pfr/` | github.com/teorth/pfr | `{COMMIT}` (2026-06-27) | Apache-2.0 |\n"
)


def write_corpus(folder: Path, project: str = "teorth-pfr") -> Path:
    for name, text in PROJECT.items():
        path = folder / project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (folder / project / LICENSE).write_text("Apache License\nVersion 2.0\n", encoding="utf-8")
    (folder / "README.md").write_text(README, encoding="utf-8")
    return folder


def eprint_members(mirror: Path, eprint: str) -> dict[str, bytes]:
    data = (mirror / eprint).read_bytes()
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(data))) as archive:
        return {m.name: archive.extractfile(m).read() for m in archive}  # type: ignore[union-attr]


def entries(mirror: Path) -> list[dict[str, object]]:
    lines = (mirror / "entries.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


@pytest.fixture
def small(tmp_path: Path) -> tuple[Path, Path, Manifest]:
    corpus = write_corpus(tmp_path / "blueprints")
    mirror = tmp_path / "mirror"
    return corpus, mirror, build_blueprint_mirror(mirror, corpus, start=START, end=END)


# -- pure parts -----------------------------------------------------------------------


def test_paper_ids_name_project_and_chapter_and_are_valid_everywhere() -> None:
    assert paper_id(1, 1) == "blueprint/2608101" and paper_id(6, 27) == "blueprint/2608627"
    for identifier in (paper_id(1, 1), paper_id(9, 99)):
        assert re.fullmatch(ARXIV_ID, identifier)
        assert parse_paper_id(f"http://arxiv.org/abs/{identifier}v1") == (identifier, 1)
    with pytest.raises(ValueError, match="1..99"):
        paper_id(1, 100)
    with pytest.raises(ValueError, match="1..9"):
        paper_id(10, 1)


def test_title_and_abstract_come_from_the_chapter() -> None:
    assert chapter_title("\\chapter{The \\texorpdfstring{$m$}{m}-torsion case}", "x") == (
        "The $m$-torsion case"
    )
    assert chapter_title("\\title[Short]{A blueprint for Carleson}\n\\section{Intro}", "x") == (
        "A blueprint for Carleson"
    )
    assert chapter_title("no heading", "fallback") == "fallback"
    summary = chapter_summary(PROJECT["chapter/entropy.tex"])
    # The first paragraph, without the sentence whose \Cref would leave "See ." behind.
    assert summary == (
        "Random variables in this paper are measurable maps $X : \\Omega \\to S$ from a "
        "probability space $\\Omega$ to a measurable space $S$."
    )
    # A chapter that opens with its statements has no abstract to give.
    assert chapter_summary(PROJECT["chapter/distance.tex"]) == ""
    display = "\\chapter{E}\nIn this chapter we study magmas that satisfy\n"
    display += (
        "\\begin{equation}\\label{e}x = y\n\\end{equation}\nfor all $x,y$ and what it implies.\n\n"
    )
    display += "\\begin{lemma}x\\end{lemma}"
    assert chapter_summary(display) == (
        "In this chapter we study magmas that satisfy $$x = y $$ for all $x,y$ and what it implies."
    )


# -- the mirror -----------------------------------------------------------------------


def test_each_chapter_the_document_reaches_is_a_paper_with_its_metadata(
    small: tuple[Path, Path, Manifest],
) -> None:
    corpus, mirror, manifest = small
    assert read_manifest(mirror, "blueprints") == manifest
    assert mirror_corpus(mirror) == "blueprints"
    # Not the commented-out chapter, not the bibliography, not the table of contents.
    assert [record.chapter for record in manifest.versions] == [
        "chapter/entropy.tex",
        "chapter/distance.tex",
    ]
    listed = entries(mirror)
    assert [entry["paper_id"] for entry in listed] == ["blueprint/2608101", "blueprint/2608102"]
    first, second = listed
    assert first["title"] == "Shannon entropy inequalities"
    assert str(first["summary"]).startswith("Random variables in this paper")
    assert second["summary"] == "Entropic Ruzsa calculus."  # no prose: its title
    for entry, record in zip(listed, manifest.versions, strict=True):
        assert entry["authors"] == ["Terence Tao", "Ben Green"]
        assert entry["categories"] == list(CATEGORIES["teorth-pfr"])
        assert entry["primary_category"] == "math.NT"
        assert "github.com/teorth/pfr" in str(entry["comment"]) and "Apache-2.0" in str(
            entry["comment"]
        )
        assert (record.repository, record.commit, record.licence) == (
            "github.com/teorth/pfr",
            COMMIT,
            "Apache-2.0",
        )
        assert START.isoformat() <= record.updated[:10] <= END.isoformat()
    # A reader asking for the Stacks corpus refuses this manifest, and no Stacks link is
    # made for its ids.
    with pytest.raises(ValueError, match="blueprints"):
        read_manifest(mirror, "stacks-project")
    assert source_links(mirror) == {}


def test_an_eprint_holds_the_macros_the_chapter_and_the_licence_unchanged(
    small: tuple[Path, Path, Manifest],
) -> None:
    corpus, mirror, manifest = small
    record = manifest.versions[0]
    members = eprint_members(mirror, record.eprint)
    project = corpus / "teorth-pfr"
    expected = ["macros/common.tex", "macros/print.tex", "chapter/entropy.tex", LICENSE]
    assert list(members) == [MAIN_FILE, *expected] == [MAIN_FILE, *record.files[1:]]
    for name in expected:
        assert members[name] == (project / name).read_bytes(), name
    assert record.chapter_sha256 == common_io.sha256_hex(members["chapter/entropy.tex"])
    main = members[MAIN_FILE].decode("utf-8")
    preamble = PROJECT["print.tex"].split("\\begin{document}")[0]
    assert main.endswith(
        f"{preamble}\\begin{{document}}\n\\input{{chapter/entropy}}\n\\end{{document}}\n"
    )
    assert "content" not in main.split(preamble)[1]  # only the one chapter


def test_ingest_harvests_each_chapter_with_every_input_resolved(
    small: tuple[Path, Path, Manifest], tmp_path: Path
) -> None:
    _corpus, mirror, manifest = small
    paths = Paths(tmp_path / "root")
    paths.mirror.parent.mkdir(parents=True)
    paths.mirror.symlink_to(mirror)
    params = IngestParams(source="sample", delay_seconds=0.0, timeout_seconds=10.0)
    counts = run_from_source(params, paths, progress=False).metrics()
    assert counts["listed"] == counts["tex"] == 2 and counts["quarantined"] == 0
    for record in manifest.versions:
        stored = version_folder(paths.raw, record.paper_id, record.version)
        meta = common_io.read_json(stored / RAW_META_FILE)
        assert meta["main_file"] == MAIN_FILE and meta["unresolved_includes"] == []
        source = (stored / RAW_SOURCE_FILE).read_text(encoding="utf-8")
        # The macros reach prepare with the chapter: \bbH is defined where it is used.
        assert "\\newcommand{\\bbH}" in source and "\\newcommand{\\lean}" in source
        assert PROJECT[record.chapter] in source
        assert source.count("\\begin{document}") == 1


def test_a_missing_corpus_folder_names_the_knob(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=re.escape(KNOB)):
        build_blueprint_mirror(tmp_path / "m", tmp_path / "nowhere", start=START, end=END)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no blueprint project"):
        build_blueprint_mirror(tmp_path / "m", tmp_path / "empty", start=START, end=END)
    corpus = write_corpus(tmp_path / "nolicence")
    (corpus / "teorth-pfr" / LICENSE).unlink()
    with pytest.raises(FileNotFoundError, match="LICENSE"):
        build_blueprint_mirror(tmp_path / "m", corpus, start=START, end=END)
    assert not (tmp_path / "m").exists()


def test_mathembed_sample_reads_the_knob_from_the_root_and_says_what_ingest_misses(
    tmp_path: Path,
) -> None:
    root = tmp_path / "project"
    write_corpus(tmp_path / "corpora" / "blueprints", project="teorth-equational_theories")
    params = tmp_path / "params.yaml"
    params.write_text(
        "sample:\n  corpus: blueprints\n  blueprints_dir: ../corpora/blueprints\n",
        encoding="utf-8",
    )
    arguments = ["sample", "--params", str(params), "--root", str(root), "--no-progress"]
    result = CliRunner().invoke(cli.app, arguments)
    assert result.exit_code == 0, result.output
    assert "2 chapters of 1 blueprint projects" in result.stdout
    # math.RA and math.LO are not in the default ingest.categories: said, not discovered.
    assert "teorth-equational_theories (2 papers: math.RA, math.LO)" in result.stdout
    assert len(read_manifest(Paths(root).mirror, "blueprints").versions) == 2
    # The folder missing: exit 2, and the message names the knob to set.
    params.write_text(
        "sample:\n  corpus: blueprints\n  blueprints_dir: nowhere\n", encoding="utf-8"
    )
    result = CliRunner().invoke(cli.app, arguments)
    assert result.exit_code == 2 and KNOB in result.stderr
    # An unknown --corpus is refused with the list of corpora.
    result = CliRunner().invoke(cli.app, [*arguments, "--corpus", "blueprint"])
    assert result.exit_code == 2 and "'blueprints'" in result.stderr


# -- the real corpus ------------------------------------------------------------------

real = pytest.mark.skipif(
    not SHARED_BLUEPRINTS.is_dir(), reason="../shared/corpora/blueprints is not beside the checkout"
)


@pytest.fixture(scope="module")
def real_mirror(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Manifest]:
    folder = tmp_path_factory.mktemp("blueprints") / "mirror"
    return folder, build_blueprint_mirror(folder, SHARED_BLUEPRINTS, start=START, end=END)


@real
def test_the_real_corpus_gives_one_paper_per_chapter_of_each_project(
    real_mirror: tuple[Path, Manifest],
) -> None:
    _mirror, manifest = real_mirror
    per_project: dict[str, list[str]] = {}
    for record in manifest.versions:
        per_project.setdefault(record.project, []).append(record.chapter)
    assert set(per_project) == set(CATEGORIES)
    assert {project: len(chapters) for project, chapters in per_project.items()} == {
        "ImperialCollegeLondon-FLT": 14,  # 17 files less the replaced, the unused, biblio
        "fpvandoorn-carleson": 1,  # one amsart paper
        "leanprover-community-sphere-eversion": 6,
        "teorth-equational_theories": 27,
        "teorth-expdb": 21,  # 22 less biblio
        "teorth-pfr": 13,
    }
    flt = per_project["ImperialCollegeLondon-FLT"]
    assert "chapter/ch03freyold.tex" not in flt and "chapter/global_langlands.tex" not in flt
    assert all(record.commit and record.repository for record in manifest.versions)
    assert len({record.paper_id for record in manifest.versions}) == len(manifest.versions)
    # Two projects' categories are outside the default harvest; the rest are inside.
    default = IngestParams().categories
    assert set(categories_outside(manifest, default)) == {
        "leanprover-community-sphere-eversion",
        "teorth-equational_theories",
    }


@real
def test_every_real_eprint_extracts_to_one_document_with_nothing_unresolved(
    real_mirror: tuple[Path, Manifest],
) -> None:
    mirror, manifest = real_mirror
    limits = ArchiveLimits(max_files=500, max_file_bytes=10_000_000, max_total_bytes=50_000_000)
    for record in manifest.versions:
        source = extract_source((mirror / record.eprint).read_bytes(), limits)
        assert isinstance(source, Source), (record.paper_id, source)
        assert source.main_file == MAIN_FILE, record.paper_id
        assert source.unresolved == (), (record.paper_id, source.unresolved)
        assert source.text.count("\\begin{document}") == 1
