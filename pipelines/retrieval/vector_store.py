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
store format, is dropped with a warning and rebuilt, never trusted; so is one whose rows
do not match their checksums (:mod:`pipelines.retrieval.store_layout`: each row carries one,
checked whenever it is read, by :mod:`pipelines.retrieval.stored_vectors`), and files derived
from a table (an ANN index named after it) go with it. A write that fails (a full disk, a
read-only folder) loses no work: the vectors stay in memory for the rest of the run, one
warning says the store was not saved, and what it held before is untouched.

Bounded on disk: the tables of at most :data:`MAX_STORED_MODELS` models are kept (base,
champion, candidate or challenger, and the previous one); a new model's first write evicts
the least recently used others, never a fingerprint the caller names in ``keep`` nor a model
another process has open (:mod:`pipelines.retrieval.store_leases`). Old table versions are
cleaned up after each write (:data:`KEEP_VERSIONS_FOR`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from pipelines.common.paths import Paths
from pipelines.retrieval import store_leases
from pipelines.retrieval.embeddings import Embeddings, TextEncoder, embed_texts, matryoshka
from pipelines.retrieval.store_layout import (
    HASH_COLUMN,
    STORE_ERRORS,
    StoreCorruptError,
    StoreKey,
    arrow_table,
    metadata_problem,
    text_hash,
)
from pipelines.retrieval.stored_vectors import StoredVectors

logger = logging.getLogger(__name__)

#: Models whose tables the store keeps: base, champion, candidate/challenger and the
#: previous one. A model holds ~150 MB per 100k passages at 384 floats (more with a search
#: table, :mod:`pipelines.search.index`).
MAX_STORED_MODELS = 4
#: Table versions older than this are deleted after a write (LanceDB keeps every version
#: until cleaned up); younger ones stay for a reader that opened one a moment ago.
KEEP_VERSIONS_FOR = timedelta(hours=1)


def lancedb_module() -> Any:
    """``lancedb``, imported on first use with its Rust logger at ``error`` (its default,
    ``warn``, prints deprecation chatter to stderr); a user's ``LANCEDB_LOG`` wins."""
    os.environ.setdefault("LANCEDB_LOG", "error")
    import lancedb

    return lancedb


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


@dataclass(frozen=True)
class TableCheck:
    """One table as :meth:`EmbeddingStore.verify` found it: ``problem`` None when every row
    matched its checksum (the table was dropped otherwise)."""

    name: str
    fingerprint: str
    rows: int
    problem: str | None = None


class EmbeddingStore:
    """The LanceDB database under ``folder``: one table per :class:`StoreKey`.

    ``embedded`` and ``reused`` count texts over this object's life (what a run's record
    says it cost); ``rebuilt`` the tables dropped as damaged or foreign; ``evicted`` the
    models dropped to keep the bound; ``unsaved`` the writes that failed (their vectors
    kept in memory).
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
        self.unsaved = 0
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
        """The table of ``key``, checked; an empty one when there is none or it was bad.
        The model is leased for this process's life: no other process evicts it."""
        if key not in self._open:
            with contextlib.suppress(OSError):  # a read-only store: nothing evicts there
                store_leases.hold(self.folder, key.model_id)
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

    def report_unsaved(self, key: StoreKey, error: BaseException) -> None:
        self.unsaved += 1
        logger.warning(
            "embedding store not saved: table %s (model %s) in %s could not be written "
            "(%s); results computed in memory",
            key.table_name(),
            key.fingerprint[:12],
            self.folder,
            _first_line(error),
        )

    def drop(self, key: StoreKey) -> None:
        """Delete ``key``'s table, even one LanceDB can no longer open, and the files
        derived from it (named after it: an ANN index)."""
        self._open.pop(key, None)
        self._delete_table(key.table_name())

    def _delete_table(self, name: str) -> None:
        with contextlib.suppress(*STORE_ERRORS):
            self.db.drop_table(name, ignore_missing=True)
        shutil.rmtree(self.folder / f"{name}.lance", ignore_errors=True)
        for derived in self.folder.glob(f"{name}.*"):
            if derived.is_file():
                derived.unlink(missing_ok=True)

    def write(
        self, key: StoreKey, table: Any | None, hashes: list[str], vectors: Embeddings
    ) -> Any:
        """Append rows to ``key``'s table (creating it): one LanceDB commit."""
        rows = arrow_table(key.metadata(), hashes, vectors)
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
            with store_leases.evicting(self.folder, model_id) as free:
                if not free:
                    logger.info(
                        "embedding store: model %s kept past the bound of %d, another "
                        "process has it open",
                        model_id,
                        self.max_models,
                    )
                    continue
                for path in self.folder.glob(f"m{model_id}-*.lance"):
                    self._delete_table(path.name.removesuffix(".lance"))
            self._open = {k: v for k, v in self._open.items() if k.model_id != model_id}
            self.evicted += 1
            logger.info("embedding store: evicted model %s (least recently used)", model_id)

    def verify(self) -> list[TableCheck]:
        """Read every table and check every row against its checksum (``mathembed
        status``); a damaged, unreadable or foreign table is dropped, to be rebuilt when
        next used. The tables' last-used times (the eviction order) are left as they were."""
        checks = []
        for path in sorted(self.folder.glob("m*.lance")):
            name = path.name.removesuffix(".lance")
            try:
                table = self.db.open_table(name)
                key = StoreKey.of_metadata(table.schema.metadata)
                foreign = metadata_problem(key, table.schema.metadata)
            except STORE_ERRORS as error:
                self._delete_table(name)
                checks.append(TableCheck(name, "?", 0, f"cannot be opened: {_first_line(error)}"))
                continue
            if foreign is not None or key.table_name() != name:
                self._delete_table(name)
                problem = foreign or f"it is named {name}, its key {key.table_name()}"
                checks.append(TableCheck(name, key.fingerprint, 0, problem))
                continue
            # Not through vectors(): a check is no use, so it must not make the model recent.
            stored = StoredVectors(self, key, table)
            try:
                rows = sum(len(hashes) for hashes, _ in stored.batches())
            except StoreCorruptError as error:
                checks.append(TableCheck(name, key.fingerprint, 0, str(error)))
                continue
            checks.append(TableCheck(name, key.fingerprint, rows))
        return checks


def _first_line(error: BaseException) -> str:
    """An error in one line, without the Rust source location LanceDB appends."""
    lines = str(error).strip().splitlines()
    text = re.sub(r",\s*/\S+\.rs:\d+:\d+$", "", lines[0] if lines else "")
    return f"{type(error).__name__}: {text}"


def open_store(paths: Paths, *, keep: Iterable[str] = ()) -> EmbeddingStore:
    """The project's store (``keep``: fingerprints never evicted); the caches of older
    versions, which it replaces, are deleted on the way."""
    for legacy in paths.legacy_embedding_caches:
        if legacy.is_dir():
            logger.info("removing %s: embeddings now live in %s", legacy, paths.embedding_store)
            shutil.rmtree(legacy, ignore_errors=True)
    return EmbeddingStore(paths.embedding_store, keep=keep)


def verify_store(paths: Paths) -> list[TableCheck]:
    """Every table of the project's store checked row by row (:meth:`EmbeddingStore.verify`);
    none when there is no store yet."""
    if not paths.embedding_store.is_dir():
        return []
    return EmbeddingStore(paths.embedding_store).verify()


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
    # The answer is the stored rows and the fresh ones, whether or not the store kept them.
    if matrix.shape[1] != fresh.shape[1]:
        matrix = np.zeros((len(texts), fresh.shape[1]), dtype=np.float32)
    fresh_row = {hashes[position]: row for row, position in enumerate(todo)}
    matrix[missing] = fresh[[fresh_row[hashes[position]] for position in missing]]
    return matrix
