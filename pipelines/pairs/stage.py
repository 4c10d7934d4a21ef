"""The ``pairs`` stage: knowledge graph + passages -> contrastive training pairs and the eval set.

Training pairs (``data/training/pairs.parquet``), one ``(anchor, positive)`` each:

* ``name``: a concept's display name -> a chunk that mentions it; ``description``: its
  description -> the same chunks. At most ``max_chunks_per_concept`` chunks per concept:
  the strongest evidence first (the chunk holding its definition, then its statement, a
  keyword, plain text), then by a hash of ``seed``, concept and chunk id — deterministic,
  and a new chunk does not reshuffle the others.
* ``edge``: the name of one end of an edge -> chunks of the other end, at most
  ``max_edge_pairs`` per direction: consecutive chunks of the other end's order above,
  from a start a hash of the edge picks, so its neighbours get different chunks.
* ``statement``: a named statement's concept name ("Rogers–Ramanujan identities",
  "Bailey's lemma") -> the statement's text.

Duplicates (same anchor and positive text) are kept once, the first in the order above.
The train/validation split is by concept (``validation_fraction``, hashed with ``seed``):
all pairs anchored at one concept fall on one side, so no pair, and no anchor, is in both.

No leakage, stable across nightly runs: a concept is *held out* when
``sha256(name) mod 10**6 < held_out_fraction * 10**6`` (``name`` = the normalised key),
and a paper is *unseen* when ``sha256(paper_id) mod 10**6 < unseen_paper_fraction *
10**6`` — neither depends on the seed or on the rest of the data, so a concept or paper
that is held out stays held out as the corpus grows. A held-out concept's name, aliases
and description never appear as an anchor (checked on the output, whatever built the
pair), and edges touching it are dropped. Unseen papers' chunks and statements are never
positives.

Evaluation (``data/eval/``): one query per held-out concept with at least ``min_degree``
papers and at least one relevant chunk, its text the display name. Its qrels (grade 1)
depend on ``qrels_scope``:

* ``unnamed`` (the default): the chunks of the concept's papers that do *not* name it —
  no surface form of its name or of any alias the graph knows (:func:`chunks_naming`, the
  graph's own matcher). These passages speak of the concept through notation, other
  names, its description or its neighbours, so finding them is the semantic retrieval an
  embedding model is for ("Rogers–Ramanujan identities" should find a passage on Bailey's
  lemma and q-series that never says the phrase); a passage that does name it is found by
  string matching, which every general model already does (the base model scored
  MRR@10 = 1.0 on the "papers" scope of the sample corpus, leaving nothing to improve).
  A chunk that names the concept stays in the corpus as a non-relevant passage for that
  query: the eval asks for the passages the phrase does not give away.
* ``papers``: every chunk of the concept's papers, named or not.
* ``mentions``: only the chunks the graph found mentioning it (name, alias, keyword,
  definition or statement) — a ground truth that rewards exact string matching.

A held-out concept whose scope leaves no relevant chunk gets no query (counted in
``held_out_without_relevant``). Every qrel row says whether its chunk's paper is unseen,
so the evaluation reports seen and unseen papers separately.

:func:`build_pairs` is pure; :func:`run_pairs` reads ``data/processed`` and ``data/graph``
and writes the three tables atomically plus ``metrics/data.json``.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from pipelines.common import io
from pipelines.common.config import PairsParams
from pipelines.common.names import (
    SurfaceMatcher,
    match_form,
    normalise_name,
    statement_concept_name,
)
from pipelines.common.paths import Paths
from pipelines.common.tables import (
    EVIDENCE_ORDER,
    PAIR_KINDS,
    PAIRS_SCHEMA,
    QRELS_SCHEMA,
    QUERIES_SCHEMA,
    SPLITS,
    TABLES,
    write_table,
)

PAIR_COLUMNS = PAIRS_SCHEMA.names
QUERY_COLUMNS = QUERIES_SCHEMA.names
QREL_COLUMNS = QRELS_SCHEMA.names
HASH_BUCKETS = 1_000_000

REQUIRED_COLUMNS = {
    "papers": ["paper_id"],
    "chunks": ["chunk_id", "paper_id", "text"],
    "statements": ["statement_id", "paper_id", "kind", "name", "text"],
    "concepts": ["name", "display_name", "description", "aliases", "papers"],
    "edges": ["source", "target", "relation"],
    "mentions": ["concept", "chunk_id", "paper_id", "evidence"],
}


# -- stable choices -------------------------------------------------------------------


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


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


def _ranked(usable: Iterable[tuple[int, str]], salt: str) -> list[str]:
    """Chunk ids, strongest evidence first, then in an order given by a hash of salt and id.

    Hash order rather than input order: deterministic, and a new chunk slots in without
    reshuffling the others, so most pairs stay the same from one nightly run to the next.
    """
    return [
        chunk_id
        for _rank, _hash, chunk_id in sorted(
            (rank, _digest(f"{salt}:{chunk_id}"), chunk_id) for rank, chunk_id in usable
        )
    ]


def _rotated(ranked: list[str], salt: str, limit: int) -> list[str]:
    """``limit`` consecutive items of ``ranked`` from a start that a hash of ``salt`` picks.

    Each neighbour of a concept gets a different window of its chunks, so edge pairs are
    spread over the chunks instead of all reusing the top few.
    """
    if len(ranked) <= limit:
        return list(ranked)
    start = stable_bucket(salt) % len(ranked)
    return [ranked[(start + offset) % len(ranked)] for offset in range(limit)]


# -- the pairs ------------------------------------------------------------------------


@dataclass(frozen=True)
class PairsResult:
    pairs: pd.DataFrame
    queries: pd.DataFrame
    qrels: pd.DataFrame
    counts: dict[str, Any]
    held_out: frozenset[str]
    unseen_papers: frozenset[str]


def build_pairs(
    *,
    papers: pd.DataFrame,
    chunks: pd.DataFrame,
    statements: pd.DataFrame,
    concepts: pd.DataFrame,
    edges: pd.DataFrame,
    mentions: pd.DataFrame,
    params: PairsParams,
) -> PairsResult:
    """Training pairs, evaluation queries and qrels, and the counts for ``data.json``."""
    names = concepts["name"].tolist()
    display = dict(zip(names, concepts["display_name"].tolist(), strict=True))
    description = dict(zip(names, concepts["description"].tolist(), strict=True))
    aliases = {name: list(values) for name, values in zip(names, concepts["aliases"], strict=True)}
    papers_of = {name: list(values) for name, values in zip(names, concepts["papers"], strict=True)}

    held_out = held_out_concepts(names, params.held_out_fraction)
    unseen = unseen_papers(papers["paper_id"].tolist(), params.unseen_paper_fraction)
    forbidden_keys, forbidden_texts = _forbidden_anchors(held_out, display, description, aliases)

    chunk_ids = chunks["chunk_id"].tolist()
    chunk_text = dict(zip(chunk_ids, chunks["text"].tolist(), strict=True))
    chunk_paper = dict(zip(chunk_ids, chunks["paper_id"].tolist(), strict=True))
    evidence_rank = {evidence: rank for rank, evidence in enumerate(EVIDENCE_ORDER)}
    usable: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for concept, chunk_id, evidence in zip(
        mentions["concept"].tolist(),
        mentions["chunk_id"].tolist(),
        mentions["evidence"].tolist(),
        strict=True,
    ):
        if chunk_id in chunk_paper and chunk_paper[chunk_id] not in unseen:
            usable[concept].append((evidence_rank.get(evidence, len(EVIDENCE_ORDER)), chunk_id))
    ranked = {
        concept: _ranked(found, f"{params.seed}:{concept}") for concept, found in usable.items()
    }

    # (anchor, positive, kind, concept, positive_id), in priority order for de-duplication.
    candidates: list[tuple[str, str, str, str, str]] = []
    for name in sorted(display):
        if name in held_out:
            continue
        for chunk_id in ranked.get(name, [])[: params.max_chunks_per_concept]:
            candidates.append((display[name], chunk_text[chunk_id], "name", name, chunk_id))
            if description[name]:
                candidates.append(
                    (description[name], chunk_text[chunk_id], "description", name, chunk_id)
                )

    edges_used = 0
    edges_dropped_held_out = 0
    edges_dropped_unknown = 0
    for source, target in zip(edges["source"].tolist(), edges["target"].tolist(), strict=True):
        if source in held_out or target in held_out:
            edges_dropped_held_out += 1
            continue
        if source not in display or target not in display:
            edges_dropped_unknown += 1  # the graph stage never writes one; counted if it did
            continue
        edges_used += 1
        for anchor_end, other_end in ((source, target), (target, source)):
            salt = f"{params.seed}:{anchor_end}->{other_end}"
            for chunk_id in _rotated(ranked.get(other_end, []), salt, params.max_edge_pairs):
                candidates.append(
                    (display[anchor_end], chunk_text[chunk_id], "edge", anchor_end, chunk_id)
                )

    statements_unnamed = 0
    for statement_id, paper_id, kind, name, text in sorted(
        zip(
            statements["statement_id"].tolist(),
            statements["paper_id"].tolist(),
            statements["kind"].tolist(),
            statements["name"].tolist(),
            statements["text"].tolist(),
            strict=True,
        )
    ):
        stated = statement_concept_name(kind, name) if name else None
        if stated is None:
            statements_unnamed += 1
            continue
        if paper_id in unseen:
            continue
        candidates.append((stated, text, "statement", normalise_name(stated), statement_id))

    kept: list[tuple[str, str, str, str, str]] = []
    seen_pairs: set[tuple[str, str]] = set()
    dropped_held_out = 0
    duplicates = 0
    for candidate in candidates:
        anchor, positive = candidate[0], candidate[1]
        if anchor in forbidden_texts or normalise_name(anchor) in forbidden_keys:
            dropped_held_out += 1
            continue
        if (anchor, positive) in seen_pairs:
            duplicates += 1
            continue
        seen_pairs.add((anchor, positive))
        kept.append(candidate)

    pairs = pd.DataFrame(kept, columns=PAIR_COLUMNS[:-1])
    pairs["split"] = [
        "validation"
        if in_stable_fraction(f"{params.seed}:{concept}", params.validation_fraction)
        else "train"
        for concept in pairs["concept"]
    ]
    pairs = pairs.sort_values(["split", "kind", "concept", "anchor", "positive_id"], kind="stable")
    pairs = pairs.reset_index(drop=True)[PAIR_COLUMNS]

    queries, qrels, below_min_degree, without_relevant = _evaluation_set(
        held_out, display, aliases, papers_of, mentions, chunks, unseen, params
    )
    counts: dict[str, Any] = {
        "papers": len(papers),
        "chunks": len(chunks),
        "statements": len(statements),
        "concepts": len(concepts),
        "edges": len(edges),
        "mentions": len(mentions),
        "unseen_papers": len(unseen),
        "unseen_chunks": sum(1 for paper_id in chunk_paper.values() if paper_id in unseen),
        "held_out_concepts": len(held_out),
        "edges_used": edges_used,
        "edges_dropped_held_out": edges_dropped_held_out,
        "edges_dropped_unknown_concept": edges_dropped_unknown,
        "statements_without_concept_name": statements_unnamed,
        "pairs": _pair_counts(pairs, len(candidates), dropped_held_out, duplicates),
        "queries": len(queries),
        "held_out_below_min_degree": below_min_degree,
        "held_out_without_relevant": without_relevant,
        "qrels": {
            "total": len(qrels),
            "seen": int((~qrels["unseen"]).sum()),
            "unseen": int(qrels["unseen"].sum()),
        },
    }
    return PairsResult(pairs, queries, qrels, counts, frozenset(held_out), frozenset(unseen))


def _forbidden_anchors(
    held_out: set[str],
    display: dict[str, str],
    description: dict[str, str],
    aliases: dict[str, list[str]],
) -> tuple[set[str], set[str]]:
    """Normalised names and exact texts that must never be a training anchor."""
    keys: set[str] = set()
    texts: set[str] = set()
    for name in held_out:
        keys.add(name)
        keys.update(normalise_name(alias) for alias in aliases[name])
        texts.add(display[name])
        texts.update(aliases[name])
        if description[name]:
            texts.add(description[name])
    keys.discard("")
    return keys, texts


def chunks_naming(concept: str, surfaces: Iterable[str], texts: dict[str, str]) -> set[str]:
    """The ids in ``texts`` (chunk id -> text) whose text names ``concept`` by one of ``surfaces``.

    The graph's matcher and normal form: case, accents, dashes, possessives and the head
    noun's number do not matter ("Rogers-Ramanujan identity" names "Rogers–Ramanujan
    identities"); whole words only.
    """
    matcher = SurfaceMatcher({concept: list(surfaces)})
    return {chunk_id for chunk_id, text in texts.items() if matcher.keys_in(match_form(text))}


def _evaluation_set(
    held_out: set[str],
    display: dict[str, str],
    aliases: dict[str, list[str]],
    papers_of: dict[str, list[str]],
    mentions: pd.DataFrame,
    chunks: pd.DataFrame,
    unseen: set[str],
    params: PairsParams,
) -> tuple[pd.DataFrame, pd.DataFrame, int, int]:
    """Queries, their qrels, and how many held-out concepts fell short of ``min_degree``
    papers or had no relevant chunk in ``params.qrels_scope``."""
    enough_papers = sorted(name for name in held_out if len(papers_of[name]) >= params.min_degree)
    chunks_of_paper: dict[str, list[str]] = defaultdict(list)
    paper_of_chunk = dict(
        zip(chunks["chunk_id"].tolist(), chunks["paper_id"].tolist(), strict=True)
    )
    text_of_chunk = dict(zip(chunks["chunk_id"].tolist(), chunks["text"].tolist(), strict=True))
    for chunk_id, paper_id in paper_of_chunk.items():
        chunks_of_paper[paper_id].append(chunk_id)
    mentioning: dict[str, set[str]] = defaultdict(set)
    if params.qrels_scope == "mentions":
        for concept, chunk_id in zip(
            mentions["concept"].tolist(), mentions["chunk_id"].tolist(), strict=True
        ):
            if concept in held_out:
                mentioning[concept].add(chunk_id)

    query_concepts: list[str] = []
    qrel_rows: list[tuple[str, str, int, bool]] = []
    for name in enough_papers:
        of_papers = {
            chunk_id for paper_id in papers_of[name] for chunk_id in chunks_of_paper[paper_id]
        }
        if params.qrels_scope == "mentions":
            relevant = mentioning[name] & paper_of_chunk.keys()
        elif params.qrels_scope == "unnamed":
            texts = {chunk_id: text_of_chunk[chunk_id] for chunk_id in of_papers}
            relevant = of_papers - chunks_naming(name, [display[name], *aliases[name]], texts)
        else:
            relevant = of_papers
        if not relevant:
            continue
        query_concepts.append(name)
        qrel_rows.extend(
            (query_id(name), chunk_id, 1, paper_of_chunk[chunk_id] in unseen)
            for chunk_id in sorted(relevant)
        )
    queries = pd.DataFrame(
        [(query_id(name), name, display[name]) for name in query_concepts], columns=QUERY_COLUMNS
    )
    qrels = pd.DataFrame(qrel_rows, columns=QREL_COLUMNS).astype(
        {"grade": "int64", "unseen": "bool"}
    )
    below_min_degree = len(held_out) - len(enough_papers)
    return queries, qrels, below_min_degree, len(enough_papers) - len(query_concepts)


def _pair_counts(
    pairs: pd.DataFrame, candidates: int, dropped: int, duplicates: int
) -> dict[str, Any]:
    """``candidates == total + dropped_held_out + duplicates``; by kind and by split add up."""
    by_kind_split = Counter(zip(pairs["kind"], pairs["split"], strict=True))
    return {
        "candidates": candidates,
        "dropped_held_out": dropped,
        "duplicates": duplicates,
        "total": len(pairs),
        "by_kind": {
            kind: sum(by_kind_split[(kind, split)] for split in SPLITS) for kind in PAIR_KINDS
        },
        "by_split": {
            split: sum(by_kind_split[(kind, split)] for kind in PAIR_KINDS) for split in SPLITS
        },
        "by_kind_and_split": {
            kind: {split: by_kind_split[(kind, split)] for split in SPLITS} for kind in PAIR_KINDS
        },
    }


# -- I/O shell ------------------------------------------------------------------------


@dataclass(frozen=True)
class PairsReport:
    pairs: int
    queries: int
    qrels: int
    held_out_concepts: int
    unseen_papers: int
    counts: dict[str, Any]


def _read_inputs(paths: Paths) -> dict[str, pd.DataFrame]:
    return {name: TABLES[name].read(paths, columns) for name, columns in REQUIRED_COLUMNS.items()}


def run_pairs(params: PairsParams, paths: Paths) -> PairsReport:
    """Build pairs and the evaluation set from ``paths`` and write them atomically."""
    result = build_pairs(**_read_inputs(paths), params=params)
    for name, frame in (
        ("pairs", result.pairs),
        ("queries", result.queries),
        ("qrels", result.qrels),
    ):
        write_table(TABLES[name].path(paths), frame, TABLES[name].schema)
    io.write_json(paths.metric_file("data"), result.counts)
    return PairsReport(
        pairs=len(result.pairs),
        queries=len(result.queries),
        qrels=len(result.qrels),
        held_out_concepts=len(result.held_out),
        unseen_papers=len(result.unseen_papers),
        counts=result.counts,
    )
