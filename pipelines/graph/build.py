"""The knowledge graph of a corpus: concepts, typed edges and mentions (the pure part of the
graph stage).

An :class:`~pipelines.graph.extractor.Extractor` (the rule-based one by default, or the
optional LLM one) proposes concepts per paper; they are merged by normalised name and alias
(:mod:`pipelines.graph.merge`); then one pass over every chunk finds the chunks that
mention each concept (``mentions``) and the relations written between concepts ("X
generalizes Y", ...; :mod:`pipelines.graph.scan`). Two more edge kinds come from
statements: ``uses`` (a definition mentions another concept: definitional dependency) and
``related_to`` (two concepts appear together in statements of at least
``cooccurrence_min_papers`` papers, and no other edge joins them). A concept's ``papers``
are the papers that define, state or mention it.

The per-paper work is reused from a :class:`~pipelines.graph.cache.GraphCache` where it
still holds; the graph is the same either way.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from pipelines.common.config import GraphParams
from pipelines.common.isolation import StageBudget
from pipelines.common.tables import (
    CONCEPT_TYPES,
    CONCEPTS_SCHEMA,
    EDGES_SCHEMA,
    EVIDENCE_ORDER,
    MENTIONS_SCHEMA,
    RELATIONS,
)
from pipelines.graph.cache import (
    GraphCache,
    Isolation,
    PaperOutcomes,
    document_hash,
    extract_all,
    scan_all,
)
from pipelines.graph.extractor import ConceptCandidate, Extractor, PaperDocument
from pipelines.graph.merge import MergedConcept, evidence_rank, merge_candidates
from pipelines.graph.rules import description_from, is_definitional, split_sentences
from pipelines.graph.scan import DocumentScan
from pipelines.graph.terms import corroborated
from pipelines.graph.workers import MIN_PAPERS_FOR_POOL
from pipelines.mathtext.concept_phrases import statement_concept_name
from pipelines.mathtext.names import SurfaceMatcher, match_form, normalise_name
from pipelines.mathtext.refs import cited_statements, work_keys

# A statement naming more concepts than this is a survey sentence; its pairs say little.
MAX_COOCCURRING_CONCEPTS = 12
# Chunks read, per concept without a description, looking for a definitional sentence.
MAX_DESCRIPTION_CHUNKS = 20


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
    # Names seen only with weak evidence (a sentence pattern) that too few papers used, or
    # that are everyday words: left out (pipelines.graph.terms).
    concepts_uncorroborated: int = 0
    # \\ref citations resolved between statements (each may add `uses` edges).
    citations: int = 0
    # Per-paper work done vs reused from the cache: extraction_computed/extraction_reused,
    # scan_computed/scan_reused (each pair adds up to ``papers`` less the papers not worked
    # on in that phase: quarantined, deferred, or for the scan, left out of the extraction);
    # scan_probed counts the reused scans that needed a probe for surface forms added,
    # removed or re-keyed first.
    cache_use: dict[str, int] = field(default_factory=dict)
    # Papers whose extraction or scan raised, killed its worker or ran past
    # graph.paper_timeout_seconds, now or on an earlier night and not due for a retry
    # (pipelines/graph/retries.py): paper id -> why. The stage quarantines them. A failed
    # extraction (which counts in papers_skipped) leaves the paper out: it adds nothing to
    # the graph; a failed scan adds what its extraction found, and no mentions.
    quarantined: dict[str, str] = field(default_factory=dict)
    # Papers not worked on because the stage had spent graph.stage_budget_seconds: paper id
    # -> why. Not quarantined: the next run does them. Deferred before its extraction, a
    # paper adds nothing to the graph; before its scan, what its extraction found.
    deferred: dict[str, str] = field(default_factory=dict)
    # Papers whose work all went through, now or from the cache:
    # papers == papers_kept + len(quarantined) + len(deferred).
    papers_kept: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def build_graph(
    documents: Sequence[PaperDocument],
    extractor: Extractor,
    params: GraphParams,
    *,
    workers: int = 1,
    min_papers_for_pool: int = MIN_PAPERS_FOR_POOL,
    paper_timeout_seconds: float | None = None,
    stage_budget_seconds: float | None = None,
    held: Mapping[str, str] | None = None,
    retrying: Collection[str] = (),
    disable_progress: bool | None = None,
    cache: GraphCache | None = None,
) -> tuple[Graph, GraphReport]:
    """The knowledge graph of ``documents`` and a report of what went into it.

    With a ``paper_timeout_seconds`` budget, or with ``workers`` > 1 and at least
    ``min_papers_for_pool`` papers to work on, the per-paper work (rule extraction, then
    scanning the text for mentions) runs in worker processes (:mod:`pipelines.graph.workers`;
    ``workers`` of them from ``min_papers_for_pool`` papers, one below), each paper stopped
    past the budget and quarantined (``report.quarantined``) if it fails; the result is
    the same as in one process (papers come back in order). An extractor other than the
    plain rules one (the LLM one: bound by its endpoint, with its own cache and stats)
    always runs in this process. With a ``cache``, per-paper results found there are
    reused and the cache is then replaced by this run's (see :class:`GraphCache`); the
    graph is the same either way.

    Papers in ``held`` (paper id -> why: quarantined earlier, not due for a retry) are not
    worked on and add nothing; those in ``retrying`` are worked on after the others. With a
    ``stage_budget_seconds``, no paper's work starts once the per-paper work has taken
    that long (in both phases together): the papers left are deferred
    (``report.deferred``) to the next run, as :class:`GraphReport` says.
    """
    hashes = [document_hash(document) for document in documents] if cache is not None else []
    budget = StageBudget(stage_budget_seconds) if stage_budget_seconds is not None else None
    isolation = Isolation(workers, min_papers_for_pool, paper_timeout_seconds, budget)
    ids = {document.paper_id for document in documents}
    outcomes = PaperOutcomes(
        held={paper_id: why for paper_id, why in (held or {}).items() if paper_id in ids},
        retrying=frozenset(retrying),
    )
    extractions, extraction_reused, extraction_computed = extract_all(
        documents, hashes, extractor, params, cache, isolation, disable_progress, outcomes
    )
    sightings = [
        (extraction.paper_id, candidate)
        for extraction in extractions
        for candidate in extraction.concepts
    ]
    concepts, key_map = merge_candidates(sightings)
    uncorroborated = _drop_uncorroborated(concepts, key_map, sightings)
    surfaces = {name: sorted(concept.surfaces) for name, concept in concepts.items()}
    matcher = SurfaceMatcher(surfaces)
    scans, scan_reused, scan_probed, scan_computed = scan_all(
        documents, hashes, surfaces, matcher, cache, isolation, disable_progress, outcomes
    )

    # evidence[(concept, chunk_id)] -> the strongest evidence seen (lowest rank).
    evidence: dict[tuple[str, str], int] = {}
    paper_of_chunk = {chunk.chunk_id: d.paper_id for d in documents for chunk in d.chunks}
    text_of_chunk = {chunk.chunk_id: chunk.text for d in documents for chunk in d.chunks}
    edge_papers: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    text_rank = evidence_rank("text")
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
        rank = evidence_rank(candidate.evidence)
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

    citations = _citation_uses(documents, sightings, key_map, edge_papers)

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
        concepts_uncorroborated=uncorroborated,
        citations=citations,
        cache_use={
            "extraction_computed": extraction_computed,
            "extraction_reused": extraction_reused,
            "scan_computed": scan_computed,
            "scan_reused": scan_reused,
            "scan_probed": scan_probed,
        },
        quarantined=dict(sorted({**outcomes.held, **outcomes.failed}.items())),
        deferred=dict(sorted(outcomes.deferred.items())),
        papers_kept=len(documents)
        - len(outcomes.held)
        - len(outcomes.failed)
        - len(outcomes.deferred),
    )
    return graph, report


def _drop_uncorroborated(
    concepts: dict[str, MergedConcept],
    key_map: dict[str, str],
    sightings: Sequence[tuple[str, ConceptCandidate]],
) -> int:
    """Remove the concepts only weak evidence names that :func:`corroborated` refuses.

    Returns how many went. Their keys leave ``key_map`` too, so nothing later resolves to them.
    """
    strong: set[str] = set()
    weak_papers: dict[str, set[str]] = defaultdict(set)
    for paper_id, candidate in sightings:
        name = key_map.get(candidate.key)
        if name is None:
            continue
        if candidate.evidence == "text":
            weak_papers[name].add(paper_id)
        else:
            strong.add(name)
    dropped = {
        name
        for name in concepts
        if name not in strong and not corroborated(name, len(weak_papers[name]))
    }
    for name in dropped:
        del concepts[name]
    for key in [key for key, name in key_map.items() if name in dropped]:
        del key_map[key]
    return len(dropped)


def _citation_uses(
    documents: Sequence[PaperDocument],
    sightings: Sequence[tuple[str, ConceptCandidate]],
    key_map: dict[str, str],
    edge_papers: dict[tuple[str, str, str], set[str]],
) -> int:
    """``uses`` edges from ``\\ref``: a statement (or its proof) that cites the statement
    defining or stating concept B uses B, for each concept A it defines or states itself.
    Returns the number of citations resolved."""
    cited = cited_statements(
        (
            (statement.statement_id, document.paper_id, statement.label, statement.refs)
            for document in documents
            for statement in document.statements
        ),
        work_keys((document.paper_id, document.authors) for document in documents),
    )
    stated: dict[str, set[str]] = defaultdict(set)
    for _paper_id, candidate in sightings:
        name = key_map.get(candidate.key)
        if name is not None and candidate.statement_id:
            stated[candidate.statement_id].add(name)
    paper_of = {
        statement.statement_id: document.paper_id
        for document in documents
        for statement in document.statements
    }
    for source, targets in cited.items():
        users = stated.get(source, set())
        for target in targets:
            for user in users:
                for used in stated.get(target, set()) - users:
                    edge_papers[(user, used, "uses")].add(paper_of[source])
    return sum(len(targets) for targets in cited.values())


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
    concepts: dict[str, MergedConcept],
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


def _concept_frame(concepts: dict[str, MergedConcept]) -> pd.DataFrame:
    rows = [concepts[name] for name in sorted(concepts)]
    return pd.DataFrame(
        {
            "name": [c.name for c in rows],
            "display_name": [c.display_name for c in rows],
            "type": [c.type for c in rows],
            "description": [c.description for c in rows],
            "aliases": [list(c.aliases) for c in rows],
            "papers": [sorted(c.papers) for c in rows],
            "statements": [sorted(c.statements) for c in rows],
        },
        columns=CONCEPTS_SCHEMA.names,
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
        columns=EDGES_SCHEMA.names,
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
        columns=MENTIONS_SCHEMA.names,
    )
