"""The persistent passage index: built once per model, reused, updated passage by passage.

The embedder is a small deterministic function (a text's letter counts) that records what
it was asked to embed, so each test can say exactly which passages were embedded.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pipelines.search.index import (
    PassageIndex,
    index_file,
    load_index,
    passage_key,
    sync_index,
)


class LetterCounts:
    """Embeds a text as its counts of a..z; remembers every text it embedded."""

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def __call__(self, texts: list[str]) -> npt.NDArray[np.float32]:
        self.embedded.extend(texts)
        rows = np.zeros((len(texts), 26), dtype=np.float32)
        for row, text in enumerate(texts):
            for letter in text.lower():
                if "a" <= letter <= "z":
                    rows[row, ord(letter) - ord("a")] += 1
        return rows


def ids_and_texts(corpus: dict[str, str]) -> tuple[Sequence[str], Sequence[str]]:
    return list(corpus), list(corpus.values())


CORPUS = {"p1#c0": "aaa", "p1#c1": "bbb", "p2#c0": "abc"}


def test_the_index_is_built_once_and_reused_across_restarts(tmp_path: Path) -> None:
    path = index_file(tmp_path / "index", "model/fp:1")
    assert path.name == "model_fp_1.npz"
    embed = LetterCounts()
    first = sync_index(path, *ids_and_texts(CORPUS), embed)
    assert (first.embedded, first.reused, first.dropped) == (3, 0, 0)
    assert path.is_file() and embed.embedded == ["aaa", "bbb", "abc"]
    norms = np.linalg.norm(first.index.vectors, axis=1)
    np.testing.assert_allclose(norms, 1.0, rtol=1e-6)  # unit rows: a dot product is cosine

    stamp = path.stat().st_mtime_ns
    again = sync_index(path, *ids_and_texts(CORPUS), LetterCounts())
    assert (again.embedded, again.reused, again.dropped) == (0, 3, 0)
    assert path.stat().st_mtime_ns == stamp  # nothing changed: not rewritten
    np.testing.assert_array_equal(again.index.vectors, first.index.vectors)


def test_new_passages_are_embedded_alone_and_removed_ones_dropped(tmp_path: Path) -> None:
    path = index_file(tmp_path, "fp")
    sync_index(path, *ids_and_texts(CORPUS), LetterCounts())
    changed = {"p2#c0": "abc", "p3#c0": "ccc", "p1#c1": "bbbb"}  # p1#c0 gone, p1#c1 edited
    embed = LetterCounts()
    update = sync_index(path, *ids_and_texts(changed), embed)
    assert sorted(embed.embedded) == ["bbbb", "ccc"]  # only the new and the edited passage
    assert (update.embedded, update.reused, update.dropped) == (2, 1, 2)
    stored = load_index(path)
    assert stored is not None
    assert stored.keys == tuple(passage_key(i, t) for i, t in changed.items())
    assert len(stored.vectors) == 3
    rows, scores = stored.top(LetterCounts()(["c"])[0] / 1.0, 1)
    assert rows == [1] and scores[0] == np.float32(1.0)  # "ccc" is exactly along c


def test_an_unreadable_index_is_rebuilt(tmp_path: Path) -> None:
    path = index_file(tmp_path, "fp")
    path.write_bytes(b"not an npz file")
    embed = LetterCounts()
    update = sync_index(path, *ids_and_texts(CORPUS), embed)
    assert update.embedded == 3 and load_index(path) is not None


def test_top_ranks_by_cosine_best_first_with_ties_by_row() -> None:
    vectors = np.array([[1, 0], [0, 1], [1, 0], [0.6, 0.8]], dtype=np.float32)
    index = PassageIndex(("a", "b", "c", "d"), vectors)
    rows, scores = index.top(np.array([1, 0], dtype=np.float32), 3)
    assert rows == [0, 2, 3] and scores == [1.0, 1.0, np.float32(0.6)]
    assert index.top(np.array([0, 1], dtype=np.float32), 10)[0] == [1, 3, 0, 2]
