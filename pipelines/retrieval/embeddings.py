"""Sentence embeddings, shared by evaluate, promote and search.

:func:`embed_texts` turns texts into a ``float32`` matrix with a sentence-transformers
model, optionally cut to a Matryoshka dimension and L2-normalised (:func:`matryoshka`:
truncation first, then normalisation, because a truncated unit vector is no longer a
unit vector). A large set is embedded a chunk at a time, longest texts first (the order
``encode`` batches them in anyway), so its progress is logged between chunks
(:class:`EmbeddingProgress`: "embedded 1,024/3,393 passages (30 %), ~12 s left"), not only
drawn as a bar on a terminal.

Where embeddings are kept between runs, one vector per passage and model, is
:mod:`pipelines.retrieval.vector_store`.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

Embeddings = npt.NDArray[np.float32]

logger = logging.getLogger(__name__)

#: Batches per ``encode`` call when a set is embedded in chunks: large enough that the model
#: stays busy, small enough that progress is heard of every few seconds on a CPU.
BATCHES_PER_CHUNK = 8
#: A progress line at least every this share of the texts, or after this many seconds.
PROGRESS_SHARE = 0.1
PROGRESS_SECONDS = 10.0


class TextEncoder(Protocol):
    """What :func:`embed_texts` needs of a model: ``SentenceTransformer.encode``."""

    def encode(self, inputs: Any, *args: Any, **kwargs: Any) -> Any: ...


class LazyModel:
    """Loads the model on the first ``encode``, so a model whose embeddings are all
    stored is never loaded (evaluate, promotion and search share this)."""

    def __init__(self, load: Callable[[], TextEncoder]) -> None:
        self._load = load
        self._model: TextEncoder | None = None

    def encode(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        if self._model is None:
            self._model = self._load()
        return self._model.encode(inputs, *args, **kwargs)


def matryoshka(embeddings: npt.ArrayLike, dim: int | None, *, normalize: bool) -> Embeddings:
    """The first ``dim`` columns of ``embeddings`` (all when ``None``), L2-normalised if asked.

    A zero row stays zero rather than becoming NaN.
    """
    matrix = np.asarray(embeddings, dtype=np.float32)
    if matrix.ndim != 2:
        raise ValueError(f"embeddings must be a 2-D matrix, got shape {matrix.shape}")
    if dim is not None:
        if not 1 <= dim <= matrix.shape[1]:
            raise ValueError(
                f"dimension {dim} is outside 1..{matrix.shape[1]} (the model's full dimension)"
            )
        matrix = matrix[:, :dim]
    if normalize:
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix = (matrix / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    return np.ascontiguousarray(matrix, dtype=np.float32)


def embed_texts(
    model: TextEncoder,
    texts: Sequence[str],
    *,
    batch_size: int,
    dim: int | None,
    normalize: bool,
    progress: bool = False,
    label: str = "texts",
) -> Embeddings:
    """Embed ``texts`` with ``model``: one row per text, ``float32``, cut to ``dim``.

    More texts than one chunk (:data:`BATCHES_PER_CHUNK` batches) are embedded chunk by
    chunk, longest first, with progress logged (``label`` names them: "passages"); a bar
    is drawn too when ``progress`` and stderr is a terminal. Raises ``ValueError`` when
    the model produces NaN or infinite values (a diverged training run), naming how many
    texts were affected, instead of letting a broken model reach kNN or the store.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if not texts:
        return np.zeros((0, dim or 0), dtype=np.float32)
    matrix = _encode_in_chunks(model, list(texts), batch_size, progress=progress, label=label)
    bad_rows = int((~np.isfinite(matrix).all(axis=1)).sum())
    if bad_rows:
        raise ValueError(
            f"the model produced NaN or infinite embeddings for {bad_rows} of {len(texts)} "
            "texts; its weights are broken (did training diverge?) — retrain it"
        )
    return matryoshka(matrix, dim, normalize=normalize)


def length_order(texts: Sequence[str]) -> npt.NDArray[np.intp]:
    """Indices of ``texts``, longest first (ties in input order): ``encode``'s own batching
    order, so chunking keeps the batches (and their padding) one call would have made."""
    return np.argsort([-len(text) for text in texts], kind="stable")


def chunk_bounds(total: int, chunk_size: int) -> list[tuple[int, int]]:
    """``[start, end)`` of consecutive chunks of at most ``chunk_size`` covering ``total``."""
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    return [(start, min(start + chunk_size, total)) for start in range(0, total, chunk_size)]


def _encode_in_chunks(
    model: TextEncoder, texts: list[str], batch_size: int, *, progress: bool, label: str
) -> npt.NDArray[np.float32]:
    chunk_size = batch_size * BATCHES_PER_CHUNK
    if len(texts) <= chunk_size:  # small: one call, nothing worth reporting
        return _encode(model, texts, batch_size, show_bar=progress and sys.stderr.isatty())
    from tqdm import tqdm  # type: ignore[import-untyped]  # no stubs pinned (types-tqdm)

    order = length_order(texts)
    ordered = [texts[index] for index in order]
    tracker = EmbeddingProgress(len(texts), label)
    parts = []
    with tqdm(
        total=len(texts),
        desc=f"embedding {label}",
        unit=" texts",
        disable=not (progress and sys.stderr.isatty()),
    ) as bar:
        for start, end in chunk_bounds(len(texts), chunk_size):
            parts.append(_encode(model, ordered[start:end], batch_size, show_bar=False))
            bar.update(end - start)
            line = tracker.advance(end - start)
            if line:
                logger.info("%s", line)
    matrix = np.empty((len(texts), parts[0].shape[1]), dtype=np.float32)
    matrix[order] = np.concatenate(parts)
    return matrix


def _encode(
    model: TextEncoder, texts: list[str], batch_size: int, *, show_bar: bool
) -> npt.NDArray[np.float32]:
    raw = model.encode(
        texts,
        batch_size=batch_size,
        show_progress_bar=show_bar,
        convert_to_numpy=True,
        normalize_embeddings=False,
    )
    matrix = np.asarray(raw, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != len(texts):
        raise ValueError(
            f"the model returned embeddings of shape {matrix.shape} for {len(texts)} texts"
        )
    return matrix


# --------------------------------------------------------------------------- progress


def format_duration(seconds: float) -> str:
    """``"42 s"``, ``"3 min 05 s"``, ``"1 h 02 min"``: what a person reads in a log line."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def time_left(done: int, total: int, elapsed: float) -> float | None:
    """Seconds left at the rate so far; ``None`` before anything is done."""
    if done <= 0 or elapsed <= 0:
        return None
    return elapsed * (total - done) / done


def progress_due(done: int, total: int, last_done: int, seconds_since_last: float) -> bool:
    """Whether a progress line is due: the end, another :data:`PROGRESS_SHARE` of the
    texts, or :data:`PROGRESS_SECONDS` since the last line."""
    return (
        done >= total
        or done - last_done >= PROGRESS_SHARE * total
        or seconds_since_last >= PROGRESS_SECONDS
    )


def embedding_progress_line(done: int, total: int, elapsed: float, label: str) -> str:
    """``"embedded 1,024/3,393 passages (30 %), ~12 s left"``; the total and rate at the end."""
    if done >= total:
        rate = f", {total / elapsed:,.0f} per second" if elapsed > 0 else ""
        return f"embedded {total:,} {label} in {format_duration(elapsed)}{rate}"
    left = time_left(done, total, elapsed)
    estimate = f", ~{format_duration(left)} left" if left is not None else ""
    return f"embedded {done:,}/{total:,} {label} ({100 * done // total} %){estimate}"


@dataclass
class EmbeddingProgress:
    """Counts embedded texts and says when a progress line is due (and what it says)."""

    total: int
    label: str
    clock: Callable[[], float] = time.monotonic
    done: int = 0
    started: float = field(init=False)
    _last_done: int = field(init=False, default=0)
    _last_time: float = field(init=False)

    def __post_init__(self) -> None:
        self.started = self._last_time = self.clock()

    def advance(self, count: int) -> str | None:
        """Record ``count`` more texts; the line to log when one is due, else ``None``."""
        self.done += count
        now = self.clock()
        if not progress_due(self.done, self.total, self._last_done, now - self._last_time):
            return None
        self._last_done, self._last_time = self.done, now
        return embedding_progress_line(self.done, self.total, now - self.started, self.label)
