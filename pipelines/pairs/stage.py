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
* ``proof``: a statement's text -> the proof that follows it; ``citation``: a statement's
  text -> each statement it or its proof cites by ``\\ref`` (:mod:`pipelines.common.refs`).
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

Evaluation (``data/eval/``): one query per held-out concept with at least ``min_degree``
papers and at least one relevant chunk, its text the display name. What defines or states a
held-out concept (its statements and the passages holding them) is never a positive, for
any anchor. Its qrels depend on ``qrels_scope``:

* ``defining`` (the default): graded, specific. Grade 2: the passage holding the statement
  that defines or states the concept (a definition whose author emphasised the term, a
  named theorem); grade 1: the passages whose statement, or proof, cites that statement
  by ``\\ref`` — they use it in a substantive way. A query with more than
  ``max_relevant_share`` of the corpus relevant is left out (``held_out_too_broad``): a
  concept every second passage relies on tests nothing.
* ``unnamed``: the chunks of the concept's papers that do *not* name it —
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
from pipelines.common.masking import mask_name, names_in
from pipelines.common.names import (
    SurfaceMatcher,
    match_form,
    normalise_name,
    statement_concept_name,
)
from pipelines.common.passages import PassageFinder
from pipelines.common.paths import Paths
from pipelines.common.refs import cited_statements, citing_statements
from pipelines.common.tables import (
    EVIDENCE_ORDER,
    PAIR_KINDS,
    PAIRS_SCHEMA,
    QRELS_SCHEMA,
    QUERIES_SCHEMA,
    SPLITS,
    STORED_QUERY_SETS,
    TABLES,
    write_table,
)
from pipelines.pairs.descriptions import (
    STATEMENT_SALT,
    StatementInfo,
    build_descriptions,
    described_counts,
    statement_key,
)

PAIR_COLUMNS = PAIRS_SCHEMA.names
QUERY_COLUMNS = QUERIES_SCHEMA.names
QREL_COLUMNS = QRELS_SCHEMA.names
HASH_BUCKETS = 1_000_000

REQUIRED_COLUMNS = {
    "papers": ["paper_id", "citing_sentences", "citing_labels"],
    "chunks": ["chunk_id", "paper_id", "chunk_index", "text"],
    "statements": [
        "statement_id",
        "paper_id",
        "kind",
        "name",
        "label",
        "text",
        "refs",
        "proof",
        "slogan",
    ],
    "concepts": ["name", "display_name", "description", "aliases", "papers", "statements"],
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
    structure = _PaperStructure.of(chunks, statements)
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
        concept: _ranked(found, f"{params.seed}:{concept}") for concept, found in usable.items()
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
    structural.sort(key=lambda pair: _digest(f"{params.seed}:{pair[2]}:{pair[3]}:{pair[4]}"))
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
        rank=lambda salt: _digest(f"{params.seed}:{salt}"),
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

    evaluation = _evaluation_set(
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


def chunks_naming(concept: str, surfaces: Iterable[str], texts: dict[str, str]) -> set[str]:
    """The ids in ``texts`` (chunk id -> text) whose text names ``concept`` by one of ``surfaces``.

    The graph's matcher and normal form: case, accents, dashes, possessives and the head
    noun's number do not matter ("Rogers-Ramanujan identity" names "Rogers–Ramanujan
    identities"); whole words only.
    """
    matcher = SurfaceMatcher({concept: list(surfaces)})
    return {chunk_id for chunk_id, text in texts.items() if matcher.keys_in(match_form(text))}


@dataclass(frozen=True)
class _PaperStructure:
    """Where each statement and proof sits among the passages, and what cites what."""

    span_of: dict[str, tuple[str, ...]]  # statement_id -> the passages its text runs over
    proof_span_of: dict[str, tuple[str, ...]]  # ... and those its proof runs over
    proof_of: dict[str, str]  # statement_id -> its proof's text
    cited: dict[str, list[str]]  # statement_id -> the statements it (or its proof) cites
    citing: dict[str, list[str]]  # the inverse
    finders: dict[str, PassageFinder]  # paper_id -> its passages, in order

    @classmethod
    def of(cls, chunks: pd.DataFrame, statements: pd.DataFrame) -> _PaperStructure:
        ordered = chunks.sort_values(["paper_id", "chunk_index"], kind="stable")
        texts: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for paper_id, chunk_id, text in zip(
            ordered["paper_id"].tolist(),
            ordered["chunk_id"].tolist(),
            ordered["text"].tolist(),
            strict=True,
        ):
            texts[paper_id].append((chunk_id, text))
        passages = {paper_id: PassageFinder(chunks) for paper_id, chunks in texts.items()}
        nowhere = PassageFinder(())
        span_of: dict[str, tuple[str, ...]] = {}
        proof_span_of: dict[str, tuple[str, ...]] = {}
        proof_of: dict[str, str] = {}
        rows = list(
            zip(
                statements["statement_id"].tolist(),
                statements["paper_id"].tolist(),
                statements["label"].tolist(),
                statements["text"].tolist(),
                statements["refs"].tolist(),
                statements["proof"].tolist(),
                strict=True,
            )
        )
        for statement_id, paper_id, _label, text, _refs, proof in rows:
            finder = passages.get(paper_id, nowhere)
            span_of[statement_id] = finder.span(text)
            if proof:
                proof_of[statement_id] = proof
                proof_span_of[statement_id] = finder.span(proof)
        cited = cited_statements(
            (sid, paper, label, refs) for sid, paper, label, _t, refs, _p in rows
        )
        return cls(span_of, proof_span_of, proof_of, cited, citing_statements(cited), passages)

    def defining(self, statement_ids: Iterable[str], naming: set[str]) -> set[str]:
        """The passages defining or stating a concept: where each of its ``statement_ids``
        starts, and the rest of the statement's passages that name it (``naming``: a long
        definition's clause for this term may sit in its second passage)."""
        found: set[str] = set()
        for statement_id in statement_ids:
            span = self.span_of.get(statement_id, ())
            found.update(span[:1])
            found.update(chunk_id for chunk_id in span[1:] if chunk_id in naming)
        return found

    def using(self, statement_ids: Iterable[str], naming: set[str]) -> set[str]:
        """The passages that use a concept in a substantive way: they hold a statement, or a
        proof, citing one of ``statement_ids`` by \\ref, and name the concept (a definition
        block defines several terms; citing it is no use of every one)."""
        found: set[str] = set()
        for target in statement_ids:
            for source in self.citing.get(target, ()):
                found.update(self.span_of.get(source, ()))
                found.update(self.proof_span_of.get(source, ()))
        return found & naming


@dataclass(frozen=True)
class _Evaluation:
    queries: pd.DataFrame
    qrels: pd.DataFrame
    below_min_degree: int  # held-out concepts with fewer than min_degree papers
    without_relevant: int  # ... with no relevant passage in qrels_scope
    too_broad: int  # ... with more than max_relevant_share of the corpus relevant


def _evaluation_set(
    held_out: set[str],
    display: dict[str, str],
    aliases: dict[str, list[str]],
    papers_of: dict[str, list[str]],
    statements_of: dict[str, list[str]],
    structure: _PaperStructure,
    naming: dict[str, set[str]],
    defining: dict[str, set[str]],
    chunks: pd.DataFrame,
    unseen: set[str],
    params: PairsParams,
) -> _Evaluation:
    """Queries and their graded qrels (see the module docstring for ``qrels_scope``)."""
    enough_papers = sorted(name for name in held_out if len(papers_of[name]) >= params.min_degree)
    chunks_of_paper: dict[str, list[str]] = defaultdict(list)
    paper_of_chunk = dict(
        zip(chunks["chunk_id"].tolist(), chunks["paper_id"].tolist(), strict=True)
    )
    text_of_chunk = dict(zip(chunks["chunk_id"].tolist(), chunks["text"].tolist(), strict=True))
    for chunk_id, paper_id in paper_of_chunk.items():
        chunks_of_paper[paper_id].append(chunk_id)
    max_relevant = max(1, int(params.max_relevant_share * len(paper_of_chunk)))

    query_concepts: list[str] = []
    qrel_rows: list[tuple[str, str, int, bool]] = []
    without_relevant = too_broad = 0
    for name in enough_papers:
        graded: dict[str, int]
        if params.qrels_scope == "defining":
            defines = defining[name]
            used_by = structure.using(statements_of[name], naming[name]) - defines
            graded = {**dict.fromkeys(used_by, 1), **dict.fromkeys(defines, 2)}
        else:
            of_papers = {
                chunk_id for paper_id in papers_of[name] for chunk_id in chunks_of_paper[paper_id]
            }
            if params.qrels_scope == "mentions":
                relevant = naming[name] & paper_of_chunk.keys()
            elif params.qrels_scope == "unnamed":
                texts = {chunk_id: text_of_chunk[chunk_id] for chunk_id in of_papers}
                relevant = of_papers - chunks_naming(name, [display[name], *aliases[name]], texts)
            else:
                relevant = of_papers
            graded = dict.fromkeys(relevant, 1)
        if not graded:
            without_relevant += 1
            continue
        if len(graded) > max_relevant:
            too_broad += 1
            continue
        query_concepts.append(name)
        qrel_rows.extend(
            (query_id(name), chunk_id, grade, paper_of_chunk[chunk_id] in unseen)
            for chunk_id, grade in sorted(graded.items())
        )
    queries = pd.DataFrame(
        [(query_id(name), name, display[name], "named", []) for name in query_concepts],
        columns=QUERY_COLUMNS,
    )
    qrels = pd.DataFrame(qrel_rows, columns=QREL_COLUMNS).astype(
        {"grade": "int64", "unseen": "bool"}
    )
    return _Evaluation(
        queries, qrels, len(held_out) - len(enough_papers), without_relevant, too_broad
    )


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
