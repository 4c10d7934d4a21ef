"""pipelines.validate.schemas: each table's model accepts the contract's data and names what
it rejects.

Every check is tried on a small hand-built table that breaks it (and only it); the policy
around the checks (stop or quarantine) is tested in tests/unit/validate/test_validate.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pandera.pandas as pa
import pytest

from pipelines.common.config import ValidateParams
from pipelines.common.tables import (
    TABLES,
    write_table,
)
from pipelines.validate import formats, schemas
from pipelines.validate.references import REFERENCES

PARAMS = ValidateParams()
LONG_TEXT = "We study the Durfee square of a partition $\\lambda \\vdash n$ and its size. " * 2

WRITER_SCHEMAS = {name: table.schema for name, table in TABLES.items()}


def valid_rows() -> dict[str, list[dict[str, Any]]]:
    """Two rows per table, one of them from an old-style paper id, all valid."""
    return {
        "papers": [
            {
                "paper_id": "2401.00001",
                "version": 2,
                "title": "Durfee squares",
                "abstract": "On Durfee squares.",
                "authors": ["A. Author"],
                "categories": ["math.CO", "math.NT"],
                "primary_category": "math.CO",
                "published": "2024-01-01T10:00:00Z",
                "updated": "2024-01-03T10:00:00Z",
                "source_kind": "tex",
                "content_hash": "a" * 64,
                "n_chunks": 1,
                "n_statements": 1,
                "citing_sentences": ["Every partition has one, by Definition [ref]."],
                "citing_labels": ["def:durfee"],
                "url": "https://arxiv.org/abs/2401.00001",
            },
            {
                "paper_id": "math.AG/0501001",
                "version": 1,
                "title": "Old paper",
                "abstract": "An abstract only.",
                "authors": [],
                "categories": ["math.AG"],
                "primary_category": "math.AG",
                "published": "2005-01-01T00:00:00Z",
                "updated": "2005-01-01T00:00:00Z",
                "source_kind": "abstract_only",
                "content_hash": "b" * 64,
                "n_chunks": 1,
                "n_statements": 0,
                "citing_sentences": [],
                "citing_labels": [],
                "url": "",  # no true link known
            },
        ],
        "chunks": [
            {
                "chunk_id": "2401.00001v2#c0000",
                "paper_id": "2401.00001",
                "version": 2,
                "chunk_index": 0,
                "section": "Introduction",
                "text": LONG_TEXT,
            },
            {
                "chunk_id": "math.AG/0501001v1#c0000",
                "paper_id": "math.AG/0501001",
                "version": 1,
                "chunk_index": 0,
                "section": "",
                "text": "An abstract only, long enough to be a passage of its own here.",
            },
        ],
        "statements": [
            {
                "statement_id": "2401.00001v2#s000",
                "paper_id": "2401.00001",
                "version": 2,
                "kind": "definition",
                "name": "Durfee square",
                "label": "def:durfee",
                "text": "The Durfee square is the largest square in a Young diagram.",
                "terms": ["Durfee square"],
                "refs": [],
                "proof": "",
                "slogan": "",
            },
            {
                "statement_id": "2401.00001v2#s001",
                "paper_id": "2401.00001",
                "version": 2,
                "kind": "theorem",
                "name": "",
                "label": "",
                "text": "Every partition has a Durfee square $d \\times d$.",
                "terms": [],
                "refs": ["def:durfee"],
                "proof": "Take the largest $d$ with $\\lambda_d \\geq d$.",
                "slogan": "Every partition has a largest square.",
            },
        ],
        "concepts": [
            {
                "name": "durfee square",
                "display_name": "Durfee square",
                "type": "definition",
                "description": "The largest square in a Young diagram.",
                "aliases": ["Durfee's square"],
                "papers": ["2401.00001"],
                "statements": ["2401.00001v2#s000"],
            },
            {
                "name": "partition",
                "display_name": "partition",
                "type": "object",
                "description": "",
                "aliases": [],
                "papers": ["2401.00001", "math.AG/0501001"],
                "statements": [],
            },
        ],
        "edges": [
            {
                "source": "durfee square",
                "target": "partition",
                "relation": "uses",
                "papers": ["2401.00001"],
            },
            {
                "source": "partition",
                "target": "durfee square",
                "relation": "related_to",
                "papers": ["2401.00001"],
            },
        ],
        "mentions": [
            {
                "concept": "durfee square",
                "chunk_id": "2401.00001v2#c0000",
                "paper_id": "2401.00001",
                "evidence": "definition",
            },
            {
                "concept": "partition",
                "chunk_id": "math.AG/0501001v1#c0000",
                "paper_id": "math.AG/0501001",
                "evidence": "text",
            },
        ],
        "pairs": [
            {
                "anchor": "Durfee square",
                "positive": LONG_TEXT,
                "kind": "name",
                "concept": "durfee square",
                "positive_id": "2401.00001v2#c0000",
                "negative": "An abstract only, long enough to be a passage of its own here.",
                "negative_id": "math.AG/0501001v1#c0000",
                "split": "train",
            },
            {
                "anchor": "Durfee square",
                "positive": "The Durfee square is the largest square in a Young diagram.",
                "kind": "statement",
                "concept": "durfee square",
                "positive_id": "2401.00001v2#s000",
                "negative": "",
                "negative_id": "",
                "split": "validation",
            },
        ],
        "queries": [
            {
                "query_id": "q0123456789ab",
                "concept": "partition",
                "text": "partition",
                "set": "named",
                "exclude": [],
            },
            {
                "query_id": "qba9876543210",
                "concept": "durfee square",
                "text": "Durfee square",
                "set": "named",
                "exclude": [],
            },
        ],
        "qrels": [
            {
                "query_id": "q0123456789ab",
                "chunk_id": "2401.00001v2#c0000",
                "grade": 1,
                "unseen": False,
            },
            {
                "query_id": "q0123456789ab",
                "chunk_id": "math.AG/0501001v1#c0000",
                "grade": 2,
                "unseen": True,
            },
        ],
    }


def frame(table: str) -> pd.DataFrame:
    """The valid rows of ``table`` as the writer's Parquet schema would read back."""
    return pd.DataFrame(valid_rows()[table], columns=WRITER_SCHEMAS[table].names)


def failed_checks(table: str, data: pd.DataFrame, params: ValidateParams = PARAMS) -> set[str]:
    """The names (``column:check`` or ``check``) of the checks ``data`` fails."""
    try:
        schemas.table_schema(table, params).validate(data, lazy=True)
    except pa.errors.SchemaErrors as errors:
        names = set()
        for error in errors.schema_errors:
            check = error.check
            name = (
                schemas.check_label(check)
                if check is not None and not isinstance(check, str)
                else str(check)
            )
            names.add(f"{error.column_name}:{name}" if error.column_name else name)
        return names
    return set()


# -- the contract's tables pass ---------------------------------------------------------


@pytest.mark.parametrize("table", TABLES)
def test_valid_rows_pass(table: str) -> None:
    assert failed_checks(table, frame(table)) == set()


@pytest.mark.parametrize("table", TABLES)
def test_models_agree_with_the_writers_parquet_schemas(table: str, tmp_path: Path) -> None:
    """The models' columns are the writers' columns, and what a writer writes (even an
    empty table) reads back as something the model accepts: the two cannot drift apart."""
    writer = WRITER_SCHEMAS[table]
    assert list(schemas.MODELS[table].to_schema().columns) == writer.names
    for rows in (valid_rows()[table], []):
        path = tmp_path / f"{table}-{len(rows)}.parquet"
        write_table(path, pd.DataFrame(rows, columns=writer.names), writer)
        assert failed_checks(table, pd.read_parquet(path)) == set()


def test_every_reference_names_real_columns() -> None:
    for reference in REFERENCES:
        assert set(reference.columns) <= set(WRITER_SCHEMAS[reference.table].names)
        assert set(reference.parent_columns) <= set(WRITER_SCHEMAS[reference.parent].names)
        assert len(reference.columns) == len(reference.parent_columns)


def test_row_level_names_are_checks_the_schemas_run() -> None:
    ran = {
        name.rpartition(":")[2]
        for table in TABLES
        for name in schemas.check_names(schemas.table_schema(table, PARAMS))
    }
    assert ran >= formats.ROW_LEVEL_CHECKS
    assert formats.is_row_level("text:passage_length")
    assert formats.is_row_level("unique_id")
    assert not formats.is_row_level("paper_id:arxiv_id_format")
    assert not formats.is_row_level("version:dtype")


# -- id formats -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "paper_id", ["2401.00001", "0704.0001", "math/0501001", "math.AG/0501001", "hep-th/9901001"]
)
def test_arxiv_ids_in_both_styles_pass(paper_id: str) -> None:
    papers = frame("papers").assign(paper_id=[paper_id, "2401.00002"])
    assert failed_checks("papers", papers) == set()
    chunks = frame("chunks").iloc[:1].assign(paper_id=paper_id, chunk_id=f"{paper_id}v2#c0000")
    assert failed_checks("chunks", chunks) == set()


@pytest.mark.parametrize(
    "paper_id",
    [
        "2401.001",
        "2401.000001",
        "24010.0001",
        "Math/0501001",
        "math/050100",
        "math.ag/0501001",
        "2401.00001v1",
        "",
    ],
)
def test_malformed_arxiv_ids_fail(paper_id: str) -> None:
    papers = frame("papers").assign(paper_id=[paper_id, "2401.00002"])
    assert failed_checks("papers", papers) == {"paper_id:arxiv_id_format"}


@pytest.mark.parametrize("chunk_id", ["2401.00001v0#c0000", "2401.00001v2#c12", "2401.00001#c0000"])
def test_malformed_chunk_ids_fail(chunk_id: str) -> None:
    mentions = frame("mentions").assign(chunk_id=[chunk_id, "math.AG/0501001v1#c0000"])
    assert failed_checks("mentions", mentions) == {"chunk_id:chunk_id_format"}


# -- each check, broken on its own ------------------------------------------------------

Mutation = Callable[[pd.DataFrame], pd.DataFrame]


def set_cell(column: str, value: Any, row: int = 0) -> Mutation:
    def mutate(data: pd.DataFrame) -> pd.DataFrame:
        data = data.copy()
        values = data[column].tolist()
        values[row] = value
        data[column] = pd.Series(values, index=data.index, dtype=data[column].dtype)
        return data

    return mutate


def set_list(column: str, value: list[str]) -> Mutation:
    def mutate(data: pd.DataFrame) -> pd.DataFrame:
        data = data.copy()
        data[column] = [value, *data[column].tolist()[1:]]
        return data

    return mutate


def duplicate_first_row(data: pd.DataFrame) -> pd.DataFrame:
    return pd.concat([data, data.iloc[:1]], ignore_index=True)


# (table, mutation, the checks it fails, "&"-separated; isin's matched by prefix)
BREAKS: list[tuple[str, Mutation, str]] = [
    ("papers", set_cell("version", 0), "version:greater_than_or_equal_to(1)"),
    ("papers", set_list("authors", [1, 2]), "authors:string_list"),  # type: ignore[list-item]
    ("papers", set_list("categories", ["math.CO", "math CO"]), "categories:category_list"),
    (
        "papers",
        set_cell("primary_category", "Mathematics"),
        "primary_category:category_format & primary_category_listed",
    ),
    ("papers", set_cell("published", "2024-01-01 10:00"), "published:iso_utc_format"),
    ("papers", set_cell("updated", "2023-12-31T00:00:00Z"), "updated_not_before_published"),
    ("papers", set_cell("primary_category", "math.AG"), "primary_category_listed"),
    ("papers", set_cell("source_kind", "withdrawn"), "source_kind:isin(('tex', 'abstract_only'))"),
    ("papers", set_cell("content_hash", "abc"), "content_hash:sha256_format"),
    ("papers", set_cell("n_chunks", 0), "n_chunks:greater_than_or_equal_to(1)"),
    ("papers", set_cell("n_statements", -1), "n_statements:greater_than_or_equal_to(0)"),
    ("papers", duplicate_first_row, "unique_id"),
    ("papers", set_cell("citing_labels", []), "citing_aligned"),
    ("papers", set_cell("citing_sentences", [3]), "citing_sentences:string_list"),
    ("papers", set_cell("url", "javascript:alert(1)"), "url:link_format"),  # it becomes an href
    ("papers", set_cell("url", "http://arxiv.org/abs/2401.00001"), "url:link_format"),
    ("chunks", set_cell("chunk_index", 1), "chunk_id_spells_paper_version_index"),
    ("chunks", set_cell("version", 1), "chunk_id_spells_paper_version_index"),
    (
        "chunks",
        set_cell("chunk_index", -1),
        "chunk_index:greater_than_or_equal_to(0) & chunk_id_spells_paper_version_index",
    ),
    ("chunks", set_cell("text", "too short"), "text:passage_length"),
    ("chunks", set_cell("text", "x" * 4001), "text:passage_length"),
    ("chunks", duplicate_first_row, "unique_id"),
    ("statements", set_cell("kind", "remark"), "kind:isin"),
    (
        "statements",
        set_cell("statement_id", "2401.00001v1#s000"),
        "statement_id_spells_paper_version",
    ),
    ("statements", set_cell("statement_id", "2401.00001v2#s0"), "statement_id:statement_id_format"),
    ("statements", set_cell("text", "  "), "text:non_empty"),
    ("concepts", set_cell("name", "Durfee squares"), "name:normalised"),
    ("concepts", set_cell("name", ""), "name:str_length(1, None)"),
    ("concepts", set_cell("display_name", ""), "display_name:str_length(1, None)"),
    ("concepts", set_cell("type", "lemma"), "type:isin"),
    ("concepts", set_list("papers", []), "papers:arxiv_id_list"),
    ("concepts", set_list("papers", ["2401.1"]), "papers:arxiv_id_list"),
    ("concepts", set_cell("aliases", "Durfee's square"), "aliases:string_list"),
    ("concepts", duplicate_first_row, "unique_id"),
    ("edges", set_cell("relation", "causes"), "relation:isin"),
    ("edges", set_cell("target", "durfee square"), "no_self_loop"),
    ("edges", duplicate_first_row, "unique_id"),
    ("mentions", set_cell("evidence", "guess"), "evidence:isin"),
    ("mentions", set_cell("paper_id", "2401/00001"), "paper_id:arxiv_id_format"),
    ("mentions", duplicate_first_row, "unique_id"),
    ("pairs", set_cell("kind", "random"), "kind:isin"),
    ("pairs", set_cell("split", "test"), "split:isin"),
    ("pairs", set_cell("positive_id", "2401.00001v2#s000"), "positive_id_matches_kind"),
    ("pairs", set_cell("anchor", " "), "anchor:non_empty"),
    ("pairs", set_cell("positive", ""), "positive:non_empty"),
    ("pairs", set_cell("anchor", LONG_TEXT.upper() + " "), "anchor_differs_from_positive"),
    ("pairs", set_cell("concept", ""), "concept:str_length(1, None)"),
    ("pairs", duplicate_first_row, "unique_id"),
    ("queries", set_cell("query_id", "q123"), "query_id:query_id_format"),
    ("queries", set_cell("text", ""), "text:non_empty"),
    ("queries", duplicate_first_row, "unique_id"),
    ("queries", set_cell("set", "masked"), "set:isin"),
    ("queries", set_cell("exclude", ["2401.00001"]), "exclude:chunk_id_list"),
    ("qrels", set_cell("grade", -1), "grade:greater_than_or_equal_to(0)"),
    ("qrels", set_cell("chunk_id", "2401.00001v2"), "chunk_id:chunk_id_format"),
    ("qrels", duplicate_first_row, "unique_id"),
]


@pytest.mark.parametrize(
    ("table", "mutate", "check"), BREAKS, ids=[f"{t}-{c}" for t, _, c in BREAKS]
)
def test_each_check_fails_on_data_that_breaks_it(table: str, mutate: Mutation, check: str) -> None:
    failed = failed_checks(table, mutate(frame(table)))
    expected = check.split(" & ")
    # Exactly these checks (isin's label lists the allowed values: matched by prefix).
    assert len(failed) == len(expected), failed
    assert all(any(name.startswith(prefix) for name in failed) for prefix in expected), failed


def test_a_paper_needs_a_category_and_its_primary_among_them() -> None:
    papers = set_list("categories", [])(frame("papers"))
    assert failed_checks("papers", papers) == {
        "categories:category_list",
        "primary_category_listed",
    }


def test_duplicates_flag_only_the_later_rows() -> None:
    chunks = duplicate_first_row(frame("chunks"))
    with pytest.raises(pa.errors.SchemaErrors) as caught:
        schemas.table_schema("chunks", PARAMS).validate(chunks, lazy=True)
    (error,) = caught.value.schema_errors
    assert set(error.failure_cases["index"]) == {2}


@pytest.mark.parametrize(
    ("mutate", "check"),
    [
        (lambda data: data.drop(columns=["text"]), "column_in_dataframe"),
        (lambda data: data.assign(extra=1), "column_in_schema"),
        (lambda data: data.astype({"version": "float64"}), "version:dtype('int64')"),
        (lambda data: data.astype({"chunk_index": "int32"}), "chunk_index:dtype('int64')"),
        (set_cell("section", None), "section:not_nullable"),
    ],
    ids=["missing column", "extra column", "float version", "int32 index", "null section"],
)
def test_structure_is_checked(mutate: Mutation, check: str) -> None:
    assert check in failed_checks("chunks", mutate(frame("chunks")))


def test_qrels_unseen_must_be_boolean() -> None:
    qrels = frame("qrels").astype({"unseen": "str"})
    assert "unseen:dtype('bool')" in failed_checks("qrels", qrels)


# -- text checks, bounded by params -----------------------------------------------------


def test_passage_bounds_come_from_params() -> None:
    chunks = set_cell("text", "x" * 30)(frame("chunks"))
    assert failed_checks("chunks", chunks) == {"text:passage_length"}
    lenient = ValidateParams(min_passage_chars=20)
    assert failed_checks("chunks", chunks, lenient) == set()
    strict = ValidateParams(max_passage_chars=100)
    assert failed_checks("chunks", frame("chunks"), strict) == {"text:passage_length"}


@pytest.mark.parametrize(
    ("text", "share"),
    [
        ("Plain text with $\\alpha \\beta$ math only.", 0.0),
        ("A price of \\$5 and $x \\in X$.", 0.0),
        ("\\emph", 1.0),
        ("ab \\foo", 4 / 7),
    ],
)
def test_latex_markup_share_counts_commands_outside_math(text: str, share: float) -> None:
    assert formats.latex_markup_share(pd.Series([text], dtype="str")).iloc[0] == pytest.approx(
        share
    )


@pytest.mark.parametrize(
    ("text", "check"),
    [
        (
            "The \\emph{Durfee square} of a \\textbf{partition} is \\cite{x} well known.",
            "latex_markup_share",
        ),
        (
            "The set $\\{1, 2\\}$ and $f(x)$ are both fine, but here { is left open.",
            "balanced_braces",
        ),
        (
            "A partition $n into parts, with the closing dollar missing here and there.",
            "balanced_dollars",
        ),
    ],
)
@pytest.mark.parametrize("table", ["chunks", "statements", "queries"])
def test_leftover_latex_fails_the_named_check(table: str, text: str, check: str) -> None:
    assert failed_checks(table, set_cell("text", text)(frame(table))) == {f"text:{check}"}


def test_leftover_latex_in_anchors_is_checked() -> None:
    pairs = set_cell("anchor", "Durfee {square")(frame("pairs"))
    assert failed_checks("pairs", pairs) == {"anchor:balanced_braces"}


@pytest.mark.parametrize(
    "text",
    [
        "Escaped braces \\{ and a literal dollar \\$ are text, not markup, in this passage.",
        "Math keeps its commands: $\\sum_{n \\geq 0} \\frac{q^{n^2}}{(q;q)_n}$ in the passage.",
    ],
)
def test_escapes_and_math_are_not_leftover_markup(text: str) -> None:
    assert failed_checks("chunks", set_cell("text", text)(frame("chunks"))) == set()


def test_markup_threshold_comes_from_params() -> None:
    text = "Some words and one \\emph command in a passage that is long enough to count."
    chunks = set_cell("text", text)(frame("chunks"))
    assert failed_checks("chunks", chunks) == {"text:latex_markup_share"}
    assert failed_checks("chunks", chunks, ValidateParams(max_latex_markup_share=0.1)) == set()


def test_unescaped_count() -> None:
    texts = pd.Series(["$a$ \\$ $b$", "{\\{}", ""], dtype="str")
    assert formats.unescaped_count(texts, "$").tolist() == [4, 0, 0]
    assert formats.unescaped_count(texts, "{").tolist() == [0, 1, 0]


# -- references -------------------------------------------------------------------------


def test_reference_finds_dangling_rows_on_composite_keys() -> None:
    (reference,) = [r for r in REFERENCES if r.table == "chunks"]
    papers = frame("papers")
    chunks = frame("chunks").assign(version=[1, 1])  # 2401.00001 is at version 2
    assert reference.dangling(chunks, papers).tolist() == [True, False]


def test_reference_restricted_to_some_rows() -> None:
    (to_chunks,) = [r for r in REFERENCES if r.name == "positive_chunk_exists"]
    (to_statements,) = [r for r in REFERENCES if r.name == "positive_statement_exists"]
    pairs = frame("pairs")
    assert not to_chunks.dangling(pairs, frame("chunks")).any()
    assert not to_statements.dangling(pairs, frame("statements")).any()
    assert to_statements.dangling(pairs, frame("statements").iloc[:0]).tolist() == [False, True]
