"""Cross-corpus retrieval (issue 27, transfer set c): one project's held-out queries searched
among its own passages and another project's together, by a model trained on the other.

Not a test: nothing here asserts. ``--trained`` is a project after a night (its
``models/candidate/`` was fine-tuned on its corpus); ``--foreign`` is another project after
a night, on a corpus that model never trained on. The foreign project's named, masked and
described queries are searched among the foreign passages plus the trained project's
(relevance as the foreign project judged it: every relevant passage is foreign), by the
base model and by the trained candidate, scored with the evaluate stage's functions at the
full dimension and compared by promote's paired test on MRR@10. A model that learned to
prefer its own corpus's style shows it twice: its MRR@10 falls against the base, and more
of its top-10 comes from the corpus it trained on (``own_share_top10``). The same queries
over the foreign passages alone are scored too, to tell the two apart.

    .venv/bin/python benchmarks/bench_cross_corpus.py --trained /tmp/democlone \\
        --foreign /tmp/bpclone --out benchmarks/results/cross_corpus_demo_on_blueprints.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.machine import write_record  # noqa: E402
from pipelines.common.config import load_params  # noqa: E402
from pipelines.common.paths import Paths  # noqa: E402
from pipelines.common.tables import PASSAGE_SETS  # noqa: E402
from pipelines.evaluate.eval_set import EvalSet, load_eval_set  # noqa: E402
from pipelines.evaluate.scoring import (  # noqa: E402
    EvalEmbeddings,
    embed_eval_set,
    paired_test_p_value,
    score_eval_set,
)
from pipelines.evaluate.sources import base_model_source, local_model_source  # noqa: E402
from pipelines.registry.candidate_metadata import read_candidate_metadata  # noqa: E402
from pipelines.retrieval.vector_store import open_store  # noqa: E402

METRIC = "mrr@10"


def joined(foreign: EvalSet, trained: EvalSet) -> EvalSet:
    """``foreign``'s queries over its corpus followed by ``trained``'s (rows of the foreign
    corpus keep their numbers, so its qrels, exclusions and masked rows hold as they are)."""
    return dataclasses.replace(
        foreign,
        corpus_ids=[*foreign.corpus_ids, *trained.corpus_ids],
        corpus_texts=[*foreign.corpus_texts, *trained.corpus_texts],
        transfer=None,
    )


def foreign_only(embeddings: EvalEmbeddings, n_foreign: int) -> EvalEmbeddings:
    """The embeddings of :func:`joined` cut back to the foreign corpus."""
    return EvalEmbeddings(
        embeddings.queries, embeddings.corpus[:n_foreign], embeddings.masked_corpus[:n_foreign]
    )


def own_share_top10(
    embeddings: EvalEmbeddings, eval_set: EvalSet, n_foreign: int
) -> dict[str, float]:
    """Per passage set, the share of the top-10 passages that come from the trained
    project's corpus (rows from ``n_foreign`` on), by cosine, excluded rows left out."""

    def unit(matrix: np.ndarray) -> np.ndarray:
        normed: np.ndarray = matrix / np.maximum(
            np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12
        )
        return normed

    shares = {}
    for name in PASSAGE_SETS:
        subset = eval_set.subset(name)
        if not len(subset.rows):
            continue
        corpus = unit(embeddings.masked_corpus if name == "masked" else embeddings.corpus)
        scores = unit(embeddings.queries[subset.rows]) @ corpus.T
        for row, excluded in enumerate(subset.excluded):
            scores[row, list(excluded)] = -np.inf
        top = np.argsort(-scores, axis=1)[:, :10]
        shares[name] = round(float((top >= n_foreign).mean()), 4)
    return shares


def run(trained_root: Path, foreign_root: Path) -> dict[str, Any]:
    params = load_params(trained_root / "params.yaml")
    trained_paths, foreign_paths = Paths(trained_root), Paths(foreign_root)
    trained = dataclasses.replace(load_eval_set(trained_paths), transfer=None)
    foreign = dataclasses.replace(load_eval_set(foreign_paths), transfer=None)
    cross = joined(foreign, trained)
    n_foreign = len(foreign.corpus_texts)
    metadata = read_candidate_metadata(trained_paths.candidate)
    if metadata is None or metadata.base_spec is None:
        raise SystemExit(f"{trained_paths.candidate}: no mathembed.json naming the base model")
    sources = {
        "base": base_model_source(metadata.base_spec),
        "candidate": local_model_source("candidate", trained_paths.candidate),
    }
    # The trained project's passages are in its store for both models; the foreign ones
    # are embedded here (its store holds other fingerprints).
    store = open_store(trained_paths)
    scored: dict[str, Any] = {}
    seconds = {}
    for name, source in sources.items():
        started = time.perf_counter()
        embeddings = embed_eval_set(source, cross, store=store, batch_size=64)
        dim = int(embeddings.corpus.shape[1])
        scored[name] = {
            "dim": dim,
            "cross": score_eval_set(embeddings, cross, ks=[10], dims=[dim]),
            "alone": score_eval_set(
                foreign_only(embeddings, n_foreign), foreign, ks=[10], dims=[dim]
            ),
            "own_share": own_share_top10(embeddings, cross, n_foreign),
        }
        seconds[name] = round(time.perf_counter() - started, 1)
        print(f"{name}: embedded and scored in {seconds[name]} s", flush=True)
    rule = params.promote
    sets: dict[str, Any] = {}
    for name in PASSAGE_SETS:
        row: dict[str, Any] = {}
        for searched in ("cross", "alone"):
            values = {
                model: scored[model][searched][name].per_query[scored[model]["dim"]][METRIC]
                for model in sources
            }
            if not len(values["base"]):
                continue
            p_value = paired_test_p_value(
                values["candidate"],
                values["base"],
                method=rule.test_method,
                n_resamples=rule.n_resamples,
                seed=rule.seed,
            )
            row[searched] = {
                "queries": len(values["base"]),
                "base": round(float(np.nanmean(values["base"])), 4),
                "candidate": round(float(np.nanmean(values["candidate"])), 4),
                "p": None if p_value is None else round(p_value, 4),
            }
        row["own_share_top10"] = {model: scored[model]["own_share"].get(name) for model in sources}
        sets[name] = row
    return {
        "trained": str(trained_root),
        "foreign": str(foreign_root),
        "candidate_fingerprint": metadata.fingerprint,
        "corpus": {"foreign": n_foreign, "trained": len(trained.corpus_texts)},
        "metric": METRIC,
        "sets": sets,
        "seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trained", type=Path, required=True, help="the model's project")
    parser.add_argument("--foreign", type=Path, required=True, help="the other project")
    parser.add_argument("--out", type=Path, required=True, help="the JSON record to write")
    args = parser.parse_args()
    result = run(args.trained.resolve(), args.foreign.resolve())
    write_record(args.out, result)
    print(json.dumps(result["sets"], indent=1))


if __name__ == "__main__":
    main()
