"""``mathembed evaluate``: score the candidate against its base model on the held-out queries."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from pipelines.common.cli import (
    DEFAULT_PARAMS,
    DEFAULT_ROOT,
    ParamsOption,
    RootOption,
    log_progress,
    stage_command,
)


def evaluate(
    params: ParamsOption = DEFAULT_PARAMS,
    root: RootOption = DEFAULT_ROOT,
    candidate: Annotated[
        Path | None,
        typer.Option(
            "--candidate", help="Model folder to score instead of <root>/models/candidate."
        ),
    ] = None,
    no_figures: Annotated[
        bool,
        typer.Option(
            "--no-figures",
            help="Skip the PNG figures in reports/eval/ (the CSV plot data is still written).",
        ),
    ] = False,
) -> None:
    """Score candidate and base model on held-out queries.

    Scores models/candidate/ against its base model on the validated held-out queries
    (data/validated/{chunks,queries,qrels}.parquet) at every Matryoshka dimension; writes
    metrics/<set>.json (the DVC metrics: named, masked, described), metrics/eval.json (every score),
    metrics/eval_per_query.parquet and reports/eval/ (metrics.csv, plot data, figures).
    """
    from pipelines.common.paths import Paths
    from pipelines.evaluate.headline import PairedTest
    from pipelines.evaluate.stage import EvalOutputs, run_evaluate
    from pipelines.registry.candidate_metadata import BaseModelSpec, recorded_base_model
    from pipelines.registry.reporting import format_p_value, format_score
    from pipelines.retrieval.models import ModelLoadError

    log_progress()  # the embedding's progress reaches dvc's output and the flow log
    paths = Paths(root)
    candidate_dir = candidate or paths.candidate
    bad_input = (FileNotFoundError, ValueError, ModelLoadError)
    with stage_command("evaluate", params, root, bad_input) as loaded:
        # The base is the model the candidate was fine-tuned from, as train recorded it;
        # params.yaml's train section only stands in when the candidate did not record one.
        recorded = recorded_base_model(candidate_dir)
        train, promote = loaded.train, loaded.promote
        report = run_evaluate(
            loaded.evaluate,
            paths,
            candidate_dir=candidate_dir,
            base_model=recorded
            or BaseModelSpec(train.base_model, train.pooling, train.max_seq_length),
            outputs=EvalOutputs.default(paths, figures=not no_figures),
            # promote's test settings and metrics: the headlines' p-values are the ones
            # promotion sees.
            paired_test=PairedTest(
                promote.test_method,
                promote.n_resamples,
                promote.seed,
                promote.significance_metric,
            ),
            metrics=promote.metrics,
            progress=sys.stderr.isatty(),
        )
    summary = report.summary
    typer.echo(
        f"evaluate: {summary['corpus_size']} passages, dims {summary['dims']}; at "
        f"{summary['primary_dim']}, candidate vs base on each set:"
    )
    for found in report.headlines:
        scores = ", ".join(
            f"{metric} {format_score(value)} vs {format_score(found.base[metric])}"
            for metric, value in found.candidate.items()
            if metric in found.base
        )
        typer.echo(
            f"  {found.query_set} ({found.queries} queries): {scores} "
            f"({format_p_value(found.p_value)})"
        )


def register(app: typer.Typer) -> None:
    app.command("evaluate")(evaluate)
