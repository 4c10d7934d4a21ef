"""The ``validate`` stage: check every table against the contract before training sees it.

Reads every table of the contract (:data:`pipelines.common.tables.TABLES`: the prepare,
graph and pairs outputs) and writes what the later stages read:
``data/validated/<table>.parquet`` (the same columns; rows that failed a row-level check
removed), ``data/quarantine/<table>.parquet`` (the removed rows plus ``failed_check``),
``metrics/data_quality.json`` and, through :mod:`pipelines.validate.report`, the Great
Expectations Data Docs (``reports/data_quality/``), built from the validated tables.

Everything is checked before anything is written (pandera's lazy mode: all failures are
collected), and the policy is:

* **structural** failures stop the run with a :class:`ValidationError` naming the table,
  the check and a few failing rows: a table's schema (:mod:`pipelines.validate.schemas`:
  columns, dtypes, nulls, formats, ranges, allowed values); cross-table integrity
  (:data:`pipelines.validate.references.REFERENCES`: every chunk's paper exists, both
  ends of an edge are concepts, every qrel points at a chunk and a query, every query
  has a qrel, ...); leakage between training pairs and the held-out evaluation set
  (:mod:`pipelines.validate.leakage`); corpus balance (a paper holding most of the
  passages, :mod:`pipelines.validate.balance`); and the evaluation set's shape (fewer
  than ``min_queries`` queries, a query with more than ``max_query_relevant_share`` of
  the corpus relevant, :mod:`pipelines.validate.eval_shape`).
* **row-level** failures (:data:`pipelines.validate.formats.ROW_LEVEL_CHECKS`: passage
  length, leftover LaTeX markup, empty anchors or texts, an anchor equal to its positive,
  duplicate ids) are quarantined when at most ``max_row_failure_fraction`` of a table's
  rows fail them, and stop the run otherwise. Removing a row keeps the tables whole:
  rows pointing at a quarantined row (a qrel at its chunk, a pair at its positive, a
  query left without qrels, ...) are quarantined too, with ``failed_check`` "dangling
  after <the check that removed the first row>". They do not count toward the
  threshold: it limits how much of a table is bad, not how far removal spreads.
* row-level failures are judged **per paper** too (:mod:`pipelines.validate.per_paper`):
  a paper with more than ``max_paper_row_failure_fraction`` of a table's rows failing is
  quarantined whole (its other rows with ``failed_check`` "max_paper_row_failure_fraction")
  and the threshold counts the other papers' rows, so one bad paper does not stop the
  corpus; the metrics and the message name the papers.

Counts add up for every table: rows in = kept + quarantined (``metrics/data_quality.json``,
which also lists every check run and how many rows failed it, the evaluation set's
shape under ``eval_set``, and the data-quality report's failed expectations under
``expectations``, those the corpus explains with their reasons:
:class:`pipelines.validate.summaries.QualityRecord`).

:func:`validate_tables` is pure; :func:`run_validate` reads and writes.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import pandera.pandas as pa
import pyarrow  # type: ignore[import-untyped]  # pyarrow ships no type information
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from pipelines.common import io
from pipelines.common.config import ValidateParams
from pipelines.common.paths import Paths
from pipelines.common.tables import TABLES, write_table
from pipelines.validate import balance, eval_shape, formats, per_paper, schemas
from pipelines.validate.leakage import leakage_masks
from pipelines.validate.outcome import CheckFailure, TableOutcome, ValidationError, ValidationResult
from pipelines.validate.references import REFERENCES
from pipelines.validate.summaries import RECORD_KEY

if TYPE_CHECKING:
    from pipelines.validate.report import QualityReportResult

THRESHOLD_CHECK = "max_row_failure_fraction"
FAILED_CHECK = "failed_check"
DANGLING = "dangling after "
EXAMPLES_SHOWN = 5
INCOMPLETE = (
    "validate was interrupted before the data-quality report was complete; rerun mathembed validate"
)
VALUE_CHARS = 60


@dataclass(frozen=True)
class ValidationReport:
    """What :func:`run_validate` did: the counts and the files it wrote."""

    tables: dict[str, TableOutcome]
    metrics: dict[str, Any]
    written: list[Path]
    quality_report: QualityReportResult


# -- one table --------------------------------------------------------------------------


@dataclass
class _TableChecks:
    """What the checks of one table found: structural failures, and failing rows."""

    structural: list[CheckFailure] = field(default_factory=list)
    rows: dict[str, pd.Index] = field(default_factory=dict)  # row-level check -> row labels
    ran: list[str] = field(default_factory=list)

    @property
    def broken(self) -> bool:
        return bool(self.structural)


def _render(frame: pd.DataFrame, index: pd.Index, columns: Sequence[str]) -> tuple[str, ...]:
    """A few rows as ``row 12: chunk_id='…', text='…'`` (long values cut)."""
    shown = [column for column in dict.fromkeys(columns) if column in frame.columns]
    lines = []
    for label in list(index[:EXAMPLES_SHOWN]):
        values = ", ".join(f"{column}={_short(frame.at[label, column])}" for column in shown)
        lines.append(f"row {label}: {values}")
    return tuple(lines)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def _failure_key(error: pa.errors.SchemaError) -> str:
    reason = error.reason_code
    if reason == pa.errors.SchemaErrorReason.COLUMN_NOT_IN_SCHEMA:
        return "columns"
    if reason == pa.errors.SchemaErrorReason.WRONG_DATATYPE:
        name = "dtype"
    elif reason == pa.errors.SchemaErrorReason.SERIES_CONTAINS_NULLS:
        name = "not_nullable"
    elif error.check is not None and not isinstance(error.check, str):
        name = schemas.check_label(error.check)
    else:
        name = str(error.check or reason)
    return f"{error.column_name}:{name}" if error.column_name else name


def check_table(table: str, frame: pd.DataFrame, params: ValidateParams) -> _TableChecks:
    """Run ``table``'s schema on ``frame`` (lazily: every failure is collected)."""
    found = _TableChecks()
    schema = schemas.table_schema(table, params)
    found.ran = schemas.check_names(schema)
    missing = [column for column in schema.columns if column not in frame.columns]
    if missing:
        # The checks read these columns; without them nothing else can be judged.
        found.structural.append(
            CheckFailure(table, "columns", len(frame), note=f"missing column(s) {missing}")
        )
        return found
    try:
        schema.validate(frame, lazy=True)
    except pa.errors.SchemaErrors as errors:
        for error in errors.schema_errors:
            _classify(table, frame, error, found)
    return found


def _classify(
    table: str, frame: pd.DataFrame, error: pa.errors.SchemaError, found: _TableChecks
) -> None:
    key = _failure_key(error)
    cases = error.failure_cases
    index = None
    if isinstance(cases, pd.DataFrame) and "index" in cases.columns:
        index = pd.Index(cases["index"].dropna().unique())
    if index is not None and formats.is_row_level(key):
        found.rows[key] = found.rows[key].union(index) if key in found.rows else index
        return
    column = error.column_name
    if index is not None and index.isin(frame.index).all():
        columns = [*formats.KEYS[table], *([column] if column in frame.columns else [])]
        examples = _render(frame, index, columns)
        rows = len(index)
    else:
        # A whole-column failure (a dtype, an extra column, a check that could not run).
        cases_text = cases if not isinstance(cases, pd.DataFrame) else cases.head(3).to_dict()
        examples = (f"found: {_short(cases_text)}",)
        rows = len(frame)
    found.structural.append(CheckFailure(table, key, rows, examples))


# -- cross-table integrity and leakage --------------------------------------------------


def _integrity(
    frames: Mapping[str, pd.DataFrame], usable: set[str]
) -> tuple[list[CheckFailure], dict[tuple[str, str], int]]:
    """Every reference between usable tables: failures, and failed rows per (table, check)."""
    failures: list[CheckFailure] = []
    counts: dict[tuple[str, str], int] = {}
    for reference in REFERENCES:
        if reference.table not in usable or reference.parent not in usable:
            continue
        child = frames[reference.table]
        dangling = reference.dangling(child, frames[reference.parent])
        counts[(reference.table, reference.name)] = int(dangling.sum())
        if dangling.any():
            index = child.index[dangling.to_numpy()]
            note = (
                f"{list(reference.columns)} not found in "
                f"{reference.parent}{list(reference.parent_columns)}"
            )
            failures.append(
                CheckFailure(
                    reference.table,
                    reference.name,
                    len(index),
                    _render(child, index, [*formats.KEYS[reference.table], *reference.columns]),
                    note,
                )
            )
    return failures, counts


def _leakage(
    frames: Mapping[str, pd.DataFrame], usable: set[str]
) -> tuple[list[CheckFailure], dict[str, int]]:
    if not {"pairs", "queries", "concepts", "qrels"} <= usable:
        return [], {}
    pairs = frames["pairs"]
    masks = leakage_masks(pairs, frames["queries"], frames["concepts"], frames["qrels"])
    failures = []
    for check, mask in masks.items():
        if mask.any():
            index = pairs.index[mask.to_numpy()]
            columns = ["anchor", "concept", "positive_id", "split"]
            failures.append(
                CheckFailure("pairs", check, len(index), _render(pairs, index, columns))
            )
    return failures, {check: int(mask.sum()) for check, mask in masks.items()}


def _balance(
    frames: Mapping[str, pd.DataFrame], usable: set[str]
) -> tuple[list[CheckFailure], dict[str, int]]:
    """A paper holding an absurd share of all passages (:mod:`pipelines.validate.balance`)."""
    if "chunks" not in usable:
        return [], {}
    chunks = frames["chunks"]
    dominant = balance.dominant_papers(chunks)
    rows = int(dominant.sum())
    if dominant.empty:
        return [], {balance.CHECK: 0}
    examples, note = balance.describe(dominant, chunks)
    return [CheckFailure("chunks", balance.CHECK, rows, examples, note)], {balance.CHECK: rows}


def _eval_shape(
    frames: Mapping[str, pd.DataFrame], usable: set[str], params: ValidateParams
) -> tuple[list[CheckFailure], dict[str, int]]:
    """Too few queries, or too broad ones (:mod:`pipelines.validate.eval_shape`): failures,
    and failed queries per check (the whole table for too few)."""
    if not {"queries", "qrels", "chunks"} <= usable:
        return [], {}
    passages = len(frames["chunks"])
    per_query = eval_shape.query_frame(frames["queries"], frames["qrels"], passages)
    failures: list[CheckFailure] = []
    counts = dict.fromkeys(eval_shape.CHECKS, 0)
    for query_set, knob in eval_shape.MIN_QUERIES_KNOBS.items():
        of_set = eval_shape.query_frame(
            eval_shape.of_set(frames["queries"], query_set), frames["qrels"], passages
        )
        too_few = eval_shape.too_few_queries(of_set, getattr(params, knob), query_set)
        if too_few:
            # The set as a whole fails, not a row of it: every query is counted.
            counts[eval_shape.MIN_QUERIES_CHECK] += len(of_set)
            failures.append(
                CheckFailure("queries", eval_shape.MIN_QUERIES_CHECK, len(of_set), (), too_few)
            )
    crowded = eval_shape.crowded_queries(per_query, passages, params.max_query_relevant_share)
    if not crowded.empty:
        examples, note = eval_shape.describe_crowded(
            crowded, passages, params.max_query_relevant_share
        )
        counts[eval_shape.SHARE_CHECK] = len(crowded)
        failures.append(
            CheckFailure("queries", eval_shape.SHARE_CHECK, len(crowded), examples, note)
        )
    return failures, counts


# -- quarantine -------------------------------------------------------------------------


def _row_labels(rows: Mapping[str, pd.Index], order: Sequence[str]) -> pd.Series:
    """Each failing row's ``failed_check``: the checks it failed, in schema order, "; "-joined."""
    failed: dict[Any, list[str]] = {}
    for check in sorted(rows, key=lambda name: order.index(name) if name in order else len(order)):
        for label in rows[check]:
            failed.setdefault(label, []).append(check)
    return pd.Series(
        {label: "; ".join(checks) for label, checks in failed.items()}, dtype="str"
    ).sort_index()


def _dangling_label(label: str) -> str:
    return label if label.startswith(DANGLING) else DANGLING + label.split("; ")[0]


def _cascade(
    frames: Mapping[str, pd.DataFrame], labels: dict[str, pd.Series]
) -> dict[str, pd.DataFrame]:
    """Drop the labelled rows, then every row left pointing at a dropped one, until none."""
    kept = {table: frame.drop(index=labels[table].index) for table, frame in frames.items()}
    changed = True
    while changed:
        changed = False
        for reference in REFERENCES:
            child = kept[reference.table]
            dangling = reference.dangling(child, kept[reference.parent])
            if not dangling.any():
                continue
            # Why: the failed_check of the removed parent row the dangling row pointed at.
            removed = labels[reference.parent]
            parent_rows = frames[reference.parent].loc[
                removed.index, list(reference.parent_columns)
            ]
            why = (
                parent_rows.set_axis(list(reference.columns), axis=1)
                .assign(**{FAILED_CHECK: removed.map(_dangling_label)})
                .drop_duplicates(subset=list(reference.columns))
            )
            lost = child.loc[dangling.to_numpy(), list(reference.columns)]
            reasons = (
                lost.reset_index()
                .merge(why, on=list(reference.columns), how="left")
                .set_index("index")[FAILED_CHECK]
                .fillna(DANGLING + reference.name)
                .astype("str")
            )
            labels[reference.table] = pd.concat([labels[reference.table], reasons]).sort_index()
            kept[reference.table] = child.loc[~dangling.to_numpy()]
            changed = True
    return kept


# -- the whole check --------------------------------------------------------------------


def validate_tables(tables: Mapping[str, pd.DataFrame], params: ValidateParams) -> ValidationResult:
    """Check all tables; quarantine row-level failures or raise :class:`ValidationError`."""
    absent = [table for table in TABLES if table not in tables]
    if absent:
        raise ValueError(f"validate_tables needs every table; missing {absent}")
    frames = {table: tables[table].reset_index(drop=True) for table in TABLES}

    found = {table: check_table(table, frames[table], params) for table in TABLES}
    failures = [failure for table in TABLES for failure in found[table].structural]
    usable = {table for table in TABLES if not found[table].broken}
    integrity_failures, integrity_counts = _integrity(frames, usable)
    leakage_failures, leakage_counts = _leakage(frames, usable)
    balance_failures, balance_counts = _balance(frames, usable)
    shape_failures, shape_counts = _eval_shape(frames, usable, params)
    failures += integrity_failures + leakage_failures + balance_failures + shape_failures

    limit = params.max_row_failure_fraction
    set_aside: dict[str, list[str]] = {table: [] for table in TABLES}
    for table in [table for table in TABLES if table in usable]:
        rows, frame = found[table].rows, frames[table]
        failing = functools.reduce(pd.Index.union, rows.values(), pd.Index([]))
        set_aside[table] = per_paper.papers_set_aside(table, frame, failing, params)
        # The threshold counts the papers not set aside whole (pipelines.validate.per_paper).
        counted = frame.index.difference(per_paper.rows_of_papers(frame, set_aside[table]))
        failing = failing.intersection(counted)
        if len(failing) > limit * len(counted):
            counts = ", ".join(
                f"{check} {len(index.intersection(counted))}" for check, index in rows.items()
            )
            share = len(failing) / len(counted)
            note = (
                f"{share:.1%} of {len(counted)} rows fail row-level checks ({counts}), "
                f"above {limit:.1%}"
            )
            if worst := per_paper.describe(frame, failing):
                note += f"; most in paper(s) {worst}"
            if set_aside[table]:
                note += f"; set aside whole before counting: {', '.join(set_aside[table])}"
            columns = [*formats.KEYS[table], per_paper.PAPER_COLUMN]  # _render shows those present
            failures.append(
                CheckFailure(
                    table, THRESHOLD_CHECK, len(failing), _render(frame, failing, columns), note
                )
            )
    if failures:
        raise ValidationError(failures)

    labels = {
        table: per_paper.with_set_aside(
            _row_labels(found[table].rows, found[table].ran), frames[table], set_aside[table]
        )
        for table in TABLES
    }
    kept = _cascade(frames, labels)
    leftover, _ = _integrity(kept, set(TABLES))
    if leftover:  # pragma: no cover - the cascade removes every dangling row
        raise ValidationError(leftover)

    outcomes: dict[str, TableOutcome] = {}
    quarantined: dict[str, pd.DataFrame] = {}
    for table in TABLES:
        label = labels[table]
        quarantined[table] = frames[table].loc[label.index].assign(**{FAILED_CHECK: label})
        row_counts = {check: len(index) for check, index in found[table].rows.items()}
        checks = {
            "schema": {name: 0 for name in found[table].ran if not formats.is_row_level(name)},
            "row_level": {
                name: row_counts.get(name, 0)
                for name in found[table].ran
                if formats.is_row_level(name)
            },
            "integrity": {
                name: count for (child, name), count in integrity_counts.items() if child == table
            },
        }
        if table == "pairs":
            checks["leakage"] = dict(leakage_counts)
        if table == "chunks":
            checks["corpus"] = dict(balance_counts)
        if table == "queries":
            checks["eval_set"] = dict(shape_counts)
        outcomes[table] = TableOutcome(
            rows_in=len(frames[table]),
            kept=len(kept[table]),
            quarantined=len(label),
            quarantined_by_check={str(k): int(v) for k, v in sorted(label.value_counts().items())},
            checks=checks,
            papers_quarantined_whole=tuple(set_aside[table]),
        )
        assert outcomes[table].rows_in == outcomes[table].kept + outcomes[table].quarantined
    return ValidationResult(
        kept={table: frame.reset_index(drop=True) for table, frame in kept.items()},
        quarantined={table: frame.reset_index(drop=True) for table, frame in quarantined.items()},
        tables=outcomes,
        max_row_failure_fraction=limit,
        # The shape of the set evaluation will use: the kept tables, after quarantine.
        eval_set=eval_shape.figures(
            eval_shape.query_frame(kept["queries"], kept["qrels"], len(kept["chunks"])),
            len(kept["chunks"]),
        ),
    )


# -- I/O shell --------------------------------------------------------------------------


def read_tables(paths: Paths) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    """Every input table, and its Parquet schema (kept for the validated copy)."""
    tables: dict[str, pd.DataFrame] = {}
    arrow_schemas: dict[str, Any] = {}
    for name, table in TABLES.items():
        tables[name] = table.read(paths)
        arrow_schemas[name] = pq.read_schema(table.path(paths)).remove_metadata()
    return tables, arrow_schemas


def build_quality_report(
    tables: Mapping[str, pd.DataFrame], paths: Paths, params: ValidateParams
) -> QualityReportResult:
    """The Great Expectations checkpoints and Data Docs (``reports/data_quality/``), run on
    the validated tables: they describe what training will see."""
    # Imported here: Great Expectations takes seconds to import, and only a run needs it.
    from pipelines.validate.report import build_report

    return build_report(tables, paths, params)


def run_validate(params: ValidateParams, paths: Paths) -> ValidationReport:
    """Validate the pipeline's tables under ``paths`` and write the validated copies."""
    tables, arrow_schemas = read_tables(paths)
    metrics_path = paths.metric_file("data_quality")
    try:
        result = validate_tables(tables, params)
    except ValidationError as error:
        # Recorded, not only raised: promotion refuses a candidate unless the last
        # validation passed, so a failure must overwrite an earlier success.
        failed = sorted(f"{table}: {check}" for table, check in error.checks())
        io.write_json(metrics_path, {"passed": False, "failed_checks": failed})
        raise
    # Until the report is built the record says "not passed": an interrupted run (Ctrl-C,
    # a killed worker) must not leave "passed" beside new tables and a half-built report.
    io.write_json(metrics_path, {"passed": False, "incomplete": INCOMPLETE})
    written: list[Path] = []
    for name, table in TABLES.items():
        # The input's own Parquet schema: a validated table has exactly its input's types.
        arrow_schema = arrow_schemas[name]
        validated = paths.validated / table.file_name
        write_table(validated, result.kept[name], arrow_schema)
        quarantine = paths.quarantine / table.file_name
        write_table(
            quarantine,
            result.quarantined[name],
            arrow_schema.append(pyarrow.field(FAILED_CHECK, pyarrow.string())),
        )
        written += [validated, quarantine]
    quality = build_quality_report(result.kept, paths, params)
    metrics = {"passed": True, **result.metrics(), RECORD_KEY: quality.record}
    io.write_json(metrics_path, metrics)  # last: "passed" means everything above is on disk
    written.append(metrics_path)
    return ValidationReport(result.tables, metrics, written, quality)
