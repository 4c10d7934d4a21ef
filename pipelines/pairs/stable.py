"""Stable choices: which concepts are held out, which papers unseen, in what order chunks
are taken. Each is a SHA-256 of a name or id, never of the seed or of the rest of the data,
so a held-out concept stays held out and a new chunk slots in without reshuffling the others
as the corpus grows night after night."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

HASH_BUCKETS = 1_000_000


def stable_bucket(text: str) -> int:
    """``sha256(text) mod 10**6``: the same on every machine, run and Python version."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest, "big") % HASH_BUCKETS


def in_stable_fraction(text: str, fraction: float) -> bool:
    return stable_bucket(text) < round(fraction * HASH_BUCKETS)


def held_out_concepts(names: Iterable[str], fraction: float) -> set[str]:
    """The concepts (normalised names) kept out of training for evaluation."""
    return {name for name in names if in_stable_fraction(name, fraction)}


def unseen_papers(paper_ids: Iterable[str], fraction: float) -> set[str]:
    """The papers whose chunks are never training positives."""
    return {paper_id for paper_id in paper_ids if in_stable_fraction(paper_id, fraction)}


def query_id(concept: str) -> str:
    """A query's id, derived from its concept so it is the same on every run."""
    return "q" + hashlib.sha256(concept.encode("utf-8")).hexdigest()[:12]


def stable_digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


def ranked_by_hash(usable: Iterable[tuple[int, str]], salt: str) -> list[str]:
    """Chunk ids, strongest evidence first, then in an order given by a hash of salt and id.

    Hash order rather than input order: deterministic, and a new chunk slots in without
    reshuffling the others, so most pairs stay the same from one nightly run to the next.
    """
    return [
        chunk_id
        for _rank, _hash, chunk_id in sorted(
            (rank, stable_digest(f"{salt}:{chunk_id}"), chunk_id) for rank, chunk_id in usable
        )
    ]


def rotated_window(ranked: list[str], salt: str, limit: int) -> list[str]:
    """``limit`` consecutive items of ``ranked`` from a start that a hash of ``salt`` picks.

    Each neighbour of a concept gets a different window of its chunks, so edge pairs are
    spread over the chunks instead of all reusing the top few.
    """
    if len(ranked) <= limit:
        return list(ranked)
    start = stable_bucket(salt) % len(ranked)
    return [ranked[(start + offset) % len(ranked)] for offset in range(limit)]
