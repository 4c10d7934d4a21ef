"""The search index of one model over the corpus: exact below a size threshold, ANN above.

Both start from the per-passage embedding store (:mod:`pipelines.retrieval.vector_store`):
the vectors evaluate and promote stored for this model are read, only the passages the
store has not seen (a new paper, an edited text) are embedded, so a search service
started after a night embeds nothing.

* Below ``search.ann_threshold`` passages, :class:`PassageIndex` holds the unit vectors in
  RAM and answers with one matrix-vector product (exact; ~20 ms at 10^4 passages).
* From it up, :class:`pipelines.search.ann.AnnIndex` asks a faiss IVF,SQ8 index built
  from the store's unit vectors of this model (the ``normalize`` key) and persisted beside
  them; a night adds only the new passages' vectors and removes the departed ones
  (:func:`pipelines.search.ann.sync_ann_index`, which says where the file lives and when
  the index is trained again).
* With ``search.engine: qdrant``, a Qdrant server answers at every size, from a collection
  synced the same way (:mod:`pipelines.search.remote_index`).

All answer "more neighbours than the index holds" with every passage it holds.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from pipelines.common.config import SearchParams
from pipelines.retrieval.embeddings import TextEncoder, matryoshka
from pipelines.retrieval.store_layout import StoreCorruptError
from pipelines.retrieval.vector_store import EmbeddingStore, StoreKey, embed_stored, text_hash
from pipelines.search.ann import Vectors, sync_ann_index
from pipelines.search.remote_index import QdrantServer

log = logging.getLogger(__name__)


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


@dataclass(frozen=True)
class IndexUpdate:
    """The index for the corpus now, and what opening it cost."""

    index: SearchIndex
    embedded: int  # texts embedded now
    reused: int  # passages whose vectors came from the store
    dropped: int  # texts no longer in the corpus, deleted from the ANN table and index


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
    if params.engine == "embedded" and len(set(texts)) < params.ann_threshold:
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
        try:
            index, dropped = sync_ann(store, model, fingerprint, texts, params, batch_size)
        except StoreCorruptError:  # a damaged table met mid-build: dropped, so start again
            index, dropped = sync_ann(store, model, fingerprint, texts, params, batch_size)
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


def sync_ann(
    store: EmbeddingStore,
    model: TextEncoder,
    fingerprint: str,
    texts: Sequence[str],
    params: SearchParams,
    batch_size: int,
) -> tuple[SearchIndex, int]:
    """Bring the model's table of unit vectors to exactly these texts (embedding only the
    ones it lacks), then its ANN index or Qdrant collection; the index and how many
    departed texts left both."""
    # search.engine: qdrant: a server that does not answer fails before anything is embedded.
    server = QdrantServer(params.engine_url) if params.engine == "qdrant" else None
    stored = store.vectors(StoreKey(fingerprint, None, normalize=True))
    text_keys = [text_hash(text) for text in texts]
    first_row: dict[str, int] = {}
    for row, text_key in enumerate(text_keys):
        first_row.setdefault(text_key, row)
    held = stored.stored_hashes()
    missing = [text_key for text_key in first_row if text_key not in held]
    if missing:
        full = embed_stored(
            model,
            [texts[first_row[text_key]] for text_key in missing],
            model_fingerprint=fingerprint,
            store=store,
            batch_size=batch_size,
            label="passages",
        )
        stored.add(missing, matryoshka(full, None, normalize=True))
    departed = sorted(held - first_row.keys())
    stored.remove(departed)
    for stale in stored.table.list_indices() if stored.table is not None else []:
        # LanceDB's own ANN index, before faiss's
        log.info("search index: dropping the LanceDB index %s, faiss indexes now", stale.name)
        stored.table.drop_index(stale.name)
    if server is not None:
        return server.sync(stored, text_keys), len(departed)
    return sync_ann_index(store, stored, text_keys, params), len(departed)
