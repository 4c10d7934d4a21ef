"""``mathembed promote``, ``status``, ``rollback``: the champion/challenger registry by hand.

MLflow is the server named by ``MLFLOW_TRACKING_URI``, else the SQLite store
``<root>/mlruns/mlflow.db``. A refusal, a held lock or an unreachable MLflow exits 1 with
its reason; a broken ``params.yaml`` exits 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pipelines.common.cli import (
    DEFAULT_PARAMS,
    DEFAULT_ROOT,
    ParamsOption,
    RootOption,
    command_errors,
    log_progress,
    params_path,
)


def _bad_input() -> tuple[type[BaseException], ...]:
    """What a promotion command reports in one line: each carries what to do about it."""
    from pipelines.registry.mlflow_registry import PromotionError

    # QueryMismatchError (the decision's sides scored on different queries) is a ValueError.
    return (PromotionError, FileNotFoundError, ValueError)


def promote(
    params: ParamsOption = DEFAULT_PARAMS,
    root: RootOption = DEFAULT_ROOT,
    candidate: Annotated[
        Path | None,
        typer.Option("--candidate", help="Model folder instead of <root>/models/candidate."),
    ] = None,
) -> None:
    """Register the candidate in MLflow; move @champion only if it wins.

    Registers models/candidate as a version of math-embed and moves @champion to it if it
    beats the champion (or, with none yet, the base model) on the same validated queries;
    otherwise it becomes @challenger. Safe to repeat: a candidate is registered once.
    """
    from pipelines.common.config import load_params
    from pipelines.common.paths import Paths
    from pipelines.promote.formatting import format_promotion
    from pipelines.promote.promotion import promote_candidate

    log_progress()  # scoring embeds what the store lacks: its progress reaches the flow log
    with command_errors("promote", bad_input=_bad_input()):
        result = promote_candidate(
            load_params(params_path(params, root)), Paths(root), candidate_dir=candidate
        )
    typer.echo(format_promotion(result))


def status(params: ParamsOption = DEFAULT_PARAMS, root: RootOption = DEFAULT_ROOT) -> None:
    """Show @champion, @challenger and @previous, and check the embedding store.

    One line per alias: its version and the metrics it scored when it was decided on.
    Then every table of the embedding store (data/embeddings/) is read and each row checked
    against its checksum: a damaged table is dropped, to be rebuilt when next used.
    """
    from pipelines.common.config import load_params
    from pipelines.common.paths import Paths
    from pipelines.promote.aliases import status as alias_status
    from pipelines.promote.formatting import format_status, format_store_checks
    from pipelines.retrieval.vector_store import verify_store

    with command_errors("status", bad_input=_bad_input()):
        entries = alias_status(Paths(root), load_params(params_path(params, root)).promote)
        checks = verify_store(Paths(root))
    typer.echo(format_status(entries))
    typer.echo(format_store_checks(checks))


def rollback(
    params: ParamsOption = DEFAULT_PARAMS,
    root: RootOption = DEFAULT_ROOT,
    reason: Annotated[
        str, typer.Option("--reason", help="Why; recorded in the versions' tags.")
    ] = "manual rollback",
) -> None:
    """Move @champion back to @previous.

    The demoted version gets no alias back by itself; both versions are tagged with who
    rolled back, when and why.
    """
    from pipelines.common.config import load_params
    from pipelines.common.paths import Paths
    from pipelines.promote.aliases import rollback as roll_back
    from pipelines.promote.formatting import format_rollback

    with command_errors("rollback", bad_input=_bad_input()):
        result = roll_back(
            Paths(root), load_params(params_path(params, root)).promote, reason=reason
        )
    typer.echo(format_rollback(result))


def register(app: typer.Typer) -> None:
    app.command("promote")(promote)
    app.command("status")(status)
    app.command("rollback")(rollback)
