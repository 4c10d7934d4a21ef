"""Great Expectations data-quality report: the informational half of the ``validate`` stage.

pandera (:mod:`pipelines.validate.schemas`) is the blocking gate; this report only
*describes* the validated data. :func:`build_report` runs three expectation suites,
``chunks``, ``pairs`` and ``eval_set`` (:mod:`pipelines.validate.suites`), through GX
checkpoints in the
file-backed context ``<root>/gx`` (:mod:`pipelines.validate.gx_context`) and builds Data
Docs into ``<root>/reports/data_quality/``, made readable offline with a static front
page (:mod:`pipelines.validate.pages`). A failed expectation never raises: it shows in
the report and in the returned :class:`QualityReportResult`, with its reason when a fact
of the corpus explains it (:mod:`pipelines.validate.expected`: one category, book
chapters, ...); the others stand out as unexpected.

Importing this module does not import Great Expectations (seconds): a run does.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from pipelines.common import io
from pipelines.common.config import ValidateParams
from pipelines.common.paths import Paths
from pipelines.validate import eval_shape
from pipelines.validate.expected import CorpusFacts, corpus_facts
from pipelines.validate.gx_context import (
    clear_previous_run,
    only_validation_result,
    open_context,
    publish_docs,
    run_id,
    site_page,
    sync_checkpoint,
)
from pipelines.validate.pages import make_site_offline, render_index
from pipelines.validate.suites import (
    REQUIRED_COLUMNS,
    SUITE_BUILDERS,
    chunk_frame,
    eval_frame,
    pair_frame,
    suite_parameters,
)
from pipelines.validate.summaries import (
    QualityRecord,
    SuiteSection,
    SuiteSummary,
    expectation_row,
    quality_record,
    summarize,
)

if TYPE_CHECKING:
    from great_expectations.checkpoint.checkpoint import CheckpointResult
    from great_expectations.data_context import FileDataContext


@dataclass(frozen=True)
class QualityReportResult:
    index_html: Path
    suites: dict[str, SuiteSummary]
    success: bool
    eval_set: dict[str, Any]  # the evaluation set's figures (eval_shape.figures)
    record: QualityRecord  # for metrics/data_quality.json: failures, expected ones apart


def build_report(
    tables: Mapping[str, pd.DataFrame], paths: Paths, params: ValidateParams | None = None
) -> QualityReportResult:
    """Validate the chunks, pairs and eval_set suites and build the Data Docs under
    ``paths.root``.

    ``tables`` holds the validated frames (at least ``papers``, ``statements``,
    ``chunks``, ``pairs``, ``queries`` and ``qrels``); ``params`` gives the eval set's
    bounds (the project's params.yaml when left out). Never raises for failed
    expectations; raises ``ValueError`` when a table or column it needs is missing. Each
    run starts from an empty site and result store, so the report shows this run only.
    """
    _check_tables(tables)
    params = params or ValidateParams()
    frames = {
        "chunks": chunk_frame(tables["chunks"], tables["papers"]),
        "pairs": pair_frame(tables["pairs"]),
        "eval_set": eval_frame(tables["queries"], tables["qrels"], tables["chunks"]),
    }
    eval_figures = eval_shape.figures(frames["eval_set"], len(tables["chunks"]))
    facts = corpus_facts(tables["papers"], tables["chunks"], tables["statements"], tables["pairs"])
    site_dir = paths.data_quality_reports
    context = open_context(paths)
    clear_previous_run(context, site_dir)
    run_time = dt.datetime.now(dt.UTC)
    suites: dict[str, SuiteSummary] = {}
    sections: list[SuiteSection] = []
    for name, build_suite in SUITE_BUILDERS.items():
        checkpoint = sync_checkpoint(context, name, build_suite())
        checkpoint_result = checkpoint.run(
            batch_parameters={"dataframe": frames[name]},
            expectation_parameters=suite_parameters(params),
            run_id=run_id(run_time),
        )
        section = _section(context, checkpoint_result, name, site_dir, facts)
        suites[name] = section.summary
        sections.append(section)
    make_site_offline(site_dir)
    index_html = site_dir / "index.html"
    io.write_text(index_html, render_index(sections, run_time, eval_figures))
    return QualityReportResult(
        index_html=index_html,
        suites=suites,
        success=all(summary.success for summary in suites.values()),
        eval_set=eval_figures,
        record=quality_record(sections),
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
        for column in columns:
            # The helper columns need values (a null text has no length); validate's
            # schemas reject nulls, so a null here means the frames were not validated.
            nulls = int(tables[table][column].isna().sum())
            if nulls:
                raise ValueError(
                    f"build_report: table {table!r} column {column!r} has {nulls} null "
                    "value(s); the report describes validated tables only: run mathembed "
                    "validate, which rejects them"
                )


def _section(
    context: FileDataContext,
    checkpoint_result: CheckpointResult,
    name: str,
    site_dir: Path,
    facts: CorpusFacts,
) -> SuiteSection:
    """One suite's part of the front page: its verdict, its rows, its GX pages."""
    from great_expectations.data_context.types.resource_identifiers import (
        ExpectationSuiteIdentifier,
    )

    result_key, validation = only_validation_result(checkpoint_result, name)
    publish_docs(context, result_key, validation, name)
    rows = [expectation_row(result, name, facts) for result in validation.results]
    return SuiteSection(
        name=name,
        summary=summarize(validation, rows),
        rows=rows,
        validation_page=site_page(context, result_key, site_dir),
        suite_page=site_page(context, ExpectationSuiteIdentifier(name=name), site_dir),
    )
