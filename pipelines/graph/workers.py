"""Worker processes for the per-paper work (rule extraction, then the mention scan).

Each paper goes to a worker process (:mod:`pipelines.common.isolation`), stopped past the
paper's time budget (``graph.paper_timeout_seconds``): a paper whose work raises, kills its
worker or runs out of time comes back as a :class:`Failure` and the others go on; once the
stage has spent ``graph.stage_budget_seconds``, the papers not started come back as
:class:`Deferred`. One worker below :data:`MIN_PAPERS_FOR_POOL` papers, ``workers`` from
there. Results come back in order, so the graph is the same as in one process.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pipelines.common.isolation import Deferred, Failure, StageBudget, run_isolated
from pipelines.graph.extractor import Extraction, PaperDocument
from pipelines.graph.rules import RulesExtractor
from pipelines.graph.scan import DocumentScan, scan_document
from pipelines.mathtext.names import SurfaceMatcher

# Below this many papers, more than one worker costs more than it saves.
MIN_PAPERS_FOR_POOL = 400
_worker_extractor = RulesExtractor()  # one per worker process
_worker_matchers: dict[str, SurfaceMatcher] = {}  # one compiled matcher per worker process

Result = TypeVar("Result")


def extract_one(document: PaperDocument) -> Extraction:
    """In a worker: the rule extractor on one paper."""
    return _worker_extractor.extract(document)


def scan_one(document: PaperDocument, token: str, surfaces: dict[str, list[str]]) -> DocumentScan:
    """In a worker: one paper scanned with the matcher of ``surfaces``, compiled once per
    worker for each ``token`` (a hash of the surfaces)."""
    if token not in _worker_matchers:
        _worker_matchers.clear()
        _worker_matchers[token] = SurfaceMatcher(surfaces)
    return scan_document(document, _worker_matchers[token])


def run_papers(
    work: Callable[[PaperDocument], Result],
    documents: Sequence[PaperDocument],
    *,
    workers: int,
    min_papers_for_pool: int,
    timeout_seconds: float | None,
    budget: StageBudget | None,
    progress: Any,
) -> list[Result | Failure | Deferred]:
    """``work`` on each paper in worker processes, in order, counted on ``progress``; none
    started once the stage has spent its ``budget``."""
    results: list[Result | Failure | Deferred] = []
    for result in run_isolated(
        work,
        documents,
        workers=workers if len(documents) >= min_papers_for_pool else 1,
        timeout_seconds=timeout_seconds,
        preload=(__name__,),
        budget=budget,
    ):
        progress.update(1)
        results.append(result)
    return results


def failure_reason(phase: str, failure: Failure) -> str:
    """The quarantine reason of a paper whose ``phase`` (extraction, scan) failed."""
    if failure.kind == "timeout":
        return f"graph {phase} {failure.detail} (params.yaml graph.paper_timeout_seconds)"
    if failure.kind == "died":
        return f"graph {phase} failed: {failure.detail} (out of memory?)"
    return f"graph {phase} raised {failure.detail}"


def deferred_reason(phase: str, deferred: Deferred) -> str:
    """Why a paper whose ``phase`` was not started waits for the next run."""
    return (
        f"graph {phase} {deferred.detail} (params.yaml graph.stage_budget_seconds); "
        "the next run does it"
    )
