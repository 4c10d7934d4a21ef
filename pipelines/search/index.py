"""The persistent passage index: one model's unit-length embeddings of the corpus.

One ``.npz`` per model fingerprint under ``data/search_index/`` holds, row by row, each
passage's key (its chunk id and a hash of its text) and embedding. Opening the index for
the current corpus (:func:`sync_index`) keeps the rows whose key is still there, embeds
only the passages it has not seen (a new chunk, or an old one whose text changed), drops
the passages that left the corpus, and writes the file back only when something changed:
a restart of the service, or a night that added a few papers, costs a few embeddings at
most rather than the whole corpus.
"""

from __future__ import annotations

import hashlib
import io as bytes_io
import logging
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pipelines.common import io
from pipelines.common.embeddings import matryoshka
from pipelines.common.paths import Paths

log = logging.getLogger(__name__)

Vectors = npt.NDArray[np.float32]
#: Embeds texts (one row per text); called only with the texts the index lacks.
Embed = Callable[[list[str]], npt.NDArray[np.float32]]


def index_dir(paths: Paths) -> Path:
    """Where the indexes live: kept across runs, rebuilt when lost, not a DVC output."""
    return paths.root / "data" / "search_index"


def index_file(folder: Path, fingerprint: str) -> Path:
    return folder / f"{io.safe_name(fingerprint)}.npz"


def passage_key(chunk_id: str, text: str) -> str:
    """A passage as the index knows it: an edited text is a new passage."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return f"{chunk_id}\t{digest}"


@dataclass(frozen=True)
class PassageIndex:
    """``vectors[i]`` is the unit-length embedding of the passage ``keys[i]``."""

    keys: tuple[str, ...]
    vectors: Vectors

    def top(self, query_vector: Vectors, k: int) -> tuple[list[int], list[float]]:
        """Rows and cosine scores of the ``k`` passages closest to a unit query, best first
        (ties by row): one matrix-vector product, cheap for one query and 10^4 rows."""
        scores = self.vectors @ query_vector.reshape(-1)
        k = min(k, len(scores))
        best = np.argpartition(-scores, k - 1)[:k]
        order = best[np.lexsort((best, -scores[best]))]
        return order.tolist(), scores[order].astype(float).tolist()


@dataclass(frozen=True)
class IndexUpdate:
    """The index for the corpus now, and what opening it cost."""

    index: PassageIndex
    embedded: int  # passages embedded now
    reused: int  # passages taken from the stored index
    dropped: int  # stored passages no longer in the corpus


def update_index(
    stored: PassageIndex | None, keys: Sequence[str], texts: Sequence[str], embed: Embed
) -> IndexUpdate:
    """The index of ``keys`` (in this order): stored rows reused, only the others embedded."""
    if len(keys) != len(texts):
        raise ValueError(f"{len(keys)} keys for {len(texts)} texts")
    known = {key: row for row, key in enumerate(stored.keys)} if stored is not None else {}
    missing = [row for row, key in enumerate(keys) if key not in known]
    fresh = embed([texts[row] for row in missing]) if missing else None
    if fresh is not None and fresh.shape[0] != len(missing):
        raise ValueError(f"the model returned {fresh.shape[0]} embeddings for {len(missing)}")
    width = fresh.shape[1] if fresh is not None else stored.vectors.shape[1] if stored else 0
    vectors = np.zeros((len(keys), width), dtype=np.float32)
    if fresh is not None:
        vectors[missing] = matryoshka(fresh, None, normalize=True)
    reused = [(row, known[key]) for row, key in enumerate(keys) if key in known]
    if reused and stored is not None:
        rows, stored_rows = zip(*reused, strict=True)
        vectors[list(rows)] = stored.vectors[list(stored_rows)]
    dropped = len(set(known) - set(keys))
    return IndexUpdate(PassageIndex(tuple(keys), vectors), len(missing), len(reused), dropped)


def load_index(path: Path) -> PassageIndex | None:
    """The stored index, or ``None`` when there is none or it cannot be read (rebuilt)."""
    if not path.is_file():
        return None
    try:
        # The handle is ours: np.load leaves its own open when the file is not a zip.
        with path.open("rb") as handle, np.load(handle, allow_pickle=False) as stored:
            keys = tuple(str(key) for key in stored["keys"])
            vectors = stored["vectors"].astype(np.float32, copy=False)
    # A truncated or damaged file (a full disk, a copy cut short) is a BadZipFile or an
    # EOFError, neither an OSError: the index is only a cache, so it is rebuilt.
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
        log.warning("search index %s is unreadable (%s); rebuilding it", path, error)
        return None
    if vectors.ndim != 2 or vectors.shape[0] != len(keys):
        log.warning("search index %s is inconsistent; rebuilding it", path)
        return None
    return PassageIndex(keys, vectors)


def save_index(path: Path, index: PassageIndex) -> None:
    buffer = bytes_io.BytesIO()
    np.savez(buffer, keys=np.array(index.keys, dtype=np.str_), vectors=index.vectors)
    io.write_bytes(path, buffer.getvalue())


def sync_index(
    path: Path, chunk_ids: Sequence[str], texts: Sequence[str], embed: Embed
) -> IndexUpdate:
    """Open the index at ``path`` for this corpus, embedding and saving only what changed."""
    keys = [passage_key(chunk_id, text) for chunk_id, text in zip(chunk_ids, texts, strict=True)]
    stored = load_index(path)
    update = update_index(stored, keys, texts, embed)
    if stored is None or stored.keys != update.index.keys:  # embedded or dropped: new keys
        save_index(path, update.index)
    log.info(
        "search index %s: %d passages (%d embedded now, %d reused, %d dropped)",
        path.name,
        len(keys),
        update.embedded,
        update.reused,
        update.dropped,
    )
    return update
