"""The ``evaluate`` stage: retrieval quality of the candidate model against its base model.

Embeds the evaluation corpus (``data/validated/chunks.parquet``) and the held-out queries
(``data/validated/queries.parquet``) with the candidate (``models/candidate/``), the base
model it was fine-tuned from and any extra models, and scores them against
``data/validated/qrels.parquet`` at every Matryoshka dimension
(:mod:`pipelines.evaluate.scoring`), on the subsets ``all``, ``seen`` and ``unseen``
(:mod:`pipelines.evaluate.eval_set`).

The base model is the one the candidate recorded in its ``mathembed.json``;
``params.yaml``'s ``train`` section only stands in when the candidate recorded none
(:mod:`pipelines.evaluate.sources`). The dimensions scored are ``evaluate.dims``, else
the candidate's ``matryoshka_dims``, plus always its full dimension; cut-offs in
``evaluate.ks`` above the corpus size are dropped.

Outputs:

``metrics/<set>.json`` (the DVC metrics, one file per query set: named.json, masked.json,
described.json): the candidate's and the base model's scores on the headline metrics
(``promote.metrics``) at the full dimension and the paired test's p, every number on that
set's queries (:class:`~pipelines.registry.metric_records.SetHeadline`, from eval.json's
``sets``).

``metrics/eval.json`` (every score, :class:`~pipelines.registry.metric_records.EvalRecord`;
in git, a DVC output but not a DVC metric: its 900 values would drown
``dvc metrics show``)::

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
     "embedding_store": {"embedded": 0, "reused": 3860,   # null with evaluate.cache: false
                         "models": {"candidate": {"embedded": 0, "reused": 1930,
                                                  "new_model": false}, ...}}}

``embedding_store`` says what the night cost: the texts each model embedded now and those
taken from the per-passage store (:mod:`pipelines.retrieval.vector_store`); ``new_model`` marks
a model with nothing stored before (a new candidate embeds all). With ``evaluate.cache``
the corpus's BM25 index, built for the ``bm25`` reference row, is kept beside the store
(``data/embeddings/bm25/``, not a DVC output) for search to load
(:mod:`pipelines.retrieval.lexical`).

``metrics/eval_per_query.parquet``: ``query_id, model, dim, metric, value`` for subset
``all``, every model, dimension and metric; within one (model, dim, metric) the rows
follow the query order of ``queries.parquet`` (queries without a relevant chunk left out).
:func:`per_query_scores` (:mod:`pipelines.evaluate.headline`) reads one aligned vector
back (for a paired test).

``reports/eval/``: ``metrics.csv`` (eval.json's scores as one tidy table: ``subset, model,
dim, metric, k, value``), the DVC plot data and figures (:mod:`pipelines.evaluate.reports`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pipelines.common import io
from pipelines.common.config import EvaluateParams
from pipelines.common.paths import MODEL_METADATA_FILE, Paths
from pipelines.common.tables import QUERY_SETS
from pipelines.evaluate.eval_set import NAMED, SUBSETS, EvalSet, load_eval_set
from pipelines.evaluate.headline import TABLE_FILE, PairedTest, metrics_table
from pipelines.evaluate.reports import headline_metrics, write_reports
from pipelines.evaluate.scoring import (
    LEXICAL_DIM,
    SubsetScores,
    Timer,
    dim_key,
    embed_eval_set,
    lexical_indexes,
    paired_test_p_value,
    score_eval_set,
    score_lexical,
)
from pipelines.evaluate.sources import (
    BASE,
    CANDIDATE,
    ModelSource,
    base_model_source,
    check_model_dir,
    local_model_source,
)
from pipelines.registry.candidate_metadata import (
    BaseModelSpec,
    CandidateMetadata,
    read_candidate_metadata,
)
from pipelines.registry.metric_records import EVAL_KEYS, EvalRecord, SetHeadline
from pipelines.registry.reporting import round_p_value, round_score
from pipelines.retrieval.lexical import save_lexical_index
from pipelines.retrieval.vector_store import EmbeddingStore, open_store

log = logging.getLogger(__name__)

#: eval.json keys that are not model names: an extra model may not take one of them.
RESERVED_KEYS = frozenset(EVAL_KEYS)
PER_QUERY_COLUMNS = ["set", "query_id", "model", "dim", "metric", "value"]
#: The reference row of every set: word matching alone (BM25).
LEXICAL = "bm25"
#: The metrics each set reports side by side (the full table has every cut-off).
SET_METRICS = ("mrr@10", "ndcg@10", "recall@10")


@dataclass(frozen=True)
class EvalOutputs:
    """Where a run writes; a caller may point these elsewhere to keep DVC's outputs intact.

    ``figures=False`` skips the PNGs (the CSV plot data is always written): drawing them
    costs more than scoring a small eval set.
    """

    metrics_file: Path
    #: ``metrics/``: each set's headline is its ``<set>.json``.
    metrics_dir: Path
    per_query_file: Path
    reports_dir: Path
    figures: bool = True

    @classmethod
    def default(cls, paths: Paths, *, figures: bool = True) -> EvalOutputs:
        return cls(
            metrics_file=paths.metric_file("eval"),
            metrics_dir=paths.metrics,
            per_query_file=paths.metrics / "eval_per_query.parquet",
            reports_dir=paths.eval_reports,
            figures=figures,
        )


@dataclass(frozen=True)
class EvalReport:
    """What a run produced: the eval.json content, each set's headline, the per-query
    table, where it wrote."""

    summary: dict[str, Any]
    headlines: list[SetHeadline]
    per_query: pd.DataFrame
    outputs: EvalOutputs
    figures: list[Path]


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
            f"evaluate.dims (or matryoshka_dims in {candidate_dir / MODEL_METADATA_FILE})"
        )
    return sorted({full_dim, *requested}, reverse=True)


def _dims_to_score(params: EvaluateParams, metadata: CandidateMetadata) -> list[int]:
    dims = list(params.dims) or list(metadata.matryoshka_dims)
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
    paired_test: PairedTest | None = None,
    metrics: Sequence[str] | None = None,
    progress: bool = True,
) -> EvalReport:
    """Score the candidate, its base model and ``extra_models`` on the validated eval set.

    ``base_model`` defaults to the one the candidate recorded in its ``mathembed.json``;
    ``extra_models`` maps a name (``champion``) to a saved model folder; ``paired_test``
    gives the headlines their p-values (None: null); ``metrics`` are the headline metrics
    (``promote.metrics``; by default MRR and NDCG at 10, or at max(ks) on a tiny corpus).
    Writes eval.json, each set's headline, the per-query table and the reports (see the
    module docstring) atomically.
    """
    started_total = time.perf_counter()
    timer = Timer()
    candidate_dir = candidate_dir or paths.candidate
    outputs = outputs or EvalOutputs.default(paths)
    extra = dict(extra_models or {})
    _check_extra_names(extra)

    eval_set = load_eval_set(paths, params.foreign_corpora)
    check_model_dir(candidate_dir, CANDIDATE)
    metadata = read_candidate_metadata(candidate_dir) or CandidateMetadata()
    base_model = base_model or metadata.base_spec
    if base_model is None:
        raise ValueError(
            f"{candidate_dir / MODEL_METADATA_FILE} does not name the base model (base_model, "
            "params.pooling, params.max_seq_length) and none was given; pass base_model or "
            "retrain the candidate"
        )
    sources = [local_model_source(CANDIDATE, candidate_dir), base_model_source(base_model)]
    sources += [local_model_source(name, model_dir) for name, model_dir in extra.items()]

    keep = [source.fingerprint for source in sources]
    store = open_store(paths, keep=keep) if params.cache else None
    store_use: dict[str, dict[str, Any]] = {}
    requested_dims = _dims_to_score(params, metadata)

    scores: dict[str, dict[str, SubsetScores]] = {}
    dims_of: dict[str, list[int]] = {}
    candidate_dims: list[int] = []
    for source in sources:
        started = time.perf_counter()
        log.info("evaluate: embedding the eval set with the %s model", source.name)
        before = (store.embedded, store.reused) if store else (0, 0)
        embeddings = embed_eval_set(
            source, eval_set, store=store, batch_size=params.batch_size, progress=progress
        )
        timer.add("embedding", started)
        if store is not None:
            store_use[source.name] = store_use_of(source.name, before, store)
        full_dim = int(embeddings.corpus.shape[1])
        if source.name == CANDIDATE:  # first in ``sources``: it fixes the dims for all
            candidate_dims = _candidate_dims(requested_dims, full_dim, candidate_dir)
        # A reference model is scored at those of the candidate's dims it has.
        dims_of[source.name] = [dim for dim in candidate_dims if dim <= full_dim]
        scores[source.name] = score_eval_set(
            embeddings, eval_set, ks=params.ks, dims=dims_of[source.name], timer=timer
        )
    started = time.perf_counter()
    indexes = lexical_indexes(eval_set)
    lexical = score_lexical(eval_set, ks=params.ks, indexes=indexes)
    if params.cache:  # search loads the corpus's index instead of building it again
        save_lexical_index(paths.lexical_index, eval_set.corpus_texts, indexes.corpus)
    timer.add("metrics", started)

    summary = build_summary(
        eval_set, scores, dims_of, sources, primary_dim=candidate_dims[0], store_use=store_use
    )
    if store is None:
        summary["embedding_store"] = None
    metrics = list(metrics or headline_metrics(params.ks))
    summary["sets"] = sets_block(
        eval_set,
        scores,
        lexical,
        dims_of,
        primary_dim=candidate_dims[0],
        test=paired_test,
        metrics=[*metrics, *(metric for metric in SET_METRICS if metric not in metrics)],
    )
    per_query = per_query_frame(eval_set, scores)
    started = time.perf_counter()
    io.write_parquet(outputs.per_query_file, per_query)
    figures = write_reports(
        summary, per_query, eval_set, outputs.reports_dir, figures=outputs.figures
    )
    io.write_text(outputs.reports_dir / TABLE_FILE, metrics_table(summary).to_csv(index=False))
    timer.add("reports", started)
    summary["timing_seconds"] = {
        **{phase: round(seconds, 4) for phase, seconds in timer.seconds.items()},
        "total": round(time.perf_counter() - started_total, 4),
    }
    record = EvalRecord.from_json(summary)
    io.write_json(outputs.metrics_file, record.to_json())
    p_metric = paired_test.metric if paired_test else metrics[0]
    headlines = record.headlines(metrics, p_metric)
    for found in headlines:
        io.write_json(
            SetHeadline.path(outputs.metrics_dir, found.query_set),
            found.to_json(),
            sort_keys=False,
        )
    return EvalReport(record.to_json(), headlines, per_query, outputs, figures)


def store_use_of(model: str, before: tuple[int, int], store: EmbeddingStore) -> dict[str, Any]:
    """What one model's embedding cost: texts embedded now, texts taken from the store, and
    whether it is a model the store had nothing of (a new candidate embeds all); logged."""
    embedded, reused = store.embedded - before[0], store.reused - before[1]
    new_model = reused == 0 and embedded > 0
    if new_model:
        log.info("evaluate: %s is a new model: all %d texts embedded", model, embedded)
    else:
        log.info(
            "evaluate: %s embedded %d new texts, %d from the embedding store",
            model,
            embedded,
            reused,
        )
    return {"embedded": embedded, "reused": reused, "new_model": new_model}


def _rounded(metrics: Mapping[str, float]) -> dict[str, float]:
    return {name: round_score(value) for name, value in metrics.items()}


def _model_block(
    scores: Mapping[str, dict[str, SubsetScores]], subset: str
) -> dict[str, dict[str, dict[str, float]]]:
    return {
        model: {dim_key(dim): _rounded(means) for dim, means in by_subset[subset].means.items()}
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
                metric: round_score(candidate[dim][metric] - value)
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
    store_use: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    """The eval.json content (its shape is in the module docstring)."""
    everything = _model_block(scores, NAMED)
    summary: dict[str, Any] = {
        "corpus_size": len(eval_set.corpus_ids),
        "n_queries": scores[CANDIDATE][NAMED].n_queries,
        "queries_without_relevant": len(eval_set.queries_without_relevant),
        "ks": scores[CANDIDATE][NAMED].ks,
        "dims": dims_of[CANDIDATE],
        "primary_dim": primary_dim,
        "models": {source.name: source.info for source in sources},
        **everything,
        "delta": _delta_block(everything),
        "subsets": {},
        "transfer": dict(eval_set.transfer_record),
        "embedding_store": {
            "embedded": sum(use["embedded"] for use in store_use.values()),
            "reused": sum(use["reused"] for use in store_use.values()),
            "models": dict(store_use),
        },
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


def sets_block(
    eval_set: EvalSet,
    scores: Mapping[str, dict[str, SubsetScores]],
    lexical: Mapping[str, SubsetScores],
    dims_of: Mapping[str, list[int]],
    *,
    primary_dim: int,
    test: PairedTest | None,
    metrics: Sequence[str] = SET_METRICS,
) -> dict[str, Any]:
    """Each set side by side at the candidate's full dimension: its size, the share of its
    queries whose words occur in a relevant passage, every model's and BM25's scores, the
    candidate's gain over each other row and its paired-test p (null without a test)."""
    block: dict[str, Any] = {}
    for query_set in QUERY_SETS:
        n_queries = scores[CANDIDATE][query_set].n_queries
        rows: dict[str, dict[str, float]] = {}
        per_query: dict[str, dict[str, Any]] = {}
        for model, by_subset in scores.items():
            dim = primary_dim if primary_dim in dims_of[model] else max(dims_of[model])
            if n_queries and dim in by_subset[query_set].means:
                rows[model] = by_subset[query_set].means[dim]
                per_query[model] = by_subset[query_set].per_query[dim]
        if n_queries and LEXICAL_DIM in lexical[query_set].means:
            rows[LEXICAL] = lexical[query_set].means[LEXICAL_DIM]
            per_query[LEXICAL] = lexical[query_set].per_query[LEXICAL_DIM]
        candidate = rows.get(CANDIDATE, {})
        block[query_set] = {
            "n_queries": n_queries,
            "words_in_relevant": round(eval_set.holding(query_set).words_in_relevant(query_set), 4),
            "scores": {
                row: {metric: round_score(values[metric]) for metric in metrics if metric in values}
                for row, values in rows.items()
            },
            "delta": {
                row: {
                    # from the rounded scores: the file's numbers add up
                    metric: round_score(
                        round_score(candidate[metric]) - round_score(values[metric])
                    )
                    for metric in metrics
                    if metric in values and metric in candidate
                }
                for row, values in rows.items()
                if row != CANDIDATE
            },
            "p_value": {
                row: _p_value(per_query[CANDIDATE], per_query[row], test)
                for row in rows
                if row != CANDIDATE and CANDIDATE in per_query
            },
        }
    return block


def _p_value(
    candidate: Mapping[str, Any], other: Mapping[str, Any], test: PairedTest | None
) -> float | None:
    """The paired test's p on the per-query ``test.metric`` (the gate's), rounded."""
    if test is None or test.metric not in candidate or test.metric not in other:
        return None
    p_value = paired_test_p_value(
        candidate[test.metric],
        other[test.metric],
        method=test.method,
        n_resamples=test.n_resamples,
        seed=test.seed,
    )
    return None if p_value is None else round_p_value(p_value)


def per_query_frame(
    eval_set: EvalSet, scores: Mapping[str, dict[str, SubsetScores]]
) -> pd.DataFrame:
    """Each set's per-query values as ``set, query_id, model, dim, metric, value``."""
    frames = []
    for query_set in QUERY_SETS:
        holding = eval_set.holding(query_set)
        query_ids = [holding.query_ids[row] for row in holding.rows_of(query_set)]
        frames += _per_query_rows(query_set, query_ids, scores)
    frame = pd.concat(frames, ignore_index=True)
    frame["dim"] = frame["dim"].astype("int64")
    return frame[PER_QUERY_COLUMNS]


def _per_query_rows(
    query_set: str, query_ids: list[str], scores: Mapping[str, dict[str, SubsetScores]]
) -> list[pd.DataFrame]:
    frames = []
    for model, by_subset in scores.items():
        for dim, metrics in by_subset[query_set].per_query.items():
            for metric, values in metrics.items():
                frames.append(
                    pd.DataFrame(
                        {
                            "set": query_set,
                            "query_id": query_ids,
                            "model": model,
                            "dim": np.int64(dim),
                            "metric": metric,
                            "value": np.asarray(values, dtype=np.float64),
                        }
                    )
                )
    return frames
