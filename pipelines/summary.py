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

# (stage, metrics file, dotted keys to show — a key also selects what is nested under
# it — or None for all): what the DVC stages write, in pipeline order.
STAGE_METRICS: tuple[tuple[str, str, tuple[str, ...] | None], ...] = (
    ("ingest", "ingest.json", None),
    ("prepare", "prepare.json", None),
    ("graph", "graph.json", ("papers", "concepts", "edges", "mentions", "extractor")),
    (
        "pairs",
        "data.json",
        ("pairs.by_split", "queries", "qrels.total", "held_out_concepts", "unseen_papers"),
    ),
    ("validate", "data_quality.json", ("passed", "totals")),
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
    for stage, file_name, keys in STAGE_METRICS:
        path = paths.metrics / file_name
        if not path.is_file():
            lines.append(f"{stage}: no {path} yet (run `make repro`)")
            continue
        rows = flatten(json.loads(path.read_text(encoding="utf-8")))
        if keys is not None:
            rows = [(k, v) for k, v in rows if any(k == s or k.startswith(f"{s}.") for s in keys)]
        row = ", ".join(f"{key}={value}" for key, value in rows)
        lines.append(f"{stage}: {row}")
    lines.append(
        f"outputs: {paths.raw}, {paths.processed}, {paths.graph}, {paths.training}, "
        f"{paths.eval}, {paths.validated}; rejected inputs and their reasons: "
        f"{paths.quarantine}; data-quality report: reports/data_quality/index.html"
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
