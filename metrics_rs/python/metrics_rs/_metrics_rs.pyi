"""Type stubs for the compiled extension; checked against it by `python -m mypy.stubtest`."""

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

__all__ = ["__version__", "knn", "evaluate", "paired_test", "_panic"]

__version__: str

def knn(
    queries: npt.NDArray[np.float32],
    corpus: npt.NDArray[np.float32],
    k: int,
    *,
    metric: Literal["cosine", "dot"] = "cosine",
    block_size: int | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]: ...
def evaluate(
    ranked_ids: npt.NDArray[np.int64],
    qrels: Sequence[Mapping[int, int]],
    ks: Sequence[int],
    *,
    per_query: bool = False,
    no_relevant: Literal["error", "zero", "skip"] = "error",
    n_docs: int | None = None,
) -> dict[str, Any]: ...
def paired_test(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    method: Literal["randomization", "bootstrap", "t"] = "randomization",
    n_resamples: int = 10000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, float]: ...
def _panic(message: str) -> None: ...
