"""Scoring: embed the evaluation set with a model, rank the corpus with ``metrics_rs.knn``
at each Matryoshka dimension (truncate, then L2-normalise) and score the rankings with
``metrics_rs.evaluate`` — the one place the metrics are defined. The evaluate stage and
promotion both score through here, so their numbers agree on the same data.

Embeddings go through the per-passage store (:mod:`pipelines.retrieval.vector_store`), keyed
by model fingerprint and text hash: only the texts a model has not embedded before are
embedded, and a model whose embeddings are all stored is not even loaded.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

import metrics_rs
from pipelines.common.tables import TRANSFER_SETS
from pipelines.evaluate.eval_set import DESCRIBED, MASKED, NAMED, SUBSETS, EvalSet, Subset
from pipelines.evaluate.sources import ModelSource
from pipelines.evaluate.transfer import TRANSFER_CORPUS, WINDOW_SETS
from pipelines.retrieval.embeddings import Embeddings, LazyModel, matryoshka
from pipelines.retrieval.lexical import LexicalIndex, retokenized, tokenize
from pipelines.retrieval.vector_store import EmbeddingStore, embed_stored

#: What :func:`score_eval_set` scores against the corpus as it is; ``masked`` is scored
#: against the corpus with its names masked out, the transfer sets against the papers'
#: plain windows, and ``transfer_corpus`` against the corpus with the foreign passages.
PLAIN_SUBSETS = (NAMED, DESCRIBED, *SUBSETS)


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
            per_query[name][dim] = dict(result.get("per_query", {}))
            means[name][dim] = dict(result["means"])
        timer.add("metrics", started)
    return {
        name: SubsetScores(len(subset.rows), subset_ks, means[name], per_query[name])
        for name, (subset, subset_ks) in plan.items()
    }


@dataclass(frozen=True)
class EvalEmbeddings:
    """Full-dimension, unnormalised embeddings of one model on one eval set."""

    queries: Embeddings
    corpus: Embeddings
    masked_corpus: Embeddings  # the corpus with the masked set's passages masked
    #: The transfer sets' queries and windows (:attr:`EvalSet.transfer`), if it has them.
    transfer: tuple[Embeddings, Embeddings] | None = None
    #: The foreign corpus's queries, and the corpus followed by its passages
    #: (:attr:`EvalSet.foreign`), if it has one.
    foreign: tuple[Embeddings, Embeddings] | None = None


def embed_eval_set(
    source: ModelSource,
    eval_set: EvalSet,
    *,
    store: EmbeddingStore | None,
    batch_size: int,
    progress: bool = False,
) -> EvalEmbeddings:
    """The queries, the corpus, the masked passages and the transfer sets' queries and
    windows; the model loads lazily. Only the passages the masking changed are embedded a
    second time."""
    model = LazyModel(source.load)

    def embed(texts: list[str], label: str) -> Embeddings:
        try:
            return embed_stored(
                model,
                texts,
                model_fingerprint=source.fingerprint,
                store=store,
                batch_size=batch_size,
                progress=progress,
                label=f"{label} ({source.name})",
            )
        except ValueError as error:
            raise ValueError(f"{source.name} model ({source.info['source']}): {error}") from error

    corpus = embed(eval_set.corpus_texts, "passages")
    masked_corpus = corpus
    masked_rows = sorted(eval_set.masked_texts)
    if masked_rows:
        masked_corpus = corpus.copy()
        masked_texts = [eval_set.masked_texts[row] for row in masked_rows]
        masked_corpus[masked_rows] = embed(masked_texts, "masked passages")
    queries = embed(eval_set.query_texts, "queries")
    transfer = None
    if eval_set.transfer is not None and eval_set.transfer.query_ids:
        # transfer_named asks the named queries again: only the papers' questions are new
        asked = eval_set.transfer.query_texts
        row_of = {text: row for row, text in enumerate(eval_set.query_texts)}
        new = list(dict.fromkeys(text for text in asked if text not in row_of))
        new_vectors = embed(new, "transfer queries") if new else queries[:0]
        new_row = {text: row for row, text in enumerate(new)}
        transfer_queries = np.stack(
            [queries[row_of[t]] if t in row_of else new_vectors[new_row[t]] for t in asked]
        )
        transfer = (transfer_queries, embed(eval_set.transfer.corpus_texts, "plain windows"))
    foreign = None
    if eval_set.foreign is not None and eval_set.foreign.query_ids:
        # The foreign set's corpus starts with this one's passages: only its own are new.
        passages = eval_set.foreign.corpus_texts[len(eval_set.corpus_texts) :]
        foreign = (
            embed(eval_set.foreign.query_texts, "foreign queries"),
            np.concatenate([corpus, embed(passages, "foreign passages")]),
        )
    return EvalEmbeddings(queries, corpus, masked_corpus, transfer, foreign)


def score_eval_set(
    embeddings: EvalEmbeddings,
    eval_set: EvalSet,
    *,
    ks: Sequence[int],
    dims: Sequence[int],
    timer: Timer | None = None,
) -> dict[str, SubsetScores]:
    """Every set and subset of ``eval_set``: :data:`PLAIN_SUBSETS`, ``masked`` and the
    transfer sets (none scored, when it has no transfer set)."""
    plain = [eval_set.subset(name) for name in PLAIN_SUBSETS]
    scores = score_model(
        embeddings.queries, embeddings.corpus, plain, ks=ks, dims=dims, timer=timer
    )
    scores |= score_model(
        embeddings.queries,
        embeddings.masked_corpus,
        [eval_set.subset(MASKED)],
        ks=ks,
        dims=dims,
        timer=timer,
    )
    scores |= {name: SubsetScores(0, [], {}, {}) for name in TRANSFER_SETS}
    for held, embedded, names in (
        (eval_set.transfer, embeddings.transfer, WINDOW_SETS),
        (eval_set.foreign, embeddings.foreign, (TRANSFER_CORPUS,)),
    ):
        if held is not None and embedded is not None:
            subsets = [held.subset(name) for name in names]
            scores |= score_model(*embedded, subsets, ks=ks, dims=dims, timer=timer)
    return scores


#: The dimension key BM25's scores are filed under (it has no embedding dimension).
LEXICAL_DIM = 0


@dataclass(frozen=True)
class LexicalIndexes:
    """BM25 over the corpus, and over the corpus with the masked set's passages masked."""

    corpus: LexicalIndex
    masked: LexicalIndex


def lexical_indexes(eval_set: EvalSet) -> LexicalIndexes:
    """The two BM25 indexes :func:`score_lexical` ranks with. The corpus is tokenized once;
    the masked corpus differs in a few hundred rows, and only those are tokenized again
    (a text's words do not depend on the others), so both indexes are exactly what
    indexing each corpus's texts would give."""
    tokens = tokenize(eval_set.corpus_texts)
    corpus = LexicalIndex.from_tokens(tokens)
    if not eval_set.masked_texts:
        return LexicalIndexes(corpus, corpus)
    masked = LexicalIndex.from_tokens(retokenized(tokens, eval_set.masked_texts))
    return LexicalIndexes(corpus, masked)


def score_lexical(
    eval_set: EvalSet, *, ks: Sequence[int], indexes: LexicalIndexes | None = None
) -> dict[str, SubsetScores]:
    """BM25 (:class:`~pipelines.retrieval.lexical.LexicalIndex`) on each set, the reference row
    that says whether a model beats plain word matching; scored like a model, at
    :data:`LEXICAL_DIM`. A passage BM25 does not match ranks after those it does, by row.
    ``indexes``: :func:`lexical_indexes` of ``eval_set``, when the caller keeps them."""
    indexes = indexes or lexical_indexes(eval_set)
    scores = {
        name: _score_bm25(eval_set, name, indexes.masked if name == MASKED else indexes.corpus, ks)
        for name in (NAMED, MASKED, DESCRIBED)
    }
    scores |= {name: SubsetScores(0, [], {}, {}) for name in TRANSFER_SETS}
    for held, names in ((eval_set.transfer, WINDOW_SETS), (eval_set.foreign, (TRANSFER_CORPUS,))):
        if held is not None:
            index = LexicalIndex.from_tokens(tokenize(held.corpus_texts))
            scores |= {name: _score_bm25(held, name, index, ks) for name in names}
    return scores


def _score_bm25(
    eval_set: EvalSet, name: str, index: LexicalIndex, ks: Sequence[int]
) -> SubsetScores:
    """BM25's scores on one set of ``eval_set``, searching ``index``."""
    n_docs = len(eval_set.corpus_texts)
    subset = eval_set.subset(name)
    if len(subset.rows) == 0:
        return SubsetScores(0, [], {}, {})
    depth = max(effective_ks(ks, n_docs))
    room = n_docs - max(len(excluded) for excluded in subset.excluded)
    subset_ks = [k for k in effective_ks(ks, n_docs) if k <= room] or [room]
    search = min(n_docs, depth + max(len(excluded) for excluded in subset.excluded))
    ranked = np.stack(
        [
            _padded(index.top(eval_set.query_texts[row], search)[0], n_docs, search)
            for row in subset.rows.tolist()
        ]
    )
    local = Subset(name, np.arange(len(subset.rows)), subset.qrels, subset.excluded)
    rankings = rank_subset(ranked, local, max(subset_ks))
    result = metrics_rs.evaluate(rankings, subset.qrels, subset_ks, per_query=True, n_docs=n_docs)
    return SubsetScores(
        len(subset.rows),
        subset_ks,
        {LEXICAL_DIM: dict(result["means"])},
        {LEXICAL_DIM: dict(result.get("per_query", {}))},
    )


def _padded(rows: list[int], n_docs: int, depth: int) -> npt.NDArray[np.int64]:
    """``rows`` cut or filled to ``depth``: the places BM25 left go to unmatched passages by
    row, as a tie at score 0 would."""
    kept = rows[:depth]
    seen = set(kept)
    filler = (doc for doc in range(n_docs) if doc not in seen)
    return np.asarray(kept + [next(filler) for _ in range(depth - len(kept))], dtype=np.int64)


def dim_key(dim: int) -> str:
    """The key of one dimension's scores in ``eval.json``: ``dim_384``."""
    return f"dim_{dim}"


def paired_test_p_value(
    candidate: npt.ArrayLike,
    other: npt.ArrayLike,
    *,
    method: Literal["randomization", "bootstrap", "t"],
    n_resamples: int,
    seed: int,
) -> float | None:
    """p of ``metrics_rs.paired_test`` on two models' per-query scores (same queries, same
    order); None when no query is scored on both sides.

    A query without a relevant passage is NaN on both sides: the test skips it.
    """
    candidate_values = np.asarray(candidate, dtype=np.float64)
    other_values = np.asarray(other, dtype=np.float64)
    scored = np.isfinite(candidate_values) & np.isfinite(other_values)
    if not scored.any():
        return None
    result = metrics_rs.paired_test(
        candidate_values[scored],
        other_values[scored],
        method=method,
        n_resamples=n_resamples,
        seed=seed,
    )
    return float(result["p_value"])
