"""Quality on real mathematics, recorded side by side (issue 11).

Two parts, written to ``benchmarks/results/quality.json``:

* **concepts** — on the whole real corpus (every mathematical chapter of the Stacks Project
  beside the checkout): concept precision on the hand-labelled sample, recall of the terms
  the corpus marks as defined, the graph's size (:mod:`benchmarks.real_corpus`);
* **retrieval** — on a project where the pipeline has run (``--project``, default the
  checkout after ``make demo`` or ``dvc repro``): the eval set's shape, the pair-kind mix,
  the descriptions used and left out, and per evaluation set (named, masked, described)
  base vs candidate MRR@10, NDCG@10 and Recall@100 with bootstrap 95% intervals and the
  paired randomization test's p-value, from ``metrics/eval_per_query.parquet``.

Run: ``.venv/bin/python benchmarks/bench_quality.py`` (about a minute for the concepts,
plus whatever the project's evaluation took).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.real_corpus import (  # noqa: E402 -- after the path is set
    REPO,
    SHARED_CORPUS,
    build_graph,
    label_sample,
    precision,
    read_labels,
    recall,
    write_raw_store,
)
from pipelines.common.tables import QUERY_SETS  # noqa: E402 -- after the path is set

RESULT = REPO / "benchmarks" / "results" / "quality.json"
METRICS = ("mrr@10", "ndcg@10", "recall@100")
N_RESAMPLES = 10_000
SEED = 0


def concept_quality() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="mathembed-real-") as folder:
        root = Path(folder)
        chapters = write_raw_store(root)
        concepts = build_graph(root)
        graph = json.loads((root / "metrics" / "graph.json").read_text())
    measured_precision = precision(label_sample(concepts["name"]), read_labels())
    measured_recall = recall(SHARED_CORPUS, concepts)
    return {
        "corpus": f"{chapters} chapters of the Stacks Project ({SHARED_CORPUS.name})",
        "concepts": len(concepts),
        "concepts_by_type": graph["concepts_by_type"],
        "edges_by_relation": graph["edges_by_relation"],
        "citations_resolved": graph.get("citations", 0),
        "precision": round(measured_precision.value, 4),
        "precision_labelled": measured_precision.labelled,
        "precision_not_concepts": measured_precision.wrong,
        "precision_unlabelled": measured_precision.unlabelled,
        "recall": round(measured_recall.value, 4),
        "recall_defined_terms": measured_recall.defined,
        "recall_missed_examples": measured_recall.missed[:30],
    }


def _bootstrap_interval(values: np.ndarray, rng: np.random.Generator) -> list[float]:
    means = rng.choice(values, size=(N_RESAMPLES, len(values)), replace=True).mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return [round(float(low), 4), round(float(high), 4)]


def retrieval_quality(project: Path) -> dict[str, Any]:
    per_query = pd.read_parquet(project / "metrics" / "eval_per_query.parquet")
    data = json.loads((project / "metrics" / "data.json").read_text())
    qrels = pd.read_parquet(project / "data" / "validated" / "qrels.parquet")
    chunks = pd.read_parquet(
        project / "data" / "validated" / "chunks.parquet", columns=["chunk_id"]
    )
    relevant = qrels[qrels["grade"] >= 1].groupby("query_id").size()
    rng = np.random.default_rng(SEED)
    full = per_query[per_query["dim"] == per_query["dim"].max()]
    if "set" not in full:
        full = full.assign(set="named")
    by_set = {
        query_set: _set_quality(full[full["set"] == query_set], rng)
        for query_set in QUERY_SETS
        if (full["set"] == query_set).any()
    }
    return {
        "project": str(project),
        "eval_set": {
            "queries": int(relevant.size),
            "passages": len(chunks),
            "relevant_per_query": {
                "median": float(relevant.median()),
                "max": int(relevant.max()),
                "max_share_of_corpus": round(float(relevant.max() / len(chunks)), 4),
            },
            "grade_2": int((qrels["grade"] == 2).sum()),
            "grade_1": int((qrels["grade"] == 1).sum()),
            "unseen_qrels": int(qrels["unseen"].sum()),
        },
        "queries_by_set": data.get("queries_by_set", {}),
        "pairs_by_kind": data["pairs"]["by_kind"],
        "descriptions": data.get("descriptions", {}),
        # per set: base and candidate with bootstrap intervals, the paired test
        "sets": by_set,
    }


def _set_quality(rows: pd.DataFrame, rng: np.random.Generator) -> dict[str, Any]:
    """Base and candidate on one set's queries: means with bootstrap 95% intervals, and the
    paired randomization test of candidate against base, per metric."""
    import metrics_rs

    models: dict[str, Any] = {}
    tests: dict[str, Any] = {}
    for metric in METRICS:
        chosen = rows[rows["metric"] == metric]
        scores = {
            model: chosen[chosen["model"] == model].sort_values("query_id")["value"].to_numpy()
            for model in ("base", "candidate")
        }
        for model, values in scores.items():
            models.setdefault(model, {})[metric] = {
                "mean": round(float(values.mean()), 4),
                "ci95": _bootstrap_interval(values, rng),
            }
        test = metrics_rs.paired_test(
            scores["candidate"],
            scores["base"],
            method="randomization",
            n_resamples=N_RESAMPLES,
            seed=SEED,
        )
        tests[metric] = {key: round(float(value), 6) for key, value in test.items()}
    n_queries = int(rows["query_id"].nunique())
    return {"queries": n_queries, "models": models, "candidate_vs_base": tests}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, default=REPO, help="a project the pipeline ran in")
    parser.add_argument("--skip-concepts", action="store_true", help="retrieval part only")
    parser.add_argument(
        "--key", default="retrieval", help="where the retrieval figures go in the record"
    )
    args = parser.parse_args()
    record: dict[str, Any] = {}
    if RESULT.is_file():
        record = json.loads(RESULT.read_text())
    if not args.skip_concepts:
        record["concepts"] = concept_quality()
    if (args.project / "metrics" / "eval_per_query.parquet").is_file():
        record[args.key] = retrieval_quality(args.project)
    RESULT.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps(record, indent=1, ensure_ascii=False)[:4000])


if __name__ == "__main__":
    main()
