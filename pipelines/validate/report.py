"""Great Expectations data-quality report: the informational half of the ``validate`` stage.

pandera (``pipelines.schemas``) is the blocking gate; this module only *describes* the
validated data. ``build_report`` runs two expectation suites, ``chunks`` and ``pairs``,
through GX checkpoints in the file-backed context ``<root>/gx`` and builds Data Docs into
``<root>/reports/data_quality/``. A failed expectation never raises: it shows in the
report and in the returned :class:`QualityReportResult`.

The suites are defined here, in code, and synced into the context on every run
(unchanged expectations keep their GX ids, so an unchanged suite rewrites identical files):
the repository's committed ``gx/`` folder is what a run at the repository root writes,
and ``gx/uncommitted/`` (validation results) is git-ignored by GX's own ``gx/.gitignore``.

Each suite validates a *derived* frame: the validated table plus a few helper columns
(lengths, group sizes, shares) so that distribution facts such as "pairs per anchor" or
"no category dominates" become plain column expectations with an observed value.

Offline readability: GX pages load Bootstrap, jQuery, bootstrap-table, Font Awesome and
Vega from CDNs, and no installed Python package ships those files. After GX builds the
site, every page is rewritten to be self-contained: remote scripts and stylesheets are
dropped (the inline scripts only drive those libraries, so they go too), the remote logo
points at GX's copy under ``static/images``, and a small local stylesheet
(:data:`OFFLINE_CSS`, installed as GX's ``data_docs_custom_styles.css`` so GX inlines it
in every page) stands in for Bootstrap and the icon font. GX's own ``index.html`` is an
empty table filled in by bootstrap-table's JavaScript, so it is replaced by a static
summary page: every suite, its pass count, every expectation with its observed value,
and links to GX's validation and suite pages.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import math
import os
import re
import shutil
import urllib.parse
import urllib.request
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from pipelines.common import io
from pipelines.common.paths import Paths

if TYPE_CHECKING:
    from great_expectations.checkpoint.checkpoint import Checkpoint, CheckpointResult
    from great_expectations.core.expectation_suite import ExpectationSuite
    from great_expectations.core.expectation_validation_result import (
        ExpectationSuiteValidationResult,
        ExpectationValidationResult,
    )
    from great_expectations.data_context import FileDataContext

GX_DIR_NAME = "gx"
DATA_SOURCE_NAME = "mathembed"
BATCH_DEFINITION_NAME = "whole_frame"
SITE_NAME = "data_quality"
RUN_NAME = "validate"
SUITE_NAMES = ("chunks", "pairs")

# Which validated tables each derived frame is built from.
REQUIRED_COLUMNS: Mapping[str, tuple[str, ...]] = {
    "papers": ("paper_id", "primary_category"),
    "chunks": ("chunk_id", "paper_id", "chunk_index", "section", "text"),
    "pairs": ("anchor", "positive", "kind", "concept", "positive_id", "split"),
}

PAIR_KINDS = ("name", "description", "edge", "statement")
SPLITS = ("train", "validation")


def data_docs_dir(paths: Paths) -> Path:
    """Where the Data Docs site is built: ``<root>/reports/data_quality``."""
    return paths.root / "reports" / "data_quality"


def gx_context_dir(paths: Paths) -> Path:
    """The file-backed GX context of a root: ``<root>/gx``."""
    return paths.root / GX_DIR_NAME


@dataclass(frozen=True)
class SuiteSummary:
    success: bool
    evaluated: int
    successful: int
    # "<expectation type>(<column>): observed <value>", one per failed expectation.
    failed_expectations: list[str]


@dataclass(frozen=True)
class QualityReportResult:
    index_html: Path
    suites: dict[str, SuiteSummary]
    success: bool


# --------------------------------------------------------------------------- derived frames


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


def _share_of_rows(values: pd.Series) -> pd.Series:
    """For each row, the share of all rows holding the same value (NaN for a missing one)."""
    shares = values.value_counts(dropna=True) / max(len(values), 1)
    return values.map(shares).astype("float64")


# --------------------------------------------------------------------------- suites


def chunks_suite() -> ExpectationSuite:
    """What the passages of a healthy corpus look like (sample corpus and real arXiv)."""
    _load_gx()
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
    _load_gx()
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
            "description, edge, statement) is the relation between anchor and positive, "
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
                notes="The four pair kinds the pairs stage builds.",
            ),
            gxe.ExpectColumnUniqueValueCountToBeBetween(
                column="kind",
                min_value=3,
                max_value=4,
                notes=(
                    "Relation mix: at least three of the four kinds occur (statement pairs "
                    "can be absent when few statements were extracted)."
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


SUITE_BUILDERS = {"chunks": chunks_suite, "pairs": pairs_suite}


# --------------------------------------------------------------------------- the report


def build_report(tables: Mapping[str, pd.DataFrame], paths: Paths) -> QualityReportResult:
    """Validate the chunks and pairs suites and build the Data Docs under ``paths.root``.

    ``tables`` holds the validated frames (at least ``papers``, ``chunks`` and
    ``pairs``). Never raises for failed expectations; raises ``ValueError`` when a table
    or column it needs is missing. Each run starts from an empty site and result store,
    so the report shows this run only.
    """
    _check_tables(tables)
    frames = {
        "chunks": chunk_frame(tables["chunks"], tables["papers"]),
        "pairs": pair_frame(tables["pairs"]),
    }
    site_dir = data_docs_dir(paths)
    context = open_context(paths)
    clear_previous_run(context, site_dir)
    run_time = dt.datetime.now(dt.UTC)
    suites: dict[str, SuiteSummary] = {}
    sections: list[SuiteSection] = []
    for name in SUITE_NAMES:
        checkpoint = sync_checkpoint(context, name, SUITE_BUILDERS[name]())
        checkpoint_result = checkpoint.run(
            batch_parameters={"dataframe": frames[name]}, run_id=_run_id(run_time)
        )
        section = _section(context, checkpoint_result, name, site_dir)
        suites[name] = section.summary
        sections.append(section)
    make_site_offline(site_dir)
    index_html = site_dir / "index.html"
    io.write_text(index_html, render_index(sections, run_time))
    return QualityReportResult(
        index_html=index_html,
        suites=suites,
        success=all(summary.success for summary in suites.values()),
    )


def _check_tables(tables: Mapping[str, pd.DataFrame]) -> None:
    for table, columns in REQUIRED_COLUMNS.items():
        if table not in tables:
            raise ValueError(
                f"build_report needs the validated {table!r} table; got tables "
                f"{sorted(tables)}. Pass every frame the validate stage kept."
            )
        missing = [column for column in columns if column not in tables[table].columns]
        if missing:
            raise ValueError(
                f"build_report: table {table!r} lacks columns {missing}; it needs "
                f"{list(columns)} (see the data contract)."
            )


# --------------------------------------------------------------------------- the GX context


def _load_gx() -> None:
    """Import ``great_expectations`` (once; later imports are free).

    Importing it takes seconds, so it is not done at import time of this module (the CLI
    and every stage would pay for it); every function that needs GX calls this first and
    then imports what it uses. GX's import also trips Python's own deprecation warnings
    for ``sre_constants``/``sre_parse`` (GX imports them directly); those two are silenced
    here, at the one import site, so runs with warnings as errors still work.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore",
            message=r"module 'sre_(constants|parse)' is deprecated",
            category=DeprecationWarning,
        )
        import great_expectations  # noqa: F401


def open_context(paths: Paths) -> FileDataContext:
    """The file-backed context at ``<root>/gx`` (created if absent), configured for us.

    Settings written on every run, so a hand edit of ``great_expectations.yml`` cannot
    drift from this code: progress bars off (GX prints one per metric batch), one Data
    Docs site building into :func:`data_docs_dir`, GX's own custom-styles file holding
    :data:`OFFLINE_CSS`.
    """
    _load_gx()
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context_dir = gx_context_dir(paths)
    context: FileDataContext = gx.get_context(mode="file", project_root_dir=paths.root)
    # After the context exists (creating one writes GX's template there); the site builder
    # reads the file when it renders.
    styles = context_dir / "plugins" / "custom_data_docs" / "styles"
    styles.mkdir(parents=True, exist_ok=True)
    _write_if_changed(styles / "data_docs_custom_styles.css", OFFLINE_CSS)
    # Set unconditionally: GX hands the stored value back as a dict or an object, and
    # saving an unchanged setting rewrites great_expectations.yml byte for byte.
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    context.variables.save()
    site_config = {
        "class_name": "SiteBuilder",
        "show_how_to_buttons": False,
        "store_backend": {
            "class_name": "TupleFilesystemStoreBackend",
            # Relative to the context folder, so a moved checkout still works.
            "base_directory": Path(os.path.relpath(data_docs_dir(paths), context_dir)).as_posix()
            + "/",
        },
        "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
    }
    sites = context.list_data_docs_sites()
    for other_site in [name for name in sites if name != SITE_NAME]:
        context.delete_data_docs_site(other_site)  # GX's default local_site: one site only
    if SITE_NAME not in sites:
        context.add_data_docs_site(SITE_NAME, site_config)  # type: ignore[arg-type]
    elif sites[SITE_NAME] != site_config:
        context.update_data_docs_site(SITE_NAME, site_config)  # type: ignore[arg-type]
    return context


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        io.write_text(path, text)


def clear_previous_run(context: FileDataContext, site_dir: Path) -> None:
    """Drop earlier validation results and the built site: the report shows one run.

    History lives in DVC/git (``metrics/data_quality.json`` and the data versions), not
    in an ever-growing GX result store.
    """
    store = context.validation_results_store
    for key in store.list_keys():
        store.remove_key(key)
    if site_dir.exists():
        shutil.rmtree(site_dir)


def sync_checkpoint(context: FileDataContext, name: str, suite: ExpectationSuite) -> Checkpoint:
    """Add or update asset, batch definition, suite, validation definition and checkpoint.

    One checkpoint per table: a checkpoint passes the same batch parameters to all its
    validation definitions, and each dataframe asset needs its own dataframe.
    """
    _load_gx()
    import great_expectations as gx
    from great_expectations.checkpoint import UpdateDataDocsAction
    from great_expectations.datasource.fluent import PandasDatasource

    try:
        data_source = context.data_sources.get(DATA_SOURCE_NAME)
    except KeyError:
        data_source = context.data_sources.add_pandas(DATA_SOURCE_NAME)
    if not isinstance(data_source, PandasDatasource):
        raise ValueError(
            f"{context.root_directory}/great_expectations.yml: data source "
            f"{DATA_SOURCE_NAME!r} is a {data_source.type!r} source, expected pandas; "
            "remove it from fluent_datasources and rerun"
        )
    if name in data_source.get_asset_names():
        asset = data_source.get_asset(name)
    else:
        asset = data_source.add_dataframe_asset(name)
    try:
        batch_definition = asset.get_batch_definition(BATCH_DEFINITION_NAME)
    except KeyError:
        batch_definition = asset.add_batch_definition_whole_dataframe(BATCH_DEFINITION_NAME)
    _reuse_expectation_ids(context, suite)
    validation_definition = context.validation_definitions.add_or_update(
        gx.ValidationDefinition(name=name, data=batch_definition, suite=suite)
    )
    return context.checkpoints.add_or_update(
        gx.Checkpoint(
            name=name,
            validation_definitions=[validation_definition],
            actions=[UpdateDataDocsAction(name="update_data_docs", site_names=[SITE_NAME])],
            # SUMMARY keeps up to 20 example values per failed expectation: enough to read,
            # small enough for a corpus of millions of passages.
            result_format="SUMMARY",
        )
    )


def _reuse_expectation_ids(context: FileDataContext, suite: ExpectationSuite) -> None:
    """Give each unchanged expectation the id it already has in the stored suite.

    GX's ``suites.add_or_update`` means to do this, but compares expectations including
    their ids, so every sync would mint new ids and rewrite the committed suite files.
    """
    from great_expectations.exceptions import DataContextError

    try:
        stored = context.suites.get(suite.name)
    except DataContextError:
        return
    ids_by_definition = {
        _definition(expectation): expectation.id for expectation in stored.expectations
    }
    for expectation in suite.expectations:
        expectation.id = ids_by_definition.get(_definition(expectation))


def _definition(expectation: Any) -> str:
    """An expectation's configuration without its id, as a comparable string."""
    configuration = expectation.configuration.to_json_dict()
    configuration.pop("id", None)
    return json.dumps(configuration, sort_keys=True)


def _run_id(run_time: dt.datetime) -> Any:
    from great_expectations.core.run_identifier import RunIdentifier

    return RunIdentifier(run_name=RUN_NAME, run_time=run_time)


def _only_validation_result(
    checkpoint_result: CheckpointResult, name: str
) -> tuple[Any, ExpectationSuiteValidationResult]:
    """The (result key, validation result) of a one-suite checkpoint run."""
    results = list(checkpoint_result.run_results.items())
    if len(results) != 1:
        raise RuntimeError(f"checkpoint {name!r} returned {len(results)} results, expected 1")
    return results[0]


# --------------------------------------------------------------------------- summaries


@dataclass(frozen=True)
class ExpectationRow:
    success: bool
    expectation: str  # "<type>(<column>)"
    expected: str
    observed: str
    notes: str


@dataclass(frozen=True)
class SuiteSection:
    name: str
    summary: SuiteSummary
    rows: list[ExpectationRow]
    validation_page: str | None  # relative to the site folder
    suite_page: str | None


def summarize(
    validation: ExpectationSuiteValidationResult, rows: Sequence[ExpectationRow]
) -> SuiteSummary:
    """Success, counts and the failed expectations (with observed values) of one suite."""
    statistics = validation.statistics
    return SuiteSummary(
        success=bool(validation.success),
        evaluated=int(statistics["evaluated_expectations"]),
        successful=int(statistics["successful_expectations"]),
        failed_expectations=[
            f"{row.expectation}: observed {row.observed}" for row in rows if not row.success
        ],
    )


def expectation_row(result: ExpectationValidationResult) -> ExpectationRow:
    config = result.expectation_config
    if config is None:
        raise RuntimeError(f"GX returned a validation result without its expectation: {result}")
    kwargs = dict(config.kwargs)
    notes = config.notes
    return ExpectationRow(
        success=bool(result.success),
        expectation=f"{config.type}({_target(kwargs)})",
        expected=describe_expected(config.type, kwargs),
        observed=describe_observed(result.result or {}, result.exception_info or {}),
        notes=" ".join(notes) if isinstance(notes, list) else (notes or ""),
    )


def _target(kwargs: Mapping[str, Any]) -> str:
    if "column_list" in kwargs:
        return ", ".join(str(column) for column in kwargs["column_list"])
    return str(kwargs.get("column", ""))


def describe_expected(expectation_type: str, kwargs: Mapping[str, Any]) -> str:
    """A short human reading of an expectation's arguments (bounds, sets, regex, mostly)."""
    parts: list[str] = []
    low, high = kwargs.get("min_value"), kwargs.get("max_value")
    if low is not None and high is not None:
        parts.append(f"between {_number(low)} and {_number(high)}")
    elif low is not None:
        parts.append(f">= {_number(low)}")
    elif high is not None:
        parts.append(f"<= {_number(high)}")
    if "value_set" in kwargs:
        values = ", ".join(repr(value) for value in kwargs["value_set"])
        negated = "not_be_in_set" in expectation_type
        parts.append(f"{'not ' if negated else ''}in {{{values}}}")
    if "regex" in kwargs:
        parts.append(f"matches {kwargs['regex']}")
    mostly = kwargs.get("mostly")
    if mostly is not None and mostly < 1:
        parts.append(f"for at least {mostly:.0%} of rows")
    return "; ".join(parts) or "holds for every row"


def describe_observed(result: Mapping[str, Any], exception_info: Mapping[str, Any]) -> str:
    """The observed value of an aggregate expectation, or the unexpected rows of a map one."""
    raised = _raised_exception(exception_info)
    if raised:
        return f"error: {raised}"
    observed = result.get("observed_value")
    if observed is not None:
        return _value(observed)
    if "unexpected_count" in result:
        count = int(result["unexpected_count"])
        total = int(result.get("element_count") or 0)
        percent = result.get("unexpected_percent")
        text = f"{count} of {total} rows unexpected"
        if percent is not None:
            text += f" ({percent:.1f}%)"
        examples = list(
            dict.fromkeys(
                _short(repr(value)) for value in result.get("partial_unexpected_list") or []
            )
        )
        if count and examples:
            text += "; e.g. " + ", ".join(examples[:3])
        return text
    return "no value (empty column?)"


def _raised_exception(exception_info: Mapping[str, Any]) -> str:
    # GX nests exception info per metric when a validation raised several.
    if "raised_exception" in exception_info:
        if exception_info.get("raised_exception"):
            return str(exception_info.get("exception_message") or "exception")
        return ""
    for value in exception_info.values():
        if isinstance(value, Mapping) and value.get("raised_exception"):
            return str(value.get("exception_message") or "exception")
    return ""


def _number(value: Any) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        return f"{value:.4g}"
    return str(value)


def _value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{key}: {_value(item)}" for key, item in value.items()) + "}"
    return _number(value)


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _section(
    context: FileDataContext,
    checkpoint_result: CheckpointResult,
    name: str,
    site_dir: Path,
) -> SuiteSection:
    from great_expectations.data_context.types.resource_identifiers import (
        ExpectationSuiteIdentifier,
    )

    result_key, validation = _only_validation_result(checkpoint_result, name)
    rows = [expectation_row(result) for result in validation.results]
    return SuiteSection(
        name=name,
        summary=summarize(validation, rows),
        rows=rows,
        validation_page=_site_page(context, result_key, site_dir),
        suite_page=_site_page(context, ExpectationSuiteIdentifier(name=name), site_dir),
    )


def _site_page(context: FileDataContext, resource: Any, site_dir: Path) -> str | None:
    """A resource's Data Docs page relative to the site folder (None if not built)."""
    urls = context.get_docs_sites_urls(
        resource_identifier=resource, site_name=SITE_NAME, only_if_exists=True
    )
    url = urls[0].get("site_url") if urls else None
    if not url:
        return None
    page = Path(urllib.request.url2pathname(urllib.parse.urlparse(url).path))
    return Path(os.path.relpath(page, site_dir)).as_posix()


# --------------------------------------------------------------------------- offline pages

# Every element GX's templates use to pull code or styles from a CDN, and the remote
# logo. Anchors (<a href="https://...">) stay: they are links, not loaded resources.
_SCRIPT = re.compile(r"<script\b[^>]*>.*?</script\s*>\s*", re.IGNORECASE | re.DOTALL)
_REMOTE_LINK = re.compile(r"<link\b[^>]*\bhref\s*=\s*[\"']?https?://[^>]*>\s*", re.IGNORECASE)
_REMOTE_CSS_URL = re.compile(r"url\(\s*[\"']?https?://[^)]*\)", re.IGNORECASE)
_REMOTE_IMG = re.compile(
    r"<img\b(?P<before>[^>]*?)\bsrc\s*=\s*(?P<quote>[\"'])https?://[^\"']*?"
    r"(?P<file>[^/\"'?]+)(?:\?[^\"']*)?(?P=quote)(?P<after>[^>]*)>",
    re.IGNORECASE,
)


def offline_page(page_html: str, static_images: str, local_images: Sequence[str]) -> str:
    """``page_html`` with every remote script, stylesheet, CSS url() and image removed.

    ``static_images`` is the page's relative path to the site's ``static/images``
    folder; a remote image whose file name is in ``local_images`` points there instead
    (GX's logo), any other remote image is dropped.
    """

    def local_image(match: re.Match[str]) -> str:
        if match["file"] not in local_images:
            return ""
        quote = match["quote"]
        return (
            f"<img{match['before']}src={quote}{static_images}/{match['file']}{quote}"
            f"{match['after']}>"
        )

    page_html = _SCRIPT.sub("", page_html)
    page_html = _REMOTE_LINK.sub("", page_html)
    page_html = _REMOTE_CSS_URL.sub("none", page_html)
    return _REMOTE_IMG.sub(local_image, page_html)


def make_site_offline(site_dir: Path) -> list[Path]:
    """Rewrite every HTML page and stylesheet of the site with :func:`offline_page`.

    Returns the files that changed. Idempotent: a rewritten page is left as it is.
    """
    images_dir = site_dir / "static" / "images"
    local_images = sorted(path.name for path in images_dir.iterdir()) if images_dir.is_dir() else []
    changed: list[Path] = []
    for path in sorted([*site_dir.rglob("*.html"), *site_dir.rglob("*.css")]):
        original = path.read_text(encoding="utf-8")
        static_images = Path(os.path.relpath(images_dir, path.parent)).as_posix()
        rewritten = offline_page(original, static_images, local_images)
        if rewritten != original:
            io.write_text(path, rewritten)
            changed.append(path)
    return changed


# A stand-in for the parts of Bootstrap 4 and Font Awesome that GX's pages rely on, small
# enough to read. GX inlines it in every page (data_docs_custom_styles.css); the index
# page inlines it too.
OFFLINE_CSS = """\
/* mathembed: offline styles for the Data Docs (pipelines/quality_report.py writes this
   file on every run; edit OFFLINE_CSS there). Stands in for Bootstrap and Font Awesome,
   which GX loads from CDNs that an offline reader cannot reach. */
:root { color-scheme: light; }
body { margin: 0; font: 15px/1.45 system-ui, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
  color: #212529; background: #fff; }
a { color: #0b5ed7; }
code, pre { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 90%; }
h1, h2, h3, h4, h5, h6 { margin: 0.6em 0 0.3em; line-height: 1.2; }
.container-fluid { padding: 16px 32px; }
.row { display: flex; flex-wrap: wrap; }
.col-12 { flex: 0 0 100%; max-width: 100%; }
.col-6 { flex: 0 0 50%; max-width: 50%; }
.col-lg-2.col-md-2 { flex: 0 0 220px; max-width: 220px; }
.col-md-10 { flex: 1 1 0; min-width: 0; padding-left: 24px; }
.navbar { display: flex; align-items: center; height: auto !important; padding: 6px 32px;
  border-bottom: 1px solid #dee2e6; background: #fff; }
.navbar-brand img { height: 36px !important; }
.breadcrumb { display: inline-flex !important; list-style: none; gap: 8px; margin: 0 0 0 16px;
  padding: 0; }
.breadcrumb-item + .breadcrumb-item::before { content: "/"; padding-right: 8px; color: #6c757d; }
.d-none { display: none; }
.d-md-block { display: block !important; }
.d-flex { display: flex; }
.sticky { position: sticky; top: 8px; }
.nav { list-style: none; margin: 0; padding: 0; }
.nav-item { margin: 2px 0; }
.nav-link { text-decoration: none; }
.card { border: 1px solid #dee2e6; border-radius: 4px; margin-bottom: 12px; }
.card-header { padding: 6px 10px; background: #f7f7f9; border-bottom: 1px solid #dee2e6; }
.card-body { padding: 8px 10px; }
.card:has(.btn-group-toggle) { display: none; } /* GX's result filter needs jQuery */
.alert { padding: 8px 12px; margin: 8px 0; border: 1px solid #d6d8db; border-radius: 4px;
  background: #e2e3e5; }
.collapse, .fade, .tab-pane { display: block !important; opacity: 1 !important; }
table { border-collapse: collapse; margin: 4px 0 12px; }
th, td { padding: 4px 8px; border: 1px solid #dee2e6; text-align: left; vertical-align: top; }
th { background: #f7f7f9; }
.table { width: 100%; }
.badge { display: inline-block; padding: 1px 6px; border-radius: 4px; font-size: 85%;
  color: #fff; background: #6c757d; }
.badge-danger { background: #dc3545; }
.badge-info { background: #0d7a8c; }
.badge-success { background: #198754; }
.text-success { color: #198754; }
.text-danger { color: #dc3545; }
.text-muted { color: #6c757d; }
.fas, .fa { font-style: normal; font-weight: bold; }
.fa-check-circle::before, .fa-check::before { content: "\\2714"; }
.fa-times::before, .fa-times-circle::before { content: "\\2718"; }
.fa-exclamation-triangle::before { content: "\\26A0"; }
.cooltip .top { display: none !important; }
footer { display: none; } /* GX's newsletter link */
@media (prefers-color-scheme: dark) { .table { color: inherit !important; background: none; } }
/* the summary page written by build_report */
.report { max-width: 1200px; padding: 16px 32px; }
.report .failed td { background: #fdecee; }
.report td.status { text-align: center; font-weight: bold; color: #198754; }
.report .failed td.status { color: #dc3545; }
.report .notes { color: #6c757d; font-size: 88%; }
.report .verdict-passed { color: #198754; font-weight: bold; }
.report .verdict-failed { color: #dc3545; font-weight: bold; }
"""


# --------------------------------------------------------------------------- the index page


def render_index(sections: Sequence[SuiteSection], run_time: dt.datetime) -> str:
    """The report's front page: static HTML, no scripts, no remote resources."""
    passed = sum(section.summary.success for section in sections)
    overall = "passed" if passed == len(sections) else "failed"
    summary_rows = "\n".join(_summary_row(section) for section in sections)
    suite_blocks = "\n".join(_suite_block(section) for section in sections)
    when = run_time.strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mathembed data quality</title>
<style>
{OFFLINE_CSS}</style>
</head>
<body>
<main class="report">
<h1>mathembed data quality</h1>
<p>Great Expectations report of the <code>validate</code> stage, run {_e(when)}.
Informational: the pandera schemas are the blocking gate; a failed expectation here
does not stop the pipeline.</p>
<p id="verdict" class="verdict-{overall}">{passed} of {len(sections)} suites passed.</p>
<table id="suites">
<thead><tr><th>Suite</th><th>Status</th><th>Expectations passed</th>
<th>Failed expectations</th><th>Great Expectations pages</th></tr></thead>
<tbody>
{summary_rows}
</tbody>
</table>
{suite_blocks}
</main>
</body>
</html>
"""


def _status(success: bool) -> str:
    return "passed" if success else "FAILED"


def _summary_row(section: SuiteSection) -> str:
    summary = section.summary
    failed = (
        "<ul>" + "".join(f"<li>{_e(item)}</li>" for item in summary.failed_expectations) + "</ul>"
        if summary.failed_expectations
        else "none"
    )
    links = []
    if section.validation_page:
        links.append(f'<a href="{_e(section.validation_page)}">validation result</a>')
    if section.suite_page:
        links.append(f'<a href="{_e(section.suite_page)}">suite definition</a>')
    row_class = "" if summary.success else ' class="failed"'
    return (
        f'<tr{row_class} id="suite-{_e(section.name)}"><td><a href="#{_e(section.name)}">'
        f"{_e(section.name)}</a></td>"
        f'<td class="status">{_status(summary.success)}</td>'
        f"<td>{summary.successful} of {summary.evaluated}</td>"
        f"<td>{failed}</td><td>{' · '.join(links)}</td></tr>"
    )


def _suite_block(section: SuiteSection) -> str:
    rows = "\n".join(_expectation_tr(row) for row in section.rows)
    summary = section.summary
    return f"""<section id="{_e(section.name)}">
<h2>Suite {_e(section.name)}: {_status(summary.success)}, \
{summary.successful} of {summary.evaluated} expectations passed</h2>
<table class="table">
<thead><tr><th>OK</th><th>Expectation</th><th>Expected</th><th>Observed</th></tr></thead>
<tbody>
{rows}
</tbody>
</table>
</section>"""


def _expectation_tr(row: ExpectationRow) -> str:
    row_class = "" if row.success else ' class="failed"'
    mark = "✔" if row.success else "✘"
    return (
        f'<tr{row_class}><td class="status">{mark}</td>'
        f"<td><code>{_e(row.expectation)}</code>"
        f'<div class="notes">{_e(row.notes)}</div></td>'
        f"<td>{_e(row.expected)}</td><td>{_e(row.observed)}</td></tr>"
    )


def _e(text: str) -> str:
    return html.escape(text, quote=True)
