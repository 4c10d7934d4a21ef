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
from pipelines.mathtext.refs import work_keys
from pipelines.pairs.candidates import (
    Candidates,
    Pair,
    draw_candidates,
    ranked_passages,
    usable_passages,
)
from pipelines.pairs.descriptions import Descriptions, StatementInfo, described_counts
from pipelines.pairs.evaluation import (
    QREL_COLUMNS,
    QUERY_COLUMNS,
    Evaluation,
    PaperStructure,
    evaluation_set,
)
from pipelines.pairs.reserved import ConceptTable, Kept, Reserved, allowed_and_unique
from pipelines.pairs.stable import in_stable_fraction, stable_bucket

PAIR_COLUMNS: list[str] = PAIRS_SCHEMA.names


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
    table = ConceptTable.of(concepts)
    structure = PaperStructure.of(chunks, statements, _works(papers))
    naming, defining = _naming_and_defining(mentions, table, structure)
    reserved = Reserved.of(table, papers, statements, structure, defining, params)
    text_of_chunk, paper_of_chunk = _chunk_lookups(chunks)
    usable = usable_passages(mentions, paper_of_chunk, reserved.papers, reserved.chunks)
    drawn = draw_candidates(
        display=table.display,
        description=table.description,
        held_out=reserved.concepts,
        ranked=ranked_passages(usable, params.seed),
        edges=edges,
        statements=statements,
        papers=papers,
        structure=structure,
        info=_statement_info(statements, structure, reserved, paper_of_chunk, text_of_chunk),
        params=params,
    )
    kept = allowed_and_unique(drawn.pairs, table, reserved)
    negatives = _Negatives(
        usable=usable,
        defining=defining,
        pool=_negative_pool(paper_of_chunk, reserved),
        seed=params.seed,
        enabled=params.hard_negatives,
    )
    pairs = _pairs_table(kept.pairs, negatives, text_of_chunk, params)
    evaluation = evaluation_set(
        reserved.concepts,
        table.display,
        table.aliases,
        table.papers_of,
        table.statements_of,
        structure,
        naming,
        defining,
        chunks,
        reserved.papers,
        params,
    )
    queries, qrels = _queries_and_qrels(evaluation, drawn.descriptions)
    counts = _counts(
        inputs={
            "papers": papers,
            "chunks": chunks,
            "statements": statements,
            "concepts": concepts,
            "edges": edges,
            "mentions": mentions,
        },
        reserved=reserved,
        paper_of_chunk=paper_of_chunk,
        drawn=drawn,
        kept=kept,
        pairs=pairs,
        queries=queries,
        qrels=qrels,
        evaluation=evaluation,
        structure=structure,
    )
    return PairsResult(
        pairs, queries, qrels, counts, frozenset(reserved.concepts), frozenset(reserved.papers)
    )


# -- the inputs as lookups ---------------------------------------------------------------


def _chunk_lookups(chunks: pd.DataFrame) -> tuple[dict[str, str], dict[str, str]]:
    """Chunk id -> its text, and -> its paper."""
    chunk_ids = chunks["chunk_id"].tolist()
    text_of_chunk = dict(zip(chunk_ids, chunks["text"].tolist(), strict=True))
    paper_of_chunk = dict(zip(chunk_ids, chunks["paper_id"].tolist(), strict=True))
    return text_of_chunk, paper_of_chunk


def _naming_and_defining(
    mentions: pd.DataFrame, table: ConceptTable, structure: PaperStructure
) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Concept -> the passages that name it, and -> those that define or state it."""
    naming: dict[str, set[str]] = defaultdict(set)
    for concept, chunk_id in zip(
        mentions["concept"].tolist(), mentions["chunk_id"].tolist(), strict=True
    ):
        naming[concept].add(chunk_id)
    defining = {
        name: structure.defining(table.statements_of[name], naming[name]) for name in table.names
    }
    return naming, defining


def _works(papers: pd.DataFrame) -> dict[str, str]:
    """Each paper's work (its authors), so a multi-part work's papers cite each other by
    bare label; tables built in code without ``authors`` have none (the stage reads it)."""
    if "authors" not in papers:
        return {}
    return work_keys(zip(papers["paper_id"], papers["authors"], strict=True))


def _statement_info(
    statements: pd.DataFrame,
    structure: PaperStructure,
    reserved: Reserved,
    paper_of_chunk: dict[str, str],
    text_of_chunk: dict[str, str],
) -> StatementInfo:
    """What the statement-anchored pairs and the descriptions need to know."""
    statement_ids = statements["statement_id"].tolist()
    return StatementInfo(
        text=dict(zip(statement_ids, statements["text"].tolist(), strict=True)),
        kind=dict(zip(statement_ids, statements["kind"].tolist(), strict=True)),
        paper=dict(zip(statement_ids, statements["paper_id"].tolist(), strict=True)),
        first_passage={sid: span[0] for sid, span in structure.span_of.items() if span},
        held_out=frozenset(reserved.statements),
        finders=structure.finders,
        unseen_papers=frozenset(reserved.papers),
        paper_of_chunk=paper_of_chunk,
        text_of_chunk=text_of_chunk,
        reserved_passages=frozenset(reserved.chunks),
        labels=structure.labels,
    )


# -- the pairs table ---------------------------------------------------------------------


def _negative_pool(paper_of_chunk: dict[str, str], reserved: Reserved) -> list[str]:
    """Every passage a negative may be: of a seen paper, and not reserved."""
    return sorted(
        chunk_id
        for chunk_id, paper_id in paper_of_chunk.items()
        if paper_id not in reserved.papers and chunk_id not in reserved.chunks
    )


def _pairs_table(
    kept: list[Pair], negatives: _Negatives, text_of_chunk: dict[str, str], params: PairsParams
) -> pd.DataFrame:
    """The pairs with their negatives and split, in the table's order and columns."""
    pairs = pd.DataFrame(kept, columns=PAIR_COLUMNS[:5])
    pairs["negative_id"] = [
        negatives.pick(kind, concept, positive_id)
        for kind, concept, positive_id in zip(
            pairs["kind"], pairs["concept"], pairs["positive_id"], strict=True
        )
    ]
    pairs["negative"] = [text_of_chunk.get(chunk_id, "") for chunk_id in pairs["negative_id"]]
    pairs["split"] = _split_by_concept(pairs["concept"], params)
    pairs = pairs.sort_values(["split", "kind", "concept", "anchor", "positive_id"], kind="stable")
    return pairs.reset_index(drop=True)[PAIR_COLUMNS]


def _split_by_concept(concepts: pd.Series, params: PairsParams) -> list[str]:
    """Every pair anchored at one concept on one side, so no anchor is in both."""
    return [
        "validation"
        if in_stable_fraction(f"{params.seed}:{concept}", params.validation_fraction)
        else "train"
        for concept in concepts
    ]


# -- the evaluation set and the counts ---------------------------------------------------


def _queries_and_qrels(
    evaluation: Evaluation, descriptions: Descriptions
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The named queries and the described ones, in one table each with their qrels."""
    described_queries = pd.DataFrame(descriptions.queries, columns=QUERY_COLUMNS)
    queries = pd.concat([evaluation.queries, described_queries], ignore_index=True)
    qrels = pd.concat(
        [evaluation.qrels, pd.DataFrame(descriptions.qrels, columns=QREL_COLUMNS)],
        ignore_index=True,
    ).astype({"grade": "int64", "unseen": "bool"})
    return queries, qrels


def _counts(
    *,
    inputs: dict[str, pd.DataFrame],
    reserved: Reserved,
    paper_of_chunk: dict[str, str],
    drawn: Candidates,
    kept: Kept,
    pairs: pd.DataFrame,
    queries: pd.DataFrame,
    qrels: pd.DataFrame,
    evaluation: Evaluation,
    structure: PaperStructure,
) -> dict[str, Any]:
    """``data.json``: the inputs' sizes, what was held out or dropped and why, what came out."""
    return {
        **{name: len(frame) for name, frame in inputs.items()},
        "unseen_papers": len(reserved.papers),
        "unseen_chunks": sum(
            1 for paper_id in paper_of_chunk.values() if paper_id in reserved.papers
        ),
        "held_out_concepts": len(reserved.concepts),
        "edges_used": drawn.edges.used,
        "edges_dropped_held_out": drawn.edges.dropped_held_out,
        "edges_dropped_unknown_concept": drawn.edges.dropped_unknown,
        "statements_without_concept_name": drawn.statements_unnamed,
        "pairs": _pair_counts(pairs, len(drawn.pairs), kept.dropped_held_out, kept.duplicates),
        "queries": len(queries),
        "queries_by_set": {name: int((queries["set"] == name).sum()) for name in STORED_QUERY_SETS},
        "descriptions": described_counts(drawn.descriptions),
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
