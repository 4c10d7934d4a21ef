"""The ``evaluate`` stage: retrieval quality of the candidate model against its base model.

Embeds the evaluation corpus (``data/validated/chunks.parquet``) and the held-out queries
(``data/validated/queries.parquet``) with the candidate (``models/candidate/``), the base
model it was fine-tuned from and any extra models (promote adds ``champion``), at every
Matryoshka dimension (truncate, then L2-normalise), ranks the corpus with
``metrics_rs.knn`` and scores the rankings against ``data/validated/qrels.parquet`` with
``metrics_rs.evaluate`` — the one place the metrics are defined. Corpus and query
embeddings go through :class:`pipelines.embeddings.EmbeddingCache`, keyed by model
fingerprint and texts hash, so a model is never asked to embed the same texts twice and a
model whose embeddings are all cached is not even loaded.

The base model is the one the candidate recorded in its ``mathembed.json`` (``base_model``
with ``params.pooling`` and ``params.max_seq_length``); ``params.yaml``'s ``train``
section only stands in when the candidate recorded none. The dimensions scored are
``evaluate.dims``, else the candidate's ``matryoshka_dims``, plus always its full
dimension; cut-offs in ``evaluate.ks`` above the corpus size are dropped.

Subsets. ``all`` scores every query with a relevant chunk. ``seen`` and ``unseen`` score
the queries against only the relevant chunks from seen / unseen papers (the qrels'
``unseen`` flag: papers whose chunks were never training positives); the *other* side's
relevant chunks are removed from the ranking rather than counted as misses, because
ranking a relevant passage first is not an error.

Outputs:

``metrics/eval.json`` (DVC metrics)::

    {"corpus_size": 447, "n_queries": 20, "queries_without_relevant": 0,
     "ks": [1, 5, 10, 100], "dims": [384, 256, 128, 64], "primary_dim": 384,
     "models": {"candidate": {"source": "models/candidate", "fingerprint": "..."},
                "base": {"source": "<name or path>", "fingerprint": "...", ...}},
     "candidate": {"dim_384": {"mrr@10": 0.61, "ndcg@10": ..., "recall@1": ..., ...},
                   "dim_256": {...}},
     "base": {...},                      # one entry per scored model, same shape
     "delta": {"base": {"dim_384": {"mrr@10": 0.12, ...}}},   # candidate minus reference
     "subsets": {"unseen": {"n_queries": 2, "ks": [...], "candidate": {...},
                            "base": {...}, "delta": {...}},
                 "seen": {...}},
     "timing_seconds": {"embedding": ..., "knn": ..., "metrics": ..., "reports": ...,
                        "total": ...},
     "cache": {"hits": 4, "misses": 0}}   # null with evaluate.cache: false

``metrics/eval_per_query.parquet``: ``query_id, model, dim, metric, value`` for subset
``all``, every model, dimension and metric; within one (model, dim, metric) the rows
follow the query order of ``queries.parquet`` (queries without a relevant chunk left out).
:func:`per_query_scores` reads one aligned vector back (promote's significance test).

``reports/eval/`` (DVC plots and figures), all at the primary (full) dimension unless
said otherwise: ``compare.csv`` (``metric`` and one column per model), ``dims.csv``
(``dim`` and ``<model>_<metric>`` for the headline metrics MRR@10 and NDCG@10),
``per_query.csv`` (``query_id``, ``query``, ``<model>_<metric>`` and
``delta_<reference>_<metric>`` = candidate minus reference, per headline metric), and the
figures ``compare.png`` (every metric and cut-off, one bar per model), ``dims.png``
(headline metrics against the dimension) and ``wins_losses.png`` (per-query differences,
sorted, one panel per reference model and headline metric).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pandas as pd

import metrics_rs
from pipelines.common import io, models
from pipelines.common.config import ConfigError, EvaluateParams, add_config_arguments, load_params
from pipelines.common.embeddings import (
    EmbeddingCache,
    Embeddings,
    LazyModel,
    TextEncoder,
    embed_cached,
    matryoshka,
)
from pipelines.common.paths import Paths

if TYPE_CHECKING:
    from matplotlib.figure import Figure

CANDIDATE = "candidate"
BASE = "base"
SUBSETS = ("seen", "unseen")
# eval.json keys that are not model names; an extra model may not take one of them.
RESERVED_KEYS = frozenset(
    {
        "corpus_size",
        "n_queries",
        "queries_without_relevant",
        "ks",
        "dims",
        "primary_dim",
        "models",
        "delta",
        "subsets",
        "timing_seconds",
        "cache",
    }
)
# The metrics promotion decides on; the figures show them.
HEADLINE_FAMILIES = ("mrr", "ndcg")
METRIC_FAMILIES = ("mrr", "ndcg", "recall", "precision", "map", "hit")
FAMILY_TITLES = {
    "mrr": "MRR",
    "ndcg": "NDCG",
    "recall": "Recall",
    "precision": "Precision",
    "map": "MAP",
    "hit": "Hit rate",
}
MODEL_METADATA = models.METADATA_FILE
PER_QUERY_COLUMNS = ["query_id", "model", "dim", "metric", "value"]
REPRO_HINT = "run `make repro` (dvc repro validate) to rebuild data/validated/"


# --------------------------------------------------------------------------- locations


def embedding_cache_dir(paths: Paths) -> Path:
    return paths.root / "data" / "cache" / "embeddings"


@dataclass(frozen=True)
class EvalOutputs:
    """Where a run writes; promote may point these elsewhere to keep DVC's outputs intact.

    ``figures=False`` skips the PNGs (the CSV plot data is always written): drawing them
    costs more than scoring a small eval set.
    """

    metrics_file: Path
    per_query_file: Path
    reports_dir: Path
    figures: bool = True

    @classmethod
    def default(cls, paths: Paths, *, figures: bool = True) -> EvalOutputs:
        return cls(
            metrics_file=paths.metrics / "eval.json",
            per_query_file=paths.metrics / "eval_per_query.parquet",
            reports_dir=paths.root / "reports" / "eval",
            figures=figures,
        )


# --------------------------------------------------------------------------- evaluation set


@dataclass(frozen=True)
class Subset:
    """Queries scored together: their rows in the eval set, qrels, and ids left out of ranking."""

    name: str
    rows: npt.NDArray[np.int64]
    qrels: list[dict[int, int]]
    excluded: list[frozenset[int]]


@dataclass(frozen=True)
class EvalSet:
    """The corpus, the queries with at least one relevant chunk, and their qrels.

    ``qrels[i]`` maps a corpus row index to a grade for query ``i``.
    """

    corpus_ids: list[str]
    corpus_texts: list[str]
    query_ids: list[str]
    query_texts: list[str]
    qrels: list[dict[int, int]]
    unseen_docs: list[frozenset[int]]
    queries_without_relevant: list[str]

    def subset(self, name: str) -> Subset:
        """``all``, or the queries scored only against ``seen`` / ``unseen`` relevant chunks."""
        if name == "all":
            rows = np.arange(len(self.query_ids), dtype=np.int64)
            return Subset(name, rows, list(self.qrels), [frozenset()] * len(rows))
        if name not in SUBSETS:
            raise ValueError(f"unknown subset {name!r}; expected 'all' or one of {SUBSETS}")
        keep_unseen = name == "unseen"
        rows_kept: list[int] = []
        qrels: list[dict[int, int]] = []
        excluded: list[frozenset[int]] = []
        for row, (judged, unseen) in enumerate(zip(self.qrels, self.unseen_docs, strict=True)):
            other_side = {d for d, g in judged.items() if g >= 1 and (d in unseen) != keep_unseen}
            if len(other_side) == sum(1 for g in judged.values() if g >= 1):
                continue  # no relevant chunk on this side
            rows_kept.append(row)
            qrels.append({doc: g for doc, g in judged.items() if doc not in other_side})
            excluded.append(frozenset(other_side))
        return Subset(name, np.asarray(rows_kept, dtype=np.int64), qrels, excluded)


def _require_columns(frame: pd.DataFrame, columns: Sequence[str], path: Path) -> None:
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise ValueError(
            f"{path}: missing column(s) {missing} (has {list(frame.columns)}); {REPRO_HINT}"
        )


def _examples(values: Sequence[Any], limit: int = 5) -> str:
    shown = ", ".join(repr(value) for value in list(values)[:limit])
    more = f" and {len(values) - limit} more" if len(values) > limit else ""
    return shown + more


def build_eval_set(
    chunks: pd.DataFrame,
    queries: pd.DataFrame,
    qrels: pd.DataFrame,
    *,
    sources: Mapping[str, Path] | None = None,
) -> EvalSet:
    """Check the three tables against each other and index the qrels by corpus row.

    ``sources`` names the files the tables came from, for the error messages. A query
    with no relevant (grade >= 1) chunk cannot be scored; it is left out and listed in
    ``queries_without_relevant`` so the counts add up.
    """
    names = {"chunks": Path("chunks"), "queries": Path("queries"), "qrels": Path("qrels")}
    names.update(sources or {})
    _require_columns(chunks, ["chunk_id", "text"], names["chunks"])
    _require_columns(queries, ["query_id", "text"], names["queries"])
    _require_columns(qrels, ["query_id", "chunk_id", "grade", "unseen"], names["qrels"])
    if chunks.empty:
        raise ValueError(f"{names['chunks']}: the corpus is empty; {REPRO_HINT}")
    if queries.empty:
        raise ValueError(
            f"{names['queries']}: no evaluation queries; the pairs stage needs held-out "
            f"concepts with enough papers (params.yaml pairs.held_out_fraction, "
            f"pairs.min_degree); {REPRO_HINT}"
        )
    for frame, column, key in ((chunks, "chunk_id", "chunks"), (queries, "query_id", "queries")):
        duplicated = frame.loc[frame[column].duplicated(), column].tolist()
        if duplicated:
            raise ValueError(
                f"{names[key]}: duplicate {column} {_examples(duplicated)}; {REPRO_HINT}"
            )

    corpus_ids = chunks["chunk_id"].astype(str).tolist()
    row_of_chunk = {chunk_id: row for row, chunk_id in enumerate(corpus_ids)}
    query_ids = queries["query_id"].astype(str).tolist()
    row_of_query = {query_id: row for row, query_id in enumerate(query_ids)}

    unknown_chunks = sorted(set(qrels["chunk_id"].astype(str)) - row_of_chunk.keys())
    if unknown_chunks:
        raise ValueError(
            f"{names['qrels']}: {len(unknown_chunks)} chunk_id(s) not in {names['chunks']}: "
            f"{_examples(unknown_chunks)}; qrels and corpus come from different runs — "
            f"{REPRO_HINT}"
        )
    unknown_queries = sorted(set(qrels["query_id"].astype(str)) - row_of_query.keys())
    if unknown_queries:
        raise ValueError(
            f"{names['qrels']}: {len(unknown_queries)} query_id(s) not in {names['queries']}: "
            f"{_examples(unknown_queries)}; {REPRO_HINT}"
        )
    pair = qrels[["query_id", "chunk_id"]].astype(str)
    duplicated_pairs = pair[pair.duplicated()].itertuples(index=False, name=None)
    duplicated_list = list(duplicated_pairs)
    if duplicated_list:
        raise ValueError(
            f"{names['qrels']}: (query_id, chunk_id) judged more than once: "
            f"{_examples(duplicated_list)}; {REPRO_HINT}"
        )

    judged: list[dict[int, int]] = [{} for _ in query_ids]
    unseen: list[set[int]] = [set() for _ in query_ids]
    for query_id, chunk_id, grade, is_unseen in zip(
        qrels["query_id"].astype(str),
        qrels["chunk_id"].astype(str),
        qrels["grade"],
        qrels["unseen"],
        strict=True,
    ):
        row, doc = row_of_query[query_id], row_of_chunk[chunk_id]
        judged[row][doc] = int(grade)
        if bool(is_unseen):
            unseen[row].add(doc)

    scorable = [row for row, docs in enumerate(judged) if any(g >= 1 for g in docs.values())]
    scorable_rows = set(scorable)
    if not scorable:
        raise ValueError(
            f"{names['qrels']}: none of the {len(query_ids)} queries in {names['queries']} "
            f"has a relevant (grade >= 1) chunk; {REPRO_HINT}"
        )
    query_texts = queries["text"].astype(str).tolist()
    return EvalSet(
        corpus_ids=corpus_ids,
        corpus_texts=chunks["text"].astype(str).tolist(),
        query_ids=[query_ids[row] for row in scorable],
        query_texts=[query_texts[row] for row in scorable],
        qrels=[judged[row] for row in scorable],
        unseen_docs=[frozenset(unseen[row]) for row in scorable],
        queries_without_relevant=[
            query_id for row, query_id in enumerate(query_ids) if row not in scorable_rows
        ],
    )


def load_eval_set(paths: Paths) -> EvalSet:
    """Read the validated corpus, queries and qrels (never the unvalidated tables)."""
    folder = paths.validated
    sources = {name: folder / f"{name}.parquet" for name in ("chunks", "queries", "qrels")}
    tables = {}
    for name, path in sources.items():
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found; {REPRO_HINT}")
        tables[name] = io.read_parquet(path)
    return build_eval_set(tables["chunks"], tables["queries"], tables["qrels"], sources=sources)


# --------------------------------------------------------------------------- models


@dataclass(frozen=True)
class BaseModelSpec:
    """The base model as the train stage loads it (``train.base_model`` and its knobs)."""

    name_or_path: str
    pooling: models.Pooling
    max_seq_length: int


@dataclass(frozen=True)
class ModelSource:
    """A model to score: its identity (cache key) and how to load it, on a cache miss only."""

    name: str
    fingerprint: str
    load: Callable[[], TextEncoder]
    info: dict[str, Any] = field(default_factory=dict)


def read_model_metadata(model_dir: Path) -> dict[str, Any]:
    """``mathembed.json`` of a model folder written by train (``{}`` when absent)."""
    path = model_dir / MODEL_METADATA
    if not path.is_file():
        return {}
    metadata = io.read_json(path)
    if not isinstance(metadata, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(metadata).__name__}")
    return metadata


def matryoshka_dims_of(metadata: Mapping[str, Any]) -> list[int]:
    """The Matryoshka dims train recorded (top level, or inside ``params``), else ``[]``."""
    dims = metadata.get("matryoshka_dims")
    if dims is None and isinstance(metadata.get("params"), Mapping):
        dims = metadata["params"].get("matryoshka_dims")
    if not dims:
        return []
    if not isinstance(dims, list) or not all(isinstance(d, int) and d > 0 for d in dims):
        raise ValueError(f"{MODEL_METADATA}: matryoshka_dims must be positive ints, got {dims!r}")
    return dims


def _check_model_dir(model_dir: Path, name: str) -> None:
    if not (model_dir / "modules.json").is_file():
        fix = (
            "train it first: `dvc repro train` (or `python -m pipelines.train`)"
            if name == CANDIDATE
            else "pass a folder saved with SentenceTransformer.save()"
        )
        state = "not found" if not model_dir.exists() else "is not a sentence-transformers model"
        raise FileNotFoundError(f"{name} model {model_dir} {state} (no modules.json); {fix}")


def local_model_source(name: str, model_dir: Path) -> ModelSource:
    """A model saved with ``SentenceTransformer.save`` (the candidate, a champion)."""
    from pipelines.common.models import model_fingerprint

    _check_model_dir(model_dir, name)

    def load() -> TextEncoder:
        from sentence_transformers import SentenceTransformer

        model: TextEncoder = SentenceTransformer(str(model_dir), local_files_only=True)
        return model

    fingerprint = model_fingerprint(model_dir)
    return ModelSource(
        name, fingerprint, load, {"source": str(model_dir), "fingerprint": fingerprint}
    )


def base_model_source(spec: BaseModelSpec) -> ModelSource:
    """The base model, loaded with the pooling and sequence length train used."""
    from pipelines.common.models import load_base_model, model_fingerprint, resolve_model_source

    local = Path(resolve_model_source(spec.name_or_path)).expanduser()
    files = model_fingerprint(local) if local.is_dir() else _hub_fingerprint(spec.name_or_path)
    # Pooling and sequence length change the embeddings without changing any file.
    fingerprint = io.sha256_hex(
        f"{files}|pooling={spec.pooling}|max_seq_length={spec.max_seq_length}".encode()
    )

    def load() -> TextEncoder:
        model: TextEncoder = load_base_model(
            spec.name_or_path, pooling=spec.pooling, max_seq_length=spec.max_seq_length
        )
        return model

    info = {
        "source": spec.name_or_path,
        "pooling": spec.pooling,
        "max_seq_length": spec.max_seq_length,
        "fingerprint": fingerprint,
    }
    return ModelSource(BASE, fingerprint, load, info)


def _hub_fingerprint(model_id: str) -> str:
    """A Hugging Face model id pinned to the snapshot in the local cache (its commit)."""
    from huggingface_hub import snapshot_download

    try:
        snapshot = Path(snapshot_download(model_id, local_files_only=True))
    except Exception as error:  # the hub raises several unrelated types for "not cached"
        raise models.ModelLoadError(
            f"base model {model_id!r} is neither a local folder nor in the Hugging Face "
            "cache; download it once with network access (HF_HUB_OFFLINE=0 .venv/bin/python -c "
            f"\"from huggingface_hub import snapshot_download; snapshot_download('{model_id}')\""
            f"), or set train.base_model to a local folder or {models.OFFLINE_MINILM!r}"
        ) from error
    return f"hf:{model_id}@{snapshot.name}"


def base_spec_from_metadata(metadata: Mapping[str, Any]) -> BaseModelSpec | None:
    """The base model the candidate recorded in ``mathembed.json``, when complete."""
    params = metadata.get("params")
    base = metadata.get("base_model")
    if not isinstance(base, str) or not isinstance(params, Mapping):
        return None
    pooling, max_seq_length = params.get("pooling"), params.get("max_seq_length")
    if pooling is None or not isinstance(max_seq_length, int):
        return None
    if pooling not in typing.get_args(models.Pooling):
        raise ValueError(
            f"{MODEL_METADATA}: params.pooling {pooling!r} is not one of "
            f"{list(typing.get_args(models.Pooling))}; retrain the candidate"
        )
    return BaseModelSpec(base, pooling, max_seq_length)


# --------------------------------------------------------------------------- scoring


@dataclass
class Timer:
    """Seconds spent per phase, for the stage's time split."""

    seconds: dict[str, float] = field(
        default_factory=lambda: {"embedding": 0.0, "knn": 0.0, "metrics": 0.0, "reports": 0.0}
    )

    def add(self, phase: str, started: float) -> None:
        self.seconds[phase] += time.perf_counter() - started


def effective_ks(ks: Sequence[int], n_docs: int) -> list[int]:
    """``ks`` sorted, without cut-offs above the corpus size (``[n_docs]`` if none is left)."""
    if not ks or any(k < 1 for k in ks):
        raise ValueError(f"params.yaml evaluate.ks must be positive integers, got {list(ks)}")
    kept = sorted({k for k in ks if k <= n_docs})
    return kept or [n_docs]


def rank_subset(ranked: npt.NDArray[np.int64], subset: Subset, depth: int) -> npt.NDArray[np.int64]:
    """The subset's rows of ``ranked`` with excluded ids removed, cut to ``depth`` columns."""
    rows = ranked[subset.rows]
    if not any(subset.excluded):
        return np.ascontiguousarray(rows[:, :depth])
    out = np.empty((len(subset.rows), depth), dtype=np.int64)
    for i, (row, excluded) in enumerate(zip(rows, subset.excluded, strict=True)):
        kept = [doc for doc in row.tolist() if doc not in excluded]
        if len(kept) < depth:  # pragma: no cover - the search depth guarantees enough
            raise RuntimeError(f"ranking too short for subset {subset.name}: {len(kept)} < {depth}")
        out[i] = kept[:depth]
    return out


@dataclass(frozen=True)
class SubsetScores:
    n_queries: int
    ks: list[int]
    means: dict[int, dict[str, float]]  # dim -> metric -> mean
    per_query: dict[int, dict[str, npt.NDArray[np.float64]]]  # dim -> metric -> values


def score_model(
    query_embeddings: Embeddings,
    corpus_embeddings: Embeddings,
    subsets: Sequence[Subset],
    *,
    ks: Sequence[int],
    dims: Sequence[int],
    timer: Timer | None = None,
) -> dict[str, SubsetScores]:
    """kNN + metrics for every dim and subset, from full-dimension embeddings."""
    timer = timer or Timer()
    n_docs = corpus_embeddings.shape[0]
    max_excluded = max((len(e) for s in subsets for e in s.excluded), default=0)
    depth_all = max(effective_ks(ks, n_docs))
    search_depth = min(n_docs, depth_all + max_excluded)
    plan = {}
    for subset in subsets:
        room = n_docs - max((len(e) for e in subset.excluded), default=0)
        subset_ks = [k for k in effective_ks(ks, n_docs) if k <= room] or [room]
        plan[subset.name] = (subset, subset_ks)
    means: dict[str, dict[int, dict[str, float]]] = {name: {} for name in plan}
    per_query: dict[str, dict[int, dict[str, npt.NDArray[np.float64]]]] = {n: {} for n in plan}
    for dim in dims:
        started = time.perf_counter()
        queries = matryoshka(query_embeddings, dim, normalize=True)
        corpus = matryoshka(corpus_embeddings, dim, normalize=True)
        ranked, _scores = metrics_rs.knn(queries, corpus, search_depth)
        timer.add("knn", started)
        started = time.perf_counter()
        for name, (subset, subset_ks) in plan.items():
            if len(subset.rows) == 0:
                continue
            rankings = rank_subset(ranked, subset, max(subset_ks))
            result = metrics_rs.evaluate(
                rankings, subset.qrels, subset_ks, per_query=True, n_docs=n_docs
            )
            per_query[name][dim] = dict(result.pop("per_query"))
            means[name][dim] = {
                metric: float(value)
                for metric, value in result.items()
                if metric not in ("n_queries", "n_skipped")
            }
        timer.add("metrics", started)
    return {
        name: SubsetScores(len(subset.rows), subset_ks, means[name], per_query[name])
        for name, (subset, subset_ks) in plan.items()
    }


# --------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class EvalReport:
    """What a run produced: the eval.json content, the per-query table, where it wrote."""

    summary: dict[str, Any]
    per_query: pd.DataFrame
    outputs: EvalOutputs
    figures: list[Path]

    @property
    def n_queries(self) -> int:
        return int(self.summary["n_queries"])

    @property
    def corpus_size(self) -> int:
        return int(self.summary["corpus_size"])


def per_query_scores(
    per_query: pd.DataFrame, model: str, dim: int, metric: str
) -> npt.NDArray[np.float64]:
    """One model's per-query ``metric`` at ``dim``, in query order (for paired tests)."""
    rows = per_query[
        (per_query["model"] == model) & (per_query["dim"] == dim) & (per_query["metric"] == metric)
    ]
    if rows.empty:
        raise KeyError(f"no per-query {metric} for model {model!r} at dim {dim}")
    return rows["value"].to_numpy(dtype=np.float64)


def _dim_key(dim: int) -> str:
    return f"dim_{dim}"


def _check_extra_names(extra: Mapping[str, Path]) -> None:
    for name in extra:
        if name in (CANDIDATE, BASE) or name in RESERVED_KEYS or not name.isidentifier():
            raise ValueError(
                f"extra model name {name!r} is not allowed: use an identifier other than "
                f"{sorted({CANDIDATE, BASE} | RESERVED_KEYS)}"
            )


def _candidate_dims(requested: Sequence[int], full_dim: int, candidate_dir: Path) -> list[int]:
    """The requested dims plus the full one, largest first; a dim above full is an error."""
    too_large = [dim for dim in requested if dim > full_dim]
    if too_large:
        raise ValueError(
            f"dims {too_large} exceed the candidate's dimension {full_dim}; fix params.yaml "
            f"evaluate.dims (or matryoshka_dims in {candidate_dir / MODEL_METADATA})"
        )
    return sorted({full_dim, *requested}, reverse=True)


def _dims_to_score(params: EvaluateParams, metadata: Mapping[str, Any]) -> list[int]:
    dims = list(params.dims) or matryoshka_dims_of(metadata)
    if any(d < 1 for d in dims):
        raise ValueError(f"params.yaml evaluate.dims must be positive integers, got {dims}")
    return dims


def run_evaluate(
    params: EvaluateParams,
    paths: Paths,
    *,
    candidate_dir: Path | None = None,
    base_model: BaseModelSpec | None = None,
    extra_models: Mapping[str, Path] | None = None,
    outputs: EvalOutputs | None = None,
    progress: bool = True,
) -> EvalReport:
    """Score the candidate, its base model and ``extra_models`` on the validated eval set.

    ``base_model`` defaults to the one the candidate recorded in its ``mathembed.json``;
    ``extra_models`` maps a name (``champion``) to a saved model folder. Writes eval.json,
    the per-query table and the reports (see the module docstring) atomically.
    """
    started_total = time.perf_counter()
    timer = Timer()
    candidate_dir = candidate_dir or models.candidate_dir(paths)
    outputs = outputs or EvalOutputs.default(paths)
    extra = dict(extra_models or {})
    _check_extra_names(extra)

    eval_set = load_eval_set(paths)
    _check_model_dir(candidate_dir, CANDIDATE)
    metadata = read_model_metadata(candidate_dir)
    base_model = base_model or base_spec_from_metadata(metadata)
    if base_model is None:
        raise ValueError(
            f"{candidate_dir / MODEL_METADATA} does not name the base model (base_model, "
            "params.pooling, params.max_seq_length) and none was given; pass base_model or "
            "retrain the candidate"
        )
    sources = [local_model_source(CANDIDATE, candidate_dir), base_model_source(base_model)]
    sources += [local_model_source(name, model_dir) for name, model_dir in extra.items()]

    cache = EmbeddingCache(embedding_cache_dir(paths)) if params.cache else None
    subsets = [eval_set.subset("all")] + [eval_set.subset(name) for name in SUBSETS]
    requested_dims = _dims_to_score(params, metadata)

    scores: dict[str, dict[str, SubsetScores]] = {}
    dims_of: dict[str, list[int]] = {}
    candidate_dims: list[int] = []
    for source in sources:
        started = time.perf_counter()
        query_embeddings, corpus_embeddings = embed_eval_set(
            source, eval_set, cache=cache, batch_size=params.batch_size, progress=progress
        )
        timer.add("embedding", started)
        full_dim = int(corpus_embeddings.shape[1])
        if source.name == CANDIDATE:  # first in ``sources``: it fixes the dims for all
            candidate_dims = _candidate_dims(requested_dims, full_dim, candidate_dir)
        # A reference model is scored at those of the candidate's dims it has.
        dims_of[source.name] = [dim for dim in candidate_dims if dim <= full_dim]
        scores[source.name] = score_model(
            query_embeddings,
            corpus_embeddings,
            subsets,
            ks=params.ks,
            dims=dims_of[source.name],
            timer=timer,
        )

    summary = build_summary(
        eval_set, scores, dims_of, sources, primary_dim=candidate_dims[0], cache=cache
    )
    per_query = per_query_frame(eval_set, scores)
    started = time.perf_counter()
    figures = write_outputs(summary, per_query, eval_set, outputs)
    timer.add("reports", started)
    summary["timing_seconds"] = {
        **{phase: round(seconds, 4) for phase, seconds in timer.seconds.items()},
        "total": round(time.perf_counter() - started_total, 4),
    }
    io.write_json(outputs.metrics_file, summary)
    return EvalReport(summary, per_query, outputs, figures)


def embed_eval_set(
    source: ModelSource,
    eval_set: EvalSet,
    *,
    cache: EmbeddingCache | None,
    batch_size: int,
    progress: bool = False,
) -> tuple[Embeddings, Embeddings]:
    """Full-dimension, unnormalised query and corpus embeddings; the model loads lazily."""
    model = LazyModel(source.load)

    def embed(texts: list[str]) -> Embeddings:
        try:
            return embed_cached(
                model,
                texts,
                model_fingerprint=source.fingerprint,
                cache=cache,
                batch_size=batch_size,
                progress=progress,
            )
        except ValueError as error:
            raise ValueError(f"{source.name} model ({source.info['source']}): {error}") from error

    return embed(eval_set.query_texts), embed(eval_set.corpus_texts)


def _rounded(metrics: Mapping[str, float]) -> dict[str, float]:
    return {name: round(value, 6) for name, value in metrics.items()}


def _model_block(
    scores: Mapping[str, dict[str, SubsetScores]], subset: str
) -> dict[str, dict[str, dict[str, float]]]:
    return {
        model: {_dim_key(dim): _rounded(means) for dim, means in by_subset[subset].means.items()}
        for model, by_subset in scores.items()
        if by_subset[subset].n_queries
    }


def _delta_block(blocks: Mapping[str, dict[str, dict[str, float]]]) -> dict[str, Any]:
    """Candidate minus each reference model, where both have the dim and the metric."""
    candidate = blocks.get(CANDIDATE, {})
    delta: dict[str, Any] = {}
    for reference, dims in blocks.items():
        if reference == CANDIDATE:
            continue
        delta[reference] = {
            dim: {
                metric: round(candidate[dim][metric] - value, 6)
                for metric, value in metrics.items()
                if metric in candidate[dim]
            }
            for dim, metrics in dims.items()
            if dim in candidate
        }
    return delta


def build_summary(
    eval_set: EvalSet,
    scores: Mapping[str, dict[str, SubsetScores]],
    dims_of: Mapping[str, list[int]],
    sources: Sequence[ModelSource],
    *,
    primary_dim: int,
    cache: EmbeddingCache | None,
) -> dict[str, Any]:
    """The eval.json content (its shape is in the module docstring)."""
    everything = _model_block(scores, "all")
    summary: dict[str, Any] = {
        "corpus_size": len(eval_set.corpus_ids),
        "n_queries": len(eval_set.query_ids),
        "queries_without_relevant": len(eval_set.queries_without_relevant),
        "ks": scores[CANDIDATE]["all"].ks,
        "dims": dims_of[CANDIDATE],
        "primary_dim": primary_dim,
        "models": {source.name: source.info for source in sources},
        **everything,
        "delta": _delta_block(everything),
        "subsets": {},
        "cache": {"hits": cache.hits, "misses": cache.misses} if cache else None,
    }
    for subset in SUBSETS:
        block = _model_block(scores, subset)
        n_queries = scores[CANDIDATE][subset].n_queries
        summary["subsets"][subset] = {
            "n_queries": n_queries,
            "ks": scores[CANDIDATE][subset].ks if n_queries else [],
            **block,
            "delta": _delta_block(block),
        }
    return summary


def per_query_frame(
    eval_set: EvalSet, scores: Mapping[str, dict[str, SubsetScores]]
) -> pd.DataFrame:
    """Subset ``all``'s per-query values as ``query_id, model, dim, metric, value``."""
    frames = []
    for model, by_subset in scores.items():
        for dim, metrics in by_subset["all"].per_query.items():
            for metric, values in metrics.items():
                frames.append(
                    pd.DataFrame(
                        {
                            "query_id": eval_set.query_ids,
                            "model": model,
                            "dim": np.int64(dim),
                            "metric": metric,
                            "value": np.asarray(values, dtype=np.float64),
                        }
                    )
                )
    frame = pd.concat(frames, ignore_index=True)
    frame["dim"] = frame["dim"].astype("int64")
    return frame[PER_QUERY_COLUMNS]


# --------------------------------------------------------------------------- reports


def headline_metrics(ks: Sequence[int]) -> list[str]:
    """MRR@10 and NDCG@10 (the promotion metrics), or @max(ks) on a corpus under 10."""
    k = 10 if 10 in ks else max(ks)
    return [f"{family}@{k}" for family in HEADLINE_FAMILIES]


def write_outputs(
    summary: Mapping[str, Any],
    per_query: pd.DataFrame,
    eval_set: EvalSet,
    outputs: EvalOutputs,
) -> list[Path]:
    """The per-query table, the DVC plot data and the figures; returns the figure paths."""
    io.write_parquet(outputs.per_query_file, per_query)
    model_names = list(summary["models"])
    primary = _dim_key(summary["primary_dim"])
    ks = summary["ks"]
    headline = headline_metrics(ks)
    reports = outputs.reports_dir

    compare = pd.DataFrame(
        {"metric": list(summary[CANDIDATE][primary])}
        | {
            model: [
                summary[model].get(primary, {}).get(m, math.nan)
                for m in summary[CANDIDATE][primary]
            ]
            for model in model_names
        }
    )
    _write_csv(reports / "compare.csv", compare)

    dims_rows = []
    for dim in summary["dims"]:
        row: dict[str, Any] = {"dim": dim}
        for model in model_names:
            for metric in headline:
                row[f"{model}_{metric}"] = (
                    summary[model].get(_dim_key(dim), {}).get(metric, math.nan)
                )
        dims_rows.append(row)
    _write_csv(reports / "dims.csv", pd.DataFrame(dims_rows))

    wins = wins_losses_table(per_query, eval_set, summary["primary_dim"], headline, model_names)
    _write_csv(reports / "per_query.csv", wins)

    if not outputs.figures:
        return []
    return [
        _save_figure(reports / "compare.png", compare_figure(summary)),
        _save_figure(reports / "dims.png", dims_figure(summary, headline)),
        _save_figure(reports / "wins_losses.png", wins_losses_figure(wins, model_names, headline)),
    ]


def wins_losses_table(
    per_query: pd.DataFrame,
    eval_set: EvalSet,
    dim: int,
    metrics: Sequence[str],
    model_names: Sequence[str],
) -> pd.DataFrame:
    """One row per query: ``<model>_<metric>`` at ``dim``, and ``delta_<reference>_<metric>``
    (candidate minus that reference) for every reference model."""
    table = pd.DataFrame({"query_id": eval_set.query_ids, "query": eval_set.query_texts})
    for metric in metrics:
        for model in model_names:
            rows = per_query[
                (per_query["model"] == model)
                & (per_query["dim"] == dim)
                & (per_query["metric"] == metric)
            ]
            values = dict(zip(rows["query_id"], rows["value"], strict=True))
            table[f"{model}_{metric}"] = [values.get(q, math.nan) for q in eval_set.query_ids]
        for model in model_names:
            if model != CANDIDATE:
                table[f"delta_{model}_{metric}"] = (
                    table[f"{CANDIDATE}_{metric}"] - table[f"{model}_{metric}"]
                )
    return table


def _write_csv(path: Path, frame: pd.DataFrame) -> None:
    io.write_text(path, frame.to_csv(index=False, float_format="%.6f"))


# --------------------------------------------------------------------------- figures
# Drawn on matplotlib.figure.Figure directly (Agg canvas), never through pyplot: no global
# state, no display backend, nothing configured at import time.

MODEL_COLOURS = {CANDIDATE: "#1f77b4", BASE: "#8c8c8c", "champion": "#ff7f0e"}
OTHER_COLOURS = ("#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf")
WIN, LOSS, TIE = "#2ca02c", "#d62728", "#bdbdbd"


def _colour(model: str, model_names: Sequence[str]) -> str:
    if model in MODEL_COLOURS:
        return MODEL_COLOURS[model]
    others = [m for m in model_names if m not in MODEL_COLOURS]
    return OTHER_COLOURS[others.index(model) % len(OTHER_COLOURS)]


def _label(metric: str) -> str:
    family, k = metric.split("@")
    return f"{FAMILY_TITLES.get(family, family)}@{k}"


def _save_figure(path: Path, figure: Figure) -> Path:
    with io.atomic_output(path, "wb") as handle:
        figure.savefig(handle, format="png", dpi=120)
    return path


def compare_figure(summary: Mapping[str, Any]) -> Figure:
    """Every metric family at every cut-off, one bar per model, at the primary dimension."""
    from matplotlib.figure import Figure

    model_names = [m for m in summary["models"] if m in summary]
    dim = _dim_key(summary["primary_dim"])
    ks = summary["ks"]
    figure = Figure(figsize=(12, 6.5), layout="constrained")
    axes = figure.subplots(2, 3, sharey=True)
    width = 0.8 / len(model_names)
    positions = np.arange(len(ks))
    for ax, family in zip(axes.flat, METRIC_FAMILIES, strict=True):
        for index, model in enumerate(model_names):
            values = [summary[model].get(dim, {}).get(f"{family}@{k}", math.nan) for k in ks]
            bars = ax.bar(
                positions + (index - (len(model_names) - 1) / 2) * width,
                values,
                width,
                label=model,
                color=_colour(model, model_names),
            )
            if len(model_names) * len(ks) <= 16:
                ax.bar_label(bars, fmt="%.2f", fontsize=7, padding=1)
        ax.set_title(FAMILY_TITLES[family])
        ax.set_xticks(positions, [f"@{k}" for k in ks])
        ax.set_xlabel("cut-off k")
        ax.set_ylim(0, 1.1)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel("score (mean over queries)")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncols=len(model_names))
    figure.suptitle(
        f"Retrieval quality by model at dimension {summary['primary_dim']} "
        f"({summary['n_queries']} queries, {summary['corpus_size']} passages)"
    )
    return figure


def dims_figure(summary: Mapping[str, Any], headline: Sequence[str]) -> Figure:
    """The headline metrics of every model against the (Matryoshka) embedding dimension."""
    from matplotlib.figure import Figure

    model_names = [m for m in summary["models"] if m in summary]
    dims = sorted(summary["dims"])
    figure = Figure(figsize=(11, 4.5), layout="constrained")
    axes = figure.subplots(1, len(headline), squeeze=False)[0]
    for ax, metric in zip(axes, headline, strict=True):
        for model in model_names:
            points = [
                (dim, summary[model][_dim_key(dim)][metric])
                for dim in dims
                if _dim_key(dim) in summary[model]
            ]
            ax.plot(
                [dim for dim, _ in points],
                [value for _, value in points],
                marker="o",
                label=model,
                color=_colour(model, model_names),
            )
        ax.set_xscale("log", base=2)
        ax.set_xticks(dims, [str(dim) for dim in dims])
        ax.minorticks_off()
        ax.set_xlabel("embedding dimension (Matryoshka truncation, log scale)")
        ax.set_ylabel(_label(metric))
        ax.set_title(f"{_label(metric)} vs dimension")
        ax.grid(alpha=0.3)
        ax.legend()
    figure.suptitle(f"Quality vs embedding dimension ({summary['n_queries']} queries)")
    return figure


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}es" if noun.endswith("s") else f"{n} {noun}s"


def wins_losses_figure(
    wins: pd.DataFrame, model_names: Sequence[str], metrics: Sequence[str]
) -> Figure:
    """Per query, candidate minus each reference on each headline metric, sorted.

    One panel per (reference, metric). A tie has no bar, so it is drawn as a grey dot on
    the zero line: every query stays visible.
    """
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    panels = [(ref, metric) for ref in model_names if ref != CANDIDATE for metric in metrics]
    n_queries = len(wins)
    label_queries = n_queries <= 40
    figure = Figure(
        figsize=(
            max(8.0, 0.3 * n_queries + 2),
            (3.0 + (1.3 if label_queries else 0.3)) * len(panels),
        ),
        layout="constrained",
    )
    axes = figure.subplots(len(panels), 1, squeeze=False)[:, 0]
    legend_handles = [
        Patch(color=WIN),
        Patch(color=LOSS),
        Line2D([], [], marker="o", linestyle="", color=TIE, markeredgecolor="dimgray"),
    ]
    for ax, (reference, metric) in zip(axes, panels, strict=True):
        column = f"delta_{reference}_{metric}"
        ordered = wins.sort_values(column, ascending=False, kind="stable")
        delta = ordered[column].to_numpy(dtype=np.float64)
        n_win, n_loss = int((delta > 0).sum()), int((delta < 0).sum())
        positions = np.arange(n_queries)
        ax.bar(positions, delta, color=[WIN if d > 0 else LOSS if d < 0 else TIE for d in delta])
        ax.axhline(0, color="black", linewidth=0.8)
        ties = delta == 0
        ax.scatter(positions[ties], delta[ties], color=TIE, edgecolors="dimgray", zorder=3, s=30)
        if label_queries:
            names = [text if len(text) <= 28 else text[:27] + "…" for text in ordered["query"]]
            ax.set_xticks(positions, names, rotation=60, ha="right", fontsize=7)
        else:
            ax.set_xticks([])
        ax.set_xlabel("queries, sorted by difference")
        ax.set_ylabel(f"Δ {_label(metric)}\n(candidate − {reference})")
        ax.set_ylim(-1.05, 1.05)
        ax.grid(axis="y", alpha=0.3)
        ax.set_title(
            f"Candidate vs {reference}, per-query {_label(metric)}: {_count(n_win, 'win')}, "
            f"{_count(n_loss, 'loss')}, {_count(n_queries - n_win - n_loss, 'tie')}"
        )
        ax.legend(legend_handles, ["candidate better", "candidate worse", "tie"], loc="upper right")
    return figure


# --------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pipelines.evaluate",
        description=(
            "Score models/candidate/ against its base model on the validated held-out queries "
            "(data/validated/{chunks,queries,qrels}.parquet) at every Matryoshka dimension; "
            "write metrics/eval.json, metrics/eval_per_query.parquet and reports/eval/."
        ),
    )
    add_config_arguments(parser)
    parser.add_argument(
        "--candidate",
        type=Path,
        default=None,
        help="model folder to score instead of <root>/models/candidate",
    )
    parser.add_argument(
        "--no-figures",
        action="store_true",
        help="skip the PNG figures in reports/eval/ (the CSV plot data is still written)",
    )
    args = parser.parse_args(argv)
    paths = Paths(args.root)
    candidate_dir = args.candidate or models.candidate_dir(paths)
    try:
        params = load_params(args.params)
        # The base is the model the candidate was fine-tuned from, as train recorded it;
        # params.yaml's train section only stands in when the candidate did not record one.
        recorded = base_spec_from_metadata(read_model_metadata(candidate_dir))
        train = params.train
        report = run_evaluate(
            params.evaluate,
            paths,
            candidate_dir=candidate_dir,
            base_model=recorded
            or BaseModelSpec(train.base_model, train.pooling, train.max_seq_length),
            outputs=EvalOutputs.default(paths, figures=not args.no_figures),
            progress=sys.stderr.isatty(),
        )
    except (ConfigError, FileNotFoundError, ValueError, models.ModelLoadError) as error:
        print(f"evaluate: {error}", file=sys.stderr)
        return 1
    summary = report.summary
    dim = _dim_key(summary["primary_dim"])
    headline = headline_metrics(summary["ks"])
    parts = [
        f"{model} " + " ".join(f"{m}={summary[model][dim][m]:.4f}" for m in headline)
        for model in summary["models"]
        if dim in summary.get(model, {})
    ]
    print(
        f"evaluate: {summary['n_queries']} queries, {summary['corpus_size']} passages, "
        f"dims {summary['dims']}; at {summary['primary_dim']}: " + "; ".join(parts)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
