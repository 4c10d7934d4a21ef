"""Worker processes for the per-paper work (rule extraction, then the mention scan).

A :class:`LazyPool` starts them only when a phase has enough papers to be worth it
(:data:`MIN_PAPERS_FOR_POOL`; an incremental run often has none). Papers go out in
batches and come back in order, so the result is the same as in one process.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

from pipelines.common.names import SurfaceMatcher
from pipelines.graph.extractor import Extraction, PaperDocument
from pipelines.graph.rules import RulesExtractor
from pipelines.graph.scan import DocumentScan, scan_document

# Below this many papers, starting worker processes costs more than it saves.
MIN_PAPERS_FOR_POOL = 400
# Small enough batches that the workers finish together and the progress bar moves.
_BATCHES_PER_WORKER = 8
_worker_matchers: dict[str, SurfaceMatcher] = {}  # one compiled matcher per worker process


class LazyPool:
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

    def __enter__(self) -> LazyPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._executor is not None:
            self._executor.shutdown()


def batches(documents: Sequence[PaperDocument], workers: int) -> list[list[PaperDocument]]:
    """``documents`` in order, cut into about :data:`_BATCHES_PER_WORKER` batches a worker."""
    size = max(1, -(-len(documents) // (workers * _BATCHES_PER_WORKER)))
    return [list(documents[start : start + size]) for start in range(0, len(documents), size)]


def extract_batch(batch: list[PaperDocument]) -> list[Extraction]:
    """In a worker: the rule extractor on each paper of ``batch``."""
    extractor = RulesExtractor()
    return [extractor.extract(document) for document in batch]


def scan_batch(
    task: tuple[str, dict[str, list[str]], list[PaperDocument]],
) -> list[DocumentScan]:
    """In a worker: each paper of the batch scanned with the matcher of ``surfaces``,
    compiled once per worker for each ``token`` (a hash of the surfaces)."""
    token, surfaces, batch = task
    if token not in _worker_matchers:
        _worker_matchers.clear()
        _worker_matchers[token] = SurfaceMatcher(surfaces)
    matcher = _worker_matchers[token]
    return [scan_document(document, matcher) for document in batch]


T = TypeVar("T")


def advance(progress: Any, batch: list[T]) -> list[T]:
    """``batch``, after counting it on the ``progress`` bar."""
    progress.update(len(batch))
    return batch


def advance_one(progress: Any, item: T) -> T:
    """``item``, after counting it on the ``progress`` bar."""
    progress.update(1)
    return item
