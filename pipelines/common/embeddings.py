"""Sentence embeddings and their on-disk cache, shared by evaluate, promote and search.

:func:`embed_texts` turns texts into a ``float32`` matrix with a sentence-transformers
model, optionally cut to a Matryoshka dimension and L2-normalised (:func:`matryoshka`:
truncation first, then normalisation, because a truncated unit vector is no longer a
unit vector).

:class:`EmbeddingCache` keeps embeddings as ``.npy`` files under ``data/cache/embeddings/``
keyed by :class:`CacheKey` — the model's fingerprint, a hash of the exact texts in order
(:func:`texts_hash`) and the dimension/normalisation — so a corpus is embedded once per
model, whichever stage (evaluate, promote, ``mathembed search``) asks first and however
many runs ask again. Writes are atomic; a cache file that cannot be read (a crash of an
older version, a disk error) counts as a miss and is rewritten. The cache is bounded: it
keeps the embeddings of at most :data:`MAX_CACHED_MODELS` models, evicting the least
recently used (never one the caller names in ``keep``: the champion, the base).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from pipelines.common.io import atomic_output, safe_name

Embeddings = npt.NDArray[np.float32]

#: How many models' embeddings the cache keeps. One nightly run embeds with the candidate,
#: the base and the champion (search with the champion); six leaves room for the previous
#: champion and a challenger too, while bounding the disk: a model holds one matrix per
#: corpus and dimension, ~300 MB for 100k passages at 768 floats.
MAX_CACHED_MODELS = 6


class TextEncoder(Protocol):
    """What :func:`embed_texts` needs of a model: ``SentenceTransformer.encode``."""

    def encode(self, inputs: Any, *args: Any, **kwargs: Any) -> Any: ...


class LazyModel:
    """Loads the model on the first ``encode``, so a model whose embeddings are all
    cached is never loaded (evaluate, promotion and search share this)."""

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
) -> Embeddings:
    """Embed ``texts`` with ``model``: one row per text, ``float32``, cut to ``dim``.

    Raises ``ValueError`` when the model produces NaN or infinite values (a diverged
    training run), naming how many texts were affected, instead of letting a broken
    model reach kNN or the cache.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if not texts:
        return np.zeros((0, dim or 0), dtype=np.float32)
    raw = model.encode(
        list(texts),
        batch_size=batch_size,
        show_progress_bar=progress,
        convert_to_numpy=True,
        normalize_embeddings=False,
    )
    matrix = np.asarray(raw, dtype=np.float32)
    if matrix.shape[0] != len(texts):
        raise ValueError(f"the model returned {matrix.shape[0]} embeddings for {len(texts)} texts")
    bad_rows = int((~np.isfinite(matrix).all(axis=1)).sum())
    if bad_rows:
        raise ValueError(
            f"the model produced NaN or infinite embeddings for {bad_rows} of {len(texts)} "
            "texts; its weights are broken (did training diverge?) — retrain it"
        )
    return matryoshka(matrix, dim, normalize=normalize)


def texts_hash(texts: Sequence[str]) -> str:
    """SHA-256 of ``texts`` in order; length-prefixed, so ``["ab", "c"] != ["a", "bc"]``."""
    digest = hashlib.sha256()
    digest.update(f"{len(texts)}\n".encode())
    for text in texts:
        encoded = text.encode("utf-8")
        digest.update(f"{len(encoded)}:".encode())
        digest.update(encoded)
    return digest.hexdigest()


@dataclass(frozen=True)
class CacheKey:
    """What determines an embedding matrix: the model, the exact texts, dim and norm."""

    model_fingerprint: str
    data_hash: str
    dim: int | None = None
    normalize: bool = False

    def relative_path(self) -> Path:
        dim = "full" if self.dim is None else f"d{self.dim}"
        norm = "norm" if self.normalize else "raw"
        return Path(safe_name(self.model_fingerprint)) / f"{self.data_hash}-{dim}-{norm}.npy"


def models_to_evict(
    last_used: Mapping[str, int], max_models: int, keep: Collection[str]
) -> list[str]:
    """The model folders to delete so that at most ``max_models`` remain, least recently
    used first; a folder in ``keep`` is never one of them (even past the bound)."""
    excess = len(last_used) - max_models
    if excess <= 0:
        return []
    evictable = sorted((used, name) for name, used in last_used.items() if name not in keep)
    return [name for _, name in evictable[:excess]]


class EmbeddingCache:
    """``.npy`` embedding matrices under ``cache_dir``, one file per :class:`CacheKey`.

    ``hits`` and ``misses`` count lookups, so callers (and tests) can see that a second
    run embedded nothing; ``evicted`` counts the model folders a write removed. A model
    folder's modification time is when it was last used (a hit touches it): a write that
    brings the cache past ``max_models`` models evicts the least recently used, never a
    fingerprint in ``keep`` nor the one just written.
    """

    def __init__(
        self,
        cache_dir: Path,
        *,
        max_models: int = MAX_CACHED_MODELS,
        keep: Iterable[str] = (),
    ) -> None:
        if max_models < 1:
            raise ValueError(f"max_models must be at least 1, got {max_models}")
        self.cache_dir = cache_dir
        self.max_models = max_models
        self.keep = frozenset(safe_name(fingerprint) for fingerprint in keep)
        self.hits = 0
        self.misses = 0
        self.evicted = 0

    def path(self, key: CacheKey) -> Path:
        return self.cache_dir / key.relative_path()

    def get(self, key: CacheKey) -> Embeddings | None:
        """The cached matrix, or ``None`` when absent or unreadable."""
        path = self.path(key)
        try:
            matrix = np.load(path, allow_pickle=False)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, EOFError):
            return None  # a damaged file is a miss; get_or_compute rewrites it
        if not isinstance(matrix, np.ndarray) or matrix.ndim != 2 or matrix.dtype != np.float32:
            return None
        embeddings: Embeddings = matrix
        _touch(path.parent)
        return embeddings

    def put(self, key: CacheKey, embeddings: Embeddings) -> Path:
        path = self.path(key)
        with atomic_output(path, "wb") as handle:
            np.save(handle, np.ascontiguousarray(embeddings, dtype=np.float32))
        _touch(path.parent)
        self._evict(also_keep=path.parent.name)
        return path

    def _evict(self, *, also_keep: str) -> None:
        last_used = {}
        for folder in self.cache_dir.iterdir():
            try:
                if folder.is_dir():
                    last_used[folder.name] = folder.stat().st_mtime_ns
            except OSError:  # removed meanwhile by another process's eviction
                continue
        for name in models_to_evict(last_used, self.max_models, self.keep | {also_keep}):
            # Another process may be reading it: it then sees a miss and recomputes.
            shutil.rmtree(self.cache_dir / name, ignore_errors=True)
            self.evicted += 1

    def get_or_compute(self, key: CacheKey, compute: Callable[[], Embeddings]) -> Embeddings:
        """The cached matrix for ``key``; on a miss, ``compute()`` it and store it first."""
        cached = self.get(key)
        if cached is not None:
            self.hits += 1
            return cached
        self.misses += 1
        embeddings = np.ascontiguousarray(compute(), dtype=np.float32)
        self.put(key, embeddings)
        return embeddings


def _touch(folder: Path) -> None:
    """Mark a model folder as just used (its modification time is the LRU clock)."""
    with contextlib.suppress(OSError):  # evicted by another process meanwhile
        os.utime(folder)


def embed_cached(
    model: TextEncoder,
    texts: Sequence[str],
    *,
    model_fingerprint: str,
    cache: EmbeddingCache | None,
    batch_size: int,
    dim: int | None = None,
    normalize: bool = False,
    progress: bool = False,
) -> Embeddings:
    """:func:`embed_texts` through ``cache`` (no cache: always embed)."""

    def compute() -> Embeddings:
        return embed_texts(
            model, texts, batch_size=batch_size, dim=dim, normalize=normalize, progress=progress
        )

    if cache is None:
        return compute()
    key = CacheKey(model_fingerprint, texts_hash(texts), dim, normalize)
    return cache.get_or_compute(key, compute)
