"""``mathembed promote`` / ``status`` / ``rollback``: thin shells over the registry.

The promotion rule is :func:`pipelines.decision.decide` (pure); the MLflow side is
:mod:`pipelines.registry`. This module turns their results into the lines the command
line prints, and is runnable as ``python -m pipelines.promote [promote|status|rollback]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipelines.common.config import ConfigError, add_config_arguments, load_params
from pipelines.common.paths import Paths
from pipelines.promote.decision import QueryMismatchError
from pipelines.promote.registry import (
    AliasStatus,
    PromotionError,
    PromotionResult,
    RollbackResult,
    promote_candidate,
    rollback,
    status,
)

#: What a shell catches from promote, status and rollback: each has a message to print.
EXPECTED_ERRORS = (PromotionError, QueryMismatchError, ConfigError, FileNotFoundError, ValueError)


def format_promotion(result: PromotionResult) -> str:
    """A few lines: decided what, against whom, the metrics, where the aliases point."""
    decision = result.decision
    outcome = "PROMOTED to @champion" if decision.promote else "not promoted: @challenger"
    if result.redecided:
        again = " (registered before; decided again on new evaluation data)"
    elif result.already_registered:
        again = " (already registered; recorded decision)"
    else:
        again = ""
    against = (
        f"champion v{result.compared_version}"
        if decision.compared_against == "champion"
        else "the base model"
    )
    lines = [
        f"{result.registered_model} v{result.version} {outcome}{again}",
        f"  compared with {against}: {decision.reason}",
    ]
    for metric, delta in decision.deltas.items():
        lines.append(
            f"  {metric}: candidate {decision.candidate[metric]:.4f}  "
            f"{decision.compared_against} {decision.other[metric]:.4f}  ({delta:+.4f})"
        )
    if decision.p_value is not None:
        lines.append(f"  p-value: {decision.p_value:.4g}")
    lines.append("  aliases: " + _aliases_line(result.aliases))
    lines.append(f"  run {result.run_id} at {result.tracking_uri}")
    return "\n".join(lines)


def format_status(entries: list[AliasStatus]) -> str:
    """One line per alias: version and the metrics it scored when it was decided on."""
    lines = []
    for entry in entries:
        if entry.version is None:
            lines.append(f"{entry.alias:<10} -")
            continue
        metrics = "  ".join(f"{name} {value:.4f}" for name, value in entry.metrics.items())
        notes = []
        if "rolled_back_at" in entry.tags:
            notes.append(f"rolled back {entry.tags['rolled_back_at']}")
        if "restored_at" in entry.tags:
            notes.append(f"restored {entry.tags['restored_at']}")
        suffix = f"  ({'; '.join(notes)})" if notes else ""
        decided = entry.tags.get("decided_at", "")
        lines.append(f"{entry.alias:<10} v{entry.version:<4} {metrics}  {decided}{suffix}")
    return "\n".join(lines)


def format_rollback(result: RollbackResult) -> str:
    return (
        f"@champion moved back to v{result.restored} (v{result.demoted} demoted) "
        f"by {result.actor} at {result.at}: {result.reason}"
    )


def _aliases_line(aliases: dict[str, str | None]) -> str:
    return ", ".join(f"@{alias} v{version}" for alias, version in aliases.items() if version)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pipelines.promote",
        description=(
            "promote: register models/candidate in MLflow (math-embed) and move @champion if it "
            "beats the champion (or, with none yet, the base model) on the same queries; "
            "status: show @champion, @challenger, @previous; rollback: @champion back to "
            "@previous. MLflow: MLFLOW_TRACKING_URI, else sqlite:///<root>/mlruns/mlflow.db."
        ),
    )
    parser.add_argument(
        "command", nargs="?", default="promote", choices=["promote", "status", "rollback"]
    )
    add_config_arguments(parser)
    parser.add_argument(
        "--candidate", type=Path, default=None, help="model folder instead of models/candidate"
    )
    parser.add_argument(
        "--reason", default="manual rollback", help="why (rollback only; recorded in tags)"
    )
    args = parser.parse_args(argv)
    paths = Paths(args.root)
    try:
        params = load_params(args.params)
        if args.command == "status":
            print(format_status(status(paths, params.promote)))
        elif args.command == "rollback":
            print(format_rollback(rollback(paths, params.promote, reason=args.reason)))
        else:
            print(format_promotion(promote_candidate(params, paths, candidate_dir=args.candidate)))
    except EXPECTED_ERRORS as error:
        print(f"{args.command}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
