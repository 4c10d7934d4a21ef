"""Search's approximate index above ``search.ann_threshold``: faiss IVF with 8-bit scalar
quantisation over the unit vectors the embedding store holds for one model.

Chosen side by side in ``benchmarks/results/ann_scale.md``: at 10^6 passages it builds in
~76 s, answers in < 1 ms p50 at recall@10 >= 0.98 and adds a night's 1 % in 0.6 s, where
LanceDB's own IVF-HNSW index could not be built in 11 minutes. The vectors stay in the
LanceDB store (:mod:`pipelines.retrieval.vector_store`); this index is derived from them and
can always be rebuilt from them.

* **Where**: one file beside the store's tables, ``data/embeddings/<table>.faiss``, named
  after the table of the model's unit vectors (:func:`index_path`); a file whose table the
  store evicted is deleted with it the next time an index is opened. Its header records
  the model's fingerprint, the vectors' width, the corpus size it was trained on and the
  SHA-256 of the faiss payload: a truncated, corrupt or foreign file (another model or
  width) is rebuilt with a warning, never trusted. Written to a temporary file and renamed,
  so a reader sees the previous index or the new one.
* **Ids**: a passage's id in the index is the first 63 bits of its text hash
  (:func:`passage_id`), so a text edited under the same passage id is a new vector and the
  old one departs; two texts sharing an id (odds ~n^2 / 2^64) share one vector.
* **A night**: only the new texts' vectors are added (``add_with_ids``; IVF keeps its
  trained centroids) and the departed ones removed (``remove_ids``). When the corpus has
  grown or shrunk :data:`RETRAIN_GROWTH` x since training, the index is trained again so
  that the list count stays near sqrt(n), and the log says so.
* **Scores**: the SQ8 inner products, within ~1e-2 of the cosine; no exact re-ranking (the
  exact vectors live on disk in the store; fetching them per query costs more than the
  search). ``ann_nprobes`` lists are searched per query; all of them when more neighbours
  are asked for than the probed lists hold.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from pipelines.common.config import SearchParams
from pipelines.retrieval.stored_vectors import StoredVectors
from pipelines.retrieval.vector_store import EmbeddingStore, StoreKey

log = logging.getLogger(__name__)

Vectors = npt.NDArray[np.float32]

#: First line of an index file; bumped with the header's or the payload's layout.
MAGIC = b"mathembed-faiss-ivf-sq8 1\n"
INDEX_SUFFIX = ".faiss"
#: Growth (or shrinkage) of the corpus since training that makes the index train again.
RETRAIN_GROWTH = 4
#: Training vectors per inverted list (the benchmark's 64 x nlist); faiss wants >= 39.
TRAIN_PER_LIST = 64
MIN_TRAIN_PER_LIST = 39
#: k-means iterations when training (the benchmark's setting; faiss's default is 25).
TRAIN_ITERATIONS = 10


def faiss_module() -> Any:
    import faiss

    return faiss


def passage_id(text_key: str) -> int:
    """The index's id of a text: the first 63 bits of its hex SHA-256 (non-negative int64)."""
    return int(text_key[:16], 16) >> 1


def list_count(passages: int) -> int:
    """Inverted lists for ``passages``: the power of two nearest sqrt(n), no more than the
    passages can train (:data:`MIN_TRAIN_PER_LIST` each)."""
    nearest = 2 ** round(math.log2(math.sqrt(max(1, passages))))
    trainable = 2 ** int(math.log2(max(1, passages // MIN_TRAIN_PER_LIST)))
    return int(max(1, min(nearest, trainable)))


def index_path(store: EmbeddingStore, key: StoreKey) -> Path:
    return store.folder / f"{key.table_name()}{INDEX_SUFFIX}"


# --------------------------------------------------------------------------- the file


@dataclass(frozen=True)
class Header:
    """What an index file says it holds; checked against what the caller expects."""

    fingerprint: str
    width: int
    trained_on: int  # passages in the corpus when the lists were trained
    payload_bytes: int
    payload_sha256: str

    def as_line(self) -> bytes:
        return json.dumps(self.__dict__, sort_keys=True).encode("utf-8") + b"\n"


class IndexFileError(ValueError):
    """An index file that cannot be trusted: rebuilt."""


def write_index(path: Path, index: Any, fingerprint: str, trained_on: int) -> None:
    """Persist ``index`` atomically: a temporary file beside ``path``, then a rename."""
    payload = faiss_module().serialize_index(index)
    header = Header(
        fingerprint,
        int(index.d),
        trained_on,
        int(payload.nbytes),
        hashlib.sha256(payload).hexdigest(),
    )
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        with temporary.open("wb") as out:
            out.write(MAGIC)
            out.write(header.as_line())
            out.write(memoryview(payload))
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def saved_index(path: Path, index: Any, fingerprint: str, trained_on: int) -> None:
    """:func:`write_index`, where a failed write (a full disk, a read-only folder) costs
    only the next start a rebuild: one warning, and the index in memory still answers."""
    try:
        write_index(path, index, fingerprint, trained_on)
    except OSError as error:
        log.warning(
            "search index not saved: %s could not be written (%s); the index in memory "
            "answers, the next start rebuilds it",
            path,
            error,
        )


def read_index(path: Path, fingerprint: str, width: int) -> tuple[Any, Header]:
    """The index in ``path`` and its header; :class:`IndexFileError` naming why it is not
    this model's, or not whole."""
    try:
        with path.open("rb") as source:
            if source.readline() != MAGIC:
                raise IndexFileError("it is not a mathembed faiss index file")
            fields = json.loads(source.readline())
            header = Header(**fields)
            payload = np.fromfile(source, dtype=np.uint8)
    except (OSError, json.JSONDecodeError, TypeError, UnicodeDecodeError) as error:
        raise IndexFileError(f"its header cannot be read ({type(error).__name__})") from error
    if header.fingerprint != fingerprint:
        raise IndexFileError(f"it was built for model {header.fingerprint[:12]!r}")
    if header.width != width:
        raise IndexFileError(f"it holds {header.width}-dim vectors, the store {width}")
    if payload.nbytes != header.payload_bytes:
        raise IndexFileError(f"it holds {payload.nbytes} of {header.payload_bytes} bytes")
    if hashlib.sha256(payload.data).hexdigest() != header.payload_sha256:
        raise IndexFileError("its checksum does not match")
    try:
        index = faiss_module().deserialize_index(payload)
    except RuntimeError as error:
        raise IndexFileError(f"faiss cannot read it ({error})") from error
    if int(index.d) != width:
        raise IndexFileError(f"its payload holds {index.d}-dim vectors, the store {width}")
    return index, header


def delete_orphans(store: EmbeddingStore) -> None:
    """Delete the index files whose store table is gone (evicted with its model)."""
    for path in store.folder.glob(f"*{INDEX_SUFFIX}"):
        if not path.with_suffix(".lance").exists():
            log.info("search index: removing %s, its model left the embedding store", path.name)
            path.unlink(missing_ok=True)


# -------------------------------------------------------------------------- the index


def held_ids(index: Any) -> set[int]:
    """The ids an IVF index holds, read from its inverted lists."""
    faiss = faiss_module()
    lists = faiss.extract_index_ivf(index).invlists
    ids: set[int] = set()
    for number in range(lists.nlist):
        size = lists.list_size(number)
        if size:
            ids.update(faiss.rev_swig_ptr(lists.get_ids(number), size).tolist())
    return ids


def build_index(stored: StoredVectors, wanted: set[str], width: int) -> Any:
    """Train an IVF,SQ8 index on a sample of the ``wanted`` texts' vectors, then add them all
    (two passes over the store table)."""
    faiss = faiss_module()
    lists = list_count(len(wanted))
    stride = max(1, len(wanted) // (TRAIN_PER_LIST * lists))
    sample: list[Vectors] = []
    seen = 0
    for hashes, vectors in stored.batches():
        keep = [row for row, text_key in enumerate(hashes) if text_key in wanted]
        picked = [row for n, row in enumerate(keep, seen) if n % stride == 0]
        seen += len(keep)
        sample.append(vectors[picked])
    quantizer = faiss.IndexFlatIP(width)
    index = faiss.IndexIVFScalarQuantizer(
        quantizer, width, lists, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
    )
    index.cp.niter = TRAIN_ITERATIONS
    index.cp.seed = 21
    index.train(np.ascontiguousarray(np.concatenate(sample)))
    index.quantizer_trains_alone = 0
    for hashes, vectors in stored.batches():
        keep = [row for row, text_key in enumerate(hashes) if text_key in wanted]
        if keep:
            ids = np.array([passage_id(hashes[row]) for row in keep], dtype=np.int64)
            index.add_with_ids(np.ascontiguousarray(vectors[keep]), ids)
    return index


class AnnIndex:
    """Approximate search over the corpus: ``rows_of`` maps an index id to the corpus rows
    holding that text (one, unless two chunks are the same text)."""

    kind = "ann"

    def __init__(self, index: Any, rows_of: dict[int, list[int]], params: SearchParams) -> None:
        self.index = index
        self.rows_of = rows_of
        self.passages = sum(len(rows) for rows in rows_of.values())
        self.params = params

    def top(self, query_vector: Vectors, k: int) -> tuple[list[int], list[float]]:
        """Rows and (SQ8) inner products of the ``k`` passages closest to a unit query, best
        first, ties by row; every passage when ``k`` is at least how many it holds."""
        k = min(k, self.passages)
        if k <= 0:
            return [], []
        faiss = faiss_module()
        lists = faiss.extract_index_ivf(self.index).nlist
        wanted = min(k, int(self.index.ntotal))
        probes = lists if wanted >= self.index.ntotal else min(self.params.ann_nprobes, lists)
        query = np.ascontiguousarray(query_vector.reshape(1, -1), dtype=np.float32)
        scores, ids = self.index.search(
            query, wanted, params=faiss.SearchParametersIVF(nprobe=probes)
        )
        if (ids < 0).any() and probes < lists:  # the probed lists held fewer than k
            search_all = faiss.SearchParametersIVF(nprobe=lists)
            scores, ids = self.index.search(query, wanted, params=search_all)
        hits = [
            (float(score), row)
            for score, found in zip(scores[0], ids[0], strict=True)
            if found >= 0
            for row in self.rows_of.get(int(found), [])
        ]
        hits.sort(key=lambda hit: (-hit[0], hit[1]))
        return [row for _, row in hits[:k]], [score for score, _ in hits[:k]]


def sync_ann_index(
    store: EmbeddingStore,
    stored: StoredVectors,
    text_keys: Sequence[str],
    params: SearchParams,
) -> AnnIndex:
    """Bring the model's persisted index to exactly ``text_keys`` (every one already in
    ``stored``): add the new, remove the departed, rebuild when it cannot be trusted or the
    corpus outgrew its training."""
    key = stored.key
    width = stored.width
    if width is None:
        raise ValueError("the store holds no vectors of this model to index")
    delete_orphans(store)
    path = index_path(store, key)
    rows_of: dict[int, list[int]] = {}
    for row, text_key in enumerate(text_keys):
        rows_of.setdefault(passage_id(text_key), []).append(row)
    id_of = {passage_id(text_key): text_key for text_key in text_keys}
    index, header = None, None
    if path.exists():
        try:
            index, header = read_index(path, key.fingerprint, width)
        except IndexFileError as error:
            log.warning("search index %s is not trusted: %s; rebuilding it", path.name, error)
    if index is not None and header is not None:
        grown = len(id_of) / max(1, header.trained_on)
        if grown >= RETRAIN_GROWTH or grown <= 1 / RETRAIN_GROWTH:
            log.info(
                "search index: the corpus went from %d to %d passages since the index was "
                "trained (%.1fx); training it again",
                header.trained_on,
                len(id_of),
                grown,
            )
            index = None
    if index is None or header is None:
        log.info("search index: building the ANN index (faiss IVF,SQ8) of %d passages", len(id_of))
        index = build_index(stored, set(id_of.values()), width)
        saved_index(path, index, key.fingerprint, len(id_of))
        return AnnIndex(index, rows_of, params)
    held = held_ids(index)
    departed = np.array(sorted(held - id_of.keys()), dtype=np.int64)
    new_ids = sorted(id_of.keys() - held)
    if len(departed):
        index.remove_ids(departed)
    if new_ids:
        vectors, missing = stored.lookup([id_of[number] for number in new_ids])
        if missing:  # pragma: no cover - the caller stored every text first
            raise RuntimeError(f"the embedding store lacks {len(missing)} vectors to index")
        index.add_with_ids(vectors, np.array(new_ids, dtype=np.int64))
    if len(departed) or new_ids:
        saved_index(path, index, key.fingerprint, header.trained_on)
    log.info(
        "search index: %d passages' vectors added to the ANN index, %d removed (%d held, "
        "trained on %d)",
        len(new_ids),
        len(departed),
        index.ntotal,
        header.trained_on,
    )
    return AnnIndex(index, rows_of, params)
