"""The ``graph`` stage: processed papers -> a knowledge graph of concepts and typed edges.

:func:`build_graph` is the pure part. An :class:`~pipelines.graph.rules.Extractor` (the
rule-based one by default, or the optional LLM one) proposes concepts per paper; they are
merged by normalised name and alias (:mod:`pipelines.common.names`); then one pass over
every chunk finds the chunks that mention each concept (``mentions``) and the relations
written between concepts ("X generalizes Y", ...). Two more edge kinds come from
statements: ``uses`` (a definition mentions another concept: definitional dependency)
and ``related_to`` (two concepts appear together in statements of at least
``cooccurrence_min_papers`` papers, and no other edge joins them).

A concept's ``papers`` are the papers that define, state or mention it. :func:`run_graph`
reads ``data/processed``, writes ``data/graph/{concepts,edges,mentions}.parquet``
atomically and ``metrics/graph.json``; ``python -m pipelines.graph`` runs it.

Incremental: the per-paper work (extraction, then the mention scan) is cached in
``data/cache/graph/`` by a hash of the paper's content (:class:`GraphCache`). An
extraction is reused under the same extractor fingerprint (extractor, its version, this
code, the graph params); a scan under the same code and surface forms or, when this run
only *added* surface forms, when the paper lacks a word of each added form (none of them
can match there, so a scan with the larger set finds exactly what it found before).
Everything after that (merging, edges, descriptions) is redone from the per-paper results
every run, so the outputs are the same as a from-scratch build's.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import multiprocessing
import os
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

import pandas as pd
import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type information
import pyarrow.parquet as pq  # type: ignore[import-untyped]
from tqdm import tqdm  # type: ignore[import-untyped]

from pipelines.common import io
from pipelines.common.config import ConfigError, GraphParams, add_config_arguments, load_params
from pipelines.common.names import (
    SurfaceMatcher,
    match_form,
    merge_keys,
    normalise_name,
    words_of,
)
from pipelines.common.paths import Paths
from pipelines.graph.llm import LLMError, LLMExtractor
from pipelines.graph.rules import (
    CONCEPT_TYPES,
    EVIDENCE_ORDER,
    RELATIONS,
    Chunk,
    ConceptCandidate,
    Extraction,
    Extractor,
    PaperDocument,
    Relation,
    RelationCandidate,
    RulesExtractor,
    Statement,
    description_from,
    find_relations,
    is_definitional,
    split_sentences,
    statement_concept_name,
)

# The Parquet schemas of the stage's outputs (the data contract). Written explicitly so an
# empty column (no aliases anywhere) is still list<string>, not list<null>.
CONCEPTS_SCHEMA = pa.schema(
    [
        ("name", pa.string()),
        ("display_name", pa.string()),
        ("type", pa.string()),
        ("description", pa.string()),
        ("aliases", pa.list_(pa.string())),
        ("papers", pa.list_(pa.string())),
    ]
)
EDGES_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("target", pa.string()),
        ("relation", pa.string()),
        ("papers", pa.list_(pa.string())),
    ]
)
MENTIONS_SCHEMA = pa.schema(
    [
        ("concept", pa.string()),
        ("chunk_id", pa.string()),
        ("paper_id", pa.string()),
        ("evidence", pa.string()),
    ]
)
CONCEPT_COLUMNS = CONCEPTS_SCHEMA.names
EDGE_COLUMNS = EDGES_SCHEMA.names
MENTION_COLUMNS = MENTIONS_SCHEMA.names

# A statement naming more concepts than this is a survey sentence; its pairs say little.
MAX_COOCCURRING_CONCEPTS = 12
# Chunks read, per concept without a description, looking for a definitional sentence.
MAX_DESCRIPTION_CHUNKS = 20
# Below this many papers, starting worker processes costs more than it saves.
MIN_PAPERS_FOR_POOL = 400

REQUIRED_COLUMNS = {
    "papers": ["paper_id", "title", "abstract", "categories"],
    "chunks": ["chunk_id", "paper_id", "chunk_index", "text"],
    "statements": ["statement_id", "paper_id", "kind", "name", "text"],
}


@dataclass(frozen=True)
class Graph:
    concepts: pd.DataFrame
    edges: pd.DataFrame
    mentions: pd.DataFrame


@dataclass(frozen=True)
class GraphReport:
    """What one graph run did; written to ``metrics/graph.json``.

    ``papers == papers_extracted + papers_skipped``; ``candidates`` are concept sightings
    before merging into ``concepts``; ``relations_unresolved`` are extractor relations
    whose ends are not concepts (dropped).
    """

    extractor: str
    papers: int
    papers_extracted: int
    papers_skipped: int
    chunks: int
    statements: int
    candidates: int
    concepts: int
    concepts_by_type: dict[str, int]
    edges: int
    edges_by_relation: dict[str, int]
    relations_unresolved: int
    mentions: int
    mentions_by_evidence: dict[str, int]
    extractor_stats: dict[str, int] = field(default_factory=dict)
    # Per-paper work done vs reused from the cache: extraction_computed/extraction_reused,
    # scan_computed/scan_reused (each pair adds up to ``papers``); scan_probed counts the
    # reused scans that needed a probe for newly added surface forms first.
    cache_use: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- inputs ---------------------------------------------------------------------------


def documents_from_tables(
    papers: pd.DataFrame, chunks: pd.DataFrame, statements: pd.DataFrame
) -> list[PaperDocument]:
    """One :class:`PaperDocument` per paper, chunks in order, sorted by paper id."""
    chunks = chunks.sort_values(["paper_id", "chunk_index"], kind="stable")
    chunks_of: dict[str, list[Chunk]] = defaultdict(list)
    for paper_id, chunk_id, text in zip(
        chunks["paper_id"].tolist(),
        chunks["chunk_id"].tolist(),
        chunks["text"].tolist(),
        strict=True,
    ):
        chunks_of[paper_id].append(Chunk(chunk_id, text))
    statements = statements.sort_values("statement_id", kind="stable")
    statements_of: dict[str, list[Statement]] = defaultdict(list)
    for paper_id, statement_id, kind, name, text in zip(
        statements["paper_id"].tolist(),
        statements["statement_id"].tolist(),
        statements["kind"].tolist(),
        statements["name"].tolist(),
        statements["text"].tolist(),
        strict=True,
    ):
        statements_of[paper_id].append(Statement(statement_id, kind, name or "", text))
    documents = [
        PaperDocument(
            paper_id=paper_id,
            title=title or "",
            abstract=abstract or "",
            categories=tuple(categories if categories is not None else ()),
            chunks=tuple(chunks_of.get(paper_id, ())),
            statements=tuple(statements_of.get(paper_id, ())),
        )
        for paper_id, title, abstract, categories in zip(
            papers["paper_id"].tolist(),
            papers["title"].tolist(),
            papers["abstract"].tolist(),
            papers["categories"].tolist(),
            strict=True,
        )
    ]
    return sorted(documents, key=lambda document: document.paper_id)


# -- merging candidates ---------------------------------------------------------------


@dataclass
class _Concept:
    name: str
    display_name: str = ""
    type: str = "other"
    description: str = ""
    aliases: list[str] = field(default_factory=list)
    papers: set[str] = field(default_factory=set)
    surfaces: set[str] = field(default_factory=set)


def _evidence_rank(evidence: str) -> int:
    return EVIDENCE_ORDER.index(evidence)


def _type_rank(concept_type: str) -> int:
    # On a tie the more specific type wins; "definition" and "other" are the fallbacks.
    order = ("theorem", "identity", "conjecture", "technique", "object", "definition", "other")
    return order.index(concept_type) if concept_type in order else len(order)


def merge_candidates(
    sightings: Sequence[tuple[str, ConceptCandidate]],
) -> tuple[dict[str, _Concept], dict[str, str]]:
    """Merge ``(paper_id, candidate)`` sightings into concepts by key and shared alias.

    Returns the concepts by key and the key map (every candidate and alias key -> the
    concept key it was merged into).
    """
    keyed = [
        (paper_id, candidate, candidate.key, [normalise_name(a) for a in candidate.aliases])
        for paper_id, candidate in sightings
    ]
    keyed = _join_bare_names([entry for entry in keyed if entry[2]])
    key_map = merge_keys((key, aliases) for _paper, _candidate, key, aliases in keyed)
    for _paper, _candidate, key, aliases in keyed:
        for alias in aliases:
            key_map.setdefault(alias, key_map[key])

    members: dict[str, list[tuple[str, ConceptCandidate, str]]] = defaultdict(list)
    for paper_id, candidate, key, _aliases in keyed:
        members[key_map[key]].append((paper_id, candidate, key))

    concepts: dict[str, _Concept] = {}
    for name, group in members.items():
        displays = Counter(c.display_name for _p, c, _k in group if c.key == name)
        # The singular form first ("Catalan number" over "Catalan numbers"), then the
        # most frequent, then the shortest.
        display_name = min(
            displays,
            key=lambda d: (words_of(d) != name.split(), -displays[d], len(d), d),
        )
        types = Counter(candidate.type for _p, candidate, _k in group)
        concept_type = min(types, key=lambda t: (-types[t], _type_rank(t)))
        described = sorted(
            (
                (_evidence_rank(candidate.evidence), paper_id, candidate.description)
                for paper_id, candidate, _k in group
                if candidate.description
            ),
        )
        # One written form per other key: the alias as most often written.
        written: dict[str, Counter[str]] = defaultdict(Counter)
        for _p, candidate, _key in group:
            written[candidate.key][candidate.display_name] += 1
            for alias in candidate.aliases:
                written[normalise_name(alias)][alias] += 1
        aliases = sorted(
            min(forms, key=lambda form: (-forms[form], len(form), form))
            for key, forms in written.items()
            if key and key != name
        )
        concepts[name] = _Concept(
            name=name,
            display_name=display_name,
            type=concept_type,
            description=described[0][2] if described else "",
            aliases=aliases,
            papers={paper_id for paper_id, _c, _k in group},
            surfaces={display_name, *aliases},
        )
    return concepts, key_map


def _join_bare_names(
    keyed: list[tuple[str, ConceptCandidate, str, list[str]]],
) -> list[tuple[str, ConceptCandidate, str, list[str]]]:
    """Let a bare statement name join the concept others name with one more word.

    ``\\begin{theorem}[Andrews–Gordon]`` gives "Andrews–Gordon theorem" (the kind added)
    with the alias "Andrews–Gordon"; other papers say "Andrews–Gordon identities". When
    exactly one other key is the bare name plus one word, the sighting takes that key,
    keeping its own as an alias, so the name the papers use wins.
    """
    longer: dict[str, set[str]] = defaultdict(set)
    for _paper, _candidate, key, _aliases in keyed:
        words = key.split()
        if len(words) >= 3:
            longer[" ".join(words[:-1])].add(key)
    joined = []
    for paper_id, candidate, key, aliases in keyed:
        for alias in aliases:
            others = longer.get(alias, set()) - {key}
            if len(alias.split()) >= 2 and len(others) == 1:
                key, aliases = next(iter(others)), [*aliases, key]
                break
        joined.append((paper_id, candidate, key, aliases))
    return joined


# -- the graph ------------------------------------------------------------------------


@dataclass(frozen=True)
class DocumentScan:
    """What one paper's text says once the concepts are known."""

    paper_id: str
    mentions: list[tuple[str, str]]  # (concept, chunk_id), each once
    relations: list[tuple[str, str, Relation]]  # stated in its chunks
    statement_concepts: list[tuple[str, frozenset[str]]]  # (statement text, concepts named)
    # The words (:data:`WORD` runs) of its scanned text: a surface form added later can
    # only match in this paper if all its words are here (see :func:`_needs_rescan`).
    words: frozenset[str] = frozenset()


# A word as the matcher's boundaries see it: a maximal run of these characters.
WORD = re.compile(r"[a-z0-9]+")


def scan_document(document: PaperDocument, matcher: SurfaceMatcher) -> DocumentScan:
    """Mentions and stated relations in a paper's chunks; concepts named in its statements."""
    mentions: dict[tuple[str, str], None] = {}
    relations: list[tuple[str, str, Relation]] = []
    words: set[str] = set()
    for chunk in document.chunks:
        chunk_text = match_form(chunk.text)
        found = matcher.find(chunk_text)
        for mention in found:
            mentions[(mention.key, chunk.chunk_id)] = None
        relations += find_relations(chunk_text, found)
        words.update(WORD.findall(chunk_text))
    statement_concepts = []
    for statement in document.statements:
        statement_text = match_form(statement.text)
        statement_concepts.append((statement.text, frozenset(matcher.keys_in(statement_text))))
        words.update(WORD.findall(statement_text))
    return DocumentScan(
        document.paper_id, list(mentions), relations, statement_concepts, frozenset(words)
    )


def build_graph(
    documents: Sequence[PaperDocument],
    extractor: Extractor,
    params: GraphParams,
    *,
    workers: int = 1,
    min_papers_for_pool: int = MIN_PAPERS_FOR_POOL,
    disable_progress: bool | None = None,
    cache: GraphCache | None = None,
) -> tuple[Graph, GraphReport]:
    """The knowledge graph of ``documents`` and a report of what went into it.

    With ``workers`` > 1 and at least ``min_papers_for_pool`` papers to work on, the
    per-paper work (rule extraction, then scanning the text for mentions) runs in that many
    processes; the result is the same as with one (batches come back in order). The LLM
    extractor always runs in this process: it is bound by the endpoint, and keeps a cache
    and stats. With a ``cache``, per-paper results found there are reused and the cache is
    then replaced by this run's (see :class:`GraphCache`); the graph is the same either way.
    """
    hashes = [document_hash(document) for document in documents] if cache is not None else []
    with _LazyPool(workers) as pool:
        extractions, extraction_reused = _extract_all(
            documents,
            hashes,
            extractor,
            params,
            cache,
            pool,
            min_papers_for_pool,
            disable_progress,
        )
        sightings = [
            (extraction.paper_id, candidate)
            for extraction in extractions
            for candidate in extraction.concepts
        ]
        concepts, key_map = merge_candidates(sightings)
        surfaces = {name: sorted(concept.surfaces) for name, concept in concepts.items()}
        matcher = SurfaceMatcher(surfaces)
        scans, scan_reused, scan_probed = _scan_all(
            documents,
            hashes,
            surfaces,
            matcher,
            cache,
            pool,
            min_papers_for_pool,
            disable_progress,
        )

    # evidence[(concept, chunk_id)] -> the strongest evidence seen (lowest rank).
    evidence: dict[tuple[str, str], int] = {}
    paper_of_chunk = {chunk.chunk_id: d.paper_id for d in documents for chunk in d.chunks}
    text_of_chunk = {chunk.chunk_id: chunk.text for d in documents for chunk in d.chunks}
    edge_papers: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    text_rank = _evidence_rank("text")
    concepts_in_text: dict[str, frozenset[str]] = {}
    for scan in scans:
        for slot in scan.mentions:
            evidence[slot] = text_rank
        for relation in scan.relations:
            edge_papers[relation].add(scan.paper_id)
        concepts_in_text.update(scan.statement_concepts)

    for _paper_id, candidate in sightings:
        name = key_map.get(candidate.key)
        if name is None or not candidate.chunk_id or candidate.chunk_id not in paper_of_chunk:
            continue
        rank = _evidence_rank(candidate.evidence)
        slot = (name, candidate.chunk_id)
        evidence[slot] = min(rank, evidence.get(slot, rank))

    # Definitional dependency: what a definition's text mentions, the defined term uses.
    # Terms defined by the same text do not use each other ("a partition ... we call it
    # strict if ..." defines both; neither is built from the other).
    defined_by: dict[str, set[str]] = defaultdict(set)
    for _paper_id, candidate in sightings:
        if candidate.defining_text and candidate.key in key_map:
            defined_by[candidate.defining_text].add(key_map[candidate.key])
    for paper_id, candidate in sightings:
        name = key_map.get(candidate.key)
        if name is None or not candidate.defining_text:
            continue
        named = concepts_in_text.get(candidate.defining_text)
        if named is None:
            named = frozenset(matcher.keys_in(match_form(candidate.defining_text)))
        for other in named - defined_by[candidate.defining_text]:
            edge_papers[(name, other, "uses")].add(paper_id)

    # Relations the extractor stated (the LLM extractor does); ends resolved to concepts.
    unresolved = 0
    for extraction in extractions:
        for stated_relation in extraction.relations:
            start = _resolve(stated_relation.source, key_map, matcher)
            end = _resolve(stated_relation.target, key_map, matcher)
            if start is None or end is None or start == end:
                unresolved += 1
                continue
            edge_papers[(start, end, stated_relation.relation)].add(extraction.paper_id)

    cooccurring = _statement_cooccurrence(documents, scans, key_map)
    _resolve_conflicting_generalizations(edge_papers)
    linked = {frozenset((source, target)) for source, target, _r in edge_papers}
    for (first, second), papers in cooccurring.items():
        if len(papers) >= params.cooccurrence_min_papers and {first, second} not in linked:
            edge_papers[(first, second, "related_to")] = papers

    for name, chunk_id in evidence:
        concepts[name].papers.add(paper_of_chunk[chunk_id])
    _describe_from_mentions(concepts, evidence, text_of_chunk, matcher)

    graph = Graph(
        concepts=_concept_frame(concepts),
        edges=_edge_frame(edge_papers),
        mentions=_mention_frame(evidence, paper_of_chunk),
    )
    skipped = sum(1 for extraction in extractions if extraction.skipped_reason)
    report = GraphReport(
        extractor=extractor.name,
        papers=len(documents),
        papers_extracted=len(documents) - skipped,
        papers_skipped=skipped,
        chunks=len(paper_of_chunk),
        statements=sum(len(document.statements) for document in documents),
        candidates=len(sightings),
        concepts=len(graph.concepts),
        concepts_by_type=_counts(graph.concepts["type"], CONCEPT_TYPES),
        edges=len(graph.edges),
        edges_by_relation=_counts(graph.edges["relation"], RELATIONS),
        relations_unresolved=unresolved,
        mentions=len(graph.mentions),
        mentions_by_evidence=_counts(graph.mentions["evidence"], EVIDENCE_ORDER),
        extractor_stats=dict(getattr(extractor, "stats", {})),
        cache_use={
            "extraction_computed": len(documents) - extraction_reused,
            "extraction_reused": extraction_reused,
            "scan_computed": len(documents) - scan_reused,
            "scan_reused": scan_reused,
            "scan_probed": scan_probed,
        },
    )
    return graph, report


def _resolve(phrase: str, key_map: dict[str, str], matcher: SurfaceMatcher) -> str | None:
    """The concept a relation end names: by key or alias, else the one concept it mentions."""
    key = normalise_name(phrase)
    if key in key_map:
        return key_map[key]
    found = {mention.key for mention in matcher.find(match_form(phrase))}
    return found.pop() if len(found) == 1 else None


def _statement_cooccurrence(
    documents: Sequence[PaperDocument], scans: Sequence[DocumentScan], key_map: dict[str, str]
) -> dict[tuple[str, str], set[str]]:
    """Pairs of concepts named in one statement -> the papers where that happens."""
    pairs: dict[tuple[str, str], set[str]] = defaultdict(set)
    for document, scan in zip(documents, scans, strict=True):
        for statement, (_text, named) in zip(
            document.statements, scan.statement_concepts, strict=True
        ):
            names = set(named)
            stated = statement_concept_name(statement.kind, statement.name)
            if stated and normalise_name(stated) in key_map:
                names.add(key_map[normalise_name(stated)])
            if len(names) > MAX_COOCCURRING_CONCEPTS:
                continue
            for first, second in itertools.combinations(sorted(names), 2):
                pairs[(first, second)].add(document.paper_id)
    return pairs


def _resolve_conflicting_generalizations(
    edge_papers: dict[tuple[str, str, str], set[str]],
) -> None:
    """Keep one direction when text says both "X generalizes Y" and "Y generalizes X".

    The direction more papers support wins; on a tie neither is kept (the text does not
    tell which is right, and a cycle in "generalizes" is always wrong).
    """
    for source, target, relation in list(edge_papers):
        if relation != "generalizes" or (target, source, relation) not in edge_papers:
            continue
        if (source, target, relation) not in edge_papers:
            continue  # already removed as the loser of this pair
        forward = len(edge_papers[(source, target, relation)])
        backward = len(edge_papers[(target, source, relation)])
        if forward >= backward:
            del edge_papers[(target, source, relation)]
        if backward >= forward:
            del edge_papers[(source, target, relation)]


def _describe_from_mentions(
    concepts: dict[str, _Concept],
    evidence: dict[tuple[str, str], int],
    text_of_chunk: dict[str, str],
    matcher: SurfaceMatcher,
) -> None:
    """Describe a concept found without a defining text by the first sentence (in chunk
    order) that has a definitional verb and names it before any other concept: "A Dyck
    path is ..." describes Dyck paths; "The Euler pentagonal number theorem is a special
    case of the Jacobi triple product" does not describe the triple product."""
    chunks_of: dict[str, list[str]] = defaultdict(list)
    for name, chunk_id in evidence:
        if not concepts[name].description:
            chunks_of[name].append(chunk_id)
    for name, chunk_ids in chunks_of.items():
        concept = concepts[name]
        for chunk_id in sorted(chunk_ids)[:MAX_DESCRIPTION_CHUNKS]:
            sentence = next(
                (
                    sentence
                    for sentence in split_sentences(text_of_chunk[chunk_id])
                    if is_definitional(sentence) and _first_concept(sentence, matcher) == name
                ),
                None,
            )
            if sentence:
                concept.description = description_from(sentence, concept.display_name)
                break


def _first_concept(sentence: str, matcher: SurfaceMatcher) -> str | None:
    found = matcher.find(match_form(sentence))
    return found[0].key if found else None


def _counts(column: pd.Series, labels: Iterable[str]) -> dict[str, int]:
    counts = column.value_counts()
    return {label: int(counts.get(label, 0)) for label in labels}


def _concept_frame(concepts: dict[str, _Concept]) -> pd.DataFrame:
    rows = [concepts[name] for name in sorted(concepts)]
    return pd.DataFrame(
        {
            "name": [c.name for c in rows],
            "display_name": [c.display_name for c in rows],
            "type": [c.type for c in rows],
            "description": [c.description for c in rows],
            "aliases": [list(c.aliases) for c in rows],
            "papers": [sorted(c.papers) for c in rows],
        },
        columns=CONCEPT_COLUMNS,
    )


def _edge_frame(edge_papers: dict[tuple[str, str, str], set[str]]) -> pd.DataFrame:
    keys = sorted(edge_papers)
    return pd.DataFrame(
        {
            "source": [source for source, _t, _r in keys],
            "target": [target for _s, target, _r in keys],
            "relation": [relation for _s, _t, relation in keys],
            "papers": [sorted(edge_papers[key]) for key in keys],
        },
        columns=EDGE_COLUMNS,
    )


def _mention_frame(
    evidence: dict[tuple[str, str], int], paper_of_chunk: dict[str, str]
) -> pd.DataFrame:
    keys = sorted(evidence)
    return pd.DataFrame(
        {
            "concept": [name for name, _c in keys],
            "chunk_id": [chunk_id for _n, chunk_id in keys],
            "paper_id": [paper_of_chunk[chunk_id] for _n, chunk_id in keys],
            "evidence": [EVIDENCE_ORDER[evidence[key]] for key in keys],
        },
        columns=MENTION_COLUMNS,
    )


# -- the per-paper cache --------------------------------------------------------------

# Bump when the cache file's layout changes.
CACHE_FORMAT = 1
# The code a cached extraction or scan depends on: any edit to it invalidates the cache.
_CACHED_CODE = ("__init__.py", "rules.py", "normalise.py")


@dataclass
class GraphCache:
    """Per-paper results of the last run, by :func:`document_hash`, as JSON-ready values.

    ``extractions`` are valid under ``extractor_fingerprint``; ``scans`` under
    ``scan_code`` and the matcher's ``forms`` (surface form -> concept key) they were made
    with. An entry that does not read back is recomputed. :func:`build_graph` replaces the
    contents by this run's results, so papers no longer in the corpus drop out.
    """

    extractor_fingerprint: str = ""
    extractions: dict[str, Any] = field(default_factory=dict)
    scan_code: str = ""
    forms: dict[str, str] = field(default_factory=dict)
    scans: dict[str, Any] = field(default_factory=dict)


def code_fingerprint() -> str:
    """A hash of the code that extracts and scans one paper."""
    folder = Path(__file__).parent
    digest = hashlib.sha256(f"graph cache format {CACHE_FORMAT}".encode())
    for name in _CACHED_CODE:
        digest.update(name.encode("utf-8") + b"\0" + (folder / name).read_bytes() + b"\0")
    return digest.hexdigest()


def extractor_fingerprint(extractor: Extractor, params: GraphParams) -> str | None:
    """What a cached extraction is valid for, or ``None`` when ``extractor`` cannot be cached.

    An extractor is cacheable when it has a ``version`` (the rules one): the same paper
    then always gives the same extraction. The LLM extractor has none; it keeps its own
    cache of replies.
    """
    version = getattr(extractor, "version", None)
    if version is None:
        return None
    described = {
        "code": code_fingerprint(),
        "extractor": extractor.name,
        "class": f"{type(extractor).__module__}.{type(extractor).__qualname__}",
        "version": version,
        "params": asdict(params),
    }
    return io.sha256_hex(json.dumps(described, sort_keys=True, default=str).encode("utf-8"))


def document_hash(document: PaperDocument) -> str:
    """A hash of everything the extractor and the scan read of a paper (ids included)."""
    content = [
        document.paper_id,
        document.title,
        document.abstract,
        list(document.categories),
        [[chunk.chunk_id, chunk.text] for chunk in document.chunks],
        [[s.statement_id, s.kind, s.name, s.text] for s in document.statements],
    ]
    return io.sha256_hex(json.dumps(content, ensure_ascii=False).encode("utf-8"))


def extraction_to_json(extraction: Extraction) -> dict[str, Any]:
    # By hand, not dataclasses.asdict: that deep-copies every string (seconds on a corpus).
    return {
        "paper_id": extraction.paper_id,
        "concepts": [
            {
                "display_name": concept.display_name,
                "type": concept.type,
                "evidence": concept.evidence,
                "description": concept.description,
                "aliases": list(concept.aliases),
                "defining_text": concept.defining_text,
                "chunk_id": concept.chunk_id,
            }
            for concept in extraction.concepts
        ],
        "relations": [
            {"source": relation.source, "target": relation.target, "relation": relation.relation}
            for relation in extraction.relations
        ],
        "skipped_reason": extraction.skipped_reason,
    }


def extraction_from_json(value: Any, paper_id: str) -> Extraction | None:
    """The cached extraction of ``paper_id``, or ``None`` when ``value`` is not one."""
    try:
        if value["paper_id"] != paper_id:
            return None
        concepts = tuple(
            ConceptCandidate(**{**concept, "aliases": tuple(concept["aliases"])})
            for concept in value["concepts"]
        )
        relations = tuple(RelationCandidate(**relation) for relation in value["relations"])
        extraction = Extraction(paper_id, concepts, relations, value["skipped_reason"])
    except (KeyError, TypeError, ValueError):
        return None
    fields_ok = all(
        isinstance(text, str)
        for concept in concepts
        for text in (
            concept.display_name,
            concept.type,
            concept.evidence,
            concept.description,
            concept.defining_text,
            concept.chunk_id,
            *concept.aliases,
        )
    ) and all(isinstance(r.source, str) and isinstance(r.target, str) for r in relations)
    relations_ok = all(relation.relation in RELATIONS for relation in relations)
    return extraction if fields_ok and relations_ok else None


def scan_to_json(scan: DocumentScan) -> dict[str, Any]:
    # Statement texts are the document's own: only the concepts named are stored.
    return {
        "paper_id": scan.paper_id,
        "mentions": scan.mentions,
        "relations": scan.relations,
        "statements": [sorted(named) for _text, named in scan.statement_concepts],
        "words": sorted(scan.words),
    }


def scan_from_json(value: Any, document: PaperDocument) -> DocumentScan | None:
    """The cached scan of ``document``, or ``None`` when ``value`` is not one."""
    try:
        if value["paper_id"] != document.paper_id:
            return None
        mentions = [(key, chunk_id) for key, chunk_id in value["mentions"]]
        relations = [(source, target, relation) for source, target, relation in value["relations"]]
        named = [frozenset(keys) for keys in value["statements"]]
        words = frozenset(value["words"])
    except (KeyError, TypeError, ValueError):
        return None
    if len(named) != len(document.statements):
        return None
    strings = [*itertools.chain.from_iterable(mentions), *itertools.chain(*named), *words]
    strings += [end for source, target, _r in relations for end in (source, target)]
    if not all(isinstance(text, str) for text in strings):
        return None
    if not all(relation in RELATIONS for _s, _t, relation in relations):
        return None
    return DocumentScan(
        document.paper_id,
        mentions,
        [(source, target, cast(Relation, relation)) for source, target, relation in relations],
        [
            (statement.text, keys)
            for statement, keys in zip(document.statements, named, strict=True)
        ],
        words,
    )


def _extract_all(
    documents: Sequence[PaperDocument],
    hashes: Sequence[str],
    extractor: Extractor,
    params: GraphParams,
    cache: GraphCache | None,
    pool: _LazyPool,
    min_papers_for_pool: int,
    disable_progress: bool | None,
) -> tuple[list[Extraction], int]:
    """Every paper's extraction, from the cache where it holds one; and how many it held."""
    fingerprint = extractor_fingerprint(extractor, params) if cache is not None else None
    found: list[Extraction | None] = [None] * len(documents)
    if cache is not None and fingerprint is not None and cache.extractor_fingerprint == fingerprint:
        for index, (document, digest) in enumerate(zip(documents, hashes, strict=True)):
            if digest in cache.extractions:
                found[index] = extraction_from_json(cache.extractions[digest], document.paper_id)
    todo = [documents[index] for index, extraction in enumerate(found) if extraction is None]
    reused = len(documents) - len(todo)
    progress = tqdm(total=len(todo), desc="graph: extract", unit="paper", disable=disable_progress)
    executor = pool.get() if len(todo) >= min_papers_for_pool else None
    if executor is not None and isinstance(extractor, RulesExtractor):
        computed = [
            extraction
            for batch in executor.map(_extract_batch, _batches(todo, pool.workers))
            for extraction in _advance(progress, batch)
        ]
    else:
        computed = [_advance_one(progress, extractor.extract(document)) for document in todo]
    progress.close()
    fresh = iter(computed)
    extractions = [extraction or next(fresh) for extraction in found]
    if cache is not None and fingerprint is not None:
        cache.extractor_fingerprint = fingerprint
        # A reused entry is kept as read: converting it back would cost as much as reading.
        cache.extractions = {
            digest: cache.extractions[digest] if was_cached is not None else extraction_to_json(new)
            for digest, was_cached, new in zip(hashes, found, extractions, strict=True)
        }
    return extractions, reused


def _scan_all(
    documents: Sequence[PaperDocument],
    hashes: Sequence[str],
    surfaces: dict[str, list[str]],
    matcher: SurfaceMatcher,
    cache: GraphCache | None,
    pool: _LazyPool,
    min_papers_for_pool: int,
    disable_progress: bool | None,
) -> tuple[list[DocumentScan], int, int]:
    """Every paper's scan, from the cache where it still holds; how many were reused, and
    how many of those after a probe for added surface forms."""
    found: list[DocumentScan | None] = [None] * len(documents)
    probed = 0
    code = code_fingerprint() if cache is not None else ""
    if cache is not None and cache.scan_code == code:
        forms = matcher.key_of_form
        # Reusable as is when every earlier form still names the same concept; with forms
        # added since, only if the paper cannot contain one of them.
        if all(forms.get(form) == key for form, key in cache.forms.items()):
            added_words = [
                frozenset(WORD.findall(form)) for form in forms if form not in cache.forms
            ]
            for index, (document, digest) in enumerate(zip(documents, hashes, strict=True)):
                if digest not in cache.scans:
                    continue
                scan = scan_from_json(cache.scans[digest], document)
                if scan is not None and added_words:
                    if _needs_rescan(added_words, scan.words):
                        continue
                    probed += 1
                found[index] = scan
    todo = [documents[index] for index, scan in enumerate(found) if scan is None]
    progress = tqdm(total=len(todo), desc="graph: mentions", unit="paper", disable=disable_progress)
    executor = pool.get() if len(todo) >= min_papers_for_pool else None
    if executor is not None:
        token = io.sha256_hex(repr(sorted(surfaces.items())).encode("utf-8"))
        tasks = [(token, surfaces, batch) for batch in _batches(todo, pool.workers)]
        computed = [
            scan for batch in executor.map(_scan_batch, tasks) for scan in _advance(progress, batch)
        ]
    else:
        computed = [_advance_one(progress, scan_document(document, matcher)) for document in todo]
    progress.close()
    fresh = iter(computed)
    scans = [scan or next(fresh) for scan in found]
    if cache is not None:
        cache.scan_code = code
        cache.forms = dict(matcher.key_of_form)
        cache.scans = {
            digest: cache.scans[digest] if was_cached is not None else scan_to_json(new)
            for digest, was_cached, new in zip(hashes, found, scans, strict=True)
        }
    return scans, len(documents) - len(todo), probed


def _needs_rescan(added_words: Sequence[frozenset[str]], paper_words: frozenset[str]) -> bool:
    """Whether a form with one of these word sets might match in a paper with these words.

    Where a form matches, each of its words is a whole word of the text (the matcher
    demands a non-word character on both sides, and the form's own separators are in the
    text), so a paper lacking a word of every added form cannot contain any of them. A
    form without words is assumed to match anywhere.
    """
    return any(words <= paper_words for words in added_words)


def load_cache(path: Path) -> GraphCache:
    """The cache at ``path``; an empty one when it is missing or does not read back."""
    if not path.is_file():
        return GraphCache()
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
        if value.get("format") != CACHE_FORMAT:
            raise ValueError(f"format {value.get('format')!r}, expected {CACHE_FORMAT}")
        cache = GraphCache(
            extractor_fingerprint=str(value["extractor_fingerprint"]),
            extractions=dict(value["extractions"]),
            scan_code=str(value["scan_code"]),
            forms=dict(value["forms"]),
            scans=dict(value["scans"]),
        )
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as error:
        print(
            f"graph: ignoring the unreadable cache {path} ({error}); recomputing", file=sys.stderr
        )
        return GraphCache()
    return cache


def save_cache(path: Path, cache: GraphCache) -> None:
    """Write ``cache`` to ``path`` atomically (compact JSON: it holds every paper)."""
    # By hand, not dataclasses.asdict: that deep-copies every entry.
    value = {
        "format": CACHE_FORMAT,
        "extractor_fingerprint": cache.extractor_fingerprint,
        "extractions": cache.extractions,
        "scan_code": cache.scan_code,
        "forms": cache.forms,
        "scans": cache.scans,
    }
    io.write_text(path, json.dumps(value, ensure_ascii=False, separators=(",", ":")))


# -- worker processes -----------------------------------------------------------------

_BATCHES_PER_WORKER = 8
_worker_matchers: dict[str, SurfaceMatcher] = {}  # one compiled matcher per worker process


class _LazyPool:
    """``workers`` processes, started the first time a phase has enough work for them
    (an incremental run often has none), shut down on leaving the ``with`` block."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._executor: ProcessPoolExecutor | None = None

    def get(self) -> ProcessPoolExecutor | None:
        if self.workers <= 1:
            return None
        if self._executor is None:
            # spawn, not fork: a forked child of a process with threads (tqdm's, an HTTP
            # server's in tests) can deadlock.
            self._executor = ProcessPoolExecutor(
                self.workers, mp_context=multiprocessing.get_context("spawn")
            )
        return self._executor

    def __enter__(self) -> _LazyPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._executor is not None:
            self._executor.shutdown()


def _batches(documents: Sequence[PaperDocument], workers: int) -> list[list[PaperDocument]]:
    size = max(1, -(-len(documents) // (workers * _BATCHES_PER_WORKER)))
    return [list(documents[start : start + size]) for start in range(0, len(documents), size)]


def _extract_batch(batch: list[PaperDocument]) -> list[Extraction]:
    extractor = RulesExtractor()
    return [extractor.extract(document) for document in batch]


def _scan_batch(
    task: tuple[str, dict[str, list[str]], list[PaperDocument]],
) -> list[DocumentScan]:
    token, surfaces, batch = task
    if token not in _worker_matchers:
        _worker_matchers.clear()
        _worker_matchers[token] = SurfaceMatcher(surfaces)
    matcher = _worker_matchers[token]
    return [scan_document(document, matcher) for document in batch]


T = TypeVar("T")


def _advance(progress: Any, batch: list[T]) -> list[T]:
    progress.update(len(batch))
    return batch


def _advance_one(progress: Any, item: T) -> T:
    progress.update(1)
    return item


# -- I/O shell ------------------------------------------------------------------------


def read_processed(paths: Paths) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The prepare stage's tables, checked for the columns this stage reads."""
    tables = []
    for table, columns in REQUIRED_COLUMNS.items():
        path = paths.processed / f"{table}.parquet"
        if not path.is_file():
            raise FileNotFoundError(
                f"{path} not found; run the prepare stage first (python -m pipelines.prepare)"
            )
        frame = io.read_parquet(path)
        missing = [column for column in columns if column not in frame.columns]
        if missing:
            raise ValueError(
                f"{path} lacks column(s) {missing}; it was written by an older prepare "
                "stage: rerun prepare"
            )
        tables.append(frame)
    papers, chunks, statements = tables
    return papers, chunks, statements


def write_table(path: Path, frame: pd.DataFrame, schema: pa.Schema) -> None:
    """Write ``frame`` to ``path`` atomically, with exactly ``schema``'s columns and types."""
    # From plain lists, not from_pandas: an empty frame's columns are float64 in pandas,
    # and list columns may hold numpy arrays; the schema decides the types either way.
    columns = {name: [_plain(value) for value in frame[name].tolist()] for name in schema.names}
    table = pa.Table.from_pydict(columns, schema=schema)
    with io.atomic_output(path, "wb") as handle:
        pq.write_table(table, handle)


def _plain(value: Any) -> Any:
    """A cell as Arrow takes it: numpy arrays (list cells read from Parquet) as lists."""
    return value.tolist() if hasattr(value, "tolist") else value


def make_extractor(params: GraphParams, paths: Paths) -> Extractor:
    """The extractor ``params.extractor`` names."""
    if params.extractor == "rules":
        return RulesExtractor()
    if not params.llm_url or not params.llm_model:
        raise ConfigError(
            "graph.extractor is 'llm' but graph.llm_url or graph.llm_model is empty in "
            "params.yaml; set both (e.g. llm_url: http://127.0.0.1:8000/v1) or use 'rules'"
        )
    return LLMExtractor(
        url=params.llm_url,
        model=params.llm_model,
        api_key=os.environ.get(params.llm_api_key_env, ""),
        max_retries=params.llm_max_retries,
        timeout_seconds=params.llm_timeout_seconds,
        backoff_seconds=params.llm_backoff_seconds,
        cache_dir=paths.llm_cache,
        quarantine_dir=paths.quarantine,
    )


def cache_path(paths: Paths) -> Path:
    """The per-paper cache: kept across runs, not a DVC output (like the LLM reply cache)."""
    return paths.graph_cache / "per_paper.json"


def run_graph(
    params: GraphParams,
    paths: Paths,
    *,
    extractor: Extractor | None = None,
    workers: int | None = None,
) -> GraphReport:
    """Build the graph from ``paths.processed`` and write it under ``paths.graph``,
    reusing and then updating the per-paper cache at :func:`cache_path`.

    ``workers`` processes (default: one per CPU) share the per-paper work on a corpus of
    at least :data:`MIN_PAPERS_FOR_POOL` papers; a script calling this with more than one
    needs the usual ``if __name__ == "__main__":`` guard (processes are spawned).
    """
    io.ensure_quarantine(paths.quarantine, "graph")
    papers, chunks, statements = read_processed(paths)
    documents = documents_from_tables(papers, chunks, statements)
    cache = load_cache(cache_path(paths))
    graph, report = build_graph(
        documents,
        extractor or make_extractor(params, paths),
        params,
        workers=workers if workers is not None else (os.cpu_count() or 1),
        cache=cache,
    )
    write_table(paths.graph / "concepts.parquet", graph.concepts, CONCEPTS_SCHEMA)
    write_table(paths.graph / "edges.parquet", graph.edges, EDGES_SCHEMA)
    write_table(paths.graph / "mentions.parquet", graph.mentions, MENTIONS_SCHEMA)
    save_cache(cache_path(paths), cache)
    io.write_json(paths.metrics / "graph.json", report.as_dict())
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pipelines.graph",
        description=(
            "Build the knowledge graph (concepts, edges, mentions) from data/processed and "
            "write data/graph/*.parquet and metrics/graph.json."
        ),
    )
    add_config_arguments(parser)
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="processes for the per-paper work (default: one per CPU; 1 = no pool)",
    )
    args = parser.parse_args(argv)
    try:
        params = load_params(args.params).graph
        report = run_graph(params, Paths(args.root), workers=args.workers)
    except (ConfigError, FileNotFoundError, ValueError, LLMError) as error:
        print(f"graph: {error}", file=sys.stderr)
        return 1
    print(
        f"graph: {report.papers} papers -> {report.concepts} concepts, {report.edges} edges, "
        f"{report.mentions} mentions ({report.papers_skipped} papers skipped)"
    )
    return 0
