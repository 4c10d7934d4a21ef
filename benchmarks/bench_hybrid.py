"""Hybrid search (the model's ranking fused with BM25's) against the model alone, on the eval set.

Not a test: nothing here asserts. It decides whether ``serve-search`` should rank hybrid by
default (``pipelines/retrieval/lexical.py``) and records why, in
``benchmarks/results/hybrid.json``. It runs on a project where the pipeline has run
(``--project``, default the checkout after ``make demo``): the eval set evaluate scored
(``data/validated``: passages, queries, judgments), the candidate and base model with the
embeddings evaluate stored (nothing is re-embedded when the store has them). Each ranking
is the service's own code: :meth:`PassageIndex.top` for the model, :class:`LexicalIndex`
for BM25, :func:`fuse` for hybrid.

Scored with ``metrics_rs.evaluate`` (MRR@10, NDCG@10, Recall@10) on all queries and on two
parts that matter for a lexical method: queries whose text appears verbatim in one of
their relevant passages (BM25's home ground), and queries where it appears in none (the
mission's case: find the passage even when the phrase is absent). As the eval set's
queries are concept names, nearly all fall in the first part; so a second condition,
**phrase masked**, asks each query again with its text replaced by "it" in its own
relevant passages (re-embedded, re-indexed for BM25): what hybrid does when the phrase
is not there to match. Hybrid against dense is the paired test promote uses
(``params.yaml`` promote: method, resamples, seed); so is the fine-tuned model against its
base, each alone, in both conditions (does fine-tuning help when the phrase is absent?).

    .venv/bin/python benchmarks/bench_hybrid.py       # about 3 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from machine import REPO_ROOT, git_state, installed_versions, to_jsonable

sys.path.insert(0, str(REPO_ROOT))

import metrics_rs  # noqa: E402 -- after the path is set
from pipelines.common import quiet  # noqa: E402
from pipelines.common.config import load_params  # noqa: E402
from pipelines.common.paths import Paths  # noqa: E402
from pipelines.evaluate.eval_set import EvalSet, load_eval_set  # noqa: E402
from pipelines.evaluate.scoring import embed_eval_set, paired_test_p_value  # noqa: E402
from pipelines.evaluate.sources import (  # noqa: E402
    ModelSource,
    base_model_source,
    local_model_source,
)
from pipelines.registry.candidate_metadata import recorded_base_model  # noqa: E402
from pipelines.retrieval.embeddings import (  # noqa: E402
    LazyModel,
    embed_texts,
    matryoshka,
)
from pipelines.retrieval.lexical import FUSION_DEPTH, RRF_K, LexicalIndex, fuse  # noqa: E402
from pipelines.retrieval.vector_store import open_store  # noqa: E402
from pipelines.search.index import PassageIndex  # noqa: E402

RESULTS = REPO_ROOT / "benchmarks" / "results" / "hybrid.json"
K = 10
METRICS = ("mrr@10", "ndcg@10", "recall@10")
Rows = list[list[int]]


def padded(rows: Rows, n_docs: int, depth: int) -> npt.NDArray[np.int64]:
    """Rankings cut or padded to ``depth`` (BM25 may match fewer passages than that): the
    missing places go to unmatched passages by row, as a tie at score 0 would."""
    out = np.empty((len(rows), depth), dtype=np.int64)
    for i, row in enumerate(rows):
        seen = set(row[:depth])
        filler = (doc for doc in range(n_docs) if doc not in seen)
        out[i] = (row[:depth] + [next(filler) for _ in range(depth - len(row[:depth]))])[:depth]
    return out


def phrase_split(eval_set: EvalSet) -> dict[str, list[int]]:
    """Query rows whose text is (or is not) in one of their relevant passages, verbatim."""
    present, absent = [], []
    for row, (query, judged) in enumerate(zip(eval_set.query_texts, eval_set.qrels, strict=True)):
        needle = query.casefold()
        relevant = [doc for doc, grade in judged.items() if grade >= 1]
        inside = any(needle in eval_set.corpus_texts[doc].casefold() for doc in relevant)
        (present if inside else absent).append(row)
    return {"phrase_in_a_relevant_passage": present, "phrase_in_none": absent}


def score(
    rankings: npt.NDArray[np.int64], eval_set: EvalSet, rows: list[int]
) -> dict[str, npt.NDArray[np.float64]]:
    """Per-query values of :data:`METRICS` for the query ``rows``."""
    result = metrics_rs.evaluate(
        np.ascontiguousarray(rankings[rows]),
        [eval_set.qrels[row] for row in rows],
        [K],
        per_query=True,
        n_docs=len(eval_set.corpus_texts),
    )
    return {metric: np.asarray(result["per_query"][metric]) for metric in METRICS}


def rank_three_ways(
    rankings: dict[str, Rows],
    query: str,
    vector: npt.NDArray[np.float32],
    index: PassageIndex,
    bm25: LexicalIndex,
) -> None:
    """Append ``query``'s dense, BM25 and hybrid rankings, as the service ranks it (depth
    :data:`FUSION_DEPTH`)."""
    dense, _ = index.top(vector, FUSION_DEPTH)
    lexical, _ = bm25.top(query, FUSION_DEPTH)
    rankings["dense"].append(dense)
    rankings["bm25"].append(lexical)
    rankings["hybrid"].append(fuse([dense, lexical], FUSION_DEPTH)[0])


def rank_all(
    eval_set: EvalSet,
    query_vectors: npt.NDArray[np.float32],
    index: PassageIndex,
    bm25: LexicalIndex,
) -> dict[str, Rows]:
    """Each query ranked the three ways."""
    rankings: dict[str, Rows] = {"dense": [], "bm25": [], "hybrid": []}
    for query, vector in zip(eval_set.query_texts, query_vectors, strict=True):
        rank_three_ways(rankings, query, vector, index, bm25)
    return rankings


def masked_passages(eval_set: EvalSet) -> dict[tuple[int, int], str]:
    """(query row, passage row) -> the relevant passage with the query's text replaced by
    "it", for every relevant passage that contains it."""
    masked = {}
    for row, (query, judged) in enumerate(zip(eval_set.query_texts, eval_set.qrels, strict=True)):
        pattern = re.compile(re.escape(query), re.IGNORECASE)
        for doc, grade in judged.items():
            text = eval_set.corpus_texts[doc]
            if grade >= 1 and pattern.search(text):
                masked[(row, doc)] = pattern.sub("it", text)
    return masked


def rank_masked(
    eval_set: EvalSet,
    query_vectors: npt.NDArray[np.float32],
    index: PassageIndex,
    masked: dict[tuple[int, int], str],
    masked_vectors: npt.NDArray[np.float32],
) -> dict[str, Rows]:
    """Each query ranked the three ways over the corpus with its own relevant passages
    masked: their vectors swapped for the masked texts', BM25 rebuilt on the masked texts."""
    position = {pair: i for i, pair in enumerate(masked)}
    rankings: dict[str, Rows] = {"dense": [], "bm25": [], "hybrid": []}
    for row, (query, vector) in enumerate(zip(eval_set.query_texts, query_vectors, strict=True)):
        own = {doc: position[(row, doc)] for doc in eval_set.qrels[row] if (row, doc) in position}
        vectors, texts = index.vectors.copy(), list(eval_set.corpus_texts)
        for doc, i in own.items():
            vectors[doc] = masked_vectors[i]
            texts[doc] = masked[(row, doc)]
        masked_index = PassageIndex(vectors)
        rank_three_ways(rankings, query, vector, masked_index, LexicalIndex(texts))
    return rankings


def embed_masked(source: ModelSource, texts: list[str], batch_size: int) -> npt.NDArray[np.float32]:
    """Unit vectors of the masked passages (not stored: the project's store keeps the
    pipeline's own texts)."""
    model = LazyModel(source.load)
    return embed_texts(model, texts, batch_size=batch_size, dim=None, normalize=True)


def compare(
    eval_set: EvalSet,
    rankings: dict[str, Rows],
    subsets: dict[str, list[int]],
    test: dict[str, Any],
) -> dict[str, Any]:
    n_docs = len(eval_set.corpus_texts)
    arrays = {name: padded(rows, n_docs, K) for name, rows in rankings.items()}
    out: dict[str, Any] = {}
    for subset, rows in subsets.items():
        if not rows:
            continue
        values = {name: score(array, eval_set, rows) for name, array in arrays.items()}
        out[subset] = {
            "queries": len(rows),
            **{
                name: {metric: float(np.nanmean(v)) for metric, v in per_metric.items()}
                for name, per_metric in values.items()
            },
            "p_hybrid_vs_dense": {
                metric: paired_test_p_value(
                    values["hybrid"][metric], values["dense"][metric], **test
                )
                for metric in ("mrr@10", "ndcg@10")
            },
        }
    return out


def candidate_vs_base(
    eval_set: EvalSet, dense: dict[str, Rows], test: dict[str, Any]
) -> dict[str, Any]:
    """The fine-tuned model against its base, each ranking alone: MRR@10 and the p-value."""
    n_docs = len(eval_set.corpus_texts)
    rows = list(range(len(eval_set.query_ids)))
    values = {
        name: score(padded(ranked, n_docs, K), eval_set, rows)["mrr@10"]
        for name, ranked in dense.items()
    }
    return {
        "candidate_mrr@10": float(np.nanmean(values["candidate"])),
        "base_mrr@10": float(np.nanmean(values["base"])),
        "p": paired_test_p_value(values["candidate"], values["base"], **test),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, default=REPO_ROOT, help="a project after make demo")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    quiet.silence_library_noise()  # no "Loading weights" bars between the results
    paths = Paths(args.project)
    params = load_params(args.project / "params.yaml")
    eval_set = load_eval_set(paths)
    store = open_store(paths)
    base = recorded_base_model(paths.candidate)
    sources = [local_model_source("candidate", paths.candidate)]
    sources += [base_model_source(base)] if base is not None else []

    started = time.perf_counter()
    bm25 = LexicalIndex(eval_set.corpus_texts)
    bm25_build_s = time.perf_counter() - started
    everything = list(range(len(eval_set.query_ids)))
    subsets = {"all": everything, **phrase_split(eval_set)}
    masked = masked_passages(eval_set)
    test = {
        "method": params.promote.test_method,
        "n_resamples": params.promote.n_resamples,
        "seed": params.promote.seed,
    }
    models: dict[str, Any] = {}
    dense_runs: dict[str, dict[str, Rows]] = {"all": {}, "phrase_masked": {}}
    for source in sources:
        embeddings = embed_eval_set(
            source, eval_set, store=store, batch_size=params.evaluate.batch_size
        )
        queries, corpus = embeddings.queries, embeddings.corpus
        index = PassageIndex(matryoshka(corpus, None, normalize=True))
        query_vectors = matryoshka(queries, None, normalize=True)
        rankings = rank_all(eval_set, query_vectors, index, bm25)
        models[source.name] = compare(eval_set, rankings, subsets, test)
        dense_runs["all"][source.name] = rankings["dense"]
        batch_size = params.evaluate.batch_size
        masked_vectors = embed_masked(source, list(masked.values()), batch_size)
        rankings = rank_masked(eval_set, query_vectors, index, masked, masked_vectors)
        dense_runs["phrase_masked"][source.name] = rankings["dense"]
        models[source.name] |= {
            f"phrase_masked_{name}": scored
            for name, scored in compare(eval_set, rankings, {"all": everything}, test).items()
        }

    result = {
        "what": "hybrid (model + BM25, reciprocal-rank fusion) vs the model alone, eval set",
        "project": str(args.project),
        "passages": len(eval_set.corpus_texts),
        "queries": len(eval_set.query_ids),
        "masked_passages": len(masked),
        "fusion": {"rrf_k": RRF_K, "depth": FUSION_DEPTH, "bm25": "bm25s, English stop words"},
        "paired_test": test,
        "bm25_index_build_s": bm25_build_s,
        "models": models,
        "candidate_vs_base_dense": {
            condition: candidate_vs_base(eval_set, runs, test)
            for condition, runs in dense_runs.items()
            if {"candidate", "base"} <= runs.keys()
        },
        "versions": installed_versions("bm25s", "sentence-transformers", "numpy"),
        "git": git_state(),
    }
    args.out.write_text(json.dumps(to_jsonable(result), indent=2) + "\n")
    for model, subsets_scored in models.items():
        for subset, scored in subsets_scored.items():
            line = "  ".join(
                f"{name} {scored[name]['mrr@10']:.4f}/{scored[name]['ndcg@10']:.4f}"
                for name in ("dense", "bm25", "hybrid")
            )
            p = scored["p_hybrid_vs_dense"]["mrr@10"]
            print(f"{model:9s} {subset:28s} n={scored['queries']:3d}  MRR/NDCG@10  {line}  p={p}")
    for condition, gain in result["candidate_vs_base_dense"].items():
        print(
            f"model alone, {condition}: candidate {gain['candidate_mrr@10']:.4f} vs base "
            f"{gain['base_mrr@10']:.4f} MRR@10, p={gain['p']}"
        )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
