"""Type stubs for the compiled extension; checked against it by `python -m mypy.stubtest`.

The structured results are TypedDicts (``Evaluation``, ``PairedTest``): a caller reads
``result["means"]["mrr@10"]`` or ``result["p_value"]`` and the type checker knows what it gets.
"""

from collections.abc import Mapping, Sequence
from typing import Literal, TypedDict, type_check_only

import numpy as np
import numpy.typing as npt
from typing_extensions import NotRequired

__all__ = ["__version__", "knn", "evaluate", "paired_test", "_panic"]

__version__: str

@type_check_only
class Evaluation(TypedDict):
    """What :func:`evaluate` returns."""

    #: The mean of each metric over the evaluated queries, keyed ``"<family>@<k>"``
    #: (``"mrr@10"``, ``"ndcg@5"``...; families mrr, ndcg, recall, precision, map, hit).
    means: dict[str, float]
    #: Queries in the means (all of them, unless ``no_relevant="skip"`` left some out).
    n_queries: int
    #: Queries left out by ``no_relevant="skip"``.
    n_skipped: int
    #: Only with ``per_query=True``: each metric's value per query row, ``float64[n_q]``
    #: aligned with the rows of ``ranked_ids`` (NaN for a skipped query).
    per_query: NotRequired[dict[str, npt.NDArray[np.float64]]]

@type_check_only
class PairedTest(TypedDict):
    """What :func:`paired_test` returns."""

    #: mean(a - b).
    delta: float
    #: Two-sided p-value of mean(a - b) = 0.
    p_value: float
    #: The confidence interval of ``delta`` at ``confidence``.
    ci_low: float
    ci_high: float

def knn(
    queries: npt.NDArray[np.float32],
    corpus: npt.NDArray[np.float32],
    k: int,
    *,
    metric: Literal["cosine", "dot"] = "cosine",
    block_size: int | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """Exact top-``k`` corpus rows for every query row: ``(ids int64[n_q, k], scores
    float32[n_q, k])``.

    Ties are broken by score descending, then corpus index ascending. The score matrix is
    computed ``block_size`` corpus rows (default 2048) per worker thread at a time, never
    whole. With ``metric="cosine"`` a zero vector has cosine 0 with everything. Embeddings
    must be ``float32`` (``float64`` is a ``TypeError``, not silently rounded); NaN or inf
    is a ``ValueError``.
    """

def evaluate(
    ranked_ids: npt.NDArray[np.int64],
    qrels: Sequence[Mapping[int, int]],
    ks: Sequence[int],
    *,
    per_query: bool = False,
    no_relevant: Literal["error", "zero", "skip"] = "error",
    n_docs: int | None = None,
) -> Evaluation:
    """IR metrics of ``ranked_ids`` (one ranking per row, as :func:`knn` returns) at every
    ``k`` in ``ks``, with trec_eval's definitions: ``mrr@k``, ``ndcg@k`` (gain = grade,
    ideal DCG from all judged documents), ``recall@k``, ``precision@k`` (divides by k),
    ``map@k`` (divides by the number of relevant documents) and ``hit@k``.

    ``qrels[i]`` maps a document id to its integer grade for row ``i`` (>= 1 relevant,
    0 judged non-relevant). A query with no relevant document is an error by default;
    ``no_relevant="zero"`` scores it 0, ``"skip"`` leaves it out of the means. ``n_docs``
    bounds every document id. Duplicate ids within a ranking are an error. Returns an
    :class:`Evaluation`.
    """

def paired_test(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    method: Literal["randomization", "bootstrap", "t"] = "randomization",
    n_resamples: int = 10000,
    seed: int = 0,
    confidence: float = 0.95,
) -> PairedTest:
    """Two-sided test of mean(a - b) = 0 on two systems' per-query scores (same queries,
    same order).

    ``randomization`` is Fisher's sign-flip test (exact when 2**n <= n_resamples, else
    Monte Carlo with p = (hits + 1) / (n_resamples + 1)); ``bootstrap`` resamples the
    centred differences; ``t`` is the paired t-test. ``ci_low``/``ci_high``: Student-t
    interval for ``t``, percentile bootstrap otherwise. Returns a :class:`PairedTest`.
    """

def _panic(message: str) -> None:
    """Panics in Rust on purpose: a panic reaches Python as ``RuntimeError``."""
