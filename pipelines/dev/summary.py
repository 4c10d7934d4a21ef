"""Print what the pipeline produced: each stage's counts, the evaluation and the decision.

``mathembed summary`` (run by ``make repro`` and ``make demo``) reads the
stages' metrics files under ``metrics/`` and says where the outputs and reports are.
It changes nothing.
"""

from __future__ import annotations

import json
from typing import Any

from pipelines.common.paths import Paths

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
    lines.extend(_evaluation_lines(paths))
    lines.append(
        f"outputs: {paths.raw}, {paths.processed}, {paths.graph}, {paths.training}, "
        f"{paths.eval}, {paths.validated}; rejected inputs and their reasons: "
        f"{paths.quarantine}; data-quality report: reports/data_quality/index.html"
    )
    return "\n".join(lines)


#: The metrics the evaluation and promotion lines show.
HEADLINE_METRICS = ("mrr@10", "ndcg@10")


def _evaluation_lines(paths: Paths) -> list[str]:
    """Candidate vs base at the primary dimension, and the last promotion decision."""
    lines = []
    evaluation_file = paths.metric_file("eval")
    if evaluation_file.is_file():
        evaluation = json.loads(evaluation_file.read_text(encoding="utf-8"))
        dim = f"dim_{evaluation['primary_dim']}"
        scores = "; ".join(
            f"{model} " + " ".join(f"{m}={evaluation[model][dim][m]:.4f}" for m in HEADLINE_METRICS)
            for model in ("candidate", "base")
        )
        lines.append(
            f"evaluate: {evaluation['n_queries']} held-out queries, "
            f"{evaluation['corpus_size']} passages, dim {evaluation['primary_dim']}: {scores}; "
            "figures: reports/eval/*.png"
        )
    promotion_file = paths.metric_file("promotion")
    if promotion_file.is_file():
        promotion = json.loads(promotion_file.read_text(encoding="utf-8"))
        outcome = "promoted to @champion" if promotion["promoted"] else "kept as @challenger"
        lines.append(
            f"promote: {promotion['registered_model']} v{promotion['version']} {outcome}: "
            f"{promotion['reason']} (p={promotion['p_value']})"
        )
    return lines
