"""The search index of one model over the corpus: exact below a size threshold, ANN above.

Both start from the per-passage embedding store (:mod:`pipelines.common.vector_store`):
the vectors evaluate and promote stored for this model are read, only the passages the
store has not seen (a new paper, an edited text) are embedded, so a search service
started after a night embeds nothing.

* Below ``search.ann_threshold`` passages, :class:`PassageIndex` holds the unit vectors in
  RAM and answers with one matrix-vector product (exact; ~20 ms at 10^4 passages).
* From it up, :class:`AnnIndex` asks a LanceDB IVF-HNSW index with 8-bit scalar
  quantisation over a table of the corpus's unit vectors (the store's ``normalize`` key of
  this model), re-ranking ``ann_refine_factor`` x ``k`` candidates with the exact vectors.
  The table follows the corpus (new passages added, departed ones deleted); LanceDB searches
  the rows the index does not cover yet exactly beside it, and the index is rebuilt only
  when they pass :data:`REINDEX_SHARE` of it: its incremental update (``optimize``) cost
  3x a rebuild at 10^5 passages (``benchmarks/results/ann_scale.md``).

Both answer "more neighbours than the index holds" with every passage it holds.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from pipelines.common.config import SearchParams
from pipelines.common.embeddings import TextEncoder, matryoshka
from pipelines.common.vector_store import (
    HASH_COLUMN,
    KEYS_PER_FILTER,
    VECTOR_COLUMN,
    EmbeddingStore,
    StoreKey,
    embed_stored,
    text_hash,
)

log = logging.getLogger(__name__)

Vectors = npt.NDArray[np.float32]
#: LanceDB's result column: for the ``dot`` distance, 1 - the inner product.
DISTANCE_COLUMN = "_distance"
#: Passages per IVF partition when the index is built: the partitions' HNSW graphs stay
#: small enough to build on two cores, few enough that ``ann_nprobes`` covers a good share.
ROWS_PER_PARTITION = 250_000
#: New passages (searched exactly, beside the index) that make the index be rebuilt, as a
#: share of those it covers: a few nights of papers.
REINDEX_SHARE = 0.05


class SearchIndex(Protocol):
    """What :class:`pipelines.search.engine.SearchEngine` asks of an index."""

    @property
    def kind(self) -> str: ...

    def top(self, query_vector: Vectors, k: int) -> tuple[list[int], list[float]]: ...


def best_rows(scores: Vectors, k: int) -> tuple[list[int], list[float]]:
    """Rows and scores of the ``k`` best ``scores``, best first, ties by row."""
    k = min(k, len(scores))
    if k <= 0:
        return [], []
    best = np.argpartition(-scores, k - 1)[:k]
    order = best[np.lexsort((best, -scores[best]))]
    return order.tolist(), scores[order].astype(float).tolist()


@dataclass(frozen=True)
class PassageIndex:
    """Exact search: ``vectors[i]`` is the unit-length embedding of corpus row ``i``."""

    vectors: Vectors
    kind: str = "exact"

    def top(self, query_vector: Vectors, k: int) -> tuple[list[int], list[float]]:
        """Rows and cosine scores of the ``k`` passages closest to a unit query, best first
        (ties by row): one matrix-vector product, cheap for one query and 10^4 rows."""
        return best_rows(self.vectors @ query_vector.reshape(-1), k)


class AnnIndex:
    """Approximate search in a LanceDB table of the corpus's unit vectors.

    ``rows_of`` maps a text hash to the corpus rows holding that text (one, unless two
    chunks are the same text); the table holds each text once.
    """

    kind = "ann"

    def __init__(self, table: Any, rows_of: dict[str, list[int]], params: SearchParams) -> None:
        self.table = table
        self.rows_of = rows_of
        self.params = params

    def top(self, query_vector: Vectors, k: int) -> tuple[list[int], list[float]]:
        k = min(k, sum(len(rows) for rows in self.rows_of.values()))
        if k <= 0:
            return [], []
        found = (
            self.table.search(query_vector.reshape(-1), vector_column_name=VECTOR_COLUMN)
            .distance_type("dot")
            .limit(min(k, len(self.rows_of)))
            .nprobes(self.params.ann_nprobes)
            .refine_factor(self.params.ann_refine_factor)
            .select([HASH_COLUMN, DISTANCE_COLUMN])
            .to_arrow()
        )
        hits = [
            (1.0 - float(distance), row)
            for text_key, distance in zip(
                found.column(HASH_COLUMN).to_pylist(),
                found.column(DISTANCE_COLUMN).to_pylist(),
                strict=True,
            )
            for row in self.rows_of.get(text_key, [])
        ]
        hits.sort(key=lambda hit: (-hit[0], hit[1]))
        return [row for _, row in hits[:k]], [score for score, _ in hits[:k]]


@dataclass(frozen=True)
class IndexUpdate:
    """The index for the corpus now, and what opening it cost."""

    index: SearchIndex
    embedded: int  # texts embedded now
    reused: int  # passages whose vectors came from the store
    dropped: int  # passages no longer in the corpus, deleted from the ANN table


def open_search_index(
    store: EmbeddingStore,
    model: TextEncoder,
    fingerprint: str,
    texts: Sequence[str],
    *,
    params: SearchParams,
    batch_size: int,
) -> IndexUpdate:
    """The index of ``texts`` (corpus rows, in order) for the model ``fingerprint``."""
    before = store.embedded
    if len(set(texts)) < params.ann_threshold:
        vectors = embed_stored(
            model,
            texts,
            model_fingerprint=fingerprint,
            store=store,
            batch_size=batch_size,
            label="passages",
        )
        index: SearchIndex = PassageIndex(matryoshka(vectors, None, normalize=True))
        dropped = 0
    else:
        index, dropped = sync_ann_table(store, model, fingerprint, texts, params, batch_size)
    embedded = store.embedded - before
    log.info(
        "search index (%s) of %d passages for model %s: %d embedded now, %d from the "
        "embedding store, %d dropped",
        index.kind,
        len(texts),
        fingerprint[:12],
        embedded,
        len(texts) - embedded,
        dropped,
    )
    return IndexUpdate(index, embedded, len(texts) - embedded, dropped)


def ann_partitions(rows: int) -> int:
    return max(1, rows // ROWS_PER_PARTITION)


def sync_ann_table(
    store: EmbeddingStore,
    model: TextEncoder,
    fingerprint: str,
    texts: Sequence[str],
    params: SearchParams,
    batch_size: int,
) -> tuple[AnnIndex, int]:
    """Bring the model's table of unit vectors to exactly these texts, its ANN index up to
    date; the index and how many departed texts were deleted."""
    stored = store.vectors(StoreKey(fingerprint, None, normalize=True))
    rows_of: dict[str, list[int]] = {}
    for row, text in enumerate(texts):
        rows_of.setdefault(text_hash(text), []).append(row)
    held = stored.stored_hashes()
    missing = [text_key for text_key in rows_of if text_key not in held]
    if missing:
        fresh_texts = [texts[rows_of[text_key][0]] for text_key in missing]
        full = embed_stored(
            model,
            fresh_texts,
            model_fingerprint=fingerprint,
            store=store,
            batch_size=batch_size,
            label="passages",
        )
        stored.add(missing, matryoshka(full, None, normalize=True))
    departed = sorted(held - set(rows_of))
    for start in range(0, len(departed), KEYS_PER_FILTER):
        names = ", ".join(f"'{text_key}'" for text_key in departed[start : start + KEYS_PER_FILTER])
        stored.table.delete(f"{HASH_COLUMN} IN ({names})")
    table = stored.table
    indexes = table.list_indices()
    unindexed = table.index_stats(indexes[0].name).num_unindexed_rows if indexes else 0
    if not indexes or unindexed > REINDEX_SHARE * max(1, len(rows_of) - unindexed):
        from lancedb.index import IvfHnswSq

        log.info("search index: building the ANN index of %d passages", len(rows_of))
        config = IvfHnswSq(distance_type="dot", num_partitions=ann_partitions(len(rows_of)))
        table.create_index(VECTOR_COLUMN, config=config, replace=True)
    return AnnIndex(table, rows_of, params), len(departed)
