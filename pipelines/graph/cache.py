"""The graph stage's per-paper cache: what an incremental run reuses.

The per-paper work (extraction, then the mention scan) is cached in
``data/cache/graph/per_paper.json`` by a hash of the paper's content
(:func:`document_hash`). An extraction is reused under the same extractor fingerprint
(extractor, its version, the stage's code, the graph params); a scan under the same code
and, when the surface forms changed since, if both hold (so a scan with the new forms
finds exactly what it found before):

* it names no concept one of whose earlier forms was removed or now names another concept.
  The matcher takes, at each position, the longest form that matches there, so a form
  never chosen in the paper changed no choice (dropping it changes nothing), and one that
  was chosen left its concept in the scan. A concept that leaves the graph rescans only
  the papers that named it, not every paper;
* the paper lacks a word of each *added* form (none of them can match there).

Everything after that (merging, edges, descriptions) is redone from the per-paper results
every run, so the outputs are the same as a from-scratch build's.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

from tqdm import tqdm  # type: ignore[import-untyped]

from pipelines.common import io
from pipelines.common.config import GraphParams
from pipelines.common.isolation import Deferred, Failure, StageBudget
from pipelines.common.paths import Paths
from pipelines.common.tables import RELATIONS, Relation
from pipelines.graph.extractor import (
    ConceptCandidate,
    Extraction,
    Extractor,
    PaperDocument,
    RelationCandidate,
)
from pipelines.graph.rules import RulesExtractor
from pipelines.graph.scan import WORD, DocumentScan, scan_document
from pipelines.graph.workers import (
    deferred_reason,
    extract_one,
    failure_reason,
    run_papers,
    scan_one,
)
from pipelines.mathtext.names import SurfaceMatcher

# Bump when the cache file's layout changes.
CACHE_FORMAT = 2  # 2: candidates carry their statement_id
# The code a cached extraction or scan depends on, besides every module of this package:
# the rules of mathematical text it imports (mathtext/: names, the phrases that name a
# concept, where a statement sits among the passages, cross-references) and the allowed
# values (the kernel's table contract). tests/unit/graph/test_graph.py checks that every
# mathtext module the package imports is here.
_SHARED_CODE = (
    "mathtext/concept_phrases.py",
    "mathtext/names.py",
    "mathtext/passages.py",
    "mathtext/refs.py",
    "common/tables.py",
)
#: The graph knobs that decide whether and when a paper is worked on, not what comes out:
#: no part of a fingerprint.
SCHEDULING_KNOBS = frozenset({"paper_timeout_seconds", "stage_budget_seconds", "max_paper_retries"})


@dataclass
class GraphCache:
    """Per-paper results of the last run, by :func:`document_hash`, as JSON-ready values.

    ``extractions`` are valid under ``extractor_fingerprint``; ``scans`` under
    ``scan_code`` and the matcher's ``forms`` (surface form -> concept key) they were made
    with. An entry that does not read back is recomputed. Each run replaces the contents by
    its own results (:func:`extract_all`, :func:`scan_all`), so papers no longer in the
    corpus drop out.
    """

    extractor_fingerprint: str = ""
    extractions: dict[str, Any] = field(default_factory=dict)
    scan_code: str = ""
    forms: dict[str, str] = field(default_factory=dict)
    scans: dict[str, Any] = field(default_factory=dict)


def cache_path(paths: Paths) -> Path:
    """The per-paper cache: kept across runs, not a DVC output (like the LLM reply cache)."""
    return paths.graph_cache / "per_paper.json"


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


# -- fingerprints ---------------------------------------------------------------------


def code_fingerprint() -> str:
    """A hash of the code that extracts and scans one paper: any edit to it invalidates the
    cache."""
    package = Path(__file__).parent
    digest = hashlib.sha256(f"graph cache format {CACHE_FORMAT}".encode())
    for path in [*sorted(package.glob("*.py")), *(package.parent / name for name in _SHARED_CODE)]:
        name = f"{path.parent.name}/{path.name}"
        digest.update(name.encode("utf-8") + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def work_fingerprint(extractor: Extractor, params: GraphParams) -> str:
    """What a paper's per-paper work depends on besides the paper: the code, the extractor
    (its name, class and version) and the graph params other than :data:`SCHEDULING_KNOBS`."""
    described = {
        "code": code_fingerprint(),
        "extractor": extractor.name,
        "class": f"{type(extractor).__module__}.{type(extractor).__qualname__}",
        "version": getattr(extractor, "version", None),
        "params": {k: v for k, v in asdict(params).items() if k not in SCHEDULING_KNOBS},
    }
    return io.sha256_hex(json.dumps(described, sort_keys=True, default=str).encode("utf-8"))


def extractor_fingerprint(extractor: Extractor, params: GraphParams) -> str | None:
    """What a cached extraction is valid for, or ``None`` when ``extractor`` cannot be cached.

    An extractor is cacheable when it has a ``version`` (the rules one): the same paper
    then always gives the same extraction. The LLM extractor has none; it keeps its own
    cache of replies.
    """
    if getattr(extractor, "version", None) is None:
        return None
    return work_fingerprint(extractor, params)


def document_hash(document: PaperDocument) -> str:
    """A hash of everything the extractor and the scan read of a paper (ids included)."""
    content = [
        document.paper_id,
        document.title,
        document.abstract,
        list(document.categories),
        [[chunk.chunk_id, chunk.text] for chunk in document.chunks],
        [
            [s.statement_id, s.kind, s.name, s.text, list(s.terms), s.label, list(s.refs)]
            for s in document.statements
        ],
    ]
    return io.sha256_hex(json.dumps(content, ensure_ascii=False).encode("utf-8"))


# -- JSON form ------------------------------------------------------------------------


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
                "statement_id": concept.statement_id,
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
            concept.statement_id,
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


# -- the per-paper work, cached or computed -------------------------------------------


@dataclass(frozen=True)
class Isolation:
    """How the per-paper work runs: in ``workers`` processes (one below
    ``min_papers_for_pool`` papers) with each paper stopped past ``timeout_seconds``
    (:mod:`pipelines.graph.workers`), or, with no budget and one worker or too few papers
    for more, in this process. Either way no paper starts once the stage has spent its
    ``budget`` (shared by both phases)."""

    workers: int
    min_papers_for_pool: int
    timeout_seconds: float | None
    budget: StageBudget | None = None

    def in_workers(self, papers: int) -> bool:
        return self.timeout_seconds is not None or (
            self.workers > 1 and papers >= self.min_papers_for_pool
        )


@dataclass
class PaperOutcomes:
    """The papers the per-paper work leaves out of the graph tonight, paper id -> why.

    ``held``: quarantined on an earlier night and not due for a retry
    (:mod:`pipelines.graph.retries`), known before the work; ``failed``: their work
    raised, killed its worker or ran out of time now (quarantined); ``deferred``: not
    started because the stage had spent its budget (not quarantined: the next run does
    them). A paper left out of the extraction is not scanned. ``retrying``: papers due for
    a retry, worked on after the others, so a night's budget goes to new papers first.
    """

    held: dict[str, str] = field(default_factory=dict)
    retrying: frozenset[str] = frozenset()
    failed: dict[str, str] = field(default_factory=dict)
    deferred: dict[str, str] = field(default_factory=dict)

    def left_out(self, paper_id: str) -> bool:
        return paper_id in self.held or paper_id in self.failed or paper_id in self.deferred


def extract_all(
    documents: Sequence[PaperDocument],
    hashes: Sequence[str],
    extractor: Extractor,
    params: GraphParams,
    cache: GraphCache | None,
    isolation: Isolation,
    disable_progress: bool | None,
    outcomes: PaperOutcomes,
) -> tuple[list[Extraction], int, int]:
    """Every paper's extraction, from the cache where it holds one; how many it held (and
    were used), and how many were computed (successfully or not).

    A paper held in quarantine, or whose extraction fails in its worker
    (:class:`Isolation`) or is deferred, contributes nothing (``skipped_reason``) and is
    recorded in ``outcomes``; a new extraction is cached only when it went through, and a
    held paper's cached one is kept for its retry."""
    fingerprint = extractor_fingerprint(extractor, params) if cache is not None else None
    found: list[Extraction | None] = [None] * len(documents)
    if cache is not None and fingerprint is not None and cache.extractor_fingerprint == fingerprint:
        for index, (document, digest) in enumerate(zip(documents, hashes, strict=True)):
            if digest in cache.extractions:
                found[index] = extraction_from_json(cache.extractions[digest], document.paper_id)
    todo = [
        index
        for index, extraction in enumerate(found)
        if extraction is None and documents[index].paper_id not in outcomes.held
    ]
    progress = tqdm(total=len(todo), desc="graph: extract", unit="paper", disable=disable_progress)
    # Workers run their own rules extractor: a subclass (or the LLM one, bound by its
    # endpoint, with its own cache and stats) runs here, as given.
    results = _work_on(
        [documents[index] for index in todo],
        extract_one,
        extractor.extract,
        type(extractor) is RulesExtractor and isolation.in_workers(len(todo)),
        isolation,
        outcomes.retrying,
        progress,
    )
    progress.close()
    computed: dict[int, Extraction] = {}
    left_out: dict[int, Extraction] = {}
    for index, result in zip(todo, results, strict=True):
        paper_id = documents[index].paper_id
        if isinstance(result, Failure | Deferred):
            reason = _record_left_out(outcomes, paper_id, "extraction", result)
            left_out[index] = Extraction(paper_id, skipped_reason=reason)
        else:
            computed[index] = result
    extractions = [
        _extraction_of(document, found[index], computed.get(index), left_out.get(index), outcomes)
        for index, document in enumerate(documents)
    ]
    if cache is not None and fingerprint is not None:
        cache.extractor_fingerprint = fingerprint
        # A reused entry is kept as read: converting it back would cost as much as reading.
        cache.extractions = {
            digest: cache.extractions[digest]
            if found[index] is not None
            else extraction_to_json(computed[index])
            for index, digest in enumerate(hashes)
            if found[index] is not None or index in computed
        }
    reused = sum(
        1
        for document, extraction in zip(documents, found, strict=True)
        if extraction is not None and document.paper_id not in outcomes.held
    )
    deferred = sum(1 for result in results if isinstance(result, Deferred))
    return extractions, reused, len(todo) - deferred


def _extraction_of(
    document: PaperDocument,
    reused: Extraction | None,
    computed: Extraction | None,
    left_out: Extraction | None,
    outcomes: PaperOutcomes,
) -> Extraction:
    """The paper's extraction: nothing (and why) when it is held in quarantine or its
    extraction failed or was deferred; else the one computed now or reused."""
    held = outcomes.held.get(document.paper_id)
    if held is not None:
        return Extraction(document.paper_id, skipped_reason=held)
    extraction = left_out or computed or reused
    assert extraction is not None, "every paper not held was reused or worked on"
    return extraction


def _record_left_out(
    outcomes: PaperOutcomes, paper_id: str, phase: str, result: Failure | Deferred
) -> str:
    """Record a paper whose ``phase`` failed or was deferred in ``outcomes``; its reason."""
    if isinstance(result, Deferred):
        reason = deferred_reason(phase, result)
        outcomes.deferred.setdefault(paper_id, reason)
    else:
        reason = failure_reason(phase, result)
        outcomes.failed.setdefault(paper_id, reason)
    return reason


def _work_on(
    todo: list[PaperDocument],
    in_worker: Callable[[PaperDocument], Any],
    here: Callable[[PaperDocument], Any],
    in_workers: bool,
    isolation: Isolation,
    retrying: frozenset[str],
    progress: Any,
) -> list[Any]:
    """The results of ``todo``'s papers, in order: each ``in_worker`` in worker processes
    (:class:`Isolation`) or ``here``, in this process. Papers due for a retry go last;
    none starts once the stage has spent its budget (:class:`Deferred`)."""
    order = sorted(range(len(todo)), key=lambda index: todo[index].paper_id in retrying)
    ordered = [todo[index] for index in order]
    budget = isolation.budget
    if in_workers:
        results = run_papers(
            in_worker,
            ordered,
            workers=isolation.workers,
            min_papers_for_pool=isolation.min_papers_for_pool,
            timeout_seconds=isolation.timeout_seconds,
            budget=budget,
            progress=progress,
        )
    else:
        results = []
        if budget is not None and ordered:
            budget.begin()
        for document in ordered:
            spent = budget is not None and budget.spent()
            results.append(budget.deferred() if budget and spent else here(document))
            progress.update(1)
    in_order: list[Any] = [None] * len(todo)
    for position, index in enumerate(order):
        in_order[index] = results[position]
    return in_order


def scan_all(
    documents: Sequence[PaperDocument],
    hashes: Sequence[str],
    surfaces: dict[str, list[str]],
    matcher: SurfaceMatcher,
    cache: GraphCache | None,
    isolation: Isolation,
    disable_progress: bool | None,
    outcomes: PaperOutcomes,
) -> tuple[list[DocumentScan], int, int, int]:
    """Every paper's scan, from the cache where it still holds; how many were reused, how
    many of those after a probe for surface forms added, removed or re-keyed since, and how
    many were computed (successfully or not).

    A paper left out of the extraction (:class:`PaperOutcomes`) is not scanned; one whose
    scan fails in its worker or is deferred is recorded in ``outcomes``. Each of them
    mentions nothing. A new scan is cached only when it went through; a cached scan that
    still holds is kept, used or not."""
    found: list[DocumentScan | None] = [None] * len(documents)
    probed_at: set[int] = set()
    code = code_fingerprint() if cache is not None else ""
    if cache is not None and cache.scan_code == code:
        forms = matcher.key_of_form
        # Reusable as is when the forms are unchanged; else when the scan names none of the
        # concepts whose forms were removed or re-keyed, and the paper cannot contain an
        # added form (the module docstring says why that is exact).
        changed_keys = frozenset(key for form, key in cache.forms.items() if forms.get(form) != key)
        added_words = [frozenset(WORD.findall(form)) for form in forms if form not in cache.forms]
        for index, (document, digest) in enumerate(zip(documents, hashes, strict=True)):
            if digest not in cache.scans:
                continue
            scan = scan_from_json(cache.scans[digest], document)
            if scan is not None and (changed_keys or added_words):
                if _names_any(scan, changed_keys) or _needs_rescan(added_words, scan.words):
                    continue
                probed_at.add(index)
            found[index] = scan
    used = [not outcomes.left_out(document.paper_id) for document in documents]
    todo = [index for index, scan in enumerate(found) if scan is None and used[index]]
    progress = tqdm(total=len(todo), desc="graph: mentions", unit="paper", disable=disable_progress)
    token = io.sha256_hex(repr(sorted(surfaces.items())).encode("utf-8"))
    results = _work_on(
        [documents[index] for index in todo],
        functools.partial(scan_one, token=token, surfaces=surfaces),
        functools.partial(scan_document, matcher=matcher),
        isolation.in_workers(len(todo)),
        isolation,
        outcomes.retrying,
        progress,
    )
    progress.close()
    computed: dict[int, DocumentScan] = {}
    for index, result in zip(todo, results, strict=True):
        if isinstance(result, Failure | Deferred):
            _record_left_out(outcomes, documents[index].paper_id, "mention scan", result)
        else:
            computed[index] = result
    scans = [
        _scan_of(document, computed.get(index), found[index] if used[index] else None)
        for index, document in enumerate(documents)
    ]
    if cache is not None:
        cache.scan_code = code
        cache.forms = dict(matcher.key_of_form)
        cache.scans = {
            digest: cache.scans[digest] if found[index] is not None else scan_to_json(scans[index])
            for index, digest in enumerate(hashes)
            if found[index] is not None or index in computed
        }
    reused = sum(1 for index, scan in enumerate(found) if scan is not None and used[index])
    probed = sum(1 for index in probed_at if used[index])
    deferred = sum(1 for result in results if isinstance(result, Deferred))
    return scans, reused, probed, len(todo) - deferred


def _scan_of(
    document: PaperDocument, computed: DocumentScan | None, reused: DocumentScan | None
) -> DocumentScan:
    """The paper's scan, computed now or reused; for a paper left out, one naming nothing."""
    if computed is not None:
        return computed
    if reused is not None:
        return reused
    statements = [(statement.text, frozenset[str]()) for statement in document.statements]
    return DocumentScan(document.paper_id, [], [], statements)


def _names_any(scan: DocumentScan, keys: frozenset[str]) -> bool:
    """Whether the scan found one of these concepts (relations join mentioned ones)."""
    if not keys:
        return False
    return any(key in keys for key, _chunk in scan.mentions) or any(
        named & keys for _text, named in scan.statement_concepts
    )


def _needs_rescan(added_words: Sequence[frozenset[str]], paper_words: frozenset[str]) -> bool:
    """Whether a form with one of these word sets might match in a paper with these words.

    Where a form matches, each of its words is a whole word of the text (the matcher
    demands a non-word character on both sides, and the form's own separators are in the
    text), so a paper lacking a word of every added form cannot contain any of them. A
    form without words is assumed to match anywhere.
    """
    return any(words <= paper_words for words in added_words)
