"""``mathembed validate``: check every table (blocking) and build the data-quality report."""

from __future__ import annotations

import typer

from pipelines.common.cli import (
    DEFAULT_PARAMS,
    DEFAULT_ROOT,
    ParamsOption,
    RootOption,
    stage_command,
)


def validate(params: ParamsOption = DEFAULT_PARAMS, root: RootOption = DEFAULT_ROOT) -> None:
    """Check every table (blocking); data-quality report.

    Checks the pipeline's tables (data/processed, data/graph, data/training,
    data/eval) against their schemas, each other and the no-leakage rules, and
    the evaluation set's shape (enough queries, none relevant to much of the
    corpus). Structural failures stop with exit code 1; rows failing row-level checks go
    to data/quarantine/<table>.parquet; the rest to data/validated/. Counts in
    metrics/data_quality.json; the Great Expectations report in
    reports/data_quality/.
    """
    from pipelines.common.paths import Paths
    from pipelines.validate.pages import eval_set_line
    from pipelines.validate.stage import ValidationError, run_validate
    from pipelines.validate.summaries import quality_lines

    bad_input = (ValidationError, FileNotFoundError, ValueError)
    with stage_command("validate", params, root, bad_input) as loaded:
        report = run_validate(loaded.validate, Paths(root))
    totals = report.metrics["totals"]
    typer.echo(
        f"validate: {len(report.tables)} tables, {totals['rows_in']} rows in, "
        f"{totals['kept']} kept, {totals['quarantined']} quarantined"
    )
    for table, outcome in report.tables.items():
        if outcome.quarantined:
            reasons = ", ".join(f"{k} {v}" for k, v in outcome.quarantined_by_check.items())
            typer.echo(
                f"  {table}: {outcome.quarantined} of {outcome.rows_in} quarantined ({reasons})"
            )
        if outcome.papers_quarantined_whole:
            papers = ", ".join(outcome.papers_quarantined_whole)
            typer.echo(f"  {table}: paper(s) quarantined whole (too many rows fail): {papers}")
    typer.echo(f"validate: {eval_set_line(report.metrics['eval_set'])}")
    quality = report.quality_report
    typer.echo(f"validate: data-quality report {quality.index_html}")
    for line in quality_lines(quality.record):
        typer.echo(f"validate: {line}" if not line.startswith(" ") else f"  {line}")


def register(app: typer.Typer) -> None:
    app.command("validate")(validate)
