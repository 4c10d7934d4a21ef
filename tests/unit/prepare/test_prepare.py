"""The prepare stage on a hand-built raw store: latest versions only, quarantine, counts, reuse."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
from typer.testing import CliRunner

from pipelines import cli
from pipelines.common.config import ConfigError, PrepareParams
from pipelines.common.io import quarantined, read_json, safe_name
from pipelines.common.paths import Paths
from pipelines.common.tables import CHUNKS_SCHEMA, PAPERS_SCHEMA, STATEMENTS_SCHEMA
from pipelines.prepare import cleaning, outputs, stage
from pipelines.prepare.outputs import fingerprint, load_previous
from pipelines.prepare.raw_store import RawPaper, content_hash
from pipelines.prepare.stage import PrepareReport, run_prepare

PARAMS = PrepareParams(chunk_chars=400, overlap_chars=80, min_chunk_chars=50)


def paper_tex(topic: str, paragraphs: int = 4) -> str:
    text = "\n\n".join(
        f"Paragraph {i} about {topic}: we study $\\R^{{{i}}}$ and \\emph{{{topic}}} "
        f"as in \\cite{{ref{i}}}. It has many properties worth a sentence or two."
        for i in range(paragraphs)
    )
    return (
        "\\documentclass{amsart}\n\\newcommand{\\R}{\\mathbb{R}}\n"
        "\\newtheorem{thm}{Theorem}\n\\begin{document}\n"
        f"\\section{{Introduction}}\n{text}\n"
        f"\\begin{{thm}}[{topic.title()}]\\label{{thm:{topic}}}\n"
        f"Every {topic} is fine.\\end{{thm}}\n"
        "\\end{document}\n"
    )


def write_version(
    raw: Path,
    paper_id: str,
    version: int,
    kind: str,
    *,
    tex: str | bytes | None = None,
    abstract: str = "We study things. This abstract is long enough to be a passage.",
    with_meta: bool = True,
    url: str | None = None,
) -> Path:
    folder = raw / safe_name(paper_id) / f"v{version}"
    folder.mkdir(parents=True)
    if tex is not None:
        data = tex.encode() if isinstance(tex, str) else tex
        (folder / "source.tex").write_bytes(data)
    meta: dict[str, Any] = {
        "paper_id": paper_id,
        "version": version,
        "title": f"On \\emph{{{paper_id}}}",
        "authors": ["A. Author", "B. Author"],
        "abstract": abstract,
        "categories": ["math.CO", "math.NT"],
        "primary_category": "math.CO",
        "published": "2024-01-03T10:00:00Z",
        "updated": f"2024-01-0{version + 2}T10:00:00Z",
        "comment": "withdrawn" if kind == "withdrawn" else "",
        "source_kind": kind,
        "main_file": "main.tex" if kind == "tex" else None,
        "source_sha256": None,
        "encoding": "utf-8" if kind == "tex" else None,
        "fetched_at": "2024-01-10T00:00:00Z",
    }
    if url is not None:  # a raw store written before ingest recorded links has no url
        meta["url"] = url
    if with_meta:
        (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder


ARXIV_PAGE = "https://arxiv.org/abs/2401.00001"


def build_store(root: Path) -> Path:
    """v1+v2 of one paper, an abstract-only, a withdrawn, a broken, an old-style id, junk."""
    raw = Paths(root).raw
    write_version(raw, "2401.00001", 1, "tex", tex=paper_tex("partition"))
    write_version(raw, "2401.00001", 2, "tex", tex=paper_tex("composition"), url=ARXIV_PAGE)
    write_version(raw, "2401.00002", 1, "abstract_only", abstract="Only an $x$ abstract here.")
    write_version(raw, "2401.00003", 1, "tex", tex=paper_tex("tableau"))
    write_version(raw, "2401.00003", 2, "withdrawn")
    write_version(raw, "2401.00004", 1, "tex", tex=bytes(range(256)) * 8)  # binary garbage
    # Old-style id, and no \end{document}: repaired, counted as a paper with problems.
    lattice = paper_tex("lattice").replace("\\end{document}", "")
    write_version(raw, "math/0501001", 1, "tex", tex=lattice)
    write_version(raw, "2401.00005", 1, "tex", tex=paper_tex("crystal"), with_meta=False)
    bad = write_version(raw, "2401.00006", 1, "tex", tex=paper_tex("graph"), with_meta=False)
    (bad / "meta.json").write_text("{not json", encoding="utf-8")
    return raw


def tables(root: Path) -> tuple[pa.Table, pa.Table, pa.Table]:
    processed = Paths(root).processed
    return (
        pq.read_table(processed / "papers.parquet"),
        pq.read_table(processed / "chunks.parquet"),
        pq.read_table(processed / "statements.parquet"),
    )


def strip_metadata(table: pa.Table) -> pa.Table:
    return table.replace_schema_metadata(None)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    build_store(tmp_path)
    return tmp_path


def test_stage_outputs_latest_versions_and_counts_add_up(store: Path) -> None:
    report = run_prepare(PARAMS, Paths(store), progress=False)
    papers, chunks, statements = tables(store)
    assert report == PrepareReport(
        folders_seen=8,  # the folder without meta.json is incomplete: not seen
        invalid_meta=1,
        superseded=2,
        papers_in=5,
        prepared=3,
        reused=0,
        quarantined=1,
        withdrawn=1,
        chunks=chunks.num_rows,
        statements=2,
        short_chunks_dropped=0,
        papers_with_problems=1,  # the one without \end{document}
    )
    assert report.folders_seen == report.papers_in + report.superseded + report.invalid_meta
    assert report.papers_in == (
        report.prepared + report.reused + report.quarantined + report.withdrawn
    )
    assert read_json(Paths(store).metrics / "prepare.json") == report.as_dict()
    assert papers.schema.remove_metadata().equals(PAPERS_SCHEMA)
    assert chunks.schema.remove_metadata().equals(CHUNKS_SCHEMA)
    assert statements.schema.remove_metadata().equals(STATEMENTS_SCHEMA)
    rows = {row["paper_id"]: row for row in papers.to_pylist()}
    assert sorted(rows) == ["2401.00001", "2401.00002", "math/0501001"]
    assert rows["2401.00001"]["version"] == 2, "the new version supersedes the old one"
    assert rows["2401.00001"]["title"] == "On 2401.00001", "titles are cleaned"
    assert rows["2401.00001"]["authors"] == ["A. Author", "B. Author"]
    assert rows["2401.00001"]["url"] == ARXIV_PAGE, "the link ingest recorded"
    assert rows["math/0501001"]["url"] == "", "none recorded: no link"
    source = Paths(store).raw / "2401.00001" / "v2" / "source.tex"
    assert rows["2401.00001"]["content_hash"] == hashlib.sha256(source.read_bytes()).hexdigest()

    texts = " ".join(chunks["text"].to_pylist())
    assert "composition" in texts and "partition" not in texts, "nothing of v1 downstream"
    assert "tableau" not in texts, "the withdrawn paper is left out"
    assert set(chunks["version"].to_pylist()) <= {1, 2}
    for paper_id, row in rows.items():
        mine = [c for c in chunks.to_pylist() if c["paper_id"] == paper_id]
        assert len(mine) == row["n_chunks"]
        assert [c["chunk_index"] for c in mine] == list(range(len(mine)))
        assert [c["chunk_id"] for c in mine] == [
            f"{paper_id}v{row['version']}#c{i:04d}" for i in range(len(mine))
        ]
    assert len(set(chunks["chunk_id"].to_pylist())) == chunks.num_rows
    assert all(len(text) <= PARAMS.chunk_chars for text in chunks["text"].to_pylist())


def test_abstract_only_paper_gets_exactly_its_abstract(store: Path) -> None:
    run_prepare(PARAMS, Paths(store), progress=False)
    papers, chunks, _ = tables(store)
    mine = [c for c in chunks.to_pylist() if c["paper_id"] == "2401.00002"]
    assert [(c["chunk_id"], c["section"], c["text"]) for c in mine] == [
        ("2401.00002v1#c0000", "", "Only an $x$ abstract here.")
    ]
    row = next(r for r in papers.to_pylist() if r["paper_id"] == "2401.00002")
    assert row["source_kind"] == "abstract_only"
    assert row["content_hash"] == hashlib.sha256(b"Only an $x$ abstract here.").hexdigest()


def test_statements_have_stable_ids_kind_name_and_label(store: Path) -> None:
    run_prepare(PARAMS, Paths(store), progress=False)
    _, _, statements = tables(store)
    assert statements.to_pylist() == [
        {
            "statement_id": "2401.00001v2#s000",
            "paper_id": "2401.00001",
            "version": 2,
            "kind": "theorem",
            "name": "Composition",
            "label": "thm:composition",
            "text": "Every composition is fine.",
            "terms": [],
            "refs": [],
            "proof": "",
            "slogan": "",
        },
        {
            "statement_id": "math/0501001v1#s000",
            "paper_id": "math/0501001",
            "version": 1,
            "kind": "theorem",
            "name": "Lattice",
            "label": "thm:lattice",
            "text": "Every lattice is fine.",
            "terms": [],
            "refs": [],
            "proof": "",
            "slogan": "",
        },
    ]


def test_broken_paper_and_bad_meta_are_quarantined_with_reasons(store: Path) -> None:
    run_prepare(PARAMS, Paths(store), progress=False)
    records = {record["id"]: record for record in quarantined(Paths(store).quarantine, "prepare")}
    assert set(records) == {"2401.00004v1", "2401.00006/v1"}
    assert "not LaTeX" in records["2401.00004v1"]["reason"]
    assert records["2401.00004v1"]["details"]["paper_id"] == "2401.00004"
    assert "meta.json" in records["2401.00006/v1"]["reason"]


def test_two_fresh_runs_give_identical_outputs(tmp_path: Path) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    build_store(first)
    build_store(second)
    run_prepare(PARAMS, Paths(first), progress=False)
    run_prepare(PARAMS, Paths(second), progress=False)
    for name in ("papers.parquet", "chunks.parquet", "statements.parquet"):
        one = (Paths(first).processed / name).read_bytes()
        two = (Paths(second).processed / name).read_bytes()
        assert one == two, f"{name} differs between two runs on the same input"


class CountingPrepare:
    """Counts the papers a run hands to its workers to clean (they clean in other
    processes, so the count is taken here, where the jobs are sent)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.papers: list[str] = []
        original = stage.clean_in_order

        def counting(jobs: list[cleaning.Job], *args: Any, **kwargs: Any) -> Any:
            self.papers.extend(job.raw.key for job in jobs)
            return original(jobs, *args, **kwargs)

        monkeypatch.setattr(stage, "clean_in_order", counting)


def test_rerun_does_no_work_and_changes_nothing(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = run_prepare(PARAMS, Paths(store), progress=False, workers=1)
    before = [strip_metadata(table) for table in tables(store)]
    counter = CountingPrepare(monkeypatch)
    second = run_prepare(PARAMS, Paths(store), progress=False, workers=1)
    assert counter.papers == [], "nothing is cleaned again, not even the quarantined paper"
    assert (second.prepared, second.reused) == (0, first.prepared)
    assert second.quarantined == first.quarantined and second.chunks == first.chunks
    after = [strip_metadata(table) for table in tables(store)]
    assert all(a.equals(b) for a, b in zip(before, after, strict=True))


def test_changed_source_and_new_version_redo_only_those_papers(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_prepare(PARAMS, Paths(store), progress=False, workers=1)
    raw = Paths(store).raw
    (raw / "math_0501001" / "v1" / "source.tex").write_text(paper_tex("matroid"))
    write_version(raw, "2401.00002", 2, "tex", tex=paper_tex("necklace"))
    counter = CountingPrepare(monkeypatch)
    report = run_prepare(PARAMS, Paths(store), progress=False, workers=1)
    assert sorted(counter.papers) == ["2401.00002v2", "math/0501001v1"]
    assert (report.prepared, report.reused) == (2, 1)
    papers, chunks, _ = tables(store)
    texts = " ".join(chunks["text"].to_pylist())
    assert "matroid" in texts and "lattice" not in texts
    assert "necklace" in texts and "Only an" not in texts
    versions = dict(zip(papers["paper_id"].to_pylist(), papers["version"].to_pylist(), strict=True))
    assert versions == {"2401.00001": 2, "2401.00002": 2, "math/0501001": 1}

    # The incremental result equals a full run from scratch on the same raw store.
    incremental = [strip_metadata(table) for table in tables(store)]
    for name in ("papers.parquet", "chunks.parquet", "statements.parquet"):
        (Paths(store).processed / name).unlink()
    run_prepare(PARAMS, Paths(store), progress=False, workers=1)
    full = [strip_metadata(table) for table in tables(store)]
    assert all(a.equals(b) for a, b in zip(incremental, full, strict=True))


def test_changed_chunking_knobs_redo_everything(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_prepare(PARAMS, Paths(store), progress=False, workers=1)
    counter = CountingPrepare(monkeypatch)
    smaller = PrepareParams(chunk_chars=200, overlap_chars=40, min_chunk_chars=50)
    report = run_prepare(smaller, Paths(store), progress=False, workers=1)
    assert len(counter.papers) == 4 and report.reused == 0
    _, chunks, _ = tables(store)
    assert max(len(text) for text in chunks["text"].to_pylist()) <= 200


def test_outputs_from_a_run_that_died_halfway_are_not_reused(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_prepare(PARAMS, Paths(store), progress=False, workers=1)
    processed = Paths(store).processed
    # Simulate a crash between two writes: chunks from another run, papers from this one.
    table = pq.read_table(processed / "chunks.parquet")
    metadata = dict(table.schema.metadata)
    metadata[outputs.RUN_KEY] = b"another run"
    pq.write_table(table.replace_schema_metadata(metadata), processed / "chunks.parquet")
    counter = CountingPrepare(monkeypatch)
    report = run_prepare(PARAMS, Paths(store), progress=False, workers=1)
    assert report.reused == 0 and len(counter.papers) == 3


def test_process_pool_gives_the_same_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    serial, pooled = tmp_path / "serial", tmp_path / "pooled"
    for root in (serial, pooled):
        raw = Paths(root).raw
        for index in range(12):
            write_version(raw, f"2402.{index:05d}", 1, "tex", tex=paper_tex(f"topic{index}", 6))
    run_prepare(PARAMS, Paths(serial), progress=False, workers=1)
    monkeypatch.setattr(cleaning, "MIN_PAPERS_FOR_POOL", 1)
    report = run_prepare(PARAMS, Paths(pooled), progress=False, workers=2)
    assert report.prepared == 12
    for name in ("papers.parquet", "chunks.parquet", "statements.parquet"):
        one = (Paths(serial).processed / name).read_bytes()
        two = (Paths(pooled).processed / name).read_bytes()
        assert one == two, f"{name} depends on the number of workers"


def test_empty_raw_store_writes_empty_tables(tmp_path: Path) -> None:
    report = run_prepare(PARAMS, Paths(tmp_path), progress=False)
    assert report.papers_in == 0 and report.chunks == 0
    papers, chunks, statements = tables(tmp_path)
    assert papers.num_rows == chunks.num_rows == statements.num_rows == 0
    assert chunks.schema.remove_metadata().equals(CHUNKS_SCHEMA)


def test_bad_knobs_are_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="overlap_chars"):
        run_prepare(PrepareParams(chunk_chars=100, overlap_chars=100), Paths(tmp_path))


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        ([], "not a JSON object"),
        ({"version": 1, "source_kind": "tex"}, "paper_id"),
        ({"paper_id": "2401.00009", "version": 0, "source_kind": "tex"}, "version"),
        ({"paper_id": "2401.00009", "version": 1, "source_kind": "pdf"}, "source_kind"),
        ({"paper_id": "2401.00008", "version": 1, "source_kind": "tex"}, "lies in"),
        (
            {"paper_id": "2401.00009", "version": 1, "source_kind": "tex", "authors": "A"},
            "authors",
        ),
        ({"paper_id": "2401.00009", "version": 1, "source_kind": "tex", "url": 7}, "url"),
    ],
)
def test_invalid_meta_is_quarantined_with_the_fault(
    tmp_path: Path, meta: Any, message: str
) -> None:
    folder = Paths(tmp_path).raw / "2401.00009" / "v1"
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    report = run_prepare(PARAMS, Paths(tmp_path), progress=False)
    assert (report.folders_seen, report.invalid_meta, report.papers_in) == (1, 1, 0)
    (record,) = quarantined(Paths(tmp_path).quarantine, "prepare")
    assert message in record["reason"]


def test_tex_paper_without_source_is_quarantined(tmp_path: Path) -> None:
    write_version(Paths(tmp_path).raw, "2401.00007", 1, "tex", tex=None)
    report = run_prepare(PARAMS, Paths(tmp_path), progress=False)
    assert report.quarantined == 1
    (record,) = quarantined(Paths(tmp_path).quarantine, "prepare")
    assert record["reason"] == "source.tex missing"


def test_main_runs_the_stage_from_params(store: Path) -> None:
    params = store / "params.yaml"
    params.write_text("prepare:\n  chunk_chars: 300\n  overlap_chars: 50\n", encoding="utf-8")
    result = CliRunner().invoke(
        cli.app, ["prepare", "--params", str(params), "--root", str(store), "--workers", "1"]
    )
    assert result.exit_code == 0
    metrics = read_json(Paths(store).metrics / "prepare.json")
    assert metrics["prepared"] == 3
    _, chunks, _ = tables(store)
    assert max(len(text) for text in chunks["text"].to_pylist()) <= 300


def test_main_reports_a_bad_params_file(tmp_path: Path) -> None:
    params = tmp_path / "params.yaml"
    params.write_text("prepare:\n  chunk_size: 300\n", encoding="utf-8")
    result = CliRunner().invoke(
        cli.app, ["prepare", "--params", str(params), "--root", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "chunk_size" in result.stderr


def test_unreadable_previous_passages_mean_cleaning_again_not_a_crash(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_prepare(PARAMS, Paths(store), progress=False, workers=1)
    before = strip_metadata(tables(store)[1])
    chunks_file = Paths(store).processed / "chunks.parquet"
    data = bytearray(chunks_file.read_bytes())
    footer = int.from_bytes(data[-8:-4], "little") + 8  # Parquet: footer, its length, "PAR1"
    data[4:-footer] = b"\x00" * (len(data) - footer - 4)  # data pages gone, schema intact
    chunks_file.write_bytes(bytes(data))
    assert load_previous(Paths(store).processed, fingerprint(PARAMS)) is not None
    write_version(Paths(store).raw, "2401.00010", 1, "tex", tex=paper_tex("permutation"))
    counter = CountingPrepare(monkeypatch)
    report = run_prepare(PARAMS, Paths(store), progress=False, workers=1)
    assert len(counter.papers) == 4 and (report.prepared, report.reused) == (4, 0)
    after = strip_metadata(tables(store)[1])
    assert after.filter(pc.not_equal(after["paper_id"], "2401.00010")).equals(before)


# ------------------------------------------------------------------ the recorded source hash


def record_source_hashes(raw: Path) -> int:
    """Write each readable version's ``source_sha256`` into its meta.json, as ingest records
    it (the SHA-256 of the bytes it wrote); how many it recorded."""
    recorded = 0
    for meta_path in sorted(raw.glob("*/v*/meta.json")):
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except ValueError:
            continue  # the broken one stays broken
        source = meta_path.parent / "source.tex"
        if source.is_file():
            meta["source_sha256"] = hashlib.sha256(source.read_bytes()).hexdigest()
            meta_path.write_text(json.dumps(meta), encoding="utf-8")
            recorded += 1
    return recorded


def outputs_of(root: Path) -> dict[str, Any]:
    """Every file prepare wrote, by path under the root: the tables and the metrics as bytes,
    the quarantine records without their time and with the root's path left out."""
    paths = Paths(root)
    written: dict[str, Any] = {
        str(path.relative_to(root)): path.read_bytes()
        for path in [paths.metric_file("prepare"), *sorted(paths.processed.rglob("*.parquet"))]
    }
    for path in sorted(paths.quarantine.rglob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8").replace(str(root), "<root>"))
        record.pop("quarantined_at")
        written[str(path.relative_to(root))] = record
    return written


def test_recorded_source_hashes_give_byte_identical_outputs(tmp_path: Path) -> None:
    hashed, recorded = tmp_path / "hashed", tmp_path / "recorded"
    build_store(hashed)
    build_store(recorded)
    assert record_source_hashes(Paths(recorded).raw) == 5  # every tex version with a meta
    run_prepare(PARAMS, Paths(hashed), progress=False, workers=1)
    run_prepare(PARAMS, Paths(recorded), progress=False, workers=1)
    outputs_hashed, outputs_recorded = outputs_of(hashed), outputs_of(recorded)
    assert len(outputs_recorded) == 6  # 3 tables, the metrics, 2 papers quarantined
    # The garbage paper's record carries its content hash: the recorded one, the same.
    assert (
        "content_hash" in outputs_recorded["data/quarantine/prepare/2401.00004v1.json"]["details"]
    )
    assert outputs_recorded == outputs_hashed


def test_content_hash_takes_a_well_formed_recorded_hash_and_else_hashes_the_source(
    tmp_path: Path,
) -> None:
    folder = write_version(Paths(tmp_path).raw, "2401.00001", 1, "tex", tex="\\section{X}")
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    of_the_file = hashlib.sha256(b"\\section{X}").hexdigest()

    def hash_with(**changes: Any) -> str:
        return content_hash(RawPaper("2401.00001", 1, folder, {**meta, **changes}))

    # Not the file's hash, yet taken: the file is not read when ingest recorded its hash.
    assert hash_with(source_sha256="ab" * 32) == "ab" * 32
    for malformed in (None, "AB" * 32, "ab" * 31, "zz" * 32, " " + "ab" * 32, 12):
        assert hash_with(source_sha256=malformed) == of_the_file
    del meta["source_sha256"]  # a raw store written before ingest recorded it
    assert hash_with() == of_the_file
    (folder / "source.tex").unlink()  # recorded, but the file is gone: as before, no bytes
    assert hash_with(source_sha256="ab" * 32) == hashlib.sha256(b"").hexdigest()
