"""The pipelines' command line: one Typer app, one command per user-facing task.

Commands are thin shells: they parse arguments, call a pure function or a script, and
turn failures into a message and an exit code (:mod:`pipelines.common.cli`: 1 bad input,
2 configuration). The stage commands are registered by the stages themselves; this module
holds the app (:func:`new_app`) and the tool commands. ``mathembed`` itself
(:mod:`mathembed.cli`, above both ``pipelines`` and ``flows``) is this app with the flows'
commands added; ``python -m pipelines`` (what ``torchrun`` launches) runs this one.
"""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Annotated

import typer

from pipelines.common import offline, quiet
from pipelines.common.cli import MathembedGroup
from pipelines.common.parts import STAGES
from pipelines.evaluate import cli as evaluate_cli
from pipelines.graph import cli as graph_cli
from pipelines.ingest import cli as ingest_cli
from pipelines.mirror import cli as sample_cli
from pipelines.pairs import cli as pairs_cli
from pipelines.prepare import cli as prepare_cli
from pipelines.promote import cli as promote_cli
from pipelines.search import cli as search_cli
from pipelines.train import cli as train_cli
from pipelines.validate import cli as validate_cli

REPO_ROOT = Path(__file__).resolve().parent.parent
BENCH_METRICS_SCRIPT = REPO_ROOT / "benchmarks" / "bench_metrics.py"


def _startup() -> None:
    # Runs before every command, never at import time: importing pipelines.cli
    # must not change the environment.
    offline.apply()
    quiet.silence_library_noise()


def version() -> None:
    """Print the versions of mathembed and of the metrics_rs extension."""
    try:
        mathembed_version = metadata.version("mathembed")
    except metadata.PackageNotFoundError:
        mathembed_version = "unknown (not installed; run `make venv`)"
    typer.echo(f"mathembed {mathembed_version}")
    try:
        # `from ... import` also fails cleanly when only the unbuilt source folder
        # ./metrics_rs is found (it then imports as an empty namespace package).
        from metrics_rs import __version__ as metrics_rs_version
    except ImportError as error:
        typer.echo(f"metrics_rs is not importable ({error}); build it with `make build`", err=True)
        raise typer.Exit(code=1) from error
    typer.echo(f"metrics_rs {metrics_rs_version}")


def bench_metrics(
    quick: Annotated[
        bool, typer.Option("--quick", help="Shrunk sizes: a quicker run (what `make demo` does).")
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Where to write the JSON results (default: benchmarks/results/metrics.json, "
            "or metrics-quick.json next to it with --quick).",
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """Benchmark metrics_rs (kNN, IR metrics) side by side with its reference anchors.

    Runs benchmarks/bench_metrics.py with the current Python interpreter and exits
    with its exit code.
    """
    script = BENCH_METRICS_SCRIPT
    if not script.is_file():
        typer.echo(
            f"benchmark script not found: {script}; run this command from a source "
            "checkout of mathembed (the benchmarks are not part of the installed package)",
            err=True,
        )
        raise typer.Exit(code=2)
    command = [sys.executable, str(script)]
    if quick:
        command.append("--quick")
    if out is not None:
        command += ["--out", str(out)]
    completed = subprocess.run(command, check=False)
    raise typer.Exit(code=completed.returncode)


# Each stage registers its own commands (``register(app)`` in ``pipelines/<stage>/cli.py``),
# in the order of :data:`~pipelines.common.parts.STAGES`: the CLI and the logic of a stage
# sit in one folder. A command module imports only Typer and ``pipelines.common`` at the
# top, so ``--help`` stays quick. They are imported by name above (an import the layering
# test can see); a stage missing here fails at import, one not in STAGES fails its test.
STAGE_COMMANDS = {
    module.__name__: module
    for module in (
        sample_cli,
        ingest_cli,
        prepare_cli,
        graph_cli,
        pairs_cli,
        validate_cli,
        train_cli,
        evaluate_cli,
        promote_cli,
        search_cli,
    )
}


def new_app() -> typer.Typer:
    """The app with the tool commands and every stage's; ``mathembed.cli`` adds the flows'."""
    app = typer.Typer(
        name="mathembed",
        cls=MathembedGroup,
        help=(
            "mathembed keeps an embedding model for mathematical concept retrieval fresh. "
            "Offline and no-telemetry switches (pipelines/common/offline.env) are applied at "
            "startup unless already set in the environment."
        ),
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    app.callback()(_startup)
    app.command()(version)
    app.command("bench-metrics")(bench_metrics)
    for stage in STAGES:
        STAGE_COMMANDS[stage.commands].register(app)
    return app


app = new_app()


if __name__ == "__main__":
    app()
