"""Row checksums of the embedding store: each row's vector and key, checked whenever read.

A torn page, a bad copy or a flipped bit in a LanceDB data file leaves a table that opens
and reads without error but answers with other vectors; LanceDB checks no content. So
every row carries a 64-bit checksum of its text hash and its vector's bytes, computed when
the row is written and recomputed when it is read: a mismatch makes the table untrusted
(:class:`pipelines.retrieval.stored_vectors.StoredVectors` drops and rebuilds it).

Per row rather than per data file (``benchmarks/results/store_integrity.md``, both
measured at 10^5 and 10^7 rows): a row's check needs only the row, so a lookup of a few
passages of a large table checks just those, compaction and concurrent appends need no
side file kept in step with LanceDB's versions, and the cost is 8 bytes a row.

The checksum is a weighted sum modulo 2^64 of the row's 64-bit words (its vector's bytes,
then its hex key's), with fixed odd weights (:func:`weights`): any change of one word
changes it (an odd weight is invertible modulo 2^64), and random damage to several words
goes unnoticed with odds near 2^-64. It guards against damage, not against someone forging
rows; one integer matrix-vector product keeps it at memory speed.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np
import numpy.typing as npt

Checksums = npt.NDArray[np.uint64]

#: A text hash is 64 hex characters: eight 64-bit words.
KEY_BYTES = 64
_MASK = (1 << 64) - 1


def _splitmix64(index: int) -> int:
    """Output ``index`` of SplitMix64 (Steele et al.) seeded with 0: a fixed, version-proof
    stream of weights."""
    state = ((index + 1) * 0x9E3779B97F4A7C15) & _MASK
    state = ((state ^ (state >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    state = ((state ^ (state >> 27)) * 0x94D049BB133111EB) & _MASK
    return state ^ (state >> 31)


@cache
def weights(count: int) -> npt.NDArray[np.uint64]:
    """``count`` odd 64-bit weights, the same in every process and numpy version."""
    return np.array([_splitmix64(n) | 1 for n in range(count)], dtype=np.uint64)


def row_checksums(hashes: Sequence[str], vectors: npt.NDArray[np.float32]) -> Checksums:
    """Each row's checksum of its text hash (64 hex characters) and ``float32`` vector."""
    rows = len(hashes)
    if vectors.shape[0] != rows:
        raise ValueError(f"{rows} keys for {vectors.shape[0]} vectors")
    if not rows:  # a read that found nothing (reshape cannot infer a width from no rows)
        return np.zeros(0, dtype=np.uint64)
    matrix = np.ascontiguousarray(vectors, dtype=np.float32).reshape(rows, -1)
    if matrix.shape[1] % 2:  # whole 64-bit words: an odd width gets a zero float
        matrix = np.pad(matrix, ((0, 0), (0, 1)))
    words = matrix.view(np.uint64)
    keys = np.frombuffer("".join(hashes).encode("ascii"), dtype=np.uint64).reshape(rows, -1)
    if keys.shape[1] * 8 != KEY_BYTES:
        raise ValueError(f"text hashes must be {KEY_BYTES} hex characters")
    weighted = weights(words.shape[1] + keys.shape[1])
    # Integer matrix products wrap modulo 2^64, which is the sum wanted.
    return (words @ weighted[: words.shape[1]]) + (keys @ weighted[words.shape[1] :])


def damaged_rows(
    hashes: Sequence[str], vectors: npt.NDArray[np.float32], stored: npt.ArrayLike
) -> npt.NDArray[np.intp]:
    """The positions of the rows whose stored checksum does not match their content; a
    key that is no longer a hex hash (its bytes damaged) counts as damaged too."""
    expected = np.asarray(stored, dtype=np.uint64)
    if expected.shape != (len(hashes),):
        raise ValueError(f"{len(hashes)} keys for {expected.shape[0]} checksums")
    try:
        return np.flatnonzero(row_checksums(hashes, vectors) != expected)
    except (ValueError, UnicodeEncodeError):  # some key is not 64 ASCII characters
        malformed = np.array([not _is_key(text_key) for text_key in hashes], dtype=bool)
        sound = np.flatnonzero(~malformed)
        mismatched = (
            row_checksums([hashes[int(row)] for row in sound], vectors[sound]) != (expected[sound])
        )
        malformed[sound[mismatched]] = True
        return np.flatnonzero(malformed)


def _is_key(text_key: str) -> bool:
    return len(text_key) == KEY_BYTES and text_key.isascii()
