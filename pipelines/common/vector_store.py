"""The per-passage embedding store: one vector per (model, text, dimension/normalisation).

Evaluate, promote, ``mathembed search`` and ``serve-search`` all embed through
:func:`embed_stored`, which asks the store first and embeds only the texts it lacks: a
night that adds a few papers embeds those passages with the base and the champion, not the
whole corpus again; a new candidate (a new fingerprint) embeds everything once; a search
service started after a night reads the vectors evaluate stored minutes before.

The store is a LanceDB database under ``data/embeddings/`` (the library was chosen side by
side with usearch and faiss: ``benchmarks/results/store_choice.md``). A :class:`StoreKey` —
the model's fingerprint, the dimension (``None``: the model's own) and whether vectors are
L2-normalised — names one table; each row is a text's SHA-256 (:func:`text_hash`) and its
vector. A passage whose text changed under the same id is a new row: the key is the text,
not the id. Writes are LanceDB commits: data files first, then a new manifest, so a write
cut short leaves the previous version whole. A table that cannot be opened or read (a file
truncated by a crash or a full disk), or that was written for another model, dimension or
store format, is dropped with a warning and rebuilt, never trusted.

Bounded on disk: the tables of at most :data:`MAX_STORED_MODELS` models are kept (base,
champion, candidate or challenger, and the previous one); a new model's first write evicts
the least recently used others, never a fingerprint the caller names in ``keep``. Old table
versions are cleaned up after each write (:data:`KEEP_VERSIONS_FOR`).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from pipelines.common.embeddings import Embeddings, TextEncoder, embed_texts, matryoshka
from pipelines.common.paths import Paths

logger = logging.getLogger(__name__)

#: Models whose tables the store keeps: base, champion, candidate/challenger and the
#: previous one. A model holds ~150 MB per 100k passages at 384 floats (more with a search
#: table, :mod:`pipelines.search.index`).
MAX_STORED_MODELS = 4
#: Bumped when the table layout changes: a table of another format is rebuilt.
STORE_FORMAT = "1"
#: Table versions older than this are deleted after a write (LanceDB keeps every version
#: until cleaned up); younger ones stay for a reader that opened one a moment ago.
KEEP_VERSIONS_FOR = timedelta(hours=1)
#: How many keys one ``text_hash IN (...)`` filter names.
KEYS_PER_FILTER = 2_000

HASH_COLUMN = "text_hash"
VECTOR_COLUMN = "vector"
_META_PREFIX = "mathembed."

#: Every failure LanceDB reports reading or writing a damaged table: its Rust errors come
#: through as RuntimeError/OSError/ValueError, Arrow's as ArrowException (a ValueError or
#: an OSError subclass).
STORE_ERRORS: tuple[type[BaseException], ...] = (RuntimeError, OSError, ValueError)


def lancedb_module() -> Any:
    """``lancedb``, imported on first use with its Rust logger at ``error`` (its default,
    ``warn``, prints deprecation chatter to stderr); a user's ``LANCEDB_LOG`` wins."""
    os.environ.setdefault("LANCEDB_LOG", "error")
    import lancedb

    return lancedb


def text_hash(text: str) -> str:
    """The store's key of a text: the hex SHA-256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class StoreKey:
    """What one table holds: one model's vectors at one dimension and normalisation."""

    fingerprint: str
    dim: int | None = None
    normalize: bool = False

    @property
    def model_id(self) -> str:
        """The model part of the table name: a fingerprint may hold any character."""
        return hashlib.sha256(self.fingerprint.encode("utf-8")).hexdigest()[:24]

    def table_name(self) -> str:
        dim = "full" if self.dim is None else f"d{self.dim}"
        return f"m{self.model_id}-{dim}-{'norm' if self.normalize else 'raw'}"

    def metadata(self) -> dict[str, str]:
        """What the table's schema records, checked when it is opened."""
        return {
            f"{_META_PREFIX}fingerprint": self.fingerprint,
            f"{_META_PREFIX}dim": "full" if self.dim is None else str(self.dim),
            f"{_META_PREFIX}normalize": str(self.normalize).lower(),
            f"{_META_PREFIX}format": STORE_FORMAT,
        }


def metadata_problem(key: StoreKey, stored: Mapping[bytes, bytes] | None) -> str | None:
    """Why a table's schema metadata does not belong to ``key`` (None: it does)."""
    found = {k.decode(): v.decode() for k, v in (stored or {}).items()}
    for name, expected in key.metadata().items():
        if found.get(name) != expected:
            return f"{name} is {found.get(name)!r}, expected {expected!r}"
    return None


def models_to_evict(
    last_used: Mapping[str, int], max_models: int, keep: Collection[str]
) -> list[str]:
    """The models to drop so that at most ``max_models`` remain, least recently used first;
    a model in ``keep`` is never one of them (even past the bound)."""
    excess = len(last_used) - max_models
    if excess <= 0:
        return []
    evictable = sorted((used, name) for name, used in last_used.items() if name not in keep)
    return [name for _, name in evictable[:excess]]


def arrow_table(key: StoreKey, hashes: Sequence[str], vectors: Embeddings) -> Any:
    """Rows for ``key``'s table: ``text_hash`` and a fixed-size ``float32`` vector."""
    import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no types

    width = int(vectors.shape[1])
    schema = pa.schema(
        [
            pa.field(HASH_COLUMN, pa.string(), nullable=False),
            pa.field(VECTOR_COLUMN, pa.list_(pa.float32(), width), nullable=False),
        ],
        metadata=key.metadata(),
    )
    flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
    column = pa.FixedSizeListArray.from_arrays(flat, width)
    return pa.table(
        {HASH_COLUMN: pa.array(list(hashes), pa.string()), VECTOR_COLUMN: column}, schema=schema
    )


def vectors_of(table: Any) -> Embeddings:
    """The vector column of an Arrow table as a ``(rows, width)`` ``float32`` matrix."""
    column = table.column(VECTOR_COLUMN).combine_chunks()
    width = column.type.list_size
    values = column.values.to_numpy(zero_copy_only=False)
    return np.ascontiguousarray(values, dtype=np.float32).reshape(-1, width)


class StoreCorruptError(RuntimeError):
    """A table that cannot be trusted: dropped and rebuilt."""


class StoredVectors:
    """One table of the store: look texts up by hash, add the ones it lacks.

    The table is read whole on the first lookup and kept in memory (a corpus's vectors
    are wanted together); :meth:`add` extends that copy.
    """

    def __init__(self, store: EmbeddingStore, key: StoreKey, table: Any | None) -> None:
        self.store = store
        self.key = key
        self.table: Any = table  # None while the table does not exist
        self._rows: dict[str, int] | None = None
        self._matrix: Embeddings | None = None

    @property
    def width(self) -> int | None:
        """The stored vectors' width, or None while the table is empty."""
        if self.table is None:
            return None
        return int(self.table.schema.field(VECTOR_COLUMN).type.list_size)

    def _load(self) -> tuple[dict[str, int], Embeddings]:
        if self._rows is None or self._matrix is None:
            read = self._read(lambda: [self.table.to_arrow()]) if self.table is not None else None
            self._rows, self._matrix = read or ({}, np.zeros((0, 0), dtype=np.float32))
        return self._rows, self._matrix

    def _read(self, scan: Callable[[], list[Any]]) -> tuple[dict[str, int], Embeddings] | None:
        """Rows by hash and their vectors from the Arrow tables ``scan`` reads; None (the
        table dropped with a warning) when it cannot be read or holds non-finite values."""
        try:
            parts = scan()
            found = [key for part in parts for key in part.column(HASH_COLUMN).to_pylist()]
            matrix = (
                np.concatenate([vectors_of(part) for part in parts])
                if found
                else np.zeros((0, self.width or 0), dtype=np.float32)
            )
        except STORE_ERRORS as error:
            self._rebuild(f"unreadable ({type(error).__name__}: {error})")
            return None
        if not np.isfinite(matrix).all():
            self._rebuild("it holds NaN or infinite values")
            return None
        return {text_key: row for row, text_key in reversed(list(enumerate(found)))}, matrix

    def _rebuild(self, why: str) -> None:
        self.store.report_rebuild(self.key, why)
        self.store.drop(self.key)
        self.table, self._rows, self._matrix = None, None, None

    def stored_hashes(self) -> set[str]:
        """The hashes the table holds, read without their vectors."""
        if self._rows is not None:
            return set(self._rows)
        if self.table is None:
            return set()
        try:
            scan = self.table.search().select([HASH_COLUMN]).limit(None).to_arrow()
        except STORE_ERRORS as error:
            self._rebuild(f"unreadable ({type(error).__name__}: {error})")
            return set()
        return set(scan.column(HASH_COLUMN).to_pylist())

    def _fetch(self, hashes: list[str]) -> tuple[dict[str, int], Embeddings]:
        """Only the rows of ``hashes`` (a few new passages of a large table)."""

        def scan() -> list[Any]:
            parts = []
            for start in range(0, len(hashes), KEYS_PER_FILTER):
                names = ", ".join(f"'{key}'" for key in hashes[start : start + KEYS_PER_FILTER])
                query = self.table.search().where(f"{HASH_COLUMN} IN ({names})")
                parts.append(query.select([HASH_COLUMN, VECTOR_COLUMN]).limit(None).to_arrow())
            return parts

        return self._read(scan) or self._load()

    def lookup(self, hashes: Sequence[str]) -> tuple[Embeddings, list[int]]:
        """The stored vectors of ``hashes`` (a zero row where missing) and the positions
        of the missing ones. A few hashes of a large table are fetched by key; otherwise
        the table is read whole, once."""
        unique = list(dict.fromkeys(hashes))
        if self._rows is None and self.table is not None and self._is_large_for(len(unique)):
            rows, matrix = self._fetch(unique)
        else:
            rows, matrix = self._load()
        found = [rows.get(text_key, -1) for text_key in hashes]
        missing = [position for position, row in enumerate(found) if row < 0]
        width = matrix.shape[1] if matrix.size else 0
        out = np.zeros((len(hashes), width), dtype=np.float32)
        present = [position for position, row in enumerate(found) if row >= 0]
        if present:
            out[present] = matrix[[found[position] for position in present]]
        return out, missing

    def _is_large_for(self, wanted: int) -> bool:
        try:
            return int(self.table.count_rows()) > 4 * wanted
        except STORE_ERRORS:
            return False  # _load() finds out and rebuilds

    def add(self, hashes: Sequence[str], vectors: Embeddings) -> None:
        """Store ``vectors`` under ``hashes``; a hash the table holds already is skipped."""
        if not len(hashes):
            return
        if len(hashes) != vectors.shape[0]:
            raise ValueError(f"{len(hashes)} keys for {vectors.shape[0]} vectors")
        width = self.width
        if width is not None and width != vectors.shape[1]:
            # The same fingerprint now gives another width: a store from another version.
            self._rebuild(f"it holds {width}-dim vectors, the model gives {vectors.shape[1]}")
        known = self._rows or {}
        fresh: dict[str, int] = {}  # hash -> its first row, new hashes only
        for row, text_key in enumerate(hashes):
            if text_key not in known:
                fresh.setdefault(text_key, row)
        if not fresh:
            return
        new_hashes = list(fresh)
        new_vectors = np.ascontiguousarray(vectors[list(fresh.values())], dtype=np.float32)
        self.table = self.store.write(self.key, self.table, new_hashes, new_vectors)
        if self._rows is not None and self._matrix is not None:  # keep the copy in step
            start = len(self._matrix)
            self._matrix = (
                np.concatenate([self._matrix, new_vectors]) if self._matrix.size else new_vectors
            )
            self._rows.update({text_key: start + i for i, text_key in enumerate(new_hashes)})


class EmbeddingStore:
    """The LanceDB database under ``folder``: one table per :class:`StoreKey`.

    ``embedded`` and ``reused`` count texts over this object's life (what a run's record
    says it cost); ``rebuilt`` the tables dropped as damaged or foreign; ``evicted`` the
    models dropped to keep the bound.
    """

    def __init__(
        self,
        folder: Path,
        *,
        keep: Iterable[str] = (),
        max_models: int = MAX_STORED_MODELS,
    ) -> None:
        if max_models < 1:
            raise ValueError(f"max_models must be at least 1, got {max_models}")
        self.folder = folder
        self.max_models = max_models
        self.keep = frozenset(StoreKey(fingerprint).model_id for fingerprint in keep)
        self.embedded = 0
        self.reused = 0
        self.rebuilt = 0
        self.evicted = 0
        self._db: Any = None
        self._open: dict[StoreKey, StoredVectors] = {}

    @property
    def db(self) -> Any:
        if self._db is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._db = lancedb_module().connect(str(self.folder))
        return self._db

    def table_path(self, key: StoreKey) -> Path:
        return self.folder / f"{key.table_name()}.lance"

    def vectors(self, key: StoreKey) -> StoredVectors:
        """The table of ``key``, checked; an empty one when there is none or it was bad."""
        if key not in self._open:
            self._open[key] = StoredVectors(self, key, self._open_table(key))
        return self._open[key]

    def _open_table(self, key: StoreKey) -> Any | None:
        if not self.table_path(key).exists():
            return None
        try:
            table = self.db.open_table(key.table_name())
            problem = metadata_problem(key, table.schema.metadata)
        except STORE_ERRORS as error:
            problem = f"it cannot be opened ({type(error).__name__}: {error})"
        if problem is not None:
            self.report_rebuild(key, problem)
            self.drop(key)
            return None
        _touch(self.table_path(key))
        return table

    def report_rebuild(self, key: StoreKey, why: str) -> None:
        self.rebuilt += 1
        logger.warning(
            "embedding store table %s (model %s) is not trusted: %s; rebuilding it",
            key.table_name(),
            key.fingerprint,
            why,
        )

    def drop(self, key: StoreKey) -> None:
        """Delete ``key``'s table, even one LanceDB can no longer open."""
        self._open.pop(key, None)
        with contextlib.suppress(*STORE_ERRORS):
            self.db.drop_table(key.table_name(), ignore_missing=True)
        shutil.rmtree(self.table_path(key), ignore_errors=True)

    def write(
        self, key: StoreKey, table: Any | None, hashes: list[str], vectors: Embeddings
    ) -> Any:
        """Append rows to ``key``'s table (creating it): one LanceDB commit."""
        rows = arrow_table(key, hashes, vectors)
        if table is None:
            try:
                table = self.db.create_table(key.table_name(), rows, mode="create")
            except ValueError:  # another process created it meanwhile: merge into theirs
                table = self.db.open_table(key.table_name())
                table.merge_insert(HASH_COLUMN).when_not_matched_insert_all().execute(rows)
            self._evict(also_keep=key.model_id)
        else:
            table.merge_insert(HASH_COLUMN).when_not_matched_insert_all().execute(rows)
            # Compact and clean up old versions; not a table with an ANN index, whose
            # incremental update costs more than a rebuild (pipelines/search/index.py).
            if not table.list_indices():
                with contextlib.suppress(*STORE_ERRORS):  # a reader's old version: next time
                    table.optimize(cleanup_older_than=KEEP_VERSIONS_FOR)
        _touch(self.table_path(key))
        return table

    def _evict(self, *, also_keep: str) -> None:
        last_used: dict[str, int] = {}
        for path in self.folder.glob("m*.lance"):
            model_id = path.name[1:].split("-", 1)[0]
            with contextlib.suppress(OSError):  # dropped meanwhile by another process
                last_used[model_id] = max(last_used.get(model_id, 0), path.stat().st_mtime_ns)
        for model_id in models_to_evict(last_used, self.max_models, self.keep | {also_keep}):
            for path in self.folder.glob(f"m{model_id}-*.lance"):
                # Another process reading it sees a missing table and embeds again.
                with contextlib.suppress(*STORE_ERRORS):
                    self.db.drop_table(path.name.removesuffix(".lance"), ignore_missing=True)
                shutil.rmtree(path, ignore_errors=True)
            self._open = {k: v for k, v in self._open.items() if k.model_id != model_id}
            self.evicted += 1
            logger.info("embedding store: evicted model %s (least recently used)", model_id)


def open_store(paths: Paths, *, keep: Iterable[str] = ()) -> EmbeddingStore:
    """The project's store (``keep``: fingerprints never evicted); the caches of older
    versions, which it replaces, are deleted on the way."""
    for legacy in paths.legacy_embedding_caches:
        if legacy.is_dir():
            logger.info("removing %s: embeddings now live in %s", legacy, paths.embedding_store)
            shutil.rmtree(legacy, ignore_errors=True)
    return EmbeddingStore(paths.embedding_store, keep=keep)


def _touch(path: Path) -> None:
    """Mark a table as just used (its folder's modification time is the LRU clock)."""
    with contextlib.suppress(OSError):
        os.utime(path)


def embed_stored(
    model: TextEncoder,
    texts: Sequence[str],
    *,
    model_fingerprint: str,
    store: EmbeddingStore | None,
    batch_size: int,
    dim: int | None = None,
    normalize: bool = False,
    progress: bool = False,
    label: str = "texts",
) -> Embeddings:
    """:func:`embed_texts` through ``store``: only the texts it lacks are embedded (no
    store: all). A cut or normalised key is derived from the model's full, raw vectors
    (themselves stored), so it never costs a second encode."""
    if store is None:
        return embed_texts(
            model,
            texts,
            batch_size=batch_size,
            dim=dim,
            normalize=normalize,
            progress=progress,
            label=label,
        )
    key = StoreKey(model_fingerprint, dim, normalize)
    stored = store.vectors(key)
    hashes = [text_hash(text) for text in texts]
    matrix, missing = stored.lookup(hashes)
    if not missing:
        store.reused += len(texts)
        return matrix if len(texts) else np.zeros((0, stored.width or dim or 0), np.float32)
    first = {hashes[position]: position for position in reversed(missing)}
    todo = sorted(first.values())
    todo_texts = [texts[position] for position in todo]
    if dim is None and not normalize:
        fresh = embed_texts(
            model,
            todo_texts,
            batch_size=batch_size,
            dim=None,
            normalize=False,
            progress=progress,
            label=label,
        )
        store.embedded += len(todo)
        logger.info(
            "embedded %d new %s of %d, %d taken from the embedding store (model %s)",
            len(todo),
            label,
            len(texts),
            len(texts) - len(missing),
            model_fingerprint[:12],
        )
    else:
        full = embed_stored(
            model,
            todo_texts,
            model_fingerprint=model_fingerprint,
            store=store,
            batch_size=batch_size,
            progress=progress,
            label=label,
        )
        fresh = matryoshka(full, dim, normalize=normalize)
    rebuilt = store.rebuilt
    stored.add([hashes[position] for position in todo], fresh)
    if store.rebuilt != rebuilt:  # the table held another width: what it gave is void too
        return embed_stored(
            model,
            texts,
            model_fingerprint=model_fingerprint,
            store=store,
            batch_size=batch_size,
            dim=dim,
            normalize=normalize,
            progress=progress,
            label=label,
        )
    store.reused += len(texts) - len(missing)
    matrix, still_missing = stored.lookup(hashes)
    if still_missing:  # pragma: no cover - add() stored every one of them
        raise RuntimeError(f"the embedding store lost {len(still_missing)} vectors just added")
    return matrix
