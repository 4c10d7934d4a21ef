"""Lexical ranking (BM25, ``bm25s``) and its fusion with the model's ranking.

Hybrid search ranks a query both ways, by the model's cosine and by BM25 over the passages'
words, and fuses the two lists by reciprocal rank (:func:`fuse`): a passage's fused score is
``sum 1 / (RRF_K + rank)`` over the lists it appears in, so one that both rankings place high
comes first, and neither list's score scale matters. It is what the service does by default
because it wins on the real eval set (``benchmarks/bench_hybrid.py`` ->
``benchmarks/results/hybrid.json``); the evaluate and promote stages score the model alone.

The BM25 index is built in memory from the passages when the engine opens (well under a
second for the demo's 3,393 passages), so it can never disagree with the corpus.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

#: Reciprocal-rank fusion's constant: 60, as in Cormack, Clarke & Büttcher (SIGIR 2009),
#: not tuned on the eval set the fusion is judged on.
RRF_K = 60
#: How deep each ranking goes before fusion (and at least ``k``).
FUSION_DEPTH = 100

Ranking = Literal["hybrid", "dense"]
RANKINGS: tuple[Ranking, ...] = get_args(Ranking)
#: The service's default: hybrid won on the real eval set (see the module docstring).
DEFAULT_RANKING: Ranking = "hybrid"


def check_ranking(ranking: str) -> Ranking:
    """``ranking`` as a :data:`Ranking`, or ``ValueError`` naming the choices."""
    for known in RANKINGS:
        if ranking == known:
            return known
    raise ValueError(f"ranking must be one of {', '.join(RANKINGS)}, got {ranking!r}")


def _tokenize(texts: list[str]) -> list[list[str]]:
    import bm25s

    tokens: list[list[str]] = bm25s.tokenize(
        texts, stopwords="en", return_ids=False, show_progress=False
    )
    return tokens


class LexicalIndex:
    """BM25 over the passages (row ``i`` is passage ``i``); read-only once built."""

    def __init__(self, texts: Sequence[str]) -> None:
        import bm25s

        tokens = _tokenize(list(texts))
        self._bm25: bm25s.BM25 | None = None
        if any(tokens):  # bm25s cannot index a corpus without a single word
            self._bm25 = bm25s.BM25()
            self._bm25.index(tokens, show_progress=False)

    def top(self, query: str, depth: int) -> tuple[list[int], list[float]]:
        """Rows and BM25 scores of at most ``depth`` passages sharing a word with ``query``,
        best first (ties by row); none when it has no word beyond stop words."""
        import numpy as np  # here, not at the top: the CLI reads the defaults above

        tokens = _tokenize([query])[0]
        if not tokens or self._bm25 is None:
            return [], []
        scores = np.asarray(self._bm25.get_scores(tokens), dtype=np.float64)
        matching = np.flatnonzero(scores > 0)
        if len(matching) > depth:
            matching = matching[np.argpartition(-scores[matching], depth - 1)[:depth]]
        order = matching[np.lexsort((matching, -scores[matching]))]
        return order.tolist(), scores[order].tolist()


def fuse(rankings: Sequence[Sequence[int]], limit: int) -> tuple[list[int], list[float]]:
    """Reciprocal-rank fusion of ranked row lists: the best ``limit`` rows and their fused
    scores, best first; ties go to the row ranked higher in the first list, then by row."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, row in enumerate(ranking, 1):
            fused[row] = fused.get(row, 0.0) + 1.0 / (RRF_K + rank)
    first = {row: rank for rank, row in enumerate(rankings[0])} if rankings else {}
    order = sorted(fused, key=lambda row: (-fused[row], first.get(row, len(first)), row))
    best = order[:limit]
    return best, [fused[row] for row in best]
