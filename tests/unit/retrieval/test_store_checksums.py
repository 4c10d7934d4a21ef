"""pipelines.retrieval.store_checksums: each stored row's checksum of its key and vector."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from pipelines.retrieval.store_checksums import damaged_rows, row_checksums, weights

KEYS = [f"{n:064x}" for n in range(5)]


def test_the_weights_are_splitmix64_a_stream_no_library_version_changes() -> None:
    # SplitMix64's first outputs from state 0, as published with the algorithm.
    assert int(weights(2)[0]) == 0xE220A8397B1DCDAF
    assert int(weights(2)[1]) == 0x6E789E6AA1B965F4 | 1
    assert all(int(weight) % 2 == 1 for weight in weights(64))


def test_checksums_depend_on_the_row_alone_at_any_width() -> None:
    for width in (1, 3, 6, 384):
        vectors = np.random.default_rng(width).normal(size=(5, width)).astype(np.float32)
        sums = row_checksums(KEYS, vectors)
        assert sums.dtype == np.uint64 and len(set(sums.tolist())) == 5
        np.testing.assert_array_equal(row_checksums(KEYS[::-1], vectors[::-1]), sums[::-1])
        assert damaged_rows(KEYS, vectors, sums).tolist() == []


@given(
    row=st.integers(0, 4),
    column=st.integers(0, 6),
    bit=st.integers(0, 31),
)
def test_any_flipped_bit_of_a_vector_is_found_in_its_row(row: int, column: int, bit: int) -> None:
    vectors = np.random.default_rng(0).normal(size=(5, 7)).astype(np.float32)
    sums = row_checksums(KEYS, vectors)
    damaged = vectors.copy()
    damaged.view(np.uint32)[row, column] ^= np.uint32(1 << bit)
    assert damaged_rows(KEYS, damaged, sums).tolist() == [row]


def test_a_key_whose_bytes_changed_is_damaged_even_when_no_longer_a_hash() -> None:
    vectors = np.ones((5, 4), dtype=np.float32)
    sums = row_checksums(KEYS, vectors)
    changed = [KEYS[0], "9" * 64, "short", "é" * 64, KEYS[4]]
    assert damaged_rows(changed, vectors, sums).tolist() == [1, 2, 3]


def test_no_rows_have_no_checksums_and_none_is_damaged() -> None:
    for width in (0, 4):
        empty = np.zeros((0, width), dtype=np.float32)
        assert row_checksums([], empty).shape == (0,)
        assert damaged_rows([], empty, np.zeros(0, dtype=np.uint64)).size == 0
