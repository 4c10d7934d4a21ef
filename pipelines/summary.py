"""Print what the data pipeline produced: the counts each stage recorded under ``metrics/``.

``python -m pipelines.summary`` (run by ``make repro`` and ``make demo``) reads the
stages' metrics files and says where the outputs are. It changes nothing.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pipelines.config import Paths

# (stage, metrics file name): the files the DVC stages write, in pipeline order.
STAGE_METRICS = (
    ("ingest", "ingest.json"),
    ("prepare", "prepare.json"),
    ("graph", "graph.json"),
    ("pairs", "data.json"),
)


def flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Nested metrics as ``(dotted.key, value)`` rows, in the file's order."""
    if isinstance(value, dict):
        rows: list[tuple[str, Any]] = []
        for key, item in value.items():
            rows.extend(flatten(item, f"{prefix}{key}."))
        return rows
    return [(prefix.rstrip("."), value)]


def render(paths: Paths) -> str:
    lines = []
    for stage, file_name in STAGE_METRICS:
        path = paths.metrics / file_name
        if not path.is_file():
            lines.append(f"{stage}: no {path} yet (run `make repro`)")
            continue
        metrics = json.loads(path.read_text(encoding="utf-8"))
        row = ", ".join(f"{key}={value}" for key, value in flatten(metrics))
        lines.append(f"{stage}: {row}")
    lines.append(
        f"outputs: {paths.raw}, {paths.processed}, {paths.graph}, {paths.training}, "
        f"{paths.eval}; rejected inputs and their reasons: {paths.quarantine}"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipelines.summary", description=__doc__)
    parser.add_argument("--root", type=Path, default=Path("."), help="repository root")
    args = parser.parse_args(argv)
    print(render(Paths(args.root)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
