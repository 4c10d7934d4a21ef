"""The synthetic sample (pipelines.mirror.corpora.synthetic): ontology integrity and the
generated mirror (files, kinds, text)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import tarfile
import zlib
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from repo import REPO
from typer.testing import CliRunner

from pipelines import cli
from pipelines.common.config import IngestParams, SampleParams, load_params
from pipelines.common.io import safe_name
from pipelines.mirror.corpora.synthetic import generate_mirror, ontology
from pipelines.mirror.corpora.synthetic.kinds import (
    ABSOLUTE_PATH,
    BOMB,
    BOMB_INFLATED_BYTES,
    KINDS,
    LATIN1,
    NO_TEX,
    PATH_TRAVERSAL,
    PDF_ONLY,
    SYMLINK,
    TEX_GZ,
    TEX_TAR,
    TRUNCATED_GZIP,
    WITHDRAWN,
    iter_tex_sources,
)
from pipelines.mirror.corpora.synthetic.ontology import CONCEPTS, Concept, concept, latex_text
from pipelines.mirror.corpora.synthetic.writer import use_q_macro
from pipelines.mirror.layout import CONTENT_TYPE_PDF, CONTENT_TYPE_SINGLE, CONTENT_TYPE_TAR
from pipelines.mirror.manifest import SYNTHETIC, Manifest, PaperRecord, read_manifest

NEW_STYLE_ID = re.compile(r"\d{4}\.\d{5}")
OLD_STYLE_ID = re.compile(r"[a-z-]+/\d{7}")
ISO_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
INPUT = re.compile(r"\\(?:input|include)\{([^}]+)\}")


@pytest.fixture(scope="module")
def params() -> SampleParams:
    return load_params(REPO / "params.yaml").sample


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory, params: SampleParams) -> Path:
    out = tmp_path_factory.mktemp("sample") / "mirror"
    generate_mirror(out, params.n_papers, params.seed)
    return out


@pytest.fixture(scope="module")
def manifest(mirror: Path) -> Manifest:
    return read_manifest(mirror, SYNTHETIC)


@pytest.fixture(scope="module")
def entries(mirror: Path) -> list[dict[str, Any]]:
    lines = (mirror / "entries.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


@pytest.fixture(scope="module")
def tex_sources(mirror: Path, manifest: Manifest) -> list[tuple[PaperRecord, dict[str, str]]]:
    return list(iter_tex_sources(mirror, manifest.versions))


def tree_digest(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def name_forms(item: Concept) -> list[str]:
    """How the display name can appear in LaTeX: dashes as --, q- as $q$-, plural, macro."""
    forms = [item.name, *([item.plural] if item.plural else [])]
    tex = [latex_text(form) for form in forms]
    tex += [form.replace("q-", "$q$-") for form in tex]
    if item.macro:
        tex.append(f"\\{item.macro}{{}}")
    return [form.lower() for form in tex]


def other_forms(item: Concept) -> list[str]:
    """Surface forms that are not the display name: aliases and $notation$."""
    aliases = [latex_text(alias) for alias in item.aliases]
    aliases += [alias.replace("q-", "$q$-") for alias in aliases]
    return [form.lower() for form in aliases] + [f"${symbol}$".lower() for symbol in item.notation]


# -- ontology -------------------------------------------------------------------------


def test_ontology_has_enough_real_concepts_with_unique_names() -> None:
    assert len(CONCEPTS) >= 60
    names = [item.name for item in CONCEPTS]
    assert len({name.lower() for name in names}) == len(names)
    assert len({item.category for item in CONCEPTS}) >= 6  # several areas of mathematics
    for name in ("Rogers–Ramanujan identities", "Bailey's lemma", "Young tableau", "CW complex"):
        assert concept(name).name == name


def test_every_relation_points_at_another_existing_concept() -> None:
    names = set(ontology.concepts_by_name())
    relations = ontology.relations()
    assert len(relations) >= len(CONCEPTS)
    for source, kind, target in relations:
        assert target in names, f"{source} -> {target}: unknown target"
        assert target != source, f"{source} relates to itself"
        assert kind in ontology.RELATIONS
    assert len(set(relations)) == len(relations), "a relation is listed twice"
    assert {kind for _s, kind, _t in relations} == set(ontology.RELATIONS)


def test_every_concept_is_connected_and_neighbours_are_symmetric() -> None:
    for item in CONCEPTS:
        assert ontology.neighbours(item.name), f"{item.name} has no relation"
        for other in ontology.neighbours(item.name):
            assert item.name in ontology.neighbours(other)


def test_types_descriptions_and_surface_forms_are_well_formed() -> None:
    allowed = {"object", "theorem", "definition", "technique", "identity", "conjecture"}
    names_in_own_description = 0
    alias_owner: dict[str, str] = {}
    for item in CONCEPTS:
        assert item.type in allowed and item.type in ontology.CONCEPT_TYPES
        assert item.category.startswith("math.") and re.fullmatch(r"\d\d[A-Z]\d\d", item.msc)
        description = item.description
        assert description.strip() and description.endswith(".")
        sentences = re.findall(r"[.;](?:\s|$)", description)
        assert 1 <= len(sentences) <= 3, f"{item.name}: not a one or two sentence description"
        assert description.count("$") % 2 == 0, f"{item.name}: unbalanced $ in description"
        if item.type in ("object", "definition"):
            assert item.is_noun_phrase, f"{item.name}: description should be a noun phrase"
        if item.type in ("theorem", "identity", "conjecture"):
            assert not item.is_noun_phrase, f"{item.name}: description should start with a verb"
        if item.name.lower() in description.lower():
            names_in_own_description += 1
        for symbol in item.notation:
            assert symbol and "$" not in symbol
        for alias in item.aliases:
            assert alias.lower() != item.name.lower()
            assert alias_owner.setdefault(alias.lower(), item.name) == item.name, alias
        assert item.aliases or item.notation, f"{item.name}: no alias or notation"
    assert names_in_own_description <= len(CONCEPTS) // 10


def test_notation_and_aliases_exist_for_most_concepts() -> None:
    with_notation = [item for item in CONCEPTS if item.notation]
    assert len(with_notation) >= len(CONCEPTS) // 2
    assert concept("partition function").notation == ("p(n)",)
    assert "(a;q)_n" in concept("q-Pochhammer symbol").notation
    assert r"s_\lambda" in concept("Schur function").notation


def test_unknown_concept_error_names_it() -> None:
    with pytest.raises(KeyError, match="no concept named 'Fermat last theorem'"):
        concept("Fermat last theorem")


def test_latex_text_writes_dashes_as_latex() -> None:
    assert latex_text("Rogers–Ramanujan") == "Rogers--Ramanujan"
    assert latex_text("a — b") == "a --- b"


# -- the mirror: counts, determinism, layout -------------------------------------------


def test_default_params_make_at_least_80_papers_of_every_kind(
    manifest: Manifest, params: SampleParams
) -> None:
    counts = manifest.counts
    assert counts["papers"] == params.n_papers >= 80
    assert counts["versions"] == len(manifest.versions) > counts["papers"]
    assert set(counts["kinds"]) == set(KINDS)
    assert all(count >= 1 for count in counts["kinds"].values()), counts["kinds"]
    assert counts["concepts_used"] >= 60
    assert counts["revised_papers"] >= 3


def test_same_seed_gives_byte_identical_files_and_another_seed_does_not(
    tmp_path: Path, mirror: Path, params: SampleParams
) -> None:
    again = tmp_path / "again"
    generate_mirror(again, params.n_papers, params.seed)
    assert tree_digest(again) == tree_digest(mirror)
    other = tmp_path / "other"
    generate_mirror(other, params.n_papers, params.seed + 1)
    assert (other / "entries.jsonl").read_bytes() != (mirror / "entries.jsonl").read_bytes()


def test_regenerating_replaces_the_folder_and_leaves_no_temporary_files(tmp_path: Path) -> None:
    out = tmp_path / "mirror"
    generate_mirror(out, 30, 1)
    (out / "stale.txt").write_text("from an older run", encoding="utf-8")
    manifest = generate_mirror(out, 30, 2)
    assert not (out / "stale.txt").exists()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["mirror"]
    assert read_manifest(out, SYNTHETIC) == manifest


def test_too_few_papers_is_refused_with_the_knob_to_change(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="sample.n_papers"):
        generate_mirror(tmp_path / "mirror", 5, 1)
    assert not (tmp_path / "mirror").exists()


def test_manifest_round_trips_and_matches_entries(
    mirror: Path, manifest: Manifest, entries: list[dict[str, Any]]
) -> None:
    raw = json.loads((mirror / "manifest.json").read_text(encoding="utf-8"))
    assert Manifest.from_json(raw) == manifest
    assert raw["counts"] == manifest.counts
    assert "corpus" not in raw  # the synthetic manifest predates the key
    assert [(e["paper_id"], e["version"]) for e in entries] == [
        (r.paper_id, r.version) for r in manifest.versions
    ]
    with pytest.raises(ValueError, match="rebuild"):
        Manifest.from_json({**raw, "format": 99})


def test_entries_have_the_contract_fields_and_arxiv_ids(
    entries: list[dict[str, Any]], manifest: Manifest
) -> None:
    fields = {"paper_id", "version", "title", "summary", "authors", "categories",
              "primary_category", "published", "updated", "comment", "withdrawn"}  # fmt: skip
    window_start = datetime.fromisoformat(manifest.start).replace(tzinfo=UTC)
    in_window = 0
    old_style = 0
    for entry in entries:
        assert set(entry) == fields
        paper_id = str(entry["paper_id"])
        assert NEW_STYLE_ID.fullmatch(paper_id) or OLD_STYLE_ID.fullmatch(paper_id)
        old_style += bool(OLD_STYLE_ID.fullmatch(paper_id))
        assert isinstance(entry["version"], int) and entry["version"] >= 1
        assert ISO_UTC.fullmatch(str(entry["published"]))
        assert ISO_UTC.fullmatch(str(entry["updated"]))
        assert str(entry["published"]) <= str(entry["updated"])
        assert entry["primary_category"] == entry["categories"][0]
        assert all(str(c).startswith("math.") for c in entry["categories"])
        assert entry["authors"] and entry["title"] and entry["summary"]
        assert "\\cite" not in str(entry["summary"]) and "--" not in str(entry["title"])
        updated = datetime.fromisoformat(str(entry["updated"]).replace("Z", "+00:00"))
        in_window += updated >= window_start
    assert old_style >= 1
    assert in_window >= len(entries) - old_style  # only old-style v1s predate the window
    assert len({entry["paper_id"] for entry in entries if entry["version"] == 1}) == len(
        manifest.papers()
    )


def test_updated_times_are_spread_over_the_window(entries: list[dict[str, Any]]) -> None:
    months = Counter(str(entry["updated"])[:7] for entry in entries)
    assert {"2024-01", "2024-02", "2024-03"} <= set(months)
    assert all(months[month] >= 10 for month in ("2024-01", "2024-02", "2024-03"))
    assert max(str(entry["updated"]) for entry in entries) <= "2024-03-31T23:59:59Z"


def test_revisions_are_later_and_change_the_text(
    mirror: Path, manifest: Manifest, entries: list[dict[str, Any]]
) -> None:
    by_version = {(e["paper_id"], e["version"]): e for e in entries}
    revised = [r for r in manifest.versions if r.version > 1 and r.kind != WITHDRAWN]
    assert len(revised) >= 3
    sources = {
        (record.paper_id, record.version): files
        for record, files in iter_tex_sources(mirror, manifest.versions)
    }
    for record in revised:
        previous = by_version[(record.paper_id, record.version - 1)]
        current = by_version[(record.paper_id, record.version)]
        assert str(current["updated"]) > str(previous["updated"])
        assert current["published"] == previous["published"]
        assert current["summary"] != previous["summary"]
        assert f"v{record.version}" in str(current["comment"])
        new_text = "\n".join(sources[(record.paper_id, record.version)].values())
        assert f"Addendum to version {record.version}" in new_text
        if (record.paper_id, record.version - 1) in sources:
            old_text = "\n".join(sources[(record.paper_id, record.version - 1)].values())
            assert new_text != old_text


def test_every_eprint_has_a_sidecar_with_the_right_content_type(
    mirror: Path, manifest: Manifest
) -> None:
    expected = {
        TEX_TAR: (CONTENT_TYPE_TAR, "gzip"),
        TEX_GZ: (CONTENT_TYPE_SINGLE, "gzip"),
        LATIN1: (CONTENT_TYPE_SINGLE, "gzip"),
        PDF_ONLY: (CONTENT_TYPE_PDF, None),
        BOMB: (CONTENT_TYPE_SINGLE, "gzip"),
    }
    files = {path.name for path in (mirror / "e-print").iterdir()}
    for record in manifest.versions:
        name = f"{safe_name(record.paper_id)}v{record.version}"
        if record.kind == WITHDRAWN:
            assert record.eprint is None and name not in files
            continue
        assert record.eprint == f"e-print/{name}" and name in files
        sidecar = json.loads((mirror / "e-print" / f"{name}.json").read_text(encoding="utf-8"))
        assert sidecar == {"content_type": record.content_type, "encoding": record.encoding}
        want = expected.get(record.kind, (CONTENT_TYPE_TAR, "gzip"))
        assert (record.content_type, record.encoding) == want, record.kind
    assert len(files) == 2 * sum(1 for r in manifest.versions if r.kind != WITHDRAWN)


# -- the kinds: well-formed ones are well formed, malformed ones malformed as intended -


def read_tar(data: bytes) -> list[tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        return archive.getmembers()


def test_tex_archives_are_safe_and_resolve_their_inputs(mirror: Path, manifest: Manifest) -> None:
    records = manifest.of_kind(TEX_TAR)
    assert len(records) >= 10
    for record in records:
        assert record.eprint is not None and record.main_file is not None
        data = (mirror / record.eprint).read_bytes()
        members = read_tar(data)
        names = {member.name for member in members}
        assert names == set(record.files)
        for member in members:
            assert member.isfile(), member.name
            assert not member.name.startswith("/") and ".." not in member.name.split("/")
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            handle = archive.extractfile(record.main_file)
            assert handle is not None
            main_text = handle.read().decode("utf-8")
        assert main_text.startswith("\\documentclass")
        targets = INPUT.findall(main_text)
        assert any("\\include{" in line for line in main_text.splitlines())
        assert len(targets) >= 3
        for target in targets:
            assert target in names or f"{target}.tex" in names, (record.versioned_id, target)
        with_documentclass = [
            name for name, text in dict(iter_tex_sources(mirror, [record]))[record].items()
            if "\\documentclass" in text
        ]  # fmt: skip
        assert with_documentclass == [record.main_file]


def test_single_file_sources_are_gzipped_utf8_latex(mirror: Path, manifest: Manifest) -> None:
    records = manifest.of_kind(TEX_GZ)
    assert len(records) >= 10
    for record in records:
        assert record.eprint is not None
        text = gzip.decompress((mirror / record.eprint).read_bytes()).decode("utf-8")
        assert text.startswith("\\documentclass") and "\\end{document}" in text
        assert "\\input{" not in text


def test_latin1_source_is_not_utf8_but_reads_as_latin1(mirror: Path, manifest: Manifest) -> None:
    (record,) = manifest.of_kind(LATIN1)[:1]
    assert record.eprint is not None
    raw = gzip.decompress((mirror / record.eprint).read_bytes())
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")
    text = raw.decode("latin-1")
    assert "\\usepackage[latin1]{inputenc}" in text and "Poincaré" in text
    assert text.startswith("\\documentclass")


def test_pdf_only_and_withdrawn_versions(
    mirror: Path, manifest: Manifest, entries: list[dict[str, Any]]
) -> None:
    for record in manifest.of_kind(PDF_ONLY):
        assert record.eprint is not None
        data = (mirror / record.eprint).read_bytes()
        assert data.startswith(b"%PDF-1.") and data.rstrip().endswith(b"%%EOF")
    by_version = {(e["paper_id"], e["version"]): e for e in entries}
    withdrawn = manifest.of_kind(WITHDRAWN)
    assert len(withdrawn) >= 2
    for record in withdrawn:
        entry = by_version[(record.paper_id, record.version)]
        assert entry["withdrawn"] is True and "withdrawn" in str(entry["comment"])
        assert record.version >= 2  # a withdrawal is a new version of a real paper
        assert by_version[(record.paper_id, record.version - 1)]["withdrawn"] is False
    assert all(
        entry["withdrawn"] is False or "withdrawn" in str(entry["comment"]) for entry in entries
    )


def test_truncated_gzip_ends_early(mirror: Path, manifest: Manifest) -> None:
    for record in manifest.of_kind(TRUNCATED_GZIP):
        assert record.eprint is not None
        data = (mirror / record.eprint).read_bytes()
        assert data[:2] == b"\x1f\x8b"
        with pytest.raises(EOFError):
            gzip.decompress(data)


def test_traversal_absolute_and_symlink_archives_carry_the_attack(
    mirror: Path, manifest: Manifest
) -> None:
    def members(kind: str) -> tuple[PaperRecord, list[tarfile.TarInfo]]:
        (record,) = manifest.of_kind(kind)[:1]
        assert record.eprint is not None
        return record, read_tar((mirror / record.eprint).read_bytes())

    record, traversal = members(PATH_TRAVERSAL)
    assert any(member.name.startswith("../") for member in traversal)
    assert record.main_file in {member.name for member in traversal}

    _record, absolute = members(ABSOLUTE_PATH)
    assert any(member.name.startswith("/") for member in absolute)

    record, linked = members(SYMLINK)
    links = [member for member in linked if member.issym()]
    assert [(link.name, link.linkname) for link in links] == [("secret.tex", "/etc/passwd")]
    sources = {m.name for m in linked if m.isfile()}
    assert record.main_file in sources


def test_bomb_is_small_but_inflates_past_the_ingest_limits(
    mirror: Path, manifest: Manifest
) -> None:
    (record,) = manifest.of_kind(BOMB)[:1]
    assert record.eprint is not None
    data = (mirror / record.eprint).read_bytes()
    limits = IngestParams()
    assert len(data) < 1_000_000 < limits.max_file_bytes
    # Read as a careful client would: in bounded steps, stopping past the limit.
    inflater = zlib.decompressobj(wbits=31)
    produced = 0
    pending = data
    while produced <= limits.max_archive_bytes and not inflater.eof:
        produced += len(inflater.decompress(pending, 1 << 20))
        pending = inflater.unconsumed_tail
    assert produced > limits.max_archive_bytes > limits.max_file_bytes
    assert limits.max_archive_bytes < BOMB_INFLATED_BYTES


def test_no_tex_archive_is_a_valid_tar_without_latex(mirror: Path, manifest: Manifest) -> None:
    (record,) = manifest.of_kind(NO_TEX)[:1]
    assert record.eprint is not None
    names = [member.name for member in read_tar((mirror / record.eprint).read_bytes())]
    assert names and not any(name.endswith(".tex") for name in names)
    assert record.main_file is None


# -- the text: realistic LaTeX that names concepts in many ways ------------------------


def test_latex_has_the_features_the_later_stages_must_handle(
    tex_sources: list[tuple[PaperRecord, dict[str, str]]],
) -> None:
    features = {
        "documentclass": r"\\documentclass",
        "newcommand": r"\\newcommand\{\\[A-Za-z]+\}",
        "comment": r"(?m)^%|[^\\]% ",
        "escaped percent": r"\\%",
        "title": r"\\title\{",
        "abstract": r"\\begin\{abstract\}",
        "section": r"\\section\{",
        "theorem": r"\\begin\{theorem\}",
        "named statement": r"\\begin\{(?:theorem|conjecture|proposition)\}\[[^\]]+\]",
        "definition with emph": (
            r"\\begin\{definition\}(?:\[[^\]]*\])?\\label\{[^}]+\}\n[^\n]*\\emph\{"
        ),
        "we call": r"We call [^.]+ \\emph\{",
        "lemma": r"\\begin\{lemma\}",
        "proof": r"\\begin\{proof\}",
        "label": r"\\label\{",
        "inline math": r"\$[^$]+\$",
        "display math": r"\\\[|\\begin\{equation\}",
        "cite": r"\\cite(?:\[[^\]]*\])?\{",
        "keywords": r"\\keywords\{",
        "subjclass": r"\\subjclass\[2020\]\{",
    }
    seen: Counter[str] = Counter()
    for _record, files in tex_sources:
        text = "\n".join(files.values())
        for feature, pattern in features.items():
            seen[feature] += bool(re.search(pattern, text))
    total = len(tex_sources)
    for feature in features:
        assert seen[feature] >= 1, f"no paper has {feature}"
    for feature in ("documentclass", "newcommand", "section", "label", "inline math", "cite"):
        assert seen[feature] == total, feature
    assert seen["named statement"] >= total // 2
    assert seen["definition with emph"] >= total // 2


def test_defined_macros_are_used_in_the_body(
    tex_sources: list[tuple[PaperRecord, dict[str, str]]],
) -> None:
    concept_macros_used = 0
    for _record, files in tex_sources:
        text = "\n".join(files.values())
        defined = re.findall(r"\\newcommand\{\\([A-Za-z]+)\}", text)
        assert defined
        body = "\n".join(line for line in text.splitlines() if "\\newcommand" not in line)
        used = [macro for macro in defined if re.search(rf"\\{macro}(?![A-Za-z])", body)]
        assert used, "no macro of the preamble is used in the body"
        concept_macros_used += any(item.macro in used for item in CONCEPTS if item.macro)
    assert concept_macros_used >= 3  # some papers abbreviate a concept name with a macro


def test_concepts_are_mentioned_by_alias_and_notation_not_only_by_name(
    tex_sources: list[tuple[PaperRecord, dict[str, str]]],
) -> None:
    pairs = pairs_with_other_forms = missing = 0
    paragraphs_mentioning = paragraphs_without_name = 0
    for record, files in tex_sources:
        text = "\n".join(files.values()).lower()
        paragraphs = re.split(r"\n\s*\n", text)
        for name in record.concepts:
            item = concept(name)
            names, others = name_forms(item), other_forms(item)
            pairs += 1
            missing += not any(form in text for form in names + others)
            pairs_with_other_forms += any(form in text for form in others)
            for paragraph in paragraphs:
                by_name = any(form in paragraph for form in names)
                by_other = any(form in paragraph for form in others)
                if by_name or by_other:
                    paragraphs_mentioning += 1
                    paragraphs_without_name += by_other and not by_name
    assert missing == 0, "a true concept of a paper is never mentioned in its text"
    assert pairs_with_other_forms / pairs >= 0.8
    assert paragraphs_without_name / paragraphs_mentioning >= 0.2


def test_every_paper_has_two_to_four_related_concepts(manifest: Manifest) -> None:
    sizes = Counter(len(record.concepts) for record in manifest.latest().values())
    assert set(sizes) <= {2, 3, 4}
    for record in manifest.latest().values():
        focus, *others = record.concepts
        assert all(other in ontology.neighbours(focus) for other in others)


def test_abstracts_name_the_focus_concept_in_some_form(
    manifest: Manifest, entries: list[dict[str, Any]]
) -> None:
    def dashes(text: str) -> str:  # metadata writes "-" where the LaTeX has "--"
        return text.lower().replace("---", "-").replace("--", "-")

    latest = manifest.latest()
    hits = 0
    for entry in entries:
        item = concept(latest[str(entry["paper_id"])].concepts[0])
        forms = name_forms(item) + other_forms(item) + [item.description[:30].lower()]
        hits += any(dashes(form) in dashes(str(entry["summary"])) for form in forms)
    assert hits >= 0.8 * len(entries)


# -- scale and command line ----------------------------------------------------------


def test_a_larger_corpus_keeps_ids_unique_and_a_handful_of_each_fault(tmp_path: Path) -> None:
    manifest = generate_mirror(tmp_path / "mirror", 1000, 3)
    ids = manifest.papers()
    assert len(ids) == len(set(ids)) == 1000
    counts = manifest.counts["kinds"]
    assert counts[BOMB] == 1 and counts[PDF_ONLY] >= 20 and counts[WITHDRAWN] >= 20
    assert sum(1 for _ in (tmp_path / "mirror" / "e-print").iterdir()) > 1900


def sample_command(*arguments: str) -> Result:
    return CliRunner().invoke(cli.app, ["sample", *arguments])


def test_command_line_generates_the_mirror_from_params(tmp_path: Path) -> None:
    params = tmp_path / "params.yaml"
    params.write_text("sample:\n  corpus: synthetic\n  n_papers: 25\n  seed: 3\n", encoding="utf-8")
    result = sample_command("--params", str(params), "--root", str(tmp_path), "--no-progress")
    assert result.exit_code == 0
    out = result.stdout
    assert "25 papers" in out and "bomb 1" in out
    assert read_manifest(tmp_path / "data" / "mirror").header["n_papers"] == 25
    result = sample_command(
        "--params", str(params), "--out", str(tmp_path / "x"), "--n-papers", "21"
    )
    assert result.exit_code == 0 and read_manifest(tmp_path / "x").header["n_papers"] == 21


def test_command_line_rejects_bad_params_with_a_message(tmp_path: Path) -> None:
    params = tmp_path / "params.yaml"
    params.write_text("sample:\n  n_papers: 25\n  start_date: soon\n", encoding="utf-8")
    result = sample_command("--params", str(params), "--root", str(tmp_path))
    assert result.exit_code == 2
    assert "start_date" in result.stderr
    params.write_text("sample:\n  n_paper: 25\n", encoding="utf-8")
    result = sample_command("--params", str(params), "--root", str(tmp_path))
    assert result.exit_code == 2
    assert "n_paper" in result.stderr
    params.write_text("sample:\n  corpus: synthetic\n  n_papers: 4\n", encoding="utf-8")
    result = sample_command("--params", str(params), "--root", str(tmp_path))
    assert result.exit_code == 2
    assert "n_papers" in result.stderr


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        (r"(az;q)_\infty", r"\qp{az}{\infty}"),
        (r"(a;q)_n", r"\qp{a}{n}"),
        (r"(q;q)_{2n}", r"\qp{q}{2n}"),
        (r"\frac{(az;q)_\infty}{(z;q)_\infty}", r"\frac{\qp{az}{\infty}}{\qp{z}{\infty}}"),
    ],
)
def test_q_pochhammer_macro_keeps_whole_subscripts(formula: str, expected: str) -> None:
    # A control-word subscript such as \infty once lost all but its backslash.
    assert use_q_macro(formula) == expected
