"""``mathembed ingest``: harvest new papers into the append-only raw store."""

from __future__ import annotations

import typer

from pipelines.common.cli import (
    DEFAULT_PARAMS,
    DEFAULT_ROOT,
    ParamsOption,
    ProgressOption,
    RootOption,
    stage_command,
)


def ingest(
    params: ParamsOption = DEFAULT_PARAMS,
    root: RootOption = DEFAULT_ROOT,
    progress: ProgressOption = True,
) -> None:
    """Harvest new arXiv math papers into data/raw/ (append-only).

    With ingest.source 'sample' the mirror in data/mirror/ (built by mathembed sample) is
    served on 127.0.0.1 and read through the same client; with 'arxiv' the live API at
    ingest.base_url is used (set MATHEMBED_CONTACT_EMAIL first). Counts go to metrics/ingest.json.
    """
    import logging

    from pipelines.common.paths import Paths
    from pipelines.ingest.arxiv.transport import ArxivError
    from pipelines.ingest.stage import run_from_source

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    # A failed request, a missing or malformed mirror or watermark: bad input, exit 1.
    bad_input = (ArxivError, FileNotFoundError, ValueError)
    with stage_command("ingest", params, root, bad_input) as loaded:
        report = run_from_source(loaded.ingest, Paths(root), progress=progress)
    metrics = report.metrics()
    typer.echo(
        f"ingest: listed {metrics['listed']}, fetched {metrics['fetched']} "
        f"({metrics['tex']} tex, {metrics['abstract_only']} abstract-only), "
        f"withdrawn {metrics['withdrawn']}, skipped {metrics['skipped']}, "
        f"quarantined {metrics['quarantined']}; watermark {metrics['watermark']}"
    )


def register(app: typer.Typer) -> None:
    app.command("ingest")(ingest)
