"""The expectation suites of the data-quality report, and the frames they describe.

Each suite validates a *derived* frame: the validated table plus a few helper columns
(lengths, group sizes, shares) so that distribution facts such as "pairs per anchor" or
"no category dominates" become plain column expectations with an observed value; the
``eval_set`` suite describes one row per evaluation query
(:func:`pipelines.validate.eval_shape.query_frame`). The ranges are what the sample corpus
and real data both satisfy (each expectation's notes say why); the eval set's bounds are
the ``validate`` knobs, passed at run time as suite parameters (:data:`SUITE_PARAMETERS`),
so the committed suite stays the same whatever params.yaml says.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pandas as pd

from pipelines.common.config import ValidateParams
from pipelines.common.tables import PAIR_KINDS, SPLITS
from pipelines.validate import eval_shape
from pipelines.validate.gx_context import load_gx

if TYPE_CHECKING:
    from great_expectations.core.expectation_suite import ExpectationSuite

#: The columns of the validated tables each derived frame, and the corpus facts that
#: explain expected failures (:func:`pipelines.validate.expected.corpus_facts`), are built from.
REQUIRED_COLUMNS: Mapping[str, tuple[str, ...]] = {
    "papers": ("paper_id", "primary_category", "authors"),
    "statements": ("statement_id", "name"),
    "chunks": ("chunk_id", "paper_id", "chunk_index", "section", "text"),
    "pairs": ("anchor", "positive", "kind", "concept", "positive_id", "split"),
    "queries": ("query_id", "concept"),
    "qrels": ("query_id", "chunk_id", "grade", "unseen"),
}

#: The ``validate`` knobs the ``eval_set`` suite's bounds come from (``$PARAMETER`` names).
SUITE_PARAMETERS = ("min_queries", "max_query_relevant_share")


def suite_parameters(params: ValidateParams) -> dict[str, float]:
    """The run-time values of :data:`SUITE_PARAMETERS`."""
    return {name: getattr(params, name) for name in SUITE_PARAMETERS}


# -- derived frames --------------------------------------------------------------------


def chunk_frame(chunks: pd.DataFrame, papers: pd.DataFrame) -> pd.DataFrame:
    """The validated chunks plus the helper columns the ``chunks`` suite describes.

    ``text_chars``: passage length; ``primary_category``: the paper's primary arXiv
    category (category coverage is measured per passage, the unit that is embedded and
    retrieved; missing when the chunk's paper is not in ``papers``); ``category_share``:
    share of all passages in that category; ``passages_per_paper``: passages of the
    chunk's paper.
    """
    frame = chunks.loc[:, list(REQUIRED_COLUMNS["chunks"])].reset_index(drop=True)
    frame["text_chars"] = frame["text"].str.len().astype("int64")
    category_by_paper = papers.drop_duplicates("paper_id").set_index("paper_id")
    frame["primary_category"] = frame["paper_id"].map(category_by_paper["primary_category"])
    frame["category_share"] = _share_of_rows(frame["primary_category"])
    frame["passages_per_paper"] = frame.groupby("paper_id")["chunk_id"].transform("size")
    return frame


def pair_frame(pairs: pd.DataFrame) -> pd.DataFrame:
    """The validated pairs plus the helper columns the ``pairs`` suite describes.

    ``anchor_chars`` / ``positive_chars``: lengths; ``pairs_per_anchor``: how many pairs
    share this pair's anchor; ``kind_share``: share of all pairs with this pair's kind.
    """
    frame = pairs.loc[:, list(REQUIRED_COLUMNS["pairs"])].reset_index(drop=True)
    frame["anchor_chars"] = frame["anchor"].str.len().astype("int64")
    frame["positive_chars"] = frame["positive"].str.len().astype("int64")
    frame["pairs_per_anchor"] = frame.groupby("anchor")["anchor"].transform("size")
    frame["kind_share"] = _share_of_rows(frame["kind"])
    return frame


def eval_frame(queries: pd.DataFrame, qrels: pd.DataFrame, chunks: pd.DataFrame) -> pd.DataFrame:
    """One row per evaluation query, as the validate gate counts it
    (:func:`pipelines.validate.eval_shape.query_frame`): ``relevant`` passages,
    ``defining`` (grade-2) ones, ``relevant_share`` of the corpus, ``seen`` / ``unseen``."""
    return eval_shape.query_frame(queries, qrels, len(chunks))


def _share_of_rows(values: pd.Series) -> pd.Series:
    """For each row, the share of all rows holding the same value (NaN for a missing one)."""
    shares = values.value_counts(dropna=True) / max(len(values), 1)
    return values.map(shares).astype("float64")


# -- suites ----------------------------------------------------------------------------


def chunks_suite() -> ExpectationSuite:
    """What the passages of a healthy corpus look like (sample corpus and real arXiv)."""
    load_gx()
    import great_expectations as gx
    import great_expectations.expectations as gxe

    return gx.ExpectationSuite(
        name="chunks",
        meta={
            "frame": "data/validated/chunks.parquet + helper columns (chunk_frame)",
            "helper_columns": {
                "text_chars": "len(text)",
                "primary_category": "the paper's primary arXiv category (joined from papers)",
                "category_share": "share of all passages in the passage's category",
                "passages_per_paper": "number of passages of the passage's paper",
            },
        },
        notes=(
            "Informational: describes the shape of the passages; pandera is the blocking "
            "gate. Ranges hold for the sample corpus (short generated papers: passages "
            "230-1480 chars, median ~650, 5 per paper) and for real arXiv full texts cut "
            "into 1500-char windows (most passages 750-1500 chars, tens per paper)."
        ),
        expectations=[
            gxe.ExpectColumnValuesToBeUnique(
                column="chunk_id",
                notes="Chunk ids are keys; a repeat means a paper version was prepared twice.",
            ),
            gxe.ExpectCompoundColumnsToBeUnique(
                column_list=["paper_id", "chunk_index"],
                notes="One passage per position in a paper.",
            ),
            gxe.ExpectColumnValuesToNotBeNull(
                column="text",
                notes="Null rate of the passage text: none expected.",
            ),
            gxe.ExpectColumnValuesToBeUnique(
                column="text",
                mostly=0.99,
                notes=(
                    "Verbatim repeated passages (boilerplate, the same paper under two "
                    "ids) stay under 1%; the sample has 0.2%."
                ),
            ),
            gxe.ExpectColumnValuesToNotBeInSet(
                column="section",
                value_set=[""],
                mostly=0.5,
                notes=(
                    "At least half of the passages sit under a section heading: only the "
                    "opening passage of a paper and abstract-only papers have none (sample: "
                    "20% without; real papers with tens of passages: well under 10%)."
                ),
            ),
            gxe.ExpectColumnValueLengthsToBeBetween(
                column="text",
                min_value=100,
                max_value=2000,
                mostly=0.95,
                notes=(
                    "Length tails: 95% of passages between 100 and 2000 chars. Windows are "
                    "at most 1500 chars (prepare.chunk_chars) and an abstract at most "
                    "~1920; only a paper's last passage can be short."
                ),
            ),
            gxe.ExpectColumnMedianToBeBetween(
                column="text_chars",
                min_value=300,
                max_value=1500,
                notes=(
                    "Median passage length: ~650 in the sample, ~1300-1500 for real full "
                    "texts; below 300 means the cleaner or the chunker is shredding text."
                ),
            ),
            gxe.ExpectColumnMeanToBeBetween(
                column="text_chars",
                min_value=300,
                max_value=1500,
                notes="Mean passage length, same reasoning as the median.",
            ),
            gxe.ExpectColumnMaxToBeBetween(
                column="text_chars",
                max_value=4000,
                notes=(
                    "Longest passage: the chunker may exceed the 1500-char window only "
                    "to avoid splitting a formula; beyond 4000 it failed to cut."
                ),
            ),
            gxe.ExpectColumnMedianToBeBetween(
                column="passages_per_paper",
                min_value=1,
                max_value=200,
                notes=(
                    "Passages per paper (per passage): 5 in the sample, ~20-60 for real "
                    "papers; above 200 a source was probably concatenated or duplicated."
                ),
            ),
            gxe.ExpectColumnValuesToNotBeNull(
                column="primary_category",
                notes="Every passage's paper is in papers, so its category is known.",
            ),
            gxe.ExpectColumnValuesToMatchRegex(
                column="primary_category",
                regex=r"^math(?:\.[A-Z]{2}|-ph)$",
                mostly=0.8,
                notes=(
                    "Category coverage: the harvest is math. Papers cross-listed into a "
                    "harvested category with a cs/physics primary are allowed up to 20%."
                ),
            ),
            gxe.ExpectColumnUniqueValueCountToBeBetween(
                column="primary_category",
                min_value=2,
                notes=(
                    "Category coverage: ingest harvests at least two categories (math.CO, "
                    "math.NT by default) and cross-lists add more (sample: 8)."
                ),
            ),
            gxe.ExpectColumnMaxToBeBetween(
                column="category_share",
                max_value=0.85,
                notes=(
                    "No single category supplies more than 85% of the passages (sample: "
                    "math.CO ~33%); a harvest stuck on one category shows here."
                ),
            ),
        ],
    )


def pairs_suite() -> ExpectationSuite:
    """What a healthy set of training pairs looks like (sample corpus and real arXiv)."""
    load_gx()
    import great_expectations as gx
    import great_expectations.expectations as gxe

    return gx.ExpectationSuite(
        name="pairs",
        meta={
            "frame": "data/validated/pairs.parquet + helper columns (pair_frame)",
            "helper_columns": {
                "anchor_chars": "len(anchor)",
                "positive_chars": "len(positive)",
                "pairs_per_anchor": "number of pairs sharing the pair's anchor",
                "kind_share": "share of all pairs with the pair's kind",
            },
        },
        notes=(
            "Informational: describes the shape of the contrastive pairs; pandera is the "
            "blocking gate (leakage, anchor != positive). The pair kind (name, "
            "description, edge, statement, proof, citation) is the relation between anchor "
            "and positive, "
            "so 'relation mix' is the kind mix."
        ),
        expectations=[
            gxe.ExpectColumnValuesToNotBeNull(
                column="anchor", notes="Null rate of anchors: none expected."
            ),
            gxe.ExpectColumnValuesToNotBeNull(
                column="positive", notes="Null rate of positives: none expected."
            ),
            gxe.ExpectCompoundColumnsToBeUnique(
                column_list=["anchor", "positive"],
                notes="A repeated pair over-weights one example in the contrastive loss.",
            ),
            gxe.ExpectColumnValuesToBeInSet(
                column="kind",
                value_set=list(PAIR_KINDS),
                notes="The pair kinds the pairs stage builds.",
            ),
            gxe.ExpectColumnUniqueValueCountToBeBetween(
                column="kind",
                min_value=3,
                max_value=len(PAIR_KINDS),
                notes=(
                    "Relation mix: at least three of the kinds occur (statement, proof and "
                    "citation pairs can be absent when few statements were extracted)."
                ),
            ),
            gxe.ExpectColumnMinToBeBetween(
                column="kind_share",
                min_value=0.01,
                notes=(
                    "Relation mix: every kind that occurs is at least 1% of the pairs "
                    "(sample: statement ~5%, the rarest)."
                ),
            ),
            gxe.ExpectColumnMaxToBeBetween(
                column="kind_share",
                max_value=0.7,
                notes=(
                    "Relation mix: no kind is more than 70% of the pairs (sample: name ~42%); "
                    "a graph stage that stopped producing edges or descriptions shows here."
                ),
            ),
            gxe.ExpectColumnValuesToBeInSet(
                column="split",
                value_set=list(SPLITS),
                notes="Every pair is in the training or the validation split.",
            ),
            gxe.ExpectColumnValueLengthsToBeBetween(
                column="anchor",
                min_value=2,
                max_value=1000,
                mostly=0.99,
                notes=(
                    "Anchors are concept names (a few chars) up to descriptions and "
                    "statement texts (sample: 7-390 chars)."
                ),
            ),
            gxe.ExpectColumnValueLengthsToBeBetween(
                column="positive",
                min_value=20,
                max_value=2000,
                mostly=0.99,
                notes=(
                    "Positives are passages or statements: same bounds as the passages "
                    "(sample: 54-1480 chars)."
                ),
            ),
            gxe.ExpectColumnMedianToBeBetween(
                column="positive_chars",
                min_value=200,
                max_value=1500,
                notes="Median positive length: ~710 in the sample, ~1300 for real passages.",
            ),
            gxe.ExpectColumnMedianToBeBetween(
                column="pairs_per_anchor",
                min_value=1,
                max_value=30,
                notes=(
                    "Pairs per anchor (per pair): up to pairs.max_chunks_per_concept name "
                    "pairs plus edge pairs; sample median ~8."
                ),
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="pairs_per_anchor",
                min_value=1,
                max_value=60,
                mostly=0.95,
                notes=(
                    "Hub concepts collect many edge pairs (sample max 36), but 95% of the "
                    "pairs have an anchor with at most 60 pairs."
                ),
            ),
            gxe.ExpectColumnProportionOfUniqueValuesToBeBetween(
                column="anchor",
                min_value=0.03,
                max_value=1.0,
                notes=(
                    "Distinct anchors per pair, i.e. 1 / mean pairs per anchor (sample "
                    "~0.14); below 0.03 a few anchors dominate the batch."
                ),
            ),
            gxe.ExpectColumnProportionOfUniqueValuesToBeBetween(
                column="positive_id",
                min_value=0.1,
                max_value=1.0,
                notes=(
                    "Distinct positive passages per pair (sample ~0.26): positives are "
                    "spread over the corpus, not drawn from a handful of passages."
                ),
            ),
            gxe.ExpectColumnUniqueValueCountToBeBetween(
                column="concept",
                min_value=10,
                notes="Concept coverage: the sample has ~120 concepts with pairs.",
            ),
        ],
    )


def eval_set_suite() -> ExpectationSuite:
    """What an evaluation set that can tell two models apart looks like."""
    load_gx()
    import great_expectations as gx
    import great_expectations.expectations as gxe

    return gx.ExpectationSuite(
        name="eval_set",
        meta={
            "frame": "data/validated/queries.parquet + qrels, one row per query (eval_frame)",
            "helper_columns": {
                "relevant": "distinct relevant passages of the query",
                "defining": "of them, grade-2 passages (the one defining or stating it)",
                "relevant_share": "relevant / passages in the corpus",
                "seen": "relevant passages in papers training sees",
                "unseen": "relevant passages in papers held out of training",
            },
            "suite_parameters": list(SUITE_PARAMETERS),
        },
        notes=(
            "Informational: describes the shape of the evaluation set (queries are held-out "
            "concept names, qrels graded relevant passages). The validate stage blocks too "
            "few queries and too broad ones (pipelines/validate/eval_shape.py); these "
            "expectations show the same figures and the finer ones. The real demo corpus "
            "gives ~195 queries with a median of ~2 relevant passages."
        ),
        expectations=[
            gxe.ExpectTableRowCountToBeBetween(
                min_value={"$PARAMETER": "min_queries"},
                notes=(
                    "Enough queries to separate two models (validate.min_queries; the demo "
                    "corpus gives ~195, the synthetic sample ~20)."
                ),
            ),
            gxe.ExpectColumnValuesToBeUnique(column="query_id", notes="One row per query."),
            gxe.ExpectColumnMinToBeBetween(
                column="relevant",
                min_value=1,
                notes="Every query has at least one relevant passage.",
            ),
            gxe.ExpectColumnMedianToBeBetween(
                column="relevant",
                max_value=10,
                notes=(
                    "Relevance is specific: a median of at most 10 relevant passages per "
                    "query (demo corpus ~2). Hundreds mean every passage mentioning a word "
                    "counts, and any model looks alike."
                ),
            ),
            gxe.ExpectColumnMaxToBeBetween(
                column="relevant_share",
                max_value={"$PARAMETER": "max_query_relevant_share"},
                notes=(
                    "No query has more than validate.max_query_relevant_share (1%) of the "
                    "corpus relevant (validate itself allows one passage in a tiny corpus)."
                ),
            ),
            gxe.ExpectColumnValuesToBeBetween(
                column="defining",
                min_value=1,
                mostly=0.9,
                notes=(
                    "Nearly every query has its grade-2 passage, the one that defines or "
                    "states the concept (qrels_scope: defining always has one)."
                ),
            ),
        ],
    )


#: The suites of the report, by name: each describes the derived frame of the same name.
SUITE_BUILDERS = {"chunks": chunks_suite, "pairs": pairs_suite, "eval_set": eval_set_suite}
