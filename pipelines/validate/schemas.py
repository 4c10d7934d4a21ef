"""What the values of every table must be: one pandera model per table.

One :class:`~pandera.api.pandas.model.DataFrameModel` per table of the contract
(:data:`pipelines.common.tables.TABLES`): column types, nullability, ranges, allowed
values, arXiv id and version formats, ids that must be unique, and the consistency of the
columns of one row (a chunk id spells its paper, version and index). :func:`table_schema`
adds the checks whose bounds come from ``params.yaml`` (section ``validate``: passage
length, leftover LaTeX markup). The links between tables are in
:mod:`pipelines.validate.references`.

The contract's Arrow schemas fix the Parquet column types, even of an empty table; the
models here say what the values must be, and take their allowed values from the
contract. The two must agree on the columns and their types:
tests/unit/validate/test_schemas.py checks that each table's Arrow schema reads back as
something its model accepts, and tests/unit/validate/test_validate.py that the real
outputs of the pipeline (``make repro``'s stages) validate.

Every check has a name (``<column>:<check>`` for a column's, the bare name for a
table-wide one). A check named in :data:`ROW_LEVEL_CHECKS` judges single rows that can be
set aside without making the rest wrong (a passage too short, a duplicate id); every other
failure is *structural*: the table as a whole is not what the contract says. What
happens to each (stop or quarantine) is decided in :mod:`pipelines.validate.stage`.

All checks are vectorised (pandas ``str`` methods, which run on Arrow strings), except
the list columns' item checks and the concept-name check, which call Python per row of
the small tables they live in (papers, concepts, edges).

The formats, row keys and vectorised helpers the models are built from are in
:mod:`pipelines.validate.formats`.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
import pandera.pandas as pa
from pandera.typing import Series

from pipelines.common.config import ValidateParams
from pipelines.common.tables import (
    CONCEPT_TYPES,
    EVIDENCE_ORDER,
    PAIR_KINDS,
    PAPER_SOURCE_KINDS,
    RELATIONS,
    SPLITS,
    STATEMENT_KINDS,
    STATEMENT_PAIR_KINDS,
    STORED_QUERY_SETS,
)
from pipelines.mathtext.names import normalise_name
from pipelines.validate.formats import (
    ARXIV_ID,
    CATEGORY,
    CHUNK_ID,
    ISO_UTC,
    LINK,
    QUERY_ID,
    SHA256_HEX,
    STATEMENT_ID,
    first_of_each_key,
    latex_markup_share,
    matches,
    non_blank,
    string_lists,
    unescaped_count,
)

# -- the models -------------------------------------------------------------------------


class PapersSchema(pa.DataFrameModel):
    """``data/processed/papers.parquet``: one row per paper, at its latest version."""

    paper_id: Series[str]
    version: Series[int] = pa.Field(ge=1)
    title: Series[str]
    abstract: Series[str]
    authors: Series[object]
    categories: Series[object]
    primary_category: Series[str]
    published: Series[str]
    updated: Series[str]
    source_kind: Series[str] = pa.Field(isin=PAPER_SOURCE_KINDS)
    content_hash: Series[str]
    n_chunks: Series[int] = pa.Field(ge=1)  # an abstract-only paper has its abstract
    n_statements: Series[int] = pa.Field(ge=0)
    citing_sentences: Series[object]  # the sentences that cite a label, cleaned
    citing_labels: Series[object]  # ... and the labels each cites, comma-separated
    url: Series[str]  # where a reader finds the paper; "" when no true link is known

    class Config:
        strict = True  # no column beyond the contract's

    @pa.check("paper_id", name="arxiv_id_format")
    def _paper_id(cls, values: pd.Series) -> pd.Series:
        return matches(values, ARXIV_ID)

    @pa.check("authors", name="string_list")
    def _authors(cls, values: pd.Series) -> pd.Series:
        return string_lists(values, None, non_empty=False)

    @pa.check("categories", name="category_list")
    def _categories(cls, values: pd.Series) -> pd.Series:
        return string_lists(values, CATEGORY, non_empty=True)

    @pa.check("citing_sentences", "citing_labels", name="string_list")
    def _citing(cls, values: pd.Series) -> pd.Series:
        return string_lists(values, None, non_empty=False)

    @pa.dataframe_check(name="citing_aligned")
    def _citing_aligned(cls, frame: pd.DataFrame) -> pd.Series:
        # one label list per sentence
        return pd.Series(
            [
                len(sentences) == len(labels)
                for sentences, labels in zip(
                    frame["citing_sentences"], frame["citing_labels"], strict=True
                )
            ],
            index=frame.index,
            dtype=bool,
        )

    @pa.check("primary_category", name="category_format")
    def _primary_category(cls, values: pd.Series) -> pd.Series:
        return matches(values, CATEGORY)

    @pa.check("published", "updated", name="iso_utc_format")
    def _times(cls, values: pd.Series) -> pd.Series:
        return matches(values, ISO_UTC)

    @pa.check("content_hash", name="sha256_format")
    def _content_hash(cls, values: pd.Series) -> pd.Series:
        return matches(values, SHA256_HEX)

    @pa.check("url", name="link_format")
    def _url(cls, values: pd.Series) -> pd.Series:
        return matches(values, LINK)

    @pa.dataframe_check(name="updated_not_before_published")
    def _updated(cls, frame: pd.DataFrame) -> pd.Series:
        # Same fixed-width UTC format on both sides: text order is time order.
        return frame["updated"] >= frame["published"]

    @pa.dataframe_check(name="primary_category_listed")
    def _primary_listed(cls, frame: pd.DataFrame) -> pd.Series:
        listed = frame["categories"].explode()
        same = listed == frame["primary_category"].reindex(listed.index)
        return same.groupby(level=0).any().reindex(frame.index, fill_value=False)

    @pa.dataframe_check(name="unique_id")
    def _unique(cls, frame: pd.DataFrame) -> pd.Series:
        return first_of_each_key(frame, "papers")


class ChunksSchema(pa.DataFrameModel):
    """``data/processed/chunks.parquet``: the passages, ``{paper_id}v{version}#c{index:04d}``."""

    chunk_id: Series[str]
    paper_id: Series[str]
    version: Series[int] = pa.Field(ge=1)
    chunk_index: Series[int] = pa.Field(ge=0)
    section: Series[str]
    text: Series[str]

    class Config:
        strict = True

    @pa.check("chunk_id", name="chunk_id_format")
    def _chunk_id(cls, values: pd.Series) -> pd.Series:
        return matches(values, CHUNK_ID)

    @pa.check("paper_id", name="arxiv_id_format")
    def _paper_id(cls, values: pd.Series) -> pd.Series:
        return matches(values, ARXIV_ID)

    @pa.dataframe_check(name="chunk_id_spells_paper_version_index")
    def _spelled(cls, frame: pd.DataFrame) -> pd.Series:
        spelled = (
            frame["paper_id"]
            + "v"
            + frame["version"].astype(str)
            + "#c"
            + frame["chunk_index"].astype(str).str.zfill(4)
        )
        return frame["chunk_id"] == spelled

    @pa.dataframe_check(name="unique_id")
    def _unique(cls, frame: pd.DataFrame) -> pd.Series:
        return first_of_each_key(frame, "chunks")


class StatementsSchema(pa.DataFrameModel):
    """``data/processed/statements.parquet``: theorem-like statements, ``…#s{index:03d}``."""

    statement_id: Series[str]
    paper_id: Series[str]
    version: Series[int] = pa.Field(ge=1)
    kind: Series[str] = pa.Field(isin=STATEMENT_KINDS)
    name: Series[str]
    label: Series[str]
    text: Series[str]
    terms: Series[object]  # a definition's emphasised (defined) terms
    refs: Series[object]  # the labels it and its proof cite
    proof: Series[str]  # "" when no proof follows it
    slogan: Series[str]  # "" when its authors wrote none

    class Config:
        strict = True

    @pa.check("terms", "refs", name="string_list")
    def string_lists(cls, values: pd.Series) -> pd.Series:
        return string_lists(values, None, non_empty=False)

    @pa.check("statement_id", name="statement_id_format")
    def _statement_id(cls, values: pd.Series) -> pd.Series:
        return matches(values, STATEMENT_ID)

    @pa.check("paper_id", name="arxiv_id_format")
    def _paper_id(cls, values: pd.Series) -> pd.Series:
        return matches(values, ARXIV_ID)

    @pa.check("text", name="non_empty")
    def _text(cls, values: pd.Series) -> pd.Series:
        return non_blank(values)

    @pa.dataframe_check(name="statement_id_spells_paper_version")
    def _spelled(cls, frame: pd.DataFrame) -> pd.Series:
        prefix = frame["statement_id"].str.replace(r"#s\d+$", "", regex=True)
        return prefix == frame["paper_id"] + "v" + frame["version"].astype(str)

    @pa.dataframe_check(name="unique_id")
    def _unique(cls, frame: pd.DataFrame) -> pd.Series:
        return first_of_each_key(frame, "statements")


class ConceptsSchema(pa.DataFrameModel):
    """``data/graph/concepts.parquet``: one row per concept, keyed by its normalised name."""

    name: Series[str] = pa.Field(str_length={"min_value": 1})
    display_name: Series[str] = pa.Field(str_length={"min_value": 1})
    type: Series[str] = pa.Field(isin=CONCEPT_TYPES)
    description: Series[str]  # "" when the graph found none
    aliases: Series[object]
    papers: Series[object]
    statements: Series[object]  # the statements that define or state it

    class Config:
        strict = True

    @pa.check("statements", name="statement_id_list")
    def _statements(cls, values: pd.Series) -> pd.Series:
        return string_lists(values, STATEMENT_ID, non_empty=False)

    @pa.check("name", name="normalised")
    def _name(cls, values: pd.Series) -> pd.Series:
        # normalise_name is the concept key the graph stage uses; a key is its own key.
        return values == values.map(normalise_name)

    @pa.check("aliases", name="string_list")
    def _aliases(cls, values: pd.Series) -> pd.Series:
        return string_lists(values, None, non_empty=False)

    @pa.check("papers", name="arxiv_id_list")
    def _papers(cls, values: pd.Series) -> pd.Series:
        return string_lists(values, ARXIV_ID, non_empty=True)

    @pa.dataframe_check(name="unique_id")
    def _unique(cls, frame: pd.DataFrame) -> pd.Series:
        return first_of_each_key(frame, "concepts")


class EdgesSchema(pa.DataFrameModel):
    """``data/graph/edges.parquet``: typed relations between two concepts."""

    source: Series[str] = pa.Field(str_length={"min_value": 1})
    target: Series[str] = pa.Field(str_length={"min_value": 1})
    relation: Series[str] = pa.Field(isin=RELATIONS)
    papers: Series[object]

    class Config:
        strict = True

    @pa.check("papers", name="arxiv_id_list")
    def _papers(cls, values: pd.Series) -> pd.Series:
        return string_lists(values, ARXIV_ID, non_empty=True)

    @pa.dataframe_check(name="no_self_loop")
    def _no_self_loop(cls, frame: pd.DataFrame) -> pd.Series:
        return frame["source"] != frame["target"]

    @pa.dataframe_check(name="unique_id")
    def _unique(cls, frame: pd.DataFrame) -> pd.Series:
        return first_of_each_key(frame, "edges")


class MentionsSchema(pa.DataFrameModel):
    """``data/graph/mentions.parquet``: which chunks talk about which concept."""

    concept: Series[str] = pa.Field(str_length={"min_value": 1})
    chunk_id: Series[str]
    paper_id: Series[str]
    evidence: Series[str] = pa.Field(isin=EVIDENCE_ORDER)

    class Config:
        strict = True

    @pa.check("chunk_id", name="chunk_id_format")
    def _chunk_id(cls, values: pd.Series) -> pd.Series:
        return matches(values, CHUNK_ID)

    @pa.check("paper_id", name="arxiv_id_format")
    def _paper_id(cls, values: pd.Series) -> pd.Series:
        return matches(values, ARXIV_ID)

    @pa.dataframe_check(name="unique_id")
    def _unique(cls, frame: pd.DataFrame) -> pd.Series:
        return first_of_each_key(frame, "mentions")


class PairsSchema(pa.DataFrameModel):
    """``data/training/pairs.parquet``: contrastive (anchor, positive) pairs and their split."""

    anchor: Series[str]
    positive: Series[str]
    kind: Series[str] = pa.Field(isin=PAIR_KINDS)
    concept: Series[str] = pa.Field(str_length={"min_value": 1})
    positive_id: Series[str]
    negative: Series[str]  # "" when pairs.hard_negatives is off
    negative_id: Series[str]
    split: Series[str] = pa.Field(isin=SPLITS)

    class Config:
        strict = True

    @pa.check("anchor", "positive", name="non_empty")
    def _texts(cls, values: pd.Series) -> pd.Series:
        return non_blank(values)

    @pa.dataframe_check(name="positive_id_matches_kind")
    def _positive_id(cls, frame: pd.DataFrame) -> pd.Series:
        # A statement, proof or citation pair's positive is a statement (or its proof);
        # every other kind's is a chunk.
        is_statement = frame["kind"].isin(STATEMENT_PAIR_KINDS)
        return matches(frame["positive_id"], STATEMENT_ID).where(
            is_statement, matches(frame["positive_id"], CHUNK_ID)
        )

    @pa.dataframe_check(name="negative_is_a_chunk_other_than_the_positive")
    def _negative(cls, frame: pd.DataFrame) -> pd.Series:
        none = (frame["negative_id"] == "") & (frame["negative"] == "")
        chunk = matches(frame["negative_id"], CHUNK_ID) & (frame["negative"].str.strip() != "")
        return none | (chunk & (frame["negative_id"] != frame["positive_id"]))

    @pa.dataframe_check(name="anchor_differs_from_positive")
    def _different(cls, frame: pd.DataFrame) -> pd.Series:
        return frame["anchor"].str.strip().str.casefold() != (
            frame["positive"].str.strip().str.casefold()
        )

    @pa.dataframe_check(name="unique_id")
    def _unique(cls, frame: pd.DataFrame) -> pd.Series:
        return first_of_each_key(frame, "pairs")


class QueriesSchema(pa.DataFrameModel):
    """``data/eval/queries.parquet``: one query per held-out concept."""

    query_id: Series[str]
    concept: Series[str] = pa.Field(str_length={"min_value": 1})
    text: Series[str]
    set: Series[str] = pa.Field(isin=STORED_QUERY_SETS)
    exclude: Series[object]  # passages not ranked for this query

    class Config:
        strict = True

    @pa.check("exclude", name="chunk_id_list")
    def _exclude(cls, values: pd.Series) -> pd.Series:
        return string_lists(values, CHUNK_ID, non_empty=False)

    @pa.check("query_id", name="query_id_format")
    def _query_id(cls, values: pd.Series) -> pd.Series:
        return matches(values, QUERY_ID)

    @pa.check("text", name="non_empty")
    def _text(cls, values: pd.Series) -> pd.Series:
        return non_blank(values)

    @pa.dataframe_check(name="unique_id")
    def _unique(cls, frame: pd.DataFrame) -> pd.Series:
        return first_of_each_key(frame, "queries")


class QrelsSchema(pa.DataFrameModel):
    """``data/eval/qrels.parquet``: graded relevant chunks of each query."""

    query_id: Series[str]
    chunk_id: Series[str]
    grade: Series[int] = pa.Field(ge=0)
    unseen: Series[bool]

    class Config:
        strict = True

    @pa.check("query_id", name="query_id_format")
    def _query_id(cls, values: pd.Series) -> pd.Series:
        return matches(values, QUERY_ID)

    @pa.check("chunk_id", name="chunk_id_format")
    def _chunk_id(cls, values: pd.Series) -> pd.Series:
        return matches(values, CHUNK_ID)

    @pa.dataframe_check(name="unique_id")
    def _unique(cls, frame: pd.DataFrame) -> pd.Series:
        return first_of_each_key(frame, "qrels")


MODELS: Mapping[str, type[pa.DataFrameModel]] = {
    "papers": PapersSchema,
    "chunks": ChunksSchema,
    "statements": StatementsSchema,
    "concepts": ConceptsSchema,
    "edges": EdgesSchema,
    "mentions": MentionsSchema,
    "pairs": PairsSchema,
    "queries": QueriesSchema,
    "qrels": QrelsSchema,
}

# -- checks with bounds from params.yaml -------------------------------------------------

#: The text column of each table that gets the LaTeX-leftover checks.
LATEX_CHECKED_COLUMNS: Mapping[str, str] = {
    "chunks": "text",
    "statements": "text",
    "pairs": "anchor",  # positives are chunk or statement texts, checked in their tables
    "queries": "text",
}


def text_checks(table: str, params: ValidateParams) -> dict[str, list[pa.Check]]:
    """The row-level text checks of ``table`` whose bounds come from ``params``, by column."""
    checks: dict[str, list[pa.Check]] = {}
    if table == "chunks":
        low, high = params.min_passage_chars, params.max_passage_chars

        def passage_length(text: pd.Series) -> pd.Series:
            length = text.str.len()
            return (length >= low) & (length <= high)

        checks["text"] = [pa.Check(passage_length, name="passage_length")]
    column = LATEX_CHECKED_COLUMNS.get(table)
    if column is not None:
        share = params.max_latex_markup_share
        checks.setdefault(column, []).extend(
            [
                pa.Check(lambda text: latex_markup_share(text) <= share, name="latex_markup_share"),
                pa.Check(
                    lambda text: unescaped_count(text, "{") == unescaped_count(text, "}"),
                    name="balanced_braces",
                ),
                pa.Check(lambda text: unescaped_count(text, "$") % 2 == 0, name="balanced_dollars"),
            ]
        )
    return checks


def table_schema(table: str, params: ValidateParams) -> pa.DataFrameSchema:
    """The full schema of ``table``: its model plus the checks bounded by ``params``."""
    schema = MODELS[table].to_schema()
    for column, checks in text_checks(table, params).items():
        schema = schema.update_column(column, checks=[*schema.columns[column].checks, *checks])
    return schema


def check_names(schema: pa.DataFrameSchema) -> list[str]:
    """Every check ``schema`` runs, named as failures are: ``column:check`` or ``check``."""
    names = ["columns"]
    for column_name, column in schema.columns.items():
        names.append(f"{column_name}:dtype")
        if not column.nullable:
            names.append(f"{column_name}:not_nullable")
        names.extend(f"{column_name}:{check_label(check)}" for check in column.checks)
    names.extend(check_label(check) for check in schema.checks)
    return names


def check_label(check: pa.Check) -> str:
    """A check's name as pandera reports it (``isin([...])`` for built-ins)."""
    return str(check.error if check.error is not None else check.name)
