"""One table of the embedding store as a process sees it: lookups by text hash, additions,
and the rows a failed write kept in memory.

:class:`StoredVectors` is what :meth:`pipelines.retrieval.vector_store.EmbeddingStore.vectors`
hands out: it reads its table whole on the first lookup (or only the rows asked for, when
they are a few of a large table), checks every row it reads (:func:`verified_rows`), and
on damage drops the table through its store, which rebuilds it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from pipelines.retrieval.embeddings import Embeddings
from pipelines.retrieval.store_layout import (
    HASH_COLUMN,
    KEYS_PER_FILTER,
    READ_BATCH,
    ROW_COLUMNS,
    STORE_ERRORS,
    VECTOR_COLUMN,
    StoreCorruptError,
    StoreKey,
    pa_table,
    verified_rows,
)


class TableOwner(Protocol):
    """What a table asks of its store (:class:`pipelines.retrieval.vector_store.EmbeddingStore`):
    to write rows, to drop the table, and to say so."""

    def write(
        self, key: StoreKey, table: Any | None, hashes: list[str], vectors: Embeddings
    ) -> Any: ...

    def drop(self, key: StoreKey) -> None: ...

    def report_rebuild(self, key: StoreKey, why: str) -> None: ...

    def report_unsaved(self, key: StoreKey, error: BaseException) -> None: ...


class StoredVectors:
    """One table of the store: look texts up by hash, add the ones it lacks.

    The table is read whole on the first lookup and kept in memory (a corpus's vectors
    are wanted together); :meth:`add` extends that copy. Rows a failed write could not
    store are kept beside it (``unsaved``) and answer lookups for the rest of the run.
    """

    def __init__(self, store: TableOwner, key: StoreKey, table: Any | None) -> None:
        self.store = store
        self.key = key
        self.table: Any = table  # None while the table does not exist
        self._rows: dict[str, int] | None = None
        self._matrix: Embeddings | None = None
        self._unsaved_rows: dict[str, int] = {}
        self._unsaved: Embeddings = np.zeros((0, 0), dtype=np.float32)

    @property
    def width(self) -> int | None:
        """The stored vectors' width, or None while the table is empty."""
        if self.table is None:
            return int(self._unsaved.shape[1]) if self._unsaved_rows else None
        return int(self.table.schema.field(VECTOR_COLUMN).type.list_size)

    def _load(self) -> tuple[dict[str, int], Embeddings]:
        if self._rows is None or self._matrix is None:
            read = self._read(lambda: [self.table.to_arrow()]) if self.table is not None else None
            self._rows, self._matrix = read or ({}, np.zeros((0, 0), dtype=np.float32))
        return self._rows, self._matrix

    def _read(self, scan: Callable[[], list[Any]]) -> tuple[dict[str, int], Embeddings] | None:
        """Rows by hash and their vectors from the Arrow tables ``scan`` reads, each row
        checked; None (the table dropped with a warning) when it cannot be read or a row
        is not what was written."""
        try:
            parts = [verified_rows(part) for part in scan()]
        except StoreCorruptError as error:
            self._rebuild(str(error))
            return None
        except STORE_ERRORS as error:
            self._rebuild(unreadable(error))
            return None
        found = [key for hashes, _ in parts for key in hashes]
        matrix = (
            np.concatenate([vectors for hashes, vectors in parts if hashes])
            if found
            else np.zeros((0, self.width or 0), dtype=np.float32)
        )
        return {text_key: row for row, text_key in reversed(list(enumerate(found)))}, matrix

    def _rebuild(self, why: str) -> None:
        self.store.report_rebuild(self.key, why)
        self.store.drop(self.key)
        self.table, self._rows, self._matrix = None, None, None

    def batches(self) -> Iterator[tuple[list[str], Embeddings]]:
        """Every row's hash and vector, a batch at a time (never the whole table in RAM),
        each row checked: a damaged one drops the table with a warning and raises
        :class:`StoreCorruptError` (what it yielded before is void)."""
        if self.table is not None:
            try:
                query = self.table.search().select(ROW_COLUMNS).limit(None)
                for batch in query.to_batches(READ_BATCH):
                    yield verified_rows(pa_table(batch))
            except StoreCorruptError as error:
                self._rebuild(str(error))
                raise
            except STORE_ERRORS as error:
                self._rebuild(unreadable(error))
                raise StoreCorruptError(f"table {self.key.table_name()} is unreadable") from error
        if self._unsaved_rows:
            yield list(self._unsaved_rows), self._unsaved

    def stored_hashes(self) -> set[str]:
        """The hashes the table holds, read without their vectors."""
        if self._rows is not None:
            return set(self._rows) | set(self._unsaved_rows)
        if self.table is None:
            return set(self._unsaved_rows)
        try:
            scan = self.table.search().select([HASH_COLUMN]).limit(None).to_arrow()
        except STORE_ERRORS as error:
            self._rebuild(unreadable(error))
            return set(self._unsaved_rows)
        return set(scan.column(HASH_COLUMN).to_pylist()) | set(self._unsaved_rows)

    def _fetch(self, hashes: list[str]) -> tuple[dict[str, int], Embeddings]:
        """Only the rows of ``hashes`` (a few new passages of a large table)."""

        def scan() -> list[Any]:
            parts = []
            for start in range(0, len(hashes), KEYS_PER_FILTER):
                names = ", ".join(f"'{key}'" for key in hashes[start : start + KEYS_PER_FILTER])
                query = self.table.search().where(f"{HASH_COLUMN} IN ({names})")
                parts.append(query.select(ROW_COLUMNS).limit(None).to_arrow())
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
        out, missing = _gathered(hashes, rows, matrix, self.width or 0)
        if missing and self._unsaved_rows:
            unsaved, missing_there = _gathered(
                [hashes[position] for position in missing], self._unsaved_rows, self._unsaved, 0
            )
            if out.shape[1] != unsaved.shape[1]:
                out = np.zeros((len(hashes), unsaved.shape[1]), dtype=np.float32)
            out[missing] = unsaved
            missing = [missing[position] for position in missing_there]
        return out, missing

    def _is_large_for(self, wanted: int) -> bool:
        try:
            return int(self.table.count_rows()) > 4 * wanted
        except STORE_ERRORS:
            return False  # _load() finds out and rebuilds

    def add(self, hashes: Sequence[str], vectors: Embeddings) -> None:
        """Store ``vectors`` under ``hashes``; a hash the table holds already is skipped.
        A write that fails keeps them in memory for this run (one warning, no error)."""
        if not len(hashes):
            return
        if len(hashes) != vectors.shape[0]:
            raise ValueError(f"{len(hashes)} keys for {vectors.shape[0]} vectors")
        width = self.width
        if width is not None and width != vectors.shape[1]:
            # The same fingerprint now gives another width: a store from another version.
            self._rebuild(f"it holds {width}-dim vectors, the model gives {vectors.shape[1]}")
            self._unsaved_rows, self._unsaved = {}, np.zeros((0, 0), dtype=np.float32)
        known = self._rows or {}
        fresh: dict[str, int] = {}  # hash -> its first row, new hashes only
        for row, text_key in enumerate(hashes):
            if text_key not in known and text_key not in self._unsaved_rows:
                fresh.setdefault(text_key, row)
        if not fresh:
            return
        new_hashes = list(fresh)
        new_vectors = np.ascontiguousarray(vectors[list(fresh.values())], dtype=np.float32)
        try:
            self.table = self.store.write(self.key, self.table, new_hashes, new_vectors)
        except STORE_ERRORS as error:
            self.store.report_unsaved(self.key, error)
            self._unsaved_rows, self._unsaved = _appended(
                self._unsaved_rows, self._unsaved, new_hashes, new_vectors
            )
            return
        if self._rows is not None and self._matrix is not None:  # keep the copy in step
            self._rows, self._matrix = _appended(self._rows, self._matrix, new_hashes, new_vectors)

    def remove(self, hashes: Sequence[str]) -> None:
        """Delete the rows of ``hashes`` (texts that left the corpus); a delete that fails
        leaves them, harmless: a row is found by its text, never by position."""
        if self.table is None or not hashes:
            return
        try:
            for start in range(0, len(hashes), KEYS_PER_FILTER):
                names = ", ".join(f"'{key}'" for key in hashes[start : start + KEYS_PER_FILTER])
                self.table.delete(f"{HASH_COLUMN} IN ({names})")
        except STORE_ERRORS as error:
            self.store.report_unsaved(self.key, error)
        self._rows, self._matrix = None, None  # row positions moved: read again when asked


def unreadable(error: BaseException) -> str:
    """Why a table LanceDB could not read is rebuilt."""
    return f"unreadable ({type(error).__name__}: {error})"


def _gathered(
    hashes: Sequence[str], rows: Mapping[str, int], matrix: Embeddings, width: int
) -> tuple[Embeddings, list[int]]:
    """The rows of ``hashes`` in ``matrix`` (zeros where absent) and the absent positions."""
    found = [rows.get(text_key, -1) for text_key in hashes]
    missing = [position for position, row in enumerate(found) if row < 0]
    out = np.zeros((len(hashes), matrix.shape[1] if matrix.size else width), dtype=np.float32)
    present = [position for position, row in enumerate(found) if row >= 0]
    if present:
        out[present] = matrix[[found[position] for position in present]]
    return out, missing


def _appended(
    rows: dict[str, int], matrix: Embeddings, hashes: list[str], vectors: Embeddings
) -> tuple[dict[str, int], Embeddings]:
    """``rows``/``matrix`` with ``hashes``' ``vectors`` after them."""
    start = len(matrix) if matrix.size else 0
    grown = np.concatenate([matrix, vectors]) if matrix.size else vectors
    return {**rows, **{text_key: start + i for i, text_key in enumerate(hashes)}}, grown
