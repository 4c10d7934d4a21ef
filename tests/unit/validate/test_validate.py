"""The validate stage: structural failures stop, row-level failures are quarantined, counts add up.

The data is the real pipeline's: the sample mirror of params.yaml run once through
ingest, prepare, graph and pairs in a temporary root (what ``make repro`` runs). Most
tests take a small, consistent slice of its validated output (a few papers and every
row that points at them) and break one rule in it.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
from click.testing import Result
from repo import REPO
from typer.testing import CliRunner

from pipelines import cli
from pipelines.common.config import ValidateParams, load_params
from pipelines.common.paths import Paths
from pipelines.common.tables import (
    STATEMENT_PAIR_KINDS,
    TABLES,
    write_table,
)
from pipelines.graph.stage import run_graph
from pipelines.ingest.arxiv.client import ArxivClient
from pipelines.ingest.stage import run_ingest
from pipelines.mirror.corpora.synthetic import generate_mirror
from pipelines.mirror.server import MirrorServer
from pipelines.pairs.stage import run_pairs
from pipelines.prepare.stage import run_prepare
from pipelines.validate import formats
from pipelines.validate.stage import (
    FAILED_CHECK,
    ValidationError,
    ValidationResult,
    run_validate,
    validate_tables,
)

# The eval set's shape is checked for the real corpus (validate.min_queries: 100). The
# synthetic sample gives ~20 queries, and a slice of a few papers a handful over a few dozen
# passages, so here both shape checks are set to pass: test_eval_shape.py and the
# eval-set tests below try them.
SMALL_EVAL: dict[str, Any] = {
    "min_queries": 1,
    "min_described_queries": 0,
    "max_query_relevant_share": 1.0,
}
SMALL_EVAL_YAML = "".join(f"  {key}: {value}\n" for key, value in SMALL_EVAL.items())
_PROJECT_PARAMS = load_params(REPO / "params.yaml")
PARAMS = dataclasses.replace(
    _PROJECT_PARAMS, validate=dataclasses.replace(_PROJECT_PARAMS.validate, **SMALL_EVAL)
)
LENIENT = ValidateParams(max_row_failure_fraction=1.0, **SMALL_EVAL)  # quarantine whatever fails
WRITER_SCHEMAS = {name: table.schema for name, table in TABLES.items()}
Tables = dict[str, pd.DataFrame]
REPORT_BUILT = types.SimpleNamespace(
    index_html=Path("reports/data_quality/index.html"),
    success=True,
    suites={},
    record={"evaluated": 36, "met": 36, "failed_as_expected": [], "failed_unexpectedly": []},
)


# -- fixtures ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pipeline_root(tmp_path_factory: pytest.TempPathFactory) -> Paths:
    """The data stages of ``make repro`` (sample -> pairs) run once, in a temporary root."""
    paths = Paths(tmp_path_factory.mktemp("pipeline"))
    generate_mirror(paths.mirror, PARAMS.sample.n_papers, PARAMS.sample.seed)
    with (
        MirrorServer(paths.mirror) as server,
        ArxivClient.from_params(PARAMS.ingest, base_url=server.base_url, delay_seconds=0.0) as c,
    ):
        run_ingest(PARAMS.ingest, paths, client=c, progress=False)
    run_prepare(PARAMS.prepare, paths, progress=False, workers=1)
    run_graph(PARAMS.graph, paths, workers=1)
    run_pairs(PARAMS.pairs, paths)
    return paths


def read_inputs(paths: Paths) -> Tables:
    return {table: pd.read_parquet(TABLES[table].path(paths)) for table in TABLES}


@pytest.fixture(scope="module")
def pipeline_tables(pipeline_root: Paths) -> Tables:
    return read_inputs(pipeline_root)


@pytest.fixture(scope="module")
def pipeline_result(pipeline_tables: Tables) -> ValidationResult:
    return validate_tables(pipeline_tables, PARAMS.validate)


@pytest.fixture(scope="module")
def clean_slice(pipeline_result: ValidationResult) -> Tables:
    """A few validated papers and every row that points at them: small, valid, consistent.

    The papers are some of a query that has an unseen qrel (among them that unseen paper),
    one with a statement pair and one with a relevant passage of a seen paper, so leakage
    checks have an unseen paper, a held-out concept and both kinds of positive to work with.
    """
    kept = pipeline_result.kept
    unseen_qrels = kept["qrels"][kept["qrels"]["unseen"]]
    query_id = sorted(unseen_qrels["query_id"])[0]
    chunk_ids = kept["qrels"].loc[kept["qrels"]["query_id"] == query_id, "chunk_id"]
    paper_of = kept["chunks"].set_index("chunk_id")["paper_id"]
    unseen_chunk = unseen_qrels.loc[unseen_qrels["query_id"] == query_id, "chunk_id"].iloc[0]
    unseen_paper = paper_of[unseen_chunk]
    papers = sorted(set(paper_of[chunk_ids]) - {unseen_paper})[:3] + [unseen_paper]
    statement_pairs = kept["pairs"].loc[kept["pairs"]["kind"] == "statement", "positive_id"]
    statement_paper = statement_pairs.str.replace(r"v\d+#s\d+$", "", regex=True).iloc[0]
    # and the paper of a relevant passage that mentions point at (quarantine cascades)
    pointed = kept["chunks"].loc[[relevant_chunk(kept)], "paper_id"]
    return slice_papers(kept, {*papers, statement_paper, *pointed})


def slice_papers(tables: Tables, paper_ids: set[str]) -> Tables:
    def rows(frame: pd.DataFrame, mask: pd.Series) -> pd.DataFrame:
        return frame[mask].reset_index(drop=True)

    chunks = rows(tables["chunks"], tables["chunks"]["paper_id"].isin(paper_ids))
    statements = rows(tables["statements"], tables["statements"]["paper_id"].isin(paper_ids))
    positives = set(chunks["chunk_id"]) | set(statements["statement_id"])
    qrels = rows(tables["qrels"], tables["qrels"]["chunk_id"].isin(chunks["chunk_id"]))
    return {
        "papers": rows(tables["papers"], tables["papers"]["paper_id"].isin(paper_ids)),
        "chunks": chunks,
        "statements": statements,
        "concepts": tables["concepts"].copy(),
        "edges": tables["edges"].copy(),
        "mentions": rows(
            tables["mentions"], tables["mentions"]["chunk_id"].isin(chunks["chunk_id"])
        ),
        "pairs": rows(tables["pairs"], tables["pairs"]["positive_id"].isin(positives)),
        "queries": rows(tables["queries"], tables["queries"]["query_id"].isin(qrels["query_id"])),
        "qrels": qrels,
    }


@pytest.fixture
def data(clean_slice: Tables) -> Tables:
    """A fresh copy of the clean slice for one test to break."""
    return {table: frame.copy(deep=True) for table, frame in clean_slice.items()}


@pytest.fixture
def quality_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[dict[str, pd.DataFrame], Paths]]:
    """Stands in for pipelines.validate.report (its own tests run Great Expectations)."""
    calls: list[tuple[dict[str, pd.DataFrame], Paths]] = []
    fake = types.ModuleType("pipelines.validate.report")

    def build_report(
        tables: dict[str, pd.DataFrame], paths: Paths, params: ValidateParams
    ) -> types.SimpleNamespace:
        calls.append((tables, paths))
        return REPORT_BUILT

    fake.build_report = build_report  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pipelines.validate.report", fake)
    return calls


# -- helpers ----------------------------------------------------------------------------


def failure(tables: Tables, params: ValidateParams = PARAMS.validate) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        validate_tables(tables, params)
    return caught.value


def set_value(frame: pd.DataFrame, row: int, column: str, value: Any) -> None:
    frame.loc[row, column] = value


def add_pair(tables: Tables, **values: Any) -> None:
    """Append a training pair: a copy of the first chunk pair with ``values`` changed."""
    pairs = tables["pairs"]
    template = pairs[~pairs["kind"].isin(STATEMENT_PAIR_KINDS)].iloc[0].to_dict()
    template.update(values)
    tables["pairs"] = pd.concat([pairs, pd.DataFrame([template])], ignore_index=True)


def held_out(tables: Tables) -> pd.Series:
    """The concept row of the slice's first query (a held-out concept)."""
    name = tables["queries"]["concept"].iloc[0]
    concepts = tables["concepts"]
    return concepts[concepts["name"] == name].iloc[0]


def not_held_out(tables: Tables) -> str:
    names = tables["concepts"]["name"]
    return str(names[~names.isin(tables["queries"]["concept"])].iloc[0])


def relevant_chunk(tables: Tables) -> int:
    """The row of a chunk of a seen paper that qrels and mentions point at (most pairs first)."""
    chunks = tables["chunks"]["chunk_id"]
    seen_qrels = tables["qrels"].loc[~tables["qrels"]["unseen"], "chunk_id"]
    pointed = chunks.isin(seen_qrels) & chunks.isin(tables["mentions"]["chunk_id"])
    pairs_per_chunk = chunks.map(tables["pairs"]["positive_id"].value_counts()).fillna(0)
    candidates = pairs_per_chunk[pointed]
    if candidates.empty:
        pytest.fail("the slice has no chunk of a seen paper that qrels and mentions point at")
    return int(candidates.idxmax())


def chunk_with_dependents(tables: Tables) -> int:
    """The row of a chunk that qrels, pairs and mentions all point at.

    The pairs stage keeps relevant passages out of training positives, so unless one
    already is, a training pair (of a concept that is not held out) is added whose
    positive is :func:`relevant_chunk`.
    """
    row = relevant_chunk(tables)
    chunk_id, text = tables["chunks"].loc[row, ["chunk_id", "text"]]
    if not (tables["pairs"]["positive_id"] == chunk_id).any():
        add_pair(tables, positive_id=chunk_id, positive=text, negative="", negative_id="")
    return row


def write_inputs(tables: Tables, root: Path) -> Paths:
    paths = Paths(root)
    for table, frame in tables.items():
        path = TABLES[table].path(paths)
        write_table(path, frame, WRITER_SCHEMAS[table])
    return paths


def assert_counts_add_up(result: ValidationResult, tables: Tables) -> None:
    for table in TABLES:
        outcome = result.tables[table]
        assert outcome.rows_in == len(tables[table])
        assert outcome.kept == len(result.kept[table])
        assert outcome.quarantined == len(result.quarantined[table])
        assert outcome.rows_in == outcome.kept + outcome.quarantined, table
        assert sum(outcome.quarantined_by_check.values()) == outcome.quarantined
    totals = result.metrics()["totals"]
    assert totals["rows_in"] == totals["kept"] + totals["quarantined"]


# -- the pipeline's own output ----------------------------------------------------------


def test_the_pipelines_output_validates(
    pipeline_tables: Tables, pipeline_result: ValidationResult
) -> None:
    """What ``make repro`` writes passes every structural check, and whatever row-level
    failures it has stay under the threshold (the run goes on)."""
    assert_counts_add_up(pipeline_result, pipeline_tables)
    limit = PARAMS.validate.max_row_failure_fraction
    for table, outcome in pipeline_result.tables.items():
        direct = sum(
            count
            for check, count in outcome.quarantined_by_check.items()
            if not check.startswith("dangling after ")
        )
        assert direct <= limit * outcome.rows_in, table
    assert pipeline_result.tables["pairs"].kept > 0
    assert pipeline_result.tables["qrels"].kept > 0


def test_validated_output_validates_again_with_nothing_quarantined(
    pipeline_result: ValidationResult,
) -> None:
    again = validate_tables(pipeline_result.kept, PARAMS.validate)
    assert all(outcome.quarantined == 0 for outcome in again.tables.values())


def test_the_slice_is_clean(data: Tables) -> None:
    result = validate_tables(data, PARAMS.validate)
    assert all(outcome.quarantined == 0 for outcome in result.tables.values())
    assert len(data["queries"]) >= 1 and data["qrels"]["unseen"].any()
    assert (data["pairs"]["kind"] == "statement").any()


# -- structural: schema -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "mutate", "check"),
    [
        ("papers", lambda f: set_value(f, 0, "paper_id", "2401.1"), "paper_id:arxiv_id_format"),
        ("chunks", lambda f: f.drop(columns=["section"]), "columns"),
        ("statements", lambda f: set_value(f, 0, "kind", "remark"), "kind:isin"),
        ("edges", lambda f: set_value(f, 0, "relation", "causes"), "relation:isin"),
        ("pairs", lambda f: set_value(f, 0, "split", "test"), "split:isin"),
        ("qrels", lambda f: set_value(f, 0, "grade", -1), "grade:greater_than_or_equal_to(0)"),
    ],
)
def test_a_schema_failure_stops_the_run_naming_table_check_and_rows(
    data: Tables, table: str, mutate: Callable[[pd.DataFrame], pd.DataFrame | None], check: str
) -> None:
    changed = mutate(data[table])  # a new frame, or None when it changed the frame in place
    if changed is not None:
        data[table] = changed
    error = failure(data)
    assert any(t == table and c.startswith(check) for t, c in error.checks())
    message = str(error)
    assert f"[{table}] {check}" in message
    assert "nothing was written" in message


def test_a_failing_row_is_shown_in_the_message(data: Tables) -> None:
    set_value(data["papers"], 0, "paper_id", "2401.1")
    message = str(failure(data))
    assert "paper_id='2401.1'" in message
    assert "mathembed prepare" in message  # where to fix it


def test_all_structural_failures_are_collected(data: Tables) -> None:
    set_value(data["papers"], 0, "content_hash", "nope")
    set_value(data["edges"], 0, "relation", "causes")
    set_value(data["qrels"], 0, "grade", -1)
    checks = failure(data).checks()
    assert {
        ("papers", "content_hash:sha256_format"),
        ("qrels", "grade:greater_than_or_equal_to(0)"),
    } <= checks
    assert any(table == "edges" for table, _ in checks)


# -- structural: integrity --------------------------------------------------------------


def drop_first_paper(tables: Tables) -> None:
    tables["papers"] = tables["papers"].iloc[1:]


def move_chunk_to_other_version(tables: Tables) -> None:
    chunks = tables["chunks"]
    version = int(chunks.at[0, "version"]) + 1
    chunk_id = f"{chunks.at[0, 'paper_id']}v{version}#c{int(chunks.at[0, 'chunk_index']):04d}"
    chunks.loc[0, ["version", "chunk_id"]] = [version, chunk_id]


def repoint(
    table: str, column: str, value: str, where: Callable[[pd.DataFrame], pd.Series] | None = None
) -> Callable[[Tables], None]:
    def mutate(tables: Tables) -> None:
        frame = tables[table]
        row = int(where(frame).idxmax()) if where is not None else 0
        frame.loc[row, column] = value

    return mutate


def drop_qrels_of_first_query(tables: Tables) -> None:
    qrels = tables["qrels"]
    tables["qrels"] = qrels[qrels["query_id"] != tables["queries"]["query_id"].iloc[0]]


def statement_pair(frame: pd.DataFrame) -> pd.Series:
    return frame["kind"].isin(STATEMENT_PAIR_KINDS)


def chunk_pair(frame: pd.DataFrame) -> pd.Series:
    return ~frame["kind"].isin(STATEMENT_PAIR_KINDS)


INTEGRITY = [
    (drop_first_paper, "chunks", "paper_exists"),
    (drop_first_paper, "statements", "paper_exists"),
    (move_chunk_to_other_version, "chunks", "paper_exists"),
    (repoint("edges", "source", "no such concept"), "edges", "source_is_concept"),
    (repoint("edges", "target", "no such concept"), "edges", "target_is_concept"),
    (repoint("mentions", "concept", "no such concept"), "mentions", "concept_exists"),
    (repoint("mentions", "chunk_id", "2401.99999v1#c0000"), "mentions", "chunk_exists"),
    (repoint("mentions", "paper_id", "2401.99999"), "mentions", "chunk_exists"),
    (
        repoint("pairs", "positive_id", "2401.99999v1#c0000", chunk_pair),
        "pairs",
        "positive_chunk_exists",
    ),
    (
        repoint("pairs", "positive_id", "2401.99999v1#s000", statement_pair),
        "pairs",
        "positive_statement_exists",
    ),
    (repoint("queries", "concept", "no such concept"), "queries", "concept_exists"),
    (repoint("qrels", "query_id", "q000000000000"), "qrels", "query_exists"),
    (repoint("qrels", "chunk_id", "2401.99999v1#c0000"), "qrels", "chunk_exists"),
    (drop_qrels_of_first_query, "queries", "has_qrels"),
]


@pytest.mark.parametrize(
    ("mutate", "table", "check"),
    INTEGRITY,
    ids=[f"{t}-{c}-{i}" for i, (_, t, c) in enumerate(INTEGRITY)],
)
def test_broken_integrity_stops_the_run(
    data: Tables, mutate: Callable[[Tables], None], table: str, check: str
) -> None:
    mutate(data)
    error = failure(data)
    assert (table, check) in error.checks()
    assert f"[{table}] {check}" in str(error)
    assert "not found in" in str(error)


# -- structural: leakage ----------------------------------------------------------------


def test_a_held_out_concepts_name_as_anchor_is_leakage(data: Tables) -> None:
    concept = held_out(data)
    add_pair(data, anchor=concept["display_name"], concept=not_held_out(data))
    assert failure(data).checks() == {("pairs", "held_out_concept_anchor")}


def test_a_held_out_concepts_name_spelled_differently_is_leakage(data: Tables) -> None:
    concept = held_out(data)
    spelled = str(concept["name"]).title().replace(" ", "-")  # normalises to the same key
    assert spelled != concept["display_name"]
    add_pair(data, anchor=spelled, concept=not_held_out(data))
    assert failure(data).checks() == {("pairs", "held_out_concept_anchor")}


def test_a_held_out_concepts_description_as_anchor_is_leakage(data: Tables) -> None:
    concept = held_out(data)
    description = "A made-up description that only this held-out concept has."
    concepts = data["concepts"]
    concepts.loc[concepts["name"] == concept["name"], "description"] = description
    add_pair(data, anchor=description, kind="description", concept=not_held_out(data))
    assert failure(data).checks() == {("pairs", "held_out_concept_anchor")}


def test_a_held_out_concepts_alias_as_anchor_is_leakage(data: Tables) -> None:
    concept = held_out(data)
    concepts = data["concepts"]
    row = concepts.index[concepts["name"] == concept["name"]][0]
    concepts.at[row, "aliases"] = ["Zorbian widget"]
    add_pair(data, anchor="Zorbian widget", concept=not_held_out(data))
    assert failure(data).checks() == {("pairs", "held_out_concept_anchor")}


def test_a_pair_of_a_held_out_concept_is_leakage(data: Tables) -> None:
    add_pair(data, anchor="an unrelated anchor text", concept=held_out(data)["name"])
    assert failure(data).checks() == {("pairs", "held_out_concept_anchor")}


def test_a_pair_in_both_splits_is_leakage(data: Tables) -> None:
    pairs = data["pairs"]
    train = pairs[pairs["split"] == "train"].iloc[:1].assign(split="validation")
    data["pairs"] = pd.concat([pairs, train], ignore_index=True)
    error = failure(data)
    assert ("pairs", "pair_in_both_splits") in error.checks()
    assert {table for table, _ in error.checks()} == {"pairs"}


@pytest.mark.parametrize("positive", ["chunk", "statement"])
def test_a_positive_from_an_unseen_paper_is_leakage(data: Tables, positive: str) -> None:
    unseen_chunk = data["qrels"].loc[data["qrels"]["unseen"], "chunk_id"].iloc[0]
    chunks = data["chunks"]
    if positive == "chunk":
        text = chunks.loc[chunks["chunk_id"] == unseen_chunk, "text"].iloc[0]
        add_pair(data, positive=text, positive_id=unseen_chunk)
    else:
        paper = chunks.loc[chunks["chunk_id"] == unseen_chunk, "paper_id"].iloc[0]
        statements = data["statements"]
        statement = statements[statements["paper_id"] == paper].iloc[0]
        add_pair(
            data,
            positive=statement["text"],
            positive_id=statement["statement_id"],
            kind="statement",
        )
    assert failure(data).checks() == {("pairs", "unseen_paper_positive")}


# -- row level: quarantine and cascade --------------------------------------------------


def test_a_short_passage_is_quarantined_with_everything_pointing_at_it(data: Tables) -> None:
    row = chunk_with_dependents(data)
    chunk_id = data["chunks"].at[row, "chunk_id"]
    data["chunks"].loc[row, "text"] = "Too short."
    result = validate_tables(data, LENIENT)

    quarantined = result.quarantined["chunks"]
    assert quarantined["chunk_id"].tolist() == [chunk_id]
    assert quarantined[FAILED_CHECK].tolist() == ["text:passage_length"]
    assert chunk_id not in set(result.kept["chunks"]["chunk_id"])
    for table, column in (
        ("qrels", "chunk_id"),
        ("pairs", "positive_id"),
        ("mentions", "chunk_id"),
    ):
        pointing = data[table][column] == chunk_id
        assert result.tables[table].quarantined == pointing.sum() > 0, table
        assert set(result.quarantined[table][FAILED_CHECK]) == {
            "dangling after text:passage_length"
        }
        assert chunk_id not in set(result.kept[table][column])
    assert_counts_add_up(result, data)
    # What is kept is whole: it validates again with nothing to remove.
    again = validate_tables(result.kept, PARAMS.validate)
    assert all(outcome.quarantined == 0 for outcome in again.tables.values())


def test_a_query_left_without_qrels_is_quarantined(data: Tables) -> None:
    query_id = data["queries"]["query_id"].iloc[0]
    qrels = data["qrels"]
    mine = qrels[qrels["query_id"] == query_id]
    data["qrels"] = pd.concat([qrels[qrels["query_id"] != query_id], mine.iloc[:1]]).reset_index(
        drop=True
    )
    chunk_id = mine["chunk_id"].iloc[0]
    chunks = data["chunks"]
    chunks.loc[chunks["chunk_id"] == chunk_id, "text"] = "x" * 5000
    result = validate_tables(data, LENIENT)
    assert query_id not in set(result.kept["queries"]["query_id"])
    quarantined = result.quarantined["queries"]
    assert quarantined[FAILED_CHECK].tolist() == ["dangling after text:passage_length"]
    assert_counts_add_up(result, data)


def test_a_bad_query_takes_its_qrels_with_it(data: Tables) -> None:
    data["queries"].loc[0, "text"] = "   "
    query_id = data["queries"].at[0, "query_id"]
    result = validate_tables(data, LENIENT)
    assert result.quarantined["queries"][FAILED_CHECK].tolist() == ["text:non_empty"]
    qrels = result.quarantined["qrels"]
    assert len(qrels) == (data["qrels"]["query_id"] == query_id).sum()
    assert set(qrels[FAILED_CHECK]) == {"dangling after text:non_empty"}


def test_an_empty_statement_takes_its_pairs_with_it(data: Tables) -> None:
    pairs = data["pairs"]
    statement_id = pairs.loc[pairs["kind"] == "statement", "positive_id"].iloc[0]
    statements = data["statements"]
    statements.loc[statements["statement_id"] == statement_id, "text"] = ""
    result = validate_tables(data, LENIENT)
    assert result.quarantined["statements"][FAILED_CHECK].tolist() == ["text:non_empty"]
    lost = result.quarantined["pairs"]
    assert set(lost["positive_id"]) == {statement_id}
    assert set(lost[FAILED_CHECK]) == {"dangling after text:non_empty"}


@pytest.mark.parametrize(
    ("text", "check"),
    [
        (
            "Some \\emph{leftover} formatting \\textbf{markup} that the cleaner missed here.",
            "text:latex_markup_share",
        ),
        (
            "A passage with an open brace { that is never closed, long enough to count.",
            "text:balanced_braces",
        ),
        (
            "A passage with one dollar $ sign that opens math and never closes it again.",
            "text:balanced_dollars",
        ),
    ],
)
def test_leftover_latex_is_quarantined(data: Tables, text: str, check: str) -> None:
    row = chunk_with_dependents(data)
    data["chunks"].loc[row, "text"] = text
    result = validate_tables(data, LENIENT)
    assert result.quarantined["chunks"][FAILED_CHECK].tolist() == [check]


@pytest.mark.parametrize(
    ("change", "check"),
    [
        ({"anchor": "  "}, "anchor:non_empty"),
        (
            {"anchor": "SAME TEXT AS THE POSITIVE", "positive": "same text as the positive"},
            "anchor_differs_from_positive",
        ),
        ({"anchor": "Durfee {square"}, "anchor:balanced_braces"),
    ],
)
def test_bad_anchors_are_quarantined(data: Tables, change: dict[str, str], check: str) -> None:
    for column, value in change.items():
        data["pairs"].loc[0, column] = value
    result = validate_tables(data, LENIENT)
    assert result.quarantined["pairs"][FAILED_CHECK].tolist() == [check]
    assert result.tables["pairs"].kept == len(data["pairs"]) - 1


@pytest.mark.parametrize("table", TABLES)
def test_duplicate_ids_keep_the_first_row(data: Tables, table: str) -> None:
    frame = data[table]
    data[table] = pd.concat([frame, frame.iloc[:1]], ignore_index=True)
    result = validate_tables(data, LENIENT)
    assert result.quarantined[table][FAILED_CHECK].tolist() == ["unique_id"]
    assert len(result.kept[table]) == len(frame)
    assert_counts_add_up(result, data)


def test_a_row_failing_two_checks_lists_both(data: Tables) -> None:
    data["chunks"] = pd.concat([data["chunks"], data["chunks"].iloc[:1]], ignore_index=True)
    data["chunks"].loc[len(data["chunks"]) - 1, "text"] = "short"
    result = validate_tables(data, LENIENT)
    assert result.quarantined["chunks"][FAILED_CHECK].tolist() == ["text:passage_length; unique_id"]


def test_quarantine_arithmetic_over_every_table(data: Tables) -> None:
    """Failures in several tables at once: every row is either kept or quarantined."""
    data["chunks"].loc[chunk_with_dependents(data), "text"] = "short"
    data["pairs"].loc[0, "anchor"] = ""
    data["edges"] = pd.concat([data["edges"], data["edges"].iloc[:2]], ignore_index=True)
    data["statements"].loc[0, "text"] = " "
    result = validate_tables(data, LENIENT)
    assert_counts_add_up(result, data)
    assert sum(outcome.quarantined for outcome in result.tables.values()) > 5
    for table in TABLES:
        key = list(formats.KEYS[table])
        together = pd.concat(
            [result.kept[table], result.quarantined[table].drop(columns=FAILED_CHECK)]
        )
        assert sorted(map(tuple, together[key].to_numpy().tolist())) == sorted(
            map(tuple, data[table][key].to_numpy().tolist())
        ), table
        assert list(result.quarantined[table].columns) == [*data[table].columns, FAILED_CHECK]


# -- row level: the threshold -----------------------------------------------------------

# The threshold alone: no paper set aside whole first (tests/faults/test_validate_per_paper.py).
PER_TABLE_ONLY: dict[str, Any] = {"max_paper_row_failure_fraction": 1.0, **SMALL_EVAL}


def shorten_chunks(tables: Tables, count: int) -> None:
    tables["chunks"].loc[: count - 1, "text"] = "short"


def test_below_the_threshold_rows_are_quarantined_and_the_run_goes_on(data: Tables) -> None:
    shorten_chunks(data, 2)
    limit = 2.5 / len(data["chunks"])
    result = validate_tables(data, ValidateParams(max_row_failure_fraction=limit, **PER_TABLE_ONLY))
    assert result.tables["chunks"].quarantined == 2


def test_above_the_threshold_the_run_stops(data: Tables) -> None:
    shorten_chunks(data, 2)
    limit = 1.5 / len(data["chunks"])
    error = failure(data, ValidateParams(max_row_failure_fraction=limit, **PER_TABLE_ONLY))
    assert error.checks() == {("chunks", "max_row_failure_fraction")}
    message = str(error)
    assert "text:passage_length 2" in message and "above" in message


def test_the_default_threshold_comes_from_params_yaml(data: Tables) -> None:
    assert PARAMS.validate.max_row_failure_fraction == 0.05
    shorten_chunks(data, max(1, round(0.2 * len(data["chunks"]))))
    per_table = dataclasses.replace(PARAMS.validate, max_paper_row_failure_fraction=1.0)
    assert ("chunks", "max_row_failure_fraction") in failure(data, per_table).checks()


def test_rows_removed_by_the_cascade_do_not_count_toward_the_threshold(data: Tables) -> None:
    """One bad chunk may take many pairs with it; the pairs table is not 'bad' for that."""
    chunks = data["chunks"]["chunk_id"]
    row = int(chunks.map(data["pairs"]["positive_id"].value_counts()).fillna(0).idxmax())
    chunk_id = data["chunks"].at[row, "chunk_id"]
    data["chunks"].loc[row, "text"] = "short"
    chunk_share = 1 / len(data["chunks"])
    pairs_lost = int((data["pairs"]["positive_id"] == chunk_id).sum())
    pairs_share = pairs_lost / len(data["pairs"])
    assert pairs_share > chunk_share  # the chunk with the most pairs has more than its share
    limit = (chunk_share + pairs_share) / 2
    result = validate_tables(data, ValidateParams(max_row_failure_fraction=limit, **PER_TABLE_ONLY))
    assert result.tables["pairs"].quarantined == pairs_lost


# -- the stage: files, metrics, exit codes ----------------------------------------------


def test_run_validate_writes_validated_tables_quarantine_and_metrics(
    data: Tables, tmp_path: Path, quality_calls: list[Any]
) -> None:
    data["chunks"].loc[chunk_with_dependents(data), "text"] = "short"
    paths = write_inputs(data, tmp_path)
    report = run_validate(LENIENT, paths)

    metrics = json.loads((paths.metrics / "data_quality.json").read_text())
    assert metrics == report.metrics
    for table in TABLES:
        source = TABLES[table].path(paths)
        validated = paths.validated / f"{table}.parquet"
        quarantined = paths.quarantine / f"{table}.parquet"
        counts = metrics["tables"][table]
        assert (
            pq.read_schema(validated).remove_metadata() == pq.read_schema(source).remove_metadata()
        )
        assert pq.read_metadata(validated).num_rows == counts["kept"]
        assert pq.read_schema(quarantined).names == [*WRITER_SCHEMAS[table].names, FAILED_CHECK]
        assert pq.read_metadata(quarantined).num_rows == counts["quarantined"]
        assert counts["rows_in"] == counts["kept"] + counts["quarantined"] == len(data[table])
    assert metrics["tables"]["chunks"]["quarantined_by_check"] == {"text:passage_length": 1}
    checks = metrics["tables"]["pairs"]["checks"]
    assert set(checks) == {"schema", "row_level", "integrity", "leakage"}
    assert checks["leakage"] == {
        "held_out_concept_anchor": 0,
        "pair_in_both_splits": 0,
        "unseen_paper_positive": 0,
    }
    assert metrics["tables"]["chunks"]["checks"]["row_level"]["text:passage_length"] == 1
    assert "paper_id:arxiv_id_format" in metrics["tables"]["chunks"]["checks"]["schema"]
    assert not list(paths.root.rglob("*.tmp"))  # atomic writes leave no temp files

    # The Great Expectations report is built from the validated tables.
    ((tables, given_paths),) = quality_calls
    assert given_paths == paths and report.quality_report is REPORT_BUILT
    assert set(tables) == set(TABLES)
    assert len(tables["chunks"]) == metrics["tables"]["chunks"]["kept"]


def validate_command(*arguments: str) -> Result:
    return CliRunner().invoke(cli.app, ["validate", *arguments])


def test_main_succeeds_and_summarises(
    data: Tables, tmp_path: Path, quality_calls: list[Any]
) -> None:
    data["chunks"].loc[chunk_with_dependents(data), "text"] = "short"
    write_inputs(data, tmp_path)
    params = tmp_path / "params.yaml"
    params.write_text("validate:\n  max_row_failure_fraction: 1.0\n" + SMALL_EVAL_YAML)
    result = validate_command("--root", str(tmp_path), "--params", str(params))
    assert result.exit_code == 0
    out = result.stdout
    assert "chunks: 1 of" in out and "text:passage_length 1" in out
    # The slice's two queries (both named: the synthetic corpus gives no described query)
    # less the one judged only by the quarantined passage.
    assert len(data["queries"]) == 2
    assert "validate: Evaluation set: 1 query over 44 passages" in out
    assert "validate: data-quality report reports/data_quality/index.html" in out
    assert "validate: data quality: 36 of 36 expectations met" in out
    assert (tmp_path / "metrics" / "data_quality.json").is_file()


def test_main_fails_with_a_clear_message_and_records_the_failure(
    data: Tables, tmp_path: Path, quality_calls: list[Any]
) -> None:
    data["qrels"].loc[0, "chunk_id"] = "2401.99999v1#c0000"
    write_inputs(data, tmp_path)
    params = tmp_path / "params.yaml"
    params.write_text("validate:\n" + SMALL_EVAL_YAML)
    result = validate_command("--root", str(tmp_path), "--params", str(params))
    assert result.exit_code == 1
    err = result.stderr
    assert "[qrels] chunk_exists" in err and "chunk_id='2401.99999v1#c0000'" in err
    assert not (tmp_path / "data" / "validated").exists()
    # The failure is recorded (promotion reads it), overwriting any earlier success.
    metrics = json.loads((tmp_path / "metrics" / "data_quality.json").read_text())
    assert metrics == {"passed": False, "failed_checks": ["qrels: chunk_exists"]}
    assert quality_calls == []


def test_main_reports_missing_inputs(tmp_path: Path) -> None:
    result = validate_command("--root", str(tmp_path), "--params", str(REPO / "params.yaml"))
    assert result.exit_code == 1
    err = result.stderr
    assert "papers.parquet not found" in err and "mathembed prepare" in err


def test_main_rejects_a_bad_params_file(tmp_path: Path) -> None:
    params = tmp_path / "params.yaml"
    params.write_text("validate:\n  max_row_failure_fractoin: 0.1\n")
    result = validate_command("--root", str(tmp_path), "--params", str(params))
    assert result.exit_code == 2  # a configuration error (the argparse main gave 1)
    assert "max_row_failure_fractoin" in result.stderr


def test_main_help() -> None:
    result = validate_command("--help")
    assert result.exit_code == 0
    assert "data/quarantine/<table>.parquet" in result.stdout


# -- the evaluation set's shape ---------------------------------------------------------


def test_the_sample_eval_set_passes_at_the_pairs_stages_breadth(
    pipeline_tables: Tables, pipeline_result: ValidationResult
) -> None:
    """pairs.max_relevant_share leaves out what validate would block at the same share."""
    params = dataclasses.replace(
        _PROJECT_PARAMS.validate,
        min_queries=1,
        min_described_queries=0,
        max_query_relevant_share=_PROJECT_PARAMS.pairs.max_relevant_share,
    )
    result = validate_tables(pipeline_tables, params)
    shape = result.metrics()["eval_set"]
    assert shape == pipeline_result.metrics()["eval_set"]
    assert shape["queries"] == len(result.kept["queries"]) >= 10
    assert shape["passages"] == len(result.kept["chunks"])
    assert 1 <= shape["relevant_per_query"]["median"] <= shape["relevant_per_query"]["max"]
    assert shape["max_relevant_share"] <= params.max_query_relevant_share
    assert shape["relevant_seen"] + shape["relevant_unseen"] == len(
        result.kept["qrels"].drop_duplicates(["query_id", "chunk_id"])
    )
    assert result.tables["queries"].checks["eval_set"] == {
        "min_queries": 0,
        "query_relevant_share": 0,
    }


def test_too_few_queries_stop_validation_with_the_reason(pipeline_tables: Tables) -> None:
    named = pipeline_tables["queries"].loc[pipeline_tables["queries"]["set"] == "named"]
    queries = (
        pipeline_tables["qrels"]["query_id"]
        .isin(named["query_id"])
        .pipe(lambda judged: pipeline_tables["qrels"].loc[judged, "query_id"].nunique())
    )
    params = dataclasses.replace(PARAMS.validate, min_queries=queries + 1)
    error = failure(pipeline_tables, params)
    assert error.checks() == {("queries", "min_queries")}
    message = str(error)
    assert f"only {queries} named queries have a relevant passage" in message
    assert f"fewer than validate.min_queries ({queries + 1})" in message
    assert "mathembed pairs" in message
    # One query fewer than there are passes.
    validate_tables(pipeline_tables, dataclasses.replace(params, min_queries=queries))


def test_a_query_relevant_to_much_of_the_corpus_stops_validation(data: Tables) -> None:
    """Every passage of the slice made relevant to one query: it is named, worst first."""
    query_id, concept = data["queries"].loc[0, ["query_id", "concept"]]
    chunk_ids = data["chunks"]["chunk_id"]
    known = set(data["qrels"].loc[data["qrels"]["query_id"] == query_id, "chunk_id"])
    extra = pd.DataFrame(
        {
            "query_id": query_id,
            "chunk_id": [chunk for chunk in chunk_ids if chunk not in known],
            "grade": 1,
            "unseen": False,
        }
    )
    data["qrels"] = pd.concat([data["qrels"], extra], ignore_index=True)
    params = dataclasses.replace(PARAMS.validate, max_query_relevant_share=0.5)
    error = failure(data, params)
    assert error.checks() == {("queries", "query_relevant_share")}
    message = str(error)
    passages = len(chunk_ids)
    assert (
        f"query {query_id} ({concept!r}): {passages} of {passages} passages relevant (100.0%)"
        in (message)
    )
    assert "pairs.max_relevant_share" in message and "pairs.qrels_scope" in message
    assert "rerun mathembed pairs and mathembed validate" in message
    # At the full share the same set passes.
    validate_tables(data, dataclasses.replace(params, max_query_relevant_share=1.0))


def test_a_degenerate_eval_set_is_recorded_as_failed(
    data: Tables, tmp_path: Path, quality_calls: list[Any]
) -> None:
    paths = write_inputs(data, tmp_path)
    params = dataclasses.replace(PARAMS.validate, min_queries=len(data["queries"]) + 1)
    with pytest.raises(ValidationError, match="validate.min_queries"):
        run_validate(params, paths)
    metrics = json.loads((paths.metrics / "data_quality.json").read_text())
    assert metrics == {"passed": False, "failed_checks": ["queries: min_queries"]}
    assert quality_calls == []
