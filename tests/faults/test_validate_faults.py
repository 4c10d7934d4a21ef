"""Validate on hostile tables: nulls where text must be, one paper holding most of the
corpus, and Ctrl-C while the report is built. Each is a clear check failure or a
consistent state on disk, never a raw traceback or a "passed" beside a missing report.

The tables are built here: :func:`consistent_tables` is a small corpus that passes every
check (every table of the contract, the references between them and the leakage rules).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import types
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
from repo import REPO
from typer.testing import CliRunner

from pipelines import cli
from pipelines.common.config import load_params
from pipelines.common.io import read_json
from pipelines.common.paths import Paths
from pipelines.common.tables import TABLES, write_table
from pipelines.validate import balance
from pipelines.validate.stage import INCOMPLETE, ValidationError, run_validate, validate_tables
from pipelines.validate.summaries import quality_record

# One query over a few passages: the eval set's shape is checked for a real corpus
# (validate.min_queries 100), and by tests/unit/validate/test_eval_shape.py.
SMALL_EVAL: dict[str, Any] = {"min_queries": 1, "min_described_queries": 0}
PARAMS = dataclasses.replace(load_params(REPO / "params.yaml").validate, **SMALL_EVAL)
Tables = dict[str, pd.DataFrame]


def table(name: str, columns: dict[str, list[Any]]) -> pd.DataFrame:
    """``columns`` as table ``name`` of the contract: its columns in order, every one given
    (a column the contract gained is a KeyError here, not a silent null)."""
    missing = [column for column in TABLES[name].columns if column not in columns]
    if missing:
        raise KeyError(f"consistent_tables gives no {missing} for table {name!r}")
    return pd.DataFrame(columns).loc[:, TABLES[name].columns]


def passage(paper: int, index: int) -> str:
    return f"Passage {index} of paper {paper}: we study $x^{paper}$ and its Durfee square."


def consistent_tables(n_papers: int = 3, chunks_per_paper: int = 2) -> Tables:
    """A small corpus that passes every check of validate."""
    paper_ids = [f"2401.{p:05d}" for p in range(1, n_papers + 1)]
    papers = pd.DataFrame(
        {
            "paper_id": paper_ids,
            "version": [1] * n_papers,
            "title": [f"Paper {p}" for p in range(n_papers)],
            "abstract": ["An abstract."] * n_papers,
            "authors": [["A. Author"]] * n_papers,
            "categories": [["math.CO"]] * n_papers,
            "primary_category": ["math.CO"] * n_papers,
            "published": ["2024-01-01T10:00:00Z"] * n_papers,
            "updated": ["2024-01-02T10:00:00Z"] * n_papers,
            "source_kind": ["tex"] * n_papers,
            "content_hash": ["a" * 64] * n_papers,
            "n_chunks": [chunks_per_paper] * n_papers,
            "n_statements": [1] + [0] * (n_papers - 1),
            "citing_sentences": [[] for _ in paper_ids],
            "citing_labels": [[] for _ in paper_ids],
            "url": [f"https://arxiv.org/abs/{paper_id}" for paper_id in paper_ids],
        }
    )
    chunks = pd.DataFrame(
        [
            {
                "chunk_id": f"{paper_id}v1#c{index:04d}",
                "paper_id": paper_id,
                "version": 1,
                "chunk_index": index,
                "section": "Introduction",
                "text": passage(p, index),
            }
            for p, paper_id in enumerate(paper_ids)
            for index in range(chunks_per_paper)
        ]
    )
    first_chunk, last_chunk = chunks["chunk_id"].iloc[0], chunks["chunk_id"].iloc[-1]
    statement_id = f"{paper_ids[0]}v1#s000"
    statements = table(
        "statements",
        {
            "statement_id": [statement_id],
            "paper_id": [paper_ids[0]],
            "version": [1],
            "kind": ["theorem"],
            "name": [""],
            "label": ["thm:durfee"],
            "text": ["Every partition has a Durfee square."],
            "terms": [[]],
            "refs": [[]],
            "proof": ["Take the largest square in the diagram."],
            "slogan": [""],
        },
    )
    concepts = table(
        "concepts",
        {
            "name": ["durfee square", "partition"],
            "display_name": ["Durfee square", "partition"],
            "type": ["object", "object"],
            "description": ["", ""],
            "aliases": [[], []],
            "papers": [[paper_ids[0]], [paper_ids[0]]],
            "statements": [[statement_id], []],
        },
    )
    edges = pd.DataFrame(
        {
            "source": ["durfee square"],
            "target": ["partition"],
            "relation": ["related_to"],
            "papers": [[paper_ids[0]]],
        }
    )
    mentions = pd.DataFrame(
        {
            "concept": ["partition"],
            "chunk_id": [first_chunk],
            "paper_id": [paper_ids[0]],
            "evidence": ["definition"],
        }
    )
    pairs = table(
        "pairs",
        {
            "anchor": ["partition"],
            "positive": [chunks["text"].iloc[0]],
            "kind": ["name"],
            "concept": ["partition"],
            "positive_id": [first_chunk],
            "negative": [chunks["text"].iloc[1]],
            "negative_id": [chunks["chunk_id"].iloc[1]],
            "split": ["train"],
        },
    )
    queries = pd.DataFrame(
        {
            "query_id": ["q0123456789ab"],
            "concept": ["durfee square"],
            "text": ["Durfee square"],
            "set": ["named"],
            "exclude": [[]],
        }
    )
    qrels = pd.DataFrame(
        {"query_id": ["q0123456789ab"], "chunk_id": [last_chunk], "grade": [1], "unseen": [True]}
    )
    return {
        "papers": papers,
        "chunks": chunks,
        "statements": statements,
        "concepts": concepts,
        "edges": edges,
        "mentions": mentions,
        "pairs": pairs,
        "queries": queries,
        "qrels": qrels,
    }


def write_inputs(tables: Tables, root: Path) -> Paths:
    """The tables as the stages write them (a column with a null is written nullable), and
    a params.yaml that lets their one query pass."""
    paths = Paths(root)
    root.mkdir(parents=True, exist_ok=True)
    (root / "params.yaml").write_text(
        "validate:\n" + "".join(f"  {key}: {value}\n" for key, value in SMALL_EVAL.items())
    )
    for name, frame in tables.items():
        schema = TABLES[name].schema
        if frame.isna().to_numpy().any():
            schema = pa.schema([field.with_nullable(True) for field in schema])
            path = TABLES[name].path(paths)
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.Table.from_pandas(frame, schema=schema, preserve_index=False), path)
        else:
            write_table(TABLES[name].path(paths), frame, schema)
    return paths


def _fake_report_module() -> types.ModuleType:
    """Stands in for the Great Expectations report (its own tests run GX): writes a page."""
    fake = types.ModuleType("pipelines.validate.report")

    def build_report(tables: Tables, paths: Paths, params: Any = None) -> types.SimpleNamespace:
        index = paths.data_quality_reports / "index.html"
        index.parent.mkdir(parents=True, exist_ok=True)
        index.write_text("report", encoding="utf-8")
        record = quality_record([])  # no suite ran: nothing met, nothing failed
        return types.SimpleNamespace(index_html=index, success=True, suites={}, record=record)

    fake.build_report = build_report  # type: ignore[attr-defined]
    return fake


@pytest.fixture
def fake_report(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    fake = _fake_report_module()
    monkeypatch.setitem(sys.modules, "pipelines.validate.report", fake)
    return fake


def validate_command(root: Path) -> Any:
    return CliRunner().invoke(cli.app, ["validate", "--root", str(root)])


# -- the corpus itself ------------------------------------------------------------------


def test_the_consistent_tables_pass() -> None:
    result = validate_tables(consistent_tables(), PARAMS)
    assert all(outcome.quarantined == 0 for outcome in result.tables.values())


# -- finding 3: a paper holding most of the corpus --------------------------------------


def bombed_corpus(n_papers: int, bomb_chunks: int) -> Tables:
    """``n_papers`` papers of 2 chunks, the first of which has ``bomb_chunks``."""
    tables = consistent_tables(n_papers)
    chunks = tables["chunks"]
    first = chunks.iloc[0]
    extra = pd.DataFrame(
        [
            {**first.to_dict(), "chunk_id": f"{first['paper_id']}v1#c{i:04d}", "chunk_index": i}
            | {"text": f"{passage(0, i)} Bomb."}
            for i in range(2, bomb_chunks)
        ]
    )
    tables["chunks"] = pd.concat([chunks, extra], ignore_index=True)
    tables["papers"].loc[0, "n_chunks"] = bomb_chunks
    return tables


def test_a_paper_with_most_of_the_corpus_stops_validation() -> None:
    tables = bombed_corpus(balance.MIN_PAPERS, bomb_chunks=60)  # 60 of 78 passages
    with pytest.raises(ValidationError) as caught:
        validate_tables(tables, PARAMS)
    assert caught.value.checks() == {("chunks", "paper_share")}
    message = str(caught.value)
    assert "paper 2401.00001: 60 of 78 passages (77%)" in message
    assert "macro bomb" in message and "mathembed prepare" in message


def test_a_large_share_in_a_tiny_corpus_or_below_half_passes() -> None:
    tiny = bombed_corpus(balance.MIN_PAPERS - 1, bomb_chunks=60)
    assert validate_tables(tiny, PARAMS).tables["chunks"].checks["corpus"] == {"paper_share": 0}
    # 18 of 38 passages: the largest paper, but under half.
    balanced = bombed_corpus(balance.MIN_PAPERS, bomb_chunks=18)
    assert validate_tables(balanced, PARAMS).tables["chunks"].quarantined == 0


# -- finding 15: nulls where text must be -----------------------------------------------


@pytest.mark.parametrize(("table", "column"), [("chunks", "text"), ("papers", "title")])
def test_a_null_text_or_title_is_a_one_line_failure_naming_table_and_column(
    tmp_path: Path, fake_report: types.ModuleType, table: str, column: str
) -> None:
    tables = consistent_tables()
    tables[table][column] = tables[table][column].astype(object)
    tables[table].loc[0, column] = None
    write_inputs(tables, tmp_path)
    result = validate_command(tmp_path)
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert f"[{table}] {column}:not_nullable" in result.output
    assert "mathembed prepare" in result.output
    assert "Traceback" not in result.output
    metrics = read_json(Paths(tmp_path).metric_file("data_quality"))
    assert metrics["passed"] is False and metrics["failed_checks"] == [
        f"{table}: {column}:not_nullable"
    ]


def test_the_report_names_a_null_text_in_validated_chunks(tmp_path: Path) -> None:
    from pipelines.validate.report import build_report

    tables = consistent_tables()
    tables["chunks"].loc[0, "text"] = None
    with pytest.raises(ValueError, match=r"'chunks' column 'text' has 1 null") as caught:
        build_report(tables, Paths(tmp_path))
    assert "\n" not in str(caught.value)
    assert "mathembed validate" in str(caught.value)


# -- finding 16: Ctrl-C while the report is built ----------------------------------------


def test_ctrl_c_in_the_report_leaves_no_passed_record(
    tmp_path: Path, fake_report: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = write_inputs(consistent_tables(), tmp_path)
    metrics_path = paths.metric_file("data_quality")
    run_validate(PARAMS, paths)  # an earlier run that passed
    assert read_json(metrics_path)["passed"] is True

    def interrupted(tables: Tables, paths: Paths, params: Any = None) -> None:
        # What Ctrl-C does halfway through GX: the old report is already cleared.
        index = paths.data_quality_reports / "index.html"
        index.unlink()
        raise KeyboardInterrupt

    build_report = fake_report.build_report  # type: ignore[attr-defined]
    monkeypatch.setattr(fake_report, "build_report", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_validate(PARAMS, paths)
    record = json.loads(metrics_path.read_text(encoding="utf-8"))
    assert record == {"passed": False, "incomplete": INCOMPLETE}
    assert not (paths.data_quality_reports / "index.html").exists()

    monkeypatch.setattr(fake_report, "build_report", build_report)
    run_validate(PARAMS, paths)  # the rerun rebuilds the report, then says passed
    assert (paths.data_quality_reports / "index.html").is_file()
    assert read_json(metrics_path)["passed"] is True


# -- a degenerate evaluation set ---------------------------------------------------------


def test_a_query_relevant_to_the_whole_corpus_is_a_clear_failure(
    tmp_path: Path, fake_report: types.ModuleType
) -> None:
    tables = consistent_tables(n_papers=3)
    chunk_ids = tables["chunks"]["chunk_id"]
    tables["qrels"] = pd.DataFrame(
        {"query_id": "q0123456789ab", "chunk_id": chunk_ids, "grade": 1, "unseen": False}
    )
    write_inputs(tables, tmp_path)
    result = validate_command(tmp_path)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert "[queries] query_relevant_share" in result.output
    assert "query q0123456789ab ('durfee square'): 6 of 6 passages relevant (100.0%)" in (
        result.output
    )
    assert "pairs.max_relevant_share" in result.output
    metrics = read_json(Paths(tmp_path).metric_file("data_quality"))
    assert metrics == {"passed": False, "failed_checks": ["queries: query_relevant_share"]}
