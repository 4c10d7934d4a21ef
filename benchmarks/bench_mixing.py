"""The fine-tuned candidate mixed with its base at several weights (WiSE-FT), on every
evaluation set a night scores, transfer sets included (issue 27).

Not a test: nothing here asserts. Given a project after a night (validated tables and
``models/candidate/``), each mixing weight ``a`` gives the model ``(1 - a) x base + a x
candidate`` (:func:`pipelines.train.mixing.interpolate_state_dict`, as train mixes); the
base, each mixture and BM25 are scored by the evaluate stage's own functions
(:func:`~pipelines.evaluate.scoring.embed_eval_set`, :func:`score_eval_set`,
:func:`score_lexical`) at the full dimension, and every mixture is compared with the base by
promote's paired test (params.yaml ``promote``: method, resamples, seed) on MRR@10. Weight
1.0 is the candidate as it is (what the night trained, itself possibly mixed: its
``mathembed.json`` says ``mixing_weight``).

Weights are of the fine-tuned model as training left it. A candidate the night already
mixed at ``c`` is taken back along the same line: ``a / c`` of it (``a / c > 1``
extrapolates, exact up to float rounding, since the mixture is linear), so 1.0 is the
unmixed checkpoint whatever the night chose.

    .venv/bin/python benchmarks/bench_mixing.py --project /tmp/democlone \\
        --weights 1.0,0.7,0.5 --out benchmarks/results/mixing_demo.json
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
from pipelines.common.tables import QUERY_SETS  # noqa: E402
from pipelines.evaluate.eval_set import load_eval_set  # noqa: E402
from pipelines.evaluate.scoring import (  # noqa: E402
    embed_eval_set,
    paired_test_p_value,
    score_eval_set,
    score_lexical,
)
from pipelines.evaluate.sources import (  # noqa: E402
    ModelSource,
    base_model_source,
    local_model_source,
)
from pipelines.registry.candidate_metadata import read_candidate_metadata  # noqa: E402
from pipelines.retrieval.vector_store import open_store  # noqa: E402
from pipelines.train.mixing import interpolate_state_dict  # noqa: E402

METRIC = "mrr@10"


def mixture(candidate: ModelSource, base: ModelSource, weight: float, name: str) -> ModelSource:
    """``(1 - weight) x base + weight x candidate``, loaded lazily like any model source."""

    def load() -> Any:
        model: Any = candidate.load()  # sentence-transformers models: torch modules
        base_model: Any = base.load()
        model.load_state_dict(
            interpolate_state_dict(base_model.state_dict(), model.state_dict(), weight)
        )
        return model

    return ModelSource(name, f"{name}-{candidate.fingerprint}", load, {"source": name})


def run(project: Path, weights: list[float]) -> dict[str, Any]:
    paths = Paths(project)
    params = load_params(project / "params.yaml")
    eval_set = load_eval_set(paths)
    metadata = read_candidate_metadata(paths.candidate)
    if metadata is None or metadata.base_spec is None:
        raise SystemExit(f"{paths.candidate}: no mathembed.json naming the base model")
    candidate = local_model_source("candidate", paths.candidate)
    base = base_model_source(metadata.base_spec)
    # The night's own models reuse its stored embeddings; a mixture is new each run.
    store = open_store(paths, keep=[candidate.fingerprint, base.fingerprint])
    mixed_at = metadata.mixing_weight or 1.0
    sources = [base]
    for weight in weights:
        name = f"a_{weight:g}"
        along = weight / mixed_at  # of the candidate, to give `weight` of the fine-tuned model
        if abs(along - 1.0) < 1e-9:
            sources.append(dataclasses.replace(candidate, name=name))
        else:
            sources.append(mixture(candidate, base, along, name))
    scores, seconds = {}, {}
    for source in sources:
        started = time.perf_counter()
        stored = store if source.fingerprint in (base.fingerprint, candidate.fingerprint) else None
        embeddings = embed_eval_set(source, eval_set, store=stored, batch_size=64)
        dim = int(embeddings.corpus.shape[1])
        scores[source.name] = (dim, score_eval_set(embeddings, eval_set, ks=[10], dims=[dim]))
        seconds[source.name] = round(time.perf_counter() - started, 1)
        print(f"{source.name}: embedded and scored in {seconds[source.name]} s", flush=True)
    lexical = score_lexical(eval_set, ks=[10])
    test = params.promote
    sets: dict[str, Any] = {}
    for name in QUERY_SETS:
        base_dim, base_scores = scores["base"]
        if not base_scores[name].n_queries:
            continue
        base_values = base_scores[name].per_query[base_dim][METRIC]
        row: dict[str, Any] = {
            "queries": base_scores[name].n_queries,
            "bm25": round(lexical[name].means[0][METRIC], 4),
            "base": round(float(np.nanmean(base_values)), 4),
        }
        for source in sources[1:]:
            dim, found = scores[source.name]
            values = found[name].per_query[dim][METRIC]
            p_value = paired_test_p_value(
                values,
                base_values,
                method=test.test_method,
                n_resamples=test.n_resamples,
                seed=test.seed,
            )
            row[source.name] = {
                METRIC: round(float(np.nanmean(values)), 4),
                "p_vs_base": None if p_value is None else round(p_value, 4),
            }
        sets[name] = row
    return {
        "project": str(project),
        "candidate_mixing_weight": metadata.mixing_weight,
        "weights": weights,
        "metric": METRIC,
        "transfer": eval_set.transfer_record,
        "sets": sets,
        "seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, required=True, help="a project after a night")
    parser.add_argument("--weights", default="1.0,0.7,0.5", help="mixing weights, comma-separated")
    parser.add_argument("--out", type=Path, required=True, help="the JSON record to write")
    args = parser.parse_args()
    weights = [float(weight) for weight in args.weights.split(",")]
    result = run(args.project.resolve(), weights)
    write_record(args.out, result)
    print(json.dumps(result["sets"], indent=1))


if __name__ == "__main__":
    main()
