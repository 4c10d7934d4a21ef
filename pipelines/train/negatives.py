"""Hard negatives mined with the base model (``train.mined_negatives``): for each training
pair, the passage of the training pool the base model ranks highest for the anchor that
is not relevant to it, in place of the pairs stage's negative.

* **Pool**: the training split's passages, ``positive`` and ``negative`` columns (the
  validation split stays unseen).
* **Not relevant**: never a positive of the same anchor or of the same concept (a concept
  has several anchors: its name, a slogan...), never the anchor itself.
* **Not a false negative**: a passage scoring above the positive's score less
  ``train.mined_negative_margin`` of it (0.05: above 95 % of it) may be as relevant as the
  positive, unlabelled; it is skipped (NV-Retriever's "TopK-PercPos"). A pair left with no
  candidate keeps the negative it had, and the count says how many.

Sentence-transformers' ``util.mine_hard_negatives`` does the same ranking but drops pairs
without a candidate, reorders the rest and keys its embedding cache by the model's name,
not its weights; the selection here is a few lines of NumPy (:func:`choose_negatives`),
pure and tested on its own.

The mined negatives are cached under ``data/cache/negatives/`` per base-model fingerprint
(:func:`pipelines.retrieval.models.base_model_fingerprint`: files, pooling, sequence length)
and pairs-file hash and margin, so a night, and every rerun of it, embeds the pool once.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from pipelines.common import io
from pipelines.common.config import TrainParams
from pipelines.retrieval.embeddings import embed_texts, format_duration
from pipelines.retrieval.models import base_model_fingerprint

if TYPE_CHECKING:
    from pipelines.retrieval.embeddings import TextEncoder

logger = logging.getLogger(__name__)

#: Bumped when the selection changes, so an older cache entry is not taken for a new one.
MINING_VERSION = 1
#: Anchors scored against the pool per block: bounds the score matrix (rows x pool floats).
ROWS_PER_BLOCK = 512
#: Cache entries kept (each night's pairs differ; a few let `dvc exp run`s alternate).
MAX_CACHE_ENTRIES = 8
NO_NEGATIVE = -1


@dataclass(frozen=True)
class MinedNegatives:
    """The pairs with their new negatives, and what mining did."""

    pairs: pd.DataFrame
    mined: int
    kept: int  # pairs with no candidate past the guard: their own negative stays
    cache_hit: bool
    cache_file: Path
    margin: float

    def summary(self) -> dict[str, Any]:
        """What ``metrics/train.json`` says of it."""
        return {
            "mined": self.mined,
            "kept_own": self.kept,
            "margin": self.margin,
            "cache_hit": self.cache_hit,
        }


# -- pure helpers -------------------------------------------------------------------------


def excluded_passages(pairs: pd.DataFrame, pool_index: dict[str, int]) -> list[set[int]]:
    """For each pair, the pool indices it must never get as a negative: the positives of
    every pair with the same anchor or the same concept, and the anchor's own text."""
    by_anchor: defaultdict[str, set[int]] = defaultdict(set)
    by_concept: defaultdict[str, set[int]] = defaultdict(set)
    concepts = pairs["concept"] if "concept" in pairs.columns else pairs["anchor"]
    for anchor, concept, positive in zip(pairs["anchor"], concepts, pairs["positive"], strict=True):
        by_anchor[anchor].add(pool_index[positive])
        by_concept[concept].add(pool_index[positive])
    return [
        by_anchor[anchor]
        | by_concept[concept]
        | ({pool_index[anchor]} if anchor in pool_index else set())
        for anchor, concept in zip(pairs["anchor"], concepts, strict=True)
    ]


def choose_negatives(
    scores: npt.NDArray[np.float32],
    positive_scores: npt.NDArray[np.float32],
    excluded: list[set[int]],
    margin: float,
) -> npt.NDArray[np.intp]:
    """Per row of ``scores`` (anchors x pool), the pool index of the highest-scoring passage
    that is not ``excluded`` and scores at most ``positive - |positive| * margin``;
    :data:`NO_NEGATIVE` when none does."""
    allowed = scores.astype(np.float32, copy=True)
    ceiling = positive_scores - np.abs(positive_scores) * margin
    allowed[allowed > ceiling[:, None]] = -np.inf
    for row, indices in enumerate(excluded):
        allowed[row, list(indices)] = -np.inf
    best = np.argmax(allowed, axis=1)
    found = np.isfinite(allowed[np.arange(len(best)), best])
    return np.where(found, best, NO_NEGATIVE)


def cache_file(cache_dir: Path, fingerprint: str, pairs_hash: str, margin: float) -> Path:
    return (
        cache_dir
        / io.safe_name(fingerprint)
        / f"{pairs_hash}-margin{margin:g}-v{MINING_VERSION}.parquet"
    )


# -- mining -------------------------------------------------------------------------------


def mine_training_negatives(
    model: TextEncoder,
    pairs: pd.DataFrame,
    *,
    params: TrainParams,
    cache_dir: Path,
    pairs_hash: str,
    miner_fingerprint: str | None = None,
) -> MinedNegatives:
    """The whole pairs table with the training split's negatives mined by ``model`` (the
    base model ``params`` name, not yet trained, or the champion a warm start starts from:
    ``miner_fingerprint``, its cache key); the validation split as it was."""
    fingerprint = miner_fingerprint or base_model_fingerprint(
        params.base_model, pooling=params.pooling, max_seq_length=params.max_seq_length
    )
    table = pairs if "negative" in pairs.columns else pairs.assign(negative="")
    training = table["split"] == "train"
    mined = mine_negatives(
        model,
        table.loc[training].reset_index(drop=True),
        fingerprint=fingerprint,
        pairs_hash=pairs_hash,
        margin=params.mined_negative_margin,
        cache_dir=cache_dir,
        batch_size=params.batch_size,
    )
    table = table.copy()
    table.loc[training, "negative"] = mined.pairs["negative"].to_numpy()
    logger.info(
        "train: %d of %d training pairs got a negative mined with the base model (%d kept "
        "their own: no passage below %g of the positive's score)%s",
        mined.mined,
        len(mined.pairs),
        mined.kept,
        1 - params.mined_negative_margin,
        " [cached]" if mined.cache_hit else "",
    )
    return dataclasses.replace(mined, pairs=table)


def mine_negatives(
    model: TextEncoder,
    pairs: pd.DataFrame,
    *,
    fingerprint: str,
    pairs_hash: str,
    margin: float,
    cache_dir: Path,
    batch_size: int,
) -> MinedNegatives:
    """``pairs`` (the training split: ``anchor``, ``positive``, ``concept``, ``negative``)
    with ``negative`` replaced by the mined one where a candidate passed the guard.

    ``fingerprint`` names ``model`` and ``pairs_hash`` the pairs file: together with
    ``margin`` they key the cache, read before ``model`` is asked for anything.
    """
    path = cache_file(cache_dir, fingerprint, pairs_hash, margin)
    cached = _read_cache(path, len(pairs))
    if cached is None:
        started = time.perf_counter()
        mined_texts = _mine(model, pairs, margin=margin, batch_size=batch_size)
        io.write_parquet(path, pd.DataFrame({"negative": mined_texts}))
        _evict_old_entries(cache_dir, keep=path)
        logger.info(
            "train: mined hard negatives with the base model in %s (cached in %s)",
            format_duration(time.perf_counter() - started),
            path,
        )
    else:
        mined_texts = cached
    own = pairs["negative"] if "negative" in pairs.columns else pd.Series([""] * len(pairs))
    negatives = [
        mined or str(previous) for mined, previous in zip(mined_texts, own.tolist(), strict=True)
    ]
    mined = sum(1 for text in mined_texts if text)
    return MinedNegatives(
        pairs=pairs.assign(negative=negatives),
        mined=mined,
        kept=len(pairs) - mined,
        cache_hit=cached is not None,
        cache_file=path,
        margin=margin,
    )


def _mine(model: TextEncoder, pairs: pd.DataFrame, *, margin: float, batch_size: int) -> list[str]:
    columns = [column for column in ("positive", "negative") if column in pairs.columns]
    pool = list(dict.fromkeys(text for column in columns for text in pairs[column] if text))
    pool_index = {text: index for index, text in enumerate(pool)}
    anchors = list(dict.fromkeys(pairs["anchor"]))
    anchor_index = {text: index for index, text in enumerate(anchors)}

    def embed(texts: list[str], label: str) -> npt.NDArray[np.float32]:
        return embed_texts(
            model, texts, batch_size=batch_size, dim=None, normalize=True, label=label
        )

    pool_vectors = embed(pool, "training passages")
    anchor_vectors = embed(anchors, "training anchors")[[anchor_index[a] for a in pairs["anchor"]]]
    positive_index = np.array([pool_index[text] for text in pairs["positive"]])
    excluded = excluded_passages(pairs, pool_index)
    chosen: list[int] = []
    for start in range(0, len(pairs), ROWS_PER_BLOCK):
        rows = slice(start, start + ROWS_PER_BLOCK)
        scores = anchor_vectors[rows] @ pool_vectors.T
        positive_scores = scores[np.arange(scores.shape[0]), positive_index[rows]]
        chosen.extend(choose_negatives(scores, positive_scores, excluded[rows], margin).tolist())
    return [pool[index] if index != NO_NEGATIVE else "" for index in chosen]


def _read_cache(path: Path, n_pairs: int) -> list[str] | None:
    """The cached negatives, or ``None`` when absent, unreadable or not for ``n_pairs``."""
    try:
        frame = io.read_parquet(path)
    except (OSError, ValueError):
        return None
    if "negative" not in frame.columns or len(frame) != n_pairs:
        return None
    return [str(text) for text in frame["negative"]]


def _evict_old_entries(cache_dir: Path, *, keep: Path) -> None:
    """At most :data:`MAX_CACHE_ENTRIES` files, the least recently written removed first."""
    entries = sorted(
        (path for path in cache_dir.glob("*/*.parquet") if path != keep),
        key=lambda path: path.stat().st_mtime_ns,
    )
    for path in entries[: max(0, len(entries) + 1 - MAX_CACHE_ENTRIES)]:
        path.unlink(missing_ok=True)
