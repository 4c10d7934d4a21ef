"""The ``pairs`` stage's pure core: knowledge graph + passages -> training pairs, and the
evaluation set (:mod:`pipelines.pairs.evaluation`).


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
* ``proof``: a statement's text -> the proof that follows it; ``citation``: a statement's
  text -> each statement it or its proof cites by ``\\ref`` (:mod:`pipelines.mathtext.refs`).
  Their ``concept`` is the anchor statement's id: they teach the papers' structure.

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
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

import pandas as pd

from pipelines.common.config import PairsParams
from pipelines.common.tables import (
    EVIDENCE_ORDER,
    PAIR_KINDS,
    PAIRS_SCHEMA,
    SPLITS,
    STORED_QUERY_SETS,
)
from pipelines.mathtext.concept_phrases import statement_concept_name
from pipelines.mathtext.masking import mask_name, names_in
from pipelines.mathtext.names import normalise_name
from pipelines.pairs.descriptions import (
    STATEMENT_SALT,
    StatementInfo,
    build_descriptions,
    described_counts,
    statement_key,
)
from pipelines.pairs.evaluation import QREL_COLUMNS, QUERY_COLUMNS, PaperStructure, evaluation_set
from pipelines.pairs.stable import (
    held_out_concepts,
    in_stable_fraction,
    ranked_by_hash,
    rotated_window,
    stable_bucket,
    stable_digest,
    unseen_papers,
)

PAIR_COLUMNS = PAIRS_SCHEMA.names


@dataclass(frozen=True)
class _Negatives:
    """A negative passage for each pair (or none, when ``hard_negatives`` is off).

    For a concept's ``name`` and ``description`` pairs, a *hard* one: a passage that
    mentions the concept without defining it, exactly what a model must learn to rank
    below the definition. For every other pair, and a concept mentioned nowhere else, a
    passage drawn by a stable hash. Never a passage of an unseen paper nor one that defines
    a held-out concept.
    """

    usable: dict[str, list[tuple[int, str]]]  # concept -> (evidence rank, chunk id)
    defining: dict[str, set[str]]  # concept -> the passages holding its statements
    pool: list[str]  # every passage a negative may be
    seed: int
    enabled: bool

    def pick(self, kind: str, concept: str, positive_id: str) -> str:
        if not self.enabled or not self.pool:
            return ""
        salt = f"{self.seed}:negative:{kind}:{concept}:{positive_id}"
        if kind in ("name", "description", "masked_name"):
            text_rank = EVIDENCE_ORDER.index("text")
            hard = sorted(
                chunk_id
                for rank, chunk_id in self.usable.get(concept, ())
                if rank == text_rank
                and chunk_id != positive_id
                and chunk_id not in self.defining.get(concept, ())
            )
            if hard:
                return hard[stable_bucket(salt) % len(hard)]
        start = stable_bucket(salt) % len(self.pool)
        for offset in range(len(self.pool)):
            chunk_id = self.pool[(start + offset) % len(self.pool)]
            if chunk_id != positive_id:
                return chunk_id
        return ""


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

    statements_of = {
        name: list(values) for name, values in zip(names, concepts["statements"], strict=True)
    }

    held_out = held_out_concepts(names, params.held_out_fraction)
    unseen = unseen_papers(papers["paper_id"].tolist(), params.unseen_paper_fraction)
    forbidden_keys, forbidden_texts = _forbidden_anchors(held_out, display, description, aliases)
    structure = PaperStructure.of(chunks, statements)
    # What defines or states a held-out concept is never a positive: the model must not
    # have seen any anchor lead to the passages its queries are judged by.
    reserved_statements = {sid for name in held_out for sid in statements_of[name]}
    # ... and a statement held out for the described set (its slogan, the sentences citing it).
    reserved_statements |= {
        statement_id
        for statement_id, paper_id, label in zip(
            statements["statement_id"].tolist(),
            statements["paper_id"].tolist(),
            statements["label"].tolist(),
            strict=True,
        )
        if in_stable_fraction(
            f"{STATEMENT_SALT}:{statement_key(paper_id, label, statement_id)}",
            params.held_out_statement_fraction,
        )
    }
    naming: dict[str, set[str]] = defaultdict(set)
    for concept, chunk_id in zip(
        mentions["concept"].tolist(), mentions["chunk_id"].tolist(), strict=True
    ):
        naming[concept].add(chunk_id)
    defining = {name: structure.defining(statements_of[name], naming[name]) for name in names}
    reserved_chunks = {chunk_id for name in held_out for chunk_id in defining[name]}
    reserved_chunks |= {
        chunk_id for sid in reserved_statements for chunk_id in structure.span_of.get(sid, ())
    }

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
        if (
            chunk_id in chunk_paper
            and chunk_paper[chunk_id] not in unseen
            and chunk_id not in reserved_chunks
        ):
            usable[concept].append((evidence_rank.get(evidence, len(EVIDENCE_ORDER)), chunk_id))
    ranked = {
        concept: ranked_by_hash(found, f"{params.seed}:{concept}")
        for concept, found in usable.items()
    }

    # (anchor, positive, kind, concept, positive_id), in priority order for de-duplication.
    candidates: list[tuple[str, str, str, str, str]] = []
    for name in sorted(display):
        if name in held_out:
            continue
        for chunk_id in ranked.get(name, [])[: params.max_chunks_per_concept]:
            candidates.append((display[name], chunk_text[chunk_id], "name", name, chunk_id))
            if params.masked_name_pairs and names_in(chunk_text[chunk_id], display[name]):
                # The same passage without its term: the model must learn what it says.
                masked = mask_name(chunk_text[chunk_id], display[name])
                candidates.append((display[name], masked, "masked_name", name, chunk_id))
            if params.description_pairs and description[name]:
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
            for chunk_id in rotated_window(ranked.get(other_end, []), salt, params.max_edge_pairs):
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

    # The papers' own structure: a statement leads to its proof, and a statement (with its
    # proof) to the statements it cites; at most max_structure_pairs of them (a stable draw).
    text_of_statement = dict(
        zip(statements["statement_id"].tolist(), statements["text"].tolist(), strict=True)
    )
    paper_of_statement = dict(
        zip(statements["statement_id"].tolist(), statements["paper_id"].tolist(), strict=True)
    )
    structural: list[tuple[str, str, str, str, str]] = []
    for statement_id, proof in sorted(structure.proof_of.items()):
        if paper_of_statement[statement_id] in unseen:
            continue
        anchor = text_of_statement[statement_id]
        structural.append((anchor, proof, "proof", statement_id, statement_id))
    for statement_id, cited in sorted(structure.cited.items()):
        for target in cited:
            if paper_of_statement[target] in unseen:
                continue
            anchor = text_of_statement[statement_id]
            structural.append((anchor, text_of_statement[target], "citation", statement_id, target))
    structural.sort(key=lambda pair: stable_digest(f"{params.seed}:{pair[2]}:{pair[3]}:{pair[4]}"))
    candidates += structural[: params.max_structure_pairs]

    descriptions = build_descriptions(
        statements,
        papers,
        StatementInfo(
            text=text_of_statement,
            kind=dict(
                zip(statements["statement_id"].tolist(), statements["kind"].tolist(), strict=True)
            ),
            paper=paper_of_statement,
            first_passage={sid: span[0] for sid, span in structure.span_of.items() if span},
            held_out=frozenset(reserved_statements),
            finders=structure.finders,
            unseen_papers=frozenset(unseen),
            paper_of_chunk=chunk_paper,
            text_of_chunk=chunk_text,
            reserved_passages=frozenset(reserved_chunks),
        ),
        params,
        rank=lambda salt: stable_digest(f"{params.seed}:{salt}"),
    )
    candidates += descriptions.pairs

    kept: list[tuple[str, str, str, str, str]] = []
    seen_pairs: set[tuple[str, str]] = set()
    dropped_held_out = 0
    duplicates = 0
    for candidate in candidates:
        anchor, positive = candidate[0], candidate[1]
        if (
            anchor in forbidden_texts
            or normalise_name(anchor) in forbidden_keys
            or candidate[4] in reserved_statements  # a proof pair's is its statement's
        ):
            dropped_held_out += 1
            continue
        if (anchor, positive) in seen_pairs:
            duplicates += 1
            continue
        seen_pairs.add((anchor, positive))
        kept.append(candidate)

    pairs = pd.DataFrame(kept, columns=PAIR_COLUMNS[:5])
    negatives = _Negatives(
        usable=usable,
        defining=defining,
        pool=sorted(
            chunk_id
            for chunk_id, paper_id in chunk_paper.items()
            if paper_id not in unseen and chunk_id not in reserved_chunks
        ),
        seed=params.seed,
        enabled=params.hard_negatives,
    )
    pairs["negative_id"] = [
        negatives.pick(kind, concept, positive_id)
        for kind, concept, positive_id in zip(
            pairs["kind"], pairs["concept"], pairs["positive_id"], strict=True
        )
    ]
    pairs["negative"] = [chunk_text.get(chunk_id, "") for chunk_id in pairs["negative_id"]]
    pairs["split"] = [
        "validation"
        if in_stable_fraction(f"{params.seed}:{concept}", params.validation_fraction)
        else "train"
        for concept in pairs["concept"]
    ]
    pairs = pairs.sort_values(["split", "kind", "concept", "anchor", "positive_id"], kind="stable")
    pairs = pairs.reset_index(drop=True)[PAIR_COLUMNS]

    evaluation = evaluation_set(
        held_out,
        display,
        aliases,
        papers_of,
        statements_of,
        structure,
        naming,
        defining,
        chunks,
        unseen,
        params,
    )
    described_queries = pd.DataFrame(descriptions.queries, columns=QUERY_COLUMNS)
    queries = pd.concat([evaluation.queries, described_queries], ignore_index=True)
    qrels = pd.concat(
        [evaluation.qrels, pd.DataFrame(descriptions.qrels, columns=QREL_COLUMNS)],
        ignore_index=True,
    ).astype({"grade": "int64", "unseen": "bool"})
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
        "queries_by_set": {name: int((queries["set"] == name).sum()) for name in STORED_QUERY_SETS},
        "descriptions": described_counts(descriptions),
        "held_out_below_min_degree": evaluation.below_min_degree,
        "held_out_without_relevant": evaluation.without_relevant,
        "held_out_too_broad": evaluation.too_broad,
        "citations": sum(len(cited) for cited in structure.cited.values()),
        "proofs": len(structure.proof_of),
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
