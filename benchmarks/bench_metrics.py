"""Benchmark ``metrics_rs`` against the usual Python ways to do exact kNN and IR metrics.

Not a test: nothing here asserts. It answers "is the Rust extension worth having, and how
far is it from the machine's limit?" with numbers recorded next to the machine they were
measured on (``benchmarks/results/metrics.json``).

What is timed, side by side, in this one process (best of N repeats, ``time.perf_counter``):

* exact kNN on seeded, L2-normalised float32 embeddings with planted relevant documents:
  NumPy (query blocks x whole corpus ``@``, then ``argpartition`` + sort of the top k; the
  anchor), torch (``torch.mm`` + ``torch.topk`` per query block), faiss-cpu ``IndexFlatIP``
  (``search``; ``add`` reported separately) and ``metrics_rs.knn`` (cosine, the default,
  and dot);
* IR metrics on the same ranking: ``metrics_rs.evaluate``, ranx and pytrec_eval. The
  competitors are timed from the same inputs ``metrics_rs`` gets (ranked-id array, scores,
  qrels as ``list[dict[int, int]]``), so building their string-keyed dicts and ranx's
  ``Qrels``/``Run`` counts. ranx's numba warm-up (JIT compile or on-disk cache load) is
  excluded from its timing and reported on its own;
* end to end: ``metrics_rs.knn`` + ``metrics_rs.evaluate`` versus sentence-transformers'
  ``InformationRetrievalEvaluator`` fed the same precomputed embeddings through a stand-in
  model whose ``encode_query``/``encode_document`` look rows up by text (texts are ids).

The reference for "how fast can this machine multiply" is NumPy's own sgemm, calibrated in
the same run (before and after the sizes; the faster of the two is kept), so
``metrics_rs.knn``'s effective GFLOP/s (2 n_q n_c d / seconds) is reported as a percentage
of it. Threads are pinned to ``os.cpu_count()`` through the environment before NumPy, torch
or faiss are imported; which BLAS (and which of its kernels) each library loaded is read
with threadpoolctl.

Peak memory is measured in fresh child processes (multiprocessing "spawn"), one per method:
the child imports only what the method needs, loads the inputs from ``.npy`` files, resets
the kernel's peak-RSS mark (``/proc/self/clear_refs``), runs the method once and reads
``VmHWM``. "peak RSS" is that absolute peak (interpreter, libraries and inputs included);
"delta" is peak minus the RSS just before the call.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_metrics.py           # small + large, several minutes
    .venv/bin/python benchmarks/bench_metrics.py --quick   # large shrunk, about 1-2 minutes
"""

from __future__ import annotations

import os

# Pin every thread pool before NumPy, torch, faiss or numba are imported (they read these
# variables once, at load time).
os.environ["OMP_NUM_THREADS"] = str(os.cpu_count() or 1)
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"]
os.environ["MKL_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"]
os.environ["RAYON_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"]
os.environ["NUMBA_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"]

import argparse
import datetime as dt
import gc
import importlib
import importlib.metadata
import json
import multiprocessing
import pickle
import platform
import resource
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np
import numpy.typing as npt
from machine import (
    cpu_busy_fraction,
    cpu_facts,
    fmt,
    load_average,
    peak_rss_bytes,
    reset_peak_rss,
    rss_bytes,
    to_jsonable,
)

if TYPE_CHECKING:
    import torch

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]
Qrels = list[dict[int, int]]
Phases = dict[str, float]
T = TypeVar("T")

N_THREADS = int(os.environ["OMP_NUM_THREADS"])
THREAD_ENV_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "RAYON_NUM_THREADS",
    "NUMBA_NUM_THREADS",
)
RESULTS_DIR = Path(__file__).resolve().parent / "results"
# The full run is the record kept in git; a --quick run (what `make demo` does) goes to a
# git-ignored file so it never overwrites that record.
DEFAULT_OUT = RESULTS_DIR / "metrics.json"
QUICK_OUT = RESULTS_DIR / "metrics-quick.json"
MB = 1e6  # memory figures are in MB = 10^6 bytes
SGEMM_SHAPE = (4096, 768, 8192)  # (m, k, n): A[m, k] @ B[n, k].T, about one kNN block
KNN_METHODS = ("numpy", "torch", "faiss", "metrics_rs")
ST_METHOD = "st_evaluator"
ST_ROW = "e2e st InformationRetrievalEvaluator"
# method run in a memory child -> the timing row its peak RSS is shown on
MEMORY_ROW = {m: f"knn {m}" for m in KNN_METHODS} | {ST_METHOD: ST_ROW}
RANX_METRICS = ("mrr", "ndcg", "recall", "precision", "map", "hit_rate")
RS_NAME = {"hit_rate": "hit"}  # ranx metric name -> metrics_rs name where they differ


# ------------------------------------------------------------------------------------ sizes & data


@dataclass(frozen=True)
class Size:
    """One benchmark size; ``repeats``/``warmup`` apply to every timed method."""

    name: str
    n_queries: int
    n_docs: int
    dim: int
    k: int
    repeats: int
    warmup: int
    e2e_repeats: int

    @property
    def ks(self) -> list[int]:
        """Cut-offs evaluated by every metrics implementation."""
        return sorted({1, 10, self.k})

    @property
    def flops(self) -> float:
        """Multiply-adds of the full score matrix, counted as 2 flops each."""
        return 2.0 * self.n_queries * self.n_docs * self.dim


@dataclass
class Dataset:
    """Normalised embeddings with planted, graded relevant documents per query."""

    queries: F32
    corpus: F32
    qrels: Qrels


def make_sizes(args: argparse.Namespace) -> list[Size]:
    """The sizes selected on the command line (``--quick`` shrinks the large one)."""
    large_q, large_c = (2_000, 20_000) if args.quick else (10_000, 100_000)
    catalogue = {
        "small": Size("small", 1_000, 10_000, 768, 10, args.repeats, 1, args.repeats),
        "large": Size("large", large_q, large_c, 768, 100, args.repeats_large, 0, 1),
    }
    names = [name.strip() for name in args.sizes.split(",") if name.strip()]
    unknown = sorted(set(names) - set(catalogue))
    if unknown:
        raise SystemExit(f"--sizes: unknown size(s) {unknown}; choose from {sorted(catalogue)}")
    return [catalogue[name] for name in names]


def normalise_rows(matrix: F32) -> None:
    """L2-normalise the rows of ``matrix`` in place."""
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)


def make_dataset(size: Size, seed: int, noise: float) -> Dataset:
    """Random unit corpus; each query is a noisy, grade-weighted mean of 1-3 planted docs."""
    rng = np.random.default_rng(seed)
    corpus = rng.standard_normal((size.n_docs, size.dim), dtype=np.float32)
    normalise_rows(corpus)
    candidates = rng.integers(0, size.n_docs, size=(size.n_queries, 3))
    n_relevant = rng.integers(1, 4, size=size.n_queries)
    grades = rng.integers(1, 3, size=(size.n_queries, 3))
    weights = np.zeros((size.n_queries, 3), dtype=np.float32)
    qrels: Qrels = []
    for row in range(size.n_queries):
        judged: dict[int, int] = {}
        for col in range(int(n_relevant[row])):
            doc = int(candidates[row, col])
            if doc not in judged:  # a repeated draw keeps its first grade and weight
                judged[doc] = int(grades[row, col])
                weights[row, col] = grades[row, col]
        qrels.append(judged)
    weights /= weights.sum(axis=1, keepdims=True)
    queries = np.einsum("qj,qjd->qd", weights, corpus[candidates]).astype(np.float32)
    queries += noise * rng.standard_normal(queries.shape, dtype=np.float32)
    normalise_rows(queries)
    return Dataset(queries=queries, corpus=corpus, qrels=qrels)


# ------------------------------------------------------------------------------------------ timing


@dataclass
class Timing:
    """Best-of-N wall time of one method and the phase split of its best run."""

    best_s: float
    runs_s: list[float]
    phases_s: Phases = field(default_factory=dict)


def time_best(fn: Callable[[Phases], T], repeats: int, warmup: int) -> tuple[Timing, T]:
    """Run ``fn`` ``warmup`` times untimed, then ``repeats`` times; keep the fastest run.

    ``fn`` may record sub-timings in the ``Phases`` dict it is given.
    """
    for _ in range(warmup):
        fn({})
    runs: list[float] = []
    best_phases: Phases = {}
    result: T | None = None
    for _ in range(max(1, repeats)):
        phases: Phases = {}
        start = time.perf_counter()
        result = fn(phases)
        elapsed = time.perf_counter() - start
        if not runs or elapsed < min(runs):
            best_phases = phases
        runs.append(elapsed)
        gc.collect()
    assert result is not None
    return Timing(best_s=min(runs), runs_s=runs, phases_s=best_phases), result


def calibrate_sgemm(repeats: int = 5) -> dict[str, Any]:
    """NumPy float32 ``A @ B.T`` GFLOP/s for one kNN-block-sized product."""
    m, k, n = SGEMM_SHAPE
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((n, k), dtype=np.float32)
    timing, _ = time_best(lambda _p: a @ b.T, repeats=repeats, warmup=1)
    return {
        "shape_mkn": [m, k, n],
        "best_s": timing.best_s,
        "runs_s": timing.runs_s,
        "gflops": 2.0 * m * n * k / timing.best_s / 1e9,
    }


# ------------------------------------------------------------------------------------- kNN methods


def knn_numpy(queries: F32, corpus: F32, k: int, block: int) -> tuple[I64, F32]:
    """Query blocks x whole corpus matmul, ``argpartition`` for the top k, then sort them."""
    n_queries, n_docs = queries.shape[0], corpus.shape[0]
    ids = np.empty((n_queries, k), dtype=np.int64)
    scores = np.empty((n_queries, k), dtype=np.float32)
    for start in range(0, n_queries, block):
        stop = min(start + block, n_queries)
        block_scores = queries[start:stop] @ corpus.T
        top = np.argpartition(block_scores, n_docs - k, axis=1)[:, n_docs - k :]
        top_scores = np.take_along_axis(block_scores, top, axis=1)
        order = np.argsort(-top_scores, axis=1, kind="stable")
        ids[start:stop] = np.take_along_axis(top, order, axis=1)
        scores[start:stop] = np.take_along_axis(top_scores, order, axis=1)
    return ids, scores


def knn_torch(queries: F32, corpus: F32, k: int, block: int) -> tuple[I64, F32]:
    """``torch.mm`` per query block, then ``torch.topk`` (sorted)."""
    import torch

    corpus_t = torch.from_numpy(corpus)
    query_t = torch.from_numpy(queries)
    ids = np.empty((queries.shape[0], k), dtype=np.int64)
    scores = np.empty((queries.shape[0], k), dtype=np.float32)
    with torch.inference_mode():
        for start in range(0, queries.shape[0], block):
            stop = min(start + block, queries.shape[0])
            values, indices = torch.topk(torch.mm(query_t[start:stop], corpus_t.T), k, dim=1)
            ids[start:stop] = indices.numpy()
            scores[start:stop] = values.numpy()
    return ids, scores


def faiss_index(corpus: F32) -> Any:
    """A fresh ``IndexFlatIP`` holding ``corpus`` (inner product = cosine on unit rows)."""
    import faiss

    index = faiss.IndexFlatIP(corpus.shape[1])
    index.add(corpus)
    return index


def knn_faiss(index: Any, queries: F32, k: int) -> tuple[I64, F32]:
    """``IndexFlatIP.search``; returns (ids, scores) like the others."""
    scores, ids = index.search(queries, k)
    return ids.astype(np.int64, copy=False), scores


def load_metrics_rs() -> ModuleType:
    """Import ``metrics_rs`` or exit with instructions: the benchmark is about it."""
    try:
        return importlib.import_module("metrics_rs")
    except ImportError as error:
        raise SystemExit(
            f"bench_metrics: cannot import metrics_rs ({error}).\n"
            "Build it into the venv first:  make build\n"
            "  (= VIRTUAL_ENV=$PWD/.venv .venv/bin/maturin develop --release "
            "-m metrics_rs/Cargo.toml)"
        ) from error


def pin_library_threads(libraries: Sequence[str] = ("torch", "faiss")) -> dict[str, Any]:
    """Set torch's/faiss's own thread counts (the env vars are set already); report all.

    Only the named libraries are imported, so a memory child loads no more than it uses.
    """
    threads: dict[str, Any] = {var: os.environ.get(var) for var in THREAD_ENV_VARS}
    threads["os.cpu_count"] = os.cpu_count()
    threads["sched_getaffinity"] = len(os.sched_getaffinity(0))
    if "torch" in libraries and available("torch"):
        import torch

        torch.set_num_threads(N_THREADS)
        threads["torch.get_num_threads"] = torch.get_num_threads()
    if "faiss" in libraries and available("faiss"):
        import faiss

        faiss.omp_set_num_threads(N_THREADS)
        threads["faiss.omp_get_max_threads"] = faiss.omp_get_max_threads()
    return threads


def available(module: str) -> bool:
    """Whether ``module`` imports (competitors are optional; metrics_rs is not)."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


# --------------------------------------------------------------------------------- metrics methods


def ranx_metric_names(ks: Sequence[int]) -> list[str]:
    """ranx names of the metric families ``metrics_rs.evaluate`` reports."""
    return [f"{metric}@{k}" for metric in RANX_METRICS for k in ks]


def trec_measures(ks: Sequence[int]) -> set[str]:
    """pytrec_eval measures of the same families (recip_rank is cut by the run depth)."""
    cut = ",".join(str(k) for k in ks)
    return {"recip_rank", *(f"{m}.{cut}" for m in ("ndcg_cut", "P", "recall", "map_cut"))} | {
        f"success.{cut}"
    }


def trec_to_rs_name(measure: str, depth: int) -> str:
    """``ndcg_cut_10`` -> ``ndcg@10`` etc.; ``recip_rank`` -> ``mrr@<run depth>``."""
    if measure == "recip_rank":
        return f"mrr@{depth}"
    base, _, cut = measure.rpartition("_")
    names = {"ndcg_cut": "ndcg", "P": "precision", "recall": "recall"}
    names |= {"map_cut": "map", "success": "hit"}
    return f"{names[base]}@{cut}"


def string_run(ids: I64, scores: F32) -> dict[str, dict[str, float]]:
    """``{query: {doc: score}}`` with string ids, as ranx and pytrec_eval take runs."""
    return {
        str(row): dict(zip(map(str, doc_ids), doc_scores, strict=True))
        for row, (doc_ids, doc_scores) in enumerate(zip(ids.tolist(), scores.tolist(), strict=True))
    }


def string_qrels(qrels: Qrels) -> dict[str, dict[str, int]]:
    """``{query: {doc: grade}}`` with string ids."""
    return {
        str(row): {str(doc): grade for doc, grade in rel.items()} for row, rel in enumerate(qrels)
    }


def eval_ranx(ids: I64, scores: F32, qrels: Qrels, ks: Sequence[int], phases: Phases) -> Any:
    """ranx from arrays: string dicts, ``Qrels``/``Run``, ``evaluate``."""
    from ranx import Qrels as RanxQrels
    from ranx import Run, evaluate

    start = time.perf_counter()
    run_dict, qrels_dict = string_run(ids, scores), string_qrels(qrels)
    built = time.perf_counter()
    ranx_qrels, ranx_run = RanxQrels(qrels_dict), Run(run_dict)
    constructed = time.perf_counter()
    result = evaluate(ranx_qrels, ranx_run, ranx_metric_names(ks))
    phases.update(
        dicts_s=built - start,
        qrels_run_s=constructed - built,
        evaluate_s=time.perf_counter() - constructed,
    )
    return result


def ranx_warmup(ks: Sequence[int]) -> float:
    """Seconds of ranx's first call (numba JIT compile, or loading its on-disk cache)."""
    # ranx 0.3.21's reciprocal_rank casts uint64 -> int64 (harmless, said at compile time)
    warnings.filterwarnings("ignore", message="unsafe cast from uint64 to int64")
    ids = np.arange(12, dtype=np.int64).reshape(2, 6)
    scores = np.linspace(1.0, 0.0, 12, dtype=np.float32).reshape(2, 6)
    start = time.perf_counter()
    eval_ranx(ids, scores, [{0: 1, 3: 2}, {7: 1}], ks, {})
    return time.perf_counter() - start


def eval_pytrec(
    ids: I64, scores: F32, qrels: Qrels, ks: Sequence[int], phases: Phases
) -> dict[str, float]:
    """pytrec_eval from arrays: string dicts, ``RelevanceEvaluator``, per-query -> means."""
    import pytrec_eval

    start = time.perf_counter()
    run_dict, qrels_dict = string_run(ids, scores), string_qrels(qrels)
    built = time.perf_counter()
    evaluator = pytrec_eval.RelevanceEvaluator(qrels_dict, trec_measures(ks))
    per_query = evaluator.evaluate(run_dict)
    evaluated = time.perf_counter()
    measures = next(iter(per_query.values())).keys()
    means = {m: float(np.mean([row[m] for row in per_query.values()])) for m in measures}
    phases.update(
        dicts_s=built - start,
        evaluate_s=evaluated - built,
        means_s=time.perf_counter() - evaluated,
    )
    return means


# --------------------------------------------------------------------------- sentence-transformers


class _NullModelCardData:
    """The evaluator records its metrics on ``model.model_card_data``; nothing to keep."""

    def set_evaluation_metrics(self, *args: object, **kwargs: object) -> None:
        return None


class PrecomputedEncoder:
    """Stands in for a ``SentenceTransformer`` whose "texts" are row ids.

    ``encode_query``/``encode_document`` return the rows of the precomputed matrices
    named by the texts, as tensors (what ``convert_to_tensor=True`` asks for); the
    similarity is the one a real model with ``similarity_fn_name="cosine"`` uses.
    """

    similarity_fn_name = "cosine"

    def __init__(self, queries: F32, corpus: F32) -> None:
        import torch
        from sentence_transformers.util.similarity import SimilarityFunction

        self._queries = torch.from_numpy(queries)
        self._corpus = torch.from_numpy(corpus)
        self._similarity = SimilarityFunction.to_similarity_fn("cosine")
        self.model_card_data = _NullModelCardData()

    @staticmethod
    def _rows(matrix: torch.Tensor, texts: Sequence[str]) -> torch.Tensor:
        import torch

        rows = np.fromiter(map(int, texts), dtype=np.int64, count=len(texts))
        return matrix.index_select(0, torch.from_numpy(rows))

    def similarity(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return self._similarity(a, b)

    def encode_query(self, sentences: Sequence[str], **kwargs: object) -> torch.Tensor:
        return self._rows(self._queries, sentences)

    def encode_document(self, sentences: Sequence[str], **kwargs: object) -> torch.Tensor:
        return self._rows(self._corpus, sentences)

    def encode(self, sentences: Sequence[str], **kwargs: object) -> torch.Tensor:
        raise NotImplementedError("the evaluator is expected to call encode_query/_document")


@dataclass
class StInputs:
    """The evaluator's inputs: text dicts (text = id) and binary relevance sets."""

    queries: dict[str, Any]  # the evaluator's own value type is a wide union
    corpus: dict[str, Any]
    relevant_docs: dict[str, set[str]]


def st_inputs(n_queries: int, n_docs: int, qrels: Qrels) -> StInputs:
    """Build the evaluator's dicts once (its input format, like our arrays: not timed)."""
    return StInputs(
        queries={str(i): str(i) for i in range(n_queries)},
        corpus={str(j): str(j) for j in range(n_docs)},
        relevant_docs={
            str(row): {str(doc) for doc, grade in rel.items() if grade > 0}
            for row, rel in enumerate(qrels)
        },
    )


def run_st_evaluator(
    inputs: StInputs, model: PrecomputedEncoder, ks: list[int]
) -> dict[str, float]:
    """Construct ``InformationRetrievalEvaluator`` with our cut-offs and call it."""
    from sentence_transformers.sentence_transformer.evaluation import (
        InformationRetrievalEvaluator,
    )

    evaluator = InformationRetrievalEvaluator(
        queries=inputs.queries,
        corpus=inputs.corpus,
        relevant_docs=inputs.relevant_docs,
        mrr_at_k=ks,
        ndcg_at_k=ks,
        accuracy_at_k=ks,
        precision_recall_at_k=ks,
        map_at_k=ks,
        show_progress_bar=False,
        write_csv=False,
    )
    return evaluator(cast(Any, model))


# ------------------------------------------------------------------------------- memory (children)


def _prepare_child_call(method: str, data_dir: Path, k: int, ks: list[int]) -> Callable[[], object]:
    """Import what ``method`` needs, load its inputs, return the call to measure."""
    queries: F32 = np.load(data_dir / "queries.npy")
    corpus: F32 = np.load(data_dir / "corpus.npy")
    block = int((data_dir / "block").read_text())
    pin_library_threads(
        {"torch": ["torch"], "faiss": ["faiss"], ST_METHOD: ["torch"]}.get(method, [])
    )
    if method == "numpy":
        return lambda: knn_numpy(queries, corpus, k, block)
    if method == "torch":
        return lambda: knn_torch(queries, corpus, k, block)
    if method == "faiss":
        return lambda: knn_faiss(faiss_index(corpus), queries, k)
    if method == "metrics_rs":
        metrics_rs = load_metrics_rs()
        return lambda: metrics_rs.knn(queries, corpus, k, metric="cosine")
    if method == ST_METHOD:
        qrels: Qrels = pickle.loads((data_dir / "qrels.pkl").read_bytes())
        inputs = st_inputs(queries.shape[0], corpus.shape[0], qrels)
        model = PrecomputedEncoder(queries, corpus)
        return lambda: run_st_evaluator(inputs, model, ks)
    raise ValueError(f"unknown method {method!r}")


def memory_child(method: str, data_dir: str, k: int, ks: list[int]) -> dict[str, Any]:
    """Runs in a fresh spawned process: one call of ``method``, its peak RSS."""
    call = _prepare_child_call(method, Path(data_dir), k, ks)
    gc.collect()
    how = reset_peak_rss()
    before = rss_bytes()
    start = time.perf_counter()
    call()
    seconds = time.perf_counter() - start
    peak = peak_rss_bytes()
    return {
        "peak_rss_mb": peak / MB,
        "rss_before_call_mb": before / MB,
        "delta_mb": (peak - before) / MB,
        "seconds_single_run": seconds,
        "how": how,
    }


def measure_memory(
    methods: Sequence[str], data: Dataset, size: Size, block: int
) -> dict[str, dict[str, Any]]:
    """Peak RSS of each method, each in its own fresh ``spawn`` child process."""
    context = multiprocessing.get_context("spawn")
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench_metrics_") as tmp:
        data_dir = Path(tmp)
        np.save(data_dir / "queries.npy", data.queries)
        np.save(data_dir / "corpus.npy", data.corpus)
        (data_dir / "qrels.pkl").write_bytes(pickle.dumps(data.qrels))
        (data_dir / "block").write_text(str(block))
        for method in methods:
            print(f"  [{size.name}] memory: {method} in a fresh process ...", flush=True)
            with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
                future = pool.submit(memory_child, method, tmp, size.k, size.ks)
                results[method] = future.result()
    return results


# ---------------------------------------------------------------------------------------- one size


@dataclass
class SizeReport:
    """Everything measured at one size."""

    size: Size
    data_gen_s: float
    methods: dict[str, dict[str, Any]] = field(default_factory=dict)
    memory: dict[str, dict[str, Any]] = field(default_factory=dict)
    agreement: dict[str, Any] = field(default_factory=dict)
    ratios: dict[str, float | None] = field(default_factory=dict)

    def record(self, name: str, timing: Timing, **extra: Any) -> None:
        gflops = extra.pop("flops", None)
        entry: dict[str, Any] = {"best_s": timing.best_s, "runs_s": timing.runs_s}
        if timing.phases_s:
            entry["phases_s"] = timing.phases_s
        if gflops is not None:
            entry["gflops"] = gflops / timing.best_s / 1e9
        entry.update(extra)
        self.methods[name] = entry

    def seconds(self, name: str) -> float | None:
        entry = self.methods.get(name)
        return None if entry is None else float(entry["best_s"])


def bench_knn(
    report: SizeReport, data: Dataset, metrics_rs: ModuleType, block: int
) -> tuple[I64, F32]:
    """Time every kNN method; return ``metrics_rs``'s cosine ranking for the evaluators."""
    size, q, c = report.size, data.queries, data.corpus
    rep, warm, flops = size.repeats, size.warmup, size.flops

    def timed(name: str, fn: Callable[[Phases], T], **extra: Any) -> T:
        print(f"  [{size.name}] knn: {name} ...", flush=True)
        timing, result = time_best(fn, rep, warm)
        report.record(name, timing, flops=flops, **extra)
        return result

    timed("knn numpy", lambda _p: knn_numpy(q, c, size.k, block), query_block=block)
    if available("torch"):
        timed("knn torch", lambda _p: knn_torch(q, c, size.k, block), query_block=block)
    faiss_ids: I64 | None = None
    if available("faiss"):
        add_timing, index = time_best(lambda _p: faiss_index(c), rep, warm)
        report.record("faiss add", add_timing)
        faiss_ids, _ = timed("knn faiss", lambda _p: knn_faiss(index, q, size.k))
        del index
    rs_ids, rs_scores = timed(
        "knn metrics_rs", lambda _p: metrics_rs.knn(q, c, size.k, metric="cosine")
    )
    timed("knn metrics_rs dot", lambda _p: metrics_rs.knn(q, c, size.k, metric="dot"))
    if faiss_ids is not None:
        same = float(np.mean(rs_ids[:, 0] == faiss_ids[:, 0]))
        report.agreement["top1_metrics_rs_vs_faiss"] = same
    return rs_ids, rs_scores


def bench_evaluate(
    report: SizeReport, data: Dataset, ids: I64, scores: F32, metrics_rs: ModuleType
) -> None:
    """Time metrics_rs.evaluate, ranx and pytrec_eval on the same ranking; cross-check."""
    size, ks, qrels = report.size, report.size.ks, data.qrels
    print(f"  [{size.name}] evaluate: metrics_rs, ranx, pytrec_eval ...", flush=True)
    timing, rs_result = time_best(
        lambda _p: metrics_rs.evaluate(ids, qrels, ks)["means"],
        max(5, size.repeats),
        size.warmup,
    )
    report.record("evaluate metrics_rs", timing)
    if available("ranx"):
        timing, ranx_result = time_best(
            lambda p: eval_ranx(ids, scores, qrels, ks, p), size.repeats, size.warmup
        )
        report.record("evaluate ranx", timing)
        diffs = [abs(float(ranx_result[m]) - rs_result[rs_key(m)]) for m in ranx_result]
        report.agreement["ranx_max_abs_diff_vs_metrics_rs"] = max(diffs)
    if available("pytrec_eval"):
        timing, trec_result = time_best(
            lambda p: eval_pytrec(ids, scores, qrels, ks, p), size.repeats, size.warmup
        )
        report.record("evaluate pytrec_eval", timing)
        check_against_pytrec(report, ids, scores, qrels, rs_result, trec_result)


def rs_key(ranx_name: str) -> str:
    """ranx ``hit_rate@10`` -> metrics_rs ``hit@10``."""
    metric, _, cut = ranx_name.partition("@")
    return f"{RS_NAME.get(metric, metric)}@{cut}"


def check_against_pytrec(
    report: SizeReport,
    ids: I64,
    scores: F32,
    qrels: Qrels,
    rs_result: dict[str, Any],
    trec_result: dict[str, float],
) -> None:
    """Compare every metric with pytrec_eval's on the very same ranking.

    trec_eval re-sorts a run by score (ties by docno, descending); if two of our scores
    tie, it is fed ``-rank`` scores instead so that both see one order.
    """
    depth = ids.shape[1]
    if bool(np.any(scores[:, 1:] == scores[:, :-1])):
        rank_scores = np.broadcast_to(-np.arange(depth, dtype=np.float32), ids.shape)
        trec_result = eval_pytrec(ids, np.ascontiguousarray(rank_scores), qrels, report.size.ks, {})
        report.agreement["pytrec_eval_fed_rank_scores_because_of_ties"] = True
    diffs = {
        trec_to_rs_name(m, depth): abs(value - float(rs_result[trec_to_rs_name(m, depth)]))
        for m, value in trec_result.items()
    }
    report.agreement["mrr_metric"] = f"mrr@{depth}"
    report.agreement["mrr_abs_diff_vs_pytrec_eval"] = diffs[f"mrr@{depth}"]
    report.agreement["all_metrics_max_abs_diff_vs_pytrec_eval"] = max(diffs.values())
    report.agreement["n_metrics_compared_with_pytrec_eval"] = len(diffs)


def bench_end_to_end(
    report: SizeReport, data: Dataset, metrics_rs: ModuleType, skip_st: bool
) -> None:
    """metrics_rs knn + evaluate versus the sentence-transformers evaluator."""
    size, q, c, qrels, ks = report.size, data.queries, data.corpus, data.qrels, report.size.ks
    print(f"  [{size.name}] end to end: metrics_rs knn+evaluate ...", flush=True)

    def rs_end_to_end(_p: Phases) -> dict[str, Any]:
        ids, _ = metrics_rs.knn(q, c, size.k, metric="cosine")
        return cast(dict[str, Any], metrics_rs.evaluate(ids, qrels, ks)["means"])

    timing, rs_result = time_best(rs_end_to_end, size.e2e_repeats, size.warmup)
    report.record("e2e metrics_rs knn+evaluate", timing)
    if skip_st or not available("sentence_transformers"):
        return
    print(f"  [{size.name}] end to end: sentence-transformers evaluator ...", flush=True)
    inputs = st_inputs(size.n_queries, size.n_docs, qrels)
    model = PrecomputedEncoder(q, c)
    timing, st_result = time_best(
        lambda _p: run_st_evaluator(inputs, model, ks), size.e2e_repeats, size.warmup
    )
    report.record(ST_ROW, timing)
    st_mrr = st_result.get("cosine_mrr@10")
    if st_mrr is not None:
        report.agreement["st_mrr@10_abs_diff_vs_metrics_rs"] = abs(st_mrr - rs_result["mrr@10"])


def bench_size(size: Size, args: argparse.Namespace, metrics_rs: ModuleType) -> SizeReport:
    """Generate one size's data and run every measurement on it."""
    print(
        f"\n== {size.name}: {size.n_queries} queries x {size.n_docs} docs x {size.dim}, "
        f"k={size.k} (best of {size.repeats}, warm-up {size.warmup})",
        flush=True,
    )
    start = time.perf_counter()
    data = make_dataset(size, args.seed, args.noise)
    report = SizeReport(size=size, data_gen_s=time.perf_counter() - start)
    ids, scores = bench_knn(report, data, metrics_rs, args.query_block)
    bench_evaluate(report, data, ids, scores, metrics_rs)
    skip_st = args.skip_st_large and size.name == "large"
    bench_end_to_end(report, data, metrics_rs, skip_st)
    if args.memory == "all" or (args.memory == "large" and size.name == "large"):
        methods = [m for m in KNN_METHODS if m in ("numpy", "metrics_rs") or available(m)]
        if not skip_st and available("sentence_transformers"):
            methods.append(ST_METHOD)
        report.memory = measure_memory(methods, data, size, args.query_block)
    return report


# -------------------------------------------------------------------------------- ratios & targets


@dataclass(frozen=True)
class Target:
    """A goal from the issue: ``ratio`` (a key of ``SizeReport.ratios``) vs ``goal``."""

    ratio: str
    label: str
    goal: float
    higher_is_better: bool = True
    unit: str = "x"


TARGETS = (
    Target("knn_pct_of_sgemm", "metrics_rs.knn GFLOP/s as % of NumPy sgemm", 85.0, unit="%"),
    Target("knn_speedup_vs_numpy", "metrics_rs.knn vs blocked NumPy", 1.3),
    Target("knn_speedup_vs_faiss", "metrics_rs.knn vs faiss IndexFlatIP.search", 1.0),
    Target("knn_peak_rss_mb", "metrics_rs.knn peak RSS (fresh process)", 2000.0, False, " MB"),
    Target("evaluate_speedup_vs_ranx", "evaluate vs ranx (incl. Qrels/Run)", 10.0),
    Target("evaluate_speedup_vs_pytrec_eval", "evaluate vs pytrec_eval (incl. dicts)", 50.0),
    Target("e2e_speedup_vs_st", "knn+evaluate vs ST InformationRetrievalEvaluator", 3.0),
)


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def compute_ratios(report: SizeReport, sgemm_gflops: float) -> None:
    """Fill ``report.ratios`` with the quantities the targets are stated in."""
    rs_knn = report.seconds("knn metrics_rs")
    rs_eval = report.seconds("evaluate metrics_rs")
    gflops = report.methods["knn metrics_rs"]["gflops"]
    report.ratios = {
        "sgemm_gflops": sgemm_gflops,
        "knn_pct_of_sgemm": 100.0 * gflops / sgemm_gflops,
        "knn_speedup_vs_numpy": _ratio(report.seconds("knn numpy"), rs_knn),
        "knn_speedup_vs_torch": _ratio(report.seconds("knn torch"), rs_knn),
        "knn_speedup_vs_faiss": _ratio(report.seconds("knn faiss"), rs_knn),
        "knn_peak_rss_mb": report.memory.get("metrics_rs", {}).get("peak_rss_mb"),
        "evaluate_speedup_vs_ranx": _ratio(report.seconds("evaluate ranx"), rs_eval),
        "evaluate_speedup_vs_pytrec_eval": _ratio(report.seconds("evaluate pytrec_eval"), rs_eval),
        "e2e_speedup_vs_st": _ratio(
            report.seconds(ST_ROW),
            report.seconds("e2e metrics_rs knn+evaluate"),
        ),
    }
    for entry in report.methods.values():
        if "gflops" in entry:
            entry["pct_of_sgemm"] = 100.0 * entry["gflops"] / sgemm_gflops
    for method, mem in report.memory.items():
        report.methods[MEMORY_ROW[method]]["peak_rss_mb"] = mem["peak_rss_mb"]


def judge(reports: Sequence[SizeReport]) -> list[dict[str, Any]]:
    """PASS/FAIL (or SKIP when not measured) of every target at every size."""
    verdicts: list[dict[str, Any]] = []
    for report in reports:
        for target in TARGETS:
            value = report.ratios.get(target.ratio)
            if value is None:
                status = "SKIP"
            elif target.higher_is_better:
                status = "PASS" if value >= target.goal else "FAIL"
            else:
                status = "PASS" if value < target.goal else "FAIL"
            verdicts.append(
                {
                    "size": report.size.name,
                    "target": target.ratio,
                    "label": target.label,
                    "value": value,
                    "goal": f"{'>=' if target.higher_is_better else '<'} {target.goal:g}"
                    + target.unit.strip(),
                    "status": status,
                }
            )
    return verdicts


def agreement_checks(report: SizeReport) -> list[dict[str, Any]]:
    """The two sanity checks from the issue, as rows (WARN rather than FAIL: not a test)."""
    rows: list[dict[str, Any]] = []
    top1 = report.agreement.get("top1_metrics_rs_vs_faiss")
    if top1 is not None:
        ok = top1 >= 0.999
        rows.append({"check": "top-1 ids metrics_rs == faiss", "value": top1, "ok": ok})
    mrr = report.agreement.get("mrr_abs_diff_vs_pytrec_eval")
    if mrr is not None:
        label = f"|{report.agreement['mrr_metric']} - pytrec_eval recip_rank|"
        rows.append({"check": label, "value": mrr, "ok": mrr <= 1e-9})
    every = report.agreement.get("all_metrics_max_abs_diff_vs_pytrec_eval")
    if every is not None:
        label = "max |metric - pytrec_eval| over all metrics"
        rows.append({"check": label, "value": every, "ok": every <= 1e-9})
    return rows


# ------------------------------------------------------------------------------- environment facts


def versions(metrics_rs: ModuleType) -> dict[str, str | None]:
    """Installed versions of everything compared (None = not installed)."""

    def dist(*names: str) -> str | None:
        for name in names:
            try:
                return importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                continue
        return None

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": dist("torch"),
        "faiss": dist("faiss-cpu", "faiss"),
        "ranx": dist("ranx"),
        "numba": dist("numba"),
        "pytrec_eval": dist("pytrec-eval-terrier", "pytrec_eval"),
        "sentence_transformers": dist("sentence-transformers"),
        "threadpoolctl": dist("threadpoolctl"),
        "metrics_rs": str(getattr(metrics_rs, "__version__", None)),
    }


def blas_facts() -> dict[str, Any]:
    """Which BLAS each library loaded (threadpoolctl), NumPy's first: the GEMM kernel fact."""
    try:
        threadpoolctl = importlib.import_module("threadpoolctl")
    except ImportError:
        return {"numpy": None, "note": "threadpoolctl not installed"}
    keep = ("internal_api", "version", "architecture", "threading_layer", "num_threads")
    libraries = []
    for info in threadpoolctl.threadpool_info():
        if info.get("user_api") != "blas":
            continue
        owner = Path(str(info.get("filepath", ""))).parent.name.removesuffix(".libs")
        libraries.append({"loaded_by": owner, **{key: info.get(key) for key in keep}})
    numpy_blas = next((lib for lib in libraries if lib["loaded_by"] == "numpy"), None)
    facts: dict[str, Any] = {"numpy": numpy_blas, "all_blas": libraries}
    try:
        import torch

        facts["torch"] = {
            "mkl": torch.backends.mkl.is_available(),
            "mkldnn": torch.backends.mkldnn.is_available(),
        }
    except ImportError:
        facts["torch"] = None
    return facts


# ------------------------------------------------------------------------------------------ output


def print_size_table(report: SizeReport) -> None:
    size = report.size
    print(
        f"\n[{size.name}] {size.n_queries} q x {size.n_docs} docs x {size.dim}, k={size.k}, "
        f"ks={size.ks}; best of {size.repeats} (e2e: {size.e2e_repeats}); "
        f"data generated in {report.data_gen_s:.1f} s"
    )
    header = (
        f"  {'method':<40}{'best s':>10}{'GFLOP/s':>10}{'% sgemm':>9}{'peak RSS MB':>13}  notes"
    )
    print(header)
    print("  " + "-" * (len(header) + 8))
    for name, entry in report.methods.items():
        notes = ", ".join(
            f"{k.removesuffix('_s')} {v:.3g}s" for k, v in entry.get("phases_s", {}).items()
        )
        print(
            f"  {name:<40}{fmt(entry['best_s'], '.4f'):>10}{fmt(entry.get('gflops'), '.1f'):>10}"
            f"{fmt(entry.get('pct_of_sgemm'), '.0f'):>9}{fmt(entry.get('peak_rss_mb'), '.0f'):>13}"
            f"  {notes}"
        )
    for method, mem in report.memory.items():
        print(
            f"  memory {method:<22} peak {mem['peak_rss_mb']:.0f} MB, before call "
            f"{mem['rss_before_call_mb']:.0f} MB, delta {mem['delta_mb']:.0f} MB "
            f"(single run {mem['seconds_single_run']:.2f} s)"
        )


def print_summary(
    result: dict[str, Any], reports: Sequence[SizeReport], verdicts: list[dict[str, Any]]
) -> None:
    machine, blas = result["machine"], result["blas"]["numpy"] or {}
    flags = " ".join(f for f, on in machine["flags"].items() if on)
    print(
        f"\nmachine: {machine['cpu_model']} (family {machine['cpu_family']}, model "
        f"{machine['cpu_model_number']}), {machine['cores']} cores ({flags}); CPUs "
        f"{fmt(result['cpu_busy_fraction_before_start'], '.0%')} busy before start, load average "
        f"{result['load_average']['start']} at start, {result['load_average']['end']} at end"
    )
    print(
        f"numpy {result['versions']['numpy']} BLAS: {blas.get('internal_api')} "
        f"{blas.get('version')} kernel={blas.get('architecture')} "
        f"threads={blas.get('num_threads')}; threads pinned to {N_THREADS}"
    )
    sgemm = result["sgemm"]
    shape = "x".join(str(n) for n in sgemm["shape_mkn"])
    print(
        f"sgemm calibration (m x k x n = {shape}): {sgemm['gflops']:.1f} GFLOP/s "
        f"(before {sgemm['before']['gflops']:.1f}, after {sgemm['after']['gflops']:.1f})"
    )
    if result.get("ranx_numba_warmup_s") is not None:
        print(f"ranx numba warm-up (excluded from timings): {result['ranx_numba_warmup_s']:.2f} s")
    for report in reports:
        print_size_table(report)
    print(f"\n  {'size':<6}{'target':<52}{'value':>10}  {'goal':<10}status")
    for verdict in verdicts:
        print(
            f"  {verdict['size']:<6}{verdict['label']:<52}{fmt(verdict['value'], '.3g'):>10}  "
            f"{verdict['goal']:<10}{verdict['status']}"
        )
    for report in reports:
        for row in agreement_checks(report):
            status = "ok" if row["ok"] else "WARNING"
            print(f"  {report.size.name:<6}{row['check']:<52}{row['value']:>10.3g}  {status}")


def size_json(report: SizeReport) -> dict[str, Any]:
    size = report.size
    return {
        "n_queries": size.n_queries,
        "n_docs": size.n_docs,
        "dim": size.dim,
        "k": size.k,
        "ks": size.ks,
        "repeats": size.repeats,
        "warmup": size.warmup,
        "e2e_repeats": size.e2e_repeats,
        "flops_per_knn": size.flops,
        "data_gen_s": report.data_gen_s,
        "methods": report.methods,
        "memory": report.memory,
        "ratios": report.ratios,
        "agreement": report.agreement,
    }


# -------------------------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Benchmark metrics_rs (kNN + IR metrics) against NumPy, torch, faiss, "
        "ranx, pytrec_eval and sentence-transformers; writes a JSON report.",
    )
    parser.add_argument("--sizes", default="small,large", help="comma list of: small, large")
    parser.add_argument(
        "--quick", action="store_true", help="shrink large to 2k queries x 20k docs"
    )
    parser.add_argument("--repeats", type=int, default=3, help="best of N at the small size")
    parser.add_argument("--repeats-large", type=int, default=2, help="best of N at large size")
    parser.add_argument("--seed", type=int, default=0, help="data seed")
    parser.add_argument(
        "--noise", type=float, default=0.1, help="per-dimension query noise (std. dev.)"
    )
    parser.add_argument("--query-block", type=int, default=1024, help="numpy/torch query block")
    parser.add_argument(
        "--skip-st-large",
        action="store_true",
        help="skip the sentence-transformers evaluator at the large size (~25 s, GBs of RAM)",
    )
    parser.add_argument(
        "--memory",
        choices=("large", "all", "none"),
        default="large",
        help="sizes at which peak RSS is measured in fresh child processes",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"JSON report path (default: {DEFAULT_OUT.relative_to(RESULTS_DIR.parent.parent)}, "
        f"or {QUICK_OUT.relative_to(RESULTS_DIR.parent.parent)} with --quick)",
    )
    args = parser.parse_args(argv)
    if args.out is None:
        args.out = QUICK_OUT if args.quick else DEFAULT_OUT
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = make_sizes(args)
    metrics_rs = load_metrics_rs()
    threads = pin_library_threads()
    started, load_at_start, busy = dt.datetime.now(dt.UTC), load_average(), cpu_busy_fraction()
    if busy is not None and busy > 0.2:
        print(f"warning: the CPUs were {busy:.0%} busy before the start; timings will be skewed")
    print(f"bench_metrics: threads pinned to {N_THREADS}; calibrating NumPy sgemm ...", flush=True)
    sgemm_before = calibrate_sgemm()
    ranx_warmup_s = ranx_warmup([1, 10]) if available("ranx") else None
    reports = [bench_size(size, args, metrics_rs) for size in sizes]
    sgemm_after = calibrate_sgemm()
    best = max(sgemm_before, sgemm_after, key=lambda s: float(s["gflops"]))
    sgemm = {**best, "before": sgemm_before, "after": sgemm_after}
    for report in reports:
        compute_ratios(report, float(sgemm["gflops"]))
    verdicts = judge(reports)
    result: dict[str, Any] = {
        "schema": 1,
        "timestamp": started.isoformat(timespec="seconds"),
        "wall_s": (dt.datetime.now(dt.UTC) - started).total_seconds(),
        "command": [sys.executable, *sys.argv],
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "machine": cpu_facts(),
        "load_average": {"start": load_at_start, "end": load_average()},
        "cpu_busy_fraction_before_start": busy,
        "threads": threads,
        "blas": blas_facts(),
        "versions": versions(metrics_rs),
        "sgemm": sgemm,
        "ranx_numba_warmup_s": ranx_warmup_s,
        "sizes": {report.size.name: size_json(report) for report in reports},
        "targets": verdicts,
        "agreement_checks": {r.size.name: agreement_checks(r) for r in reports},
        "main_process_peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / MB,
        "notes": {
            "units": "seconds; GFLOP/s = 2*n_q*n_docs*dim/seconds/1e9; MB = 1e6 bytes",
            "memory": "fresh spawn child per method; peak = VmHWM after resetting it "
            "(/proc/self/clear_refs) just before the call, absolute (inputs included)",
            "faiss": "ratio uses search only; add is reported as 'faiss add'",
            "st_evaluator": "stand-in model returns precomputed rows; evaluator construction "
            "and call are timed, building its text/relevance dicts is not",
        },
    }
    print_summary(result, reports, verdicts)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(to_jsonable(result), indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
