"""The embedding store's table layout: which table holds what, and what a row is.

A :class:`StoreKey` (a model's fingerprint, a dimension, whether vectors are unit length)
names one table of :mod:`pipelines.retrieval.vector_store` and is recorded in its schema,
checked when the table is opened. Each row is a text's SHA-256 (:func:`text_hash`, the
key), its ``float32`` vector and the row's checksum (:mod:`pipelines.retrieval.store_checksums`),
written together by :func:`arrow_table` and read back only through :func:`verified_rows`,
which refuses a row that is not what was written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipelines.retrieval.embeddings import Embeddings
from pipelines.retrieval.store_checksums import damaged_rows, row_checksums

#: Bumped when the table layout changes: a table of another format is rebuilt.
#: 2: each row carries its checksum.
STORE_FORMAT = "2"
_META_PREFIX = "mathembed."

HASH_COLUMN = "text_hash"
VECTOR_COLUMN = "vector"
CHECKSUM_COLUMN = "checksum"
ROW_COLUMNS = [HASH_COLUMN, VECTOR_COLUMN, CHECKSUM_COLUMN]

#: How many keys one ``text_hash IN (...)`` filter names.
KEYS_PER_FILTER = 2_000
#: Rows read per batch when a table is streamed rather than held (an ANN build, a check).
READ_BATCH = 65_536

#: Every failure LanceDB reports reading or writing a damaged table: its Rust errors come
#: through as RuntimeError/OSError/ValueError, Arrow's as ArrowException (a ValueError or
#: an OSError subclass).
STORE_ERRORS: tuple[type[BaseException], ...] = (RuntimeError, OSError, ValueError)


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

    @classmethod
    def of_metadata(cls, stored: Mapping[bytes, bytes] | None) -> StoreKey:
        """The key a table's schema metadata names (:meth:`metadata` read back); a
        ValueError when it names none."""
        found = {k.decode(): v.decode() for k, v in (stored or {}).items()}
        try:
            dim = found[f"{_META_PREFIX}dim"]
            return cls(
                found[f"{_META_PREFIX}fingerprint"],
                None if dim == "full" else int(dim),
                found[f"{_META_PREFIX}normalize"] == "true",
            )
        except KeyError as missing:
            raise ValueError(f"its schema records no {missing}") from None


def metadata_problem(key: StoreKey, stored: Mapping[bytes, bytes] | None) -> str | None:
    """Why a table's schema metadata does not belong to ``key`` (None: it does)."""
    found = {k.decode(): v.decode() for k, v in (stored or {}).items()}
    for name, expected in key.metadata().items():
        if found.get(name) != expected:
            return f"{name} is {found.get(name)!r}, expected {expected!r}"
    return None


class StoreCorruptError(RuntimeError):
    """A table that cannot be trusted: dropped and rebuilt."""


def arrow_table(metadata: dict[str, str], hashes: Sequence[str], vectors: Embeddings) -> Any:
    """Rows of a table whose schema records ``metadata``: ``text_hash``, a fixed-size
    ``float32`` vector and the row's checksum."""
    import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no types

    width = int(vectors.shape[1])
    schema = pa.schema(
        [
            pa.field(HASH_COLUMN, pa.string(), nullable=False),
            pa.field(VECTOR_COLUMN, pa.list_(pa.float32(), width), nullable=False),
            pa.field(CHECKSUM_COLUMN, pa.uint64(), nullable=False),
        ],
        metadata=metadata,
    )
    matrix = np.ascontiguousarray(vectors, dtype=np.float32)
    column = pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), width)
    return pa.table(
        {
            HASH_COLUMN: pa.array(list(hashes), pa.string()),
            VECTOR_COLUMN: column,
            CHECKSUM_COLUMN: pa.array(row_checksums(hashes, matrix), pa.uint64()),
        },
        schema=schema,
    )


def vectors_of(table: Any) -> Embeddings:
    """The vector column of an Arrow table as a ``(rows, width)`` ``float32`` matrix."""
    column = table.column(VECTOR_COLUMN).combine_chunks()
    width = column.type.list_size
    values = column.values.to_numpy(zero_copy_only=False)
    return np.ascontiguousarray(values, dtype=np.float32).reshape(-1, width)


def verified_rows(part: Any) -> tuple[list[str], Embeddings]:
    """The hashes and vectors of rows read from the store (an Arrow table of
    :data:`ROW_COLUMNS`), each checked against its checksum: :class:`StoreCorruptError`
    says how many are not what was written."""
    hashes = part.column(HASH_COLUMN).to_pylist()
    matrix = vectors_of(part) if hashes else np.zeros((0, 0), dtype=np.float32)
    damaged = damaged_rows(hashes, matrix, part.column(CHECKSUM_COLUMN).to_numpy())
    if len(damaged):
        raise StoreCorruptError(
            f"{len(damaged)} of {len(hashes)} rows read do not match their checksums"
        )
    if not np.isfinite(matrix).all():
        raise StoreCorruptError("it holds NaN or infinite values")
    return hashes, matrix


def pa_table(batch: Any) -> Any:
    """An Arrow record batch as a table (what :func:`verified_rows` reads)."""
    import pyarrow as pa

    return pa.Table.from_batches([batch])
