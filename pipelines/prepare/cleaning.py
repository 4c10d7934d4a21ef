"""Cleaning papers: one paper's rows (or why it has none), and many papers in order, in a
process pool when there are enough of them."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from pipelines.common.config import PrepareParams
from pipelines.prepare.chunker import Chunk
from pipelines.prepare.cleaner import prepare_document
from pipelines.prepare.converter import clean_inline, clean_paragraphs
from pipelines.prepare.raw_store import RawPaper
from pipelines.prepare.statements import Statement

# Below this many papers to clean, a process pool costs more than it saves.
MIN_PAPERS_FOR_POOL = 400
POOL_BATCH = 256  # papers handed to the pool at a time (bounds memory)


@dataclass(frozen=True)
class PaperOutput:
    """Everything ``prepare`` writes for one paper (or why it could not)."""

    paper: dict[str, Any]
    chunks: tuple[Chunk, ...]
    statements: tuple[Statement, ...]
    problems: tuple[str, ...]
    fatal: str | None
    short_chunks_dropped: int = 0


def paper_row(raw: RawPaper, content_hash: str, n_chunks: int, n_statements: int) -> dict[str, Any]:
    meta = raw.meta
    return {
        "paper_id": raw.paper_id,
        "version": raw.version,
        "title": clean_inline(meta.get("title") or ""),
        "abstract": clean_paragraphs(meta.get("abstract") or ""),
        "authors": list(meta.get("authors") or []),
        "categories": list(meta.get("categories") or []),
        "primary_category": meta.get("primary_category") or "",
        "published": meta.get("published") or "",
        "updated": meta.get("updated") or "",
        "source_kind": raw.source_kind,
        "content_hash": content_hash,
        "n_chunks": n_chunks,
        "n_statements": n_statements,
    }


def prepare_paper(
    raw: RawPaper, source: bytes | None, content_hash: str, params: PrepareParams
) -> PaperOutput:
    """Clean one paper (``source`` is ``source.tex``'s bytes, None when abstract-only)."""
    if raw.source_kind == "abstract_only":
        abstract = clean_paragraphs(raw.meta.get("abstract") or "")
        row = paper_row(raw, content_hash, 1, 0)
        if not abstract:
            return PaperOutput(row, (), (), (), "abstract-only paper with an empty abstract")
        return PaperOutput(row, (Chunk("", abstract),), (), (), None)
    if source is None:
        return PaperOutput(paper_row(raw, content_hash, 0, 0), (), (), (), "source.tex missing")
    document = prepare_document(
        source.decode("utf-8", errors="replace"),
        chunk_chars=params.chunk_chars,
        overlap_chars=params.overlap_chars,
        min_chunk_chars=params.min_chunk_chars,
    )
    row = paper_row(raw, content_hash, len(document.chunks), len(document.statements))
    return PaperOutput(
        row,
        document.chunks,
        document.statements,
        document.problems,
        document.fatal,
        document.dropped_short,
    )


@dataclass(frozen=True)
class Job:
    raw: RawPaper
    content_hash: str


def _run_job(job: Job, params: PrepareParams) -> PaperOutput:
    """Worker entry: read the source (again: cheaper than shipping it) and clean it."""
    source = None
    if job.raw.source_kind == "tex":
        try:
            source = job.raw.source.read_bytes()
        except FileNotFoundError:
            source = None
    return prepare_paper(job.raw, source, job.content_hash, params)


def _run_batch(jobs: Sequence[Job], params: PrepareParams) -> list[PaperOutput]:
    return [_run_job(job, params) for job in jobs]


def clean_in_order(jobs: list[Job], params: PrepareParams, workers: int) -> Iterator[PaperOutput]:
    """Clean ``jobs`` in order, in a process pool when there are enough of them."""
    if workers <= 1 or len(jobs) < MIN_PAPERS_FOR_POOL:
        for job in jobs:
            yield _run_job(job, params)
        return
    # spawn, not fork: the parent may hold threads (tqdm's monitor) that fork would copy.
    context = multiprocessing.get_context("spawn")
    batch = max(1, min(POOL_BATCH, len(jobs) // (4 * workers) or 1))
    batches = [jobs[start : start + batch] for start in range(0, len(jobs), batch)]
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as executor:
        # Executor.map keeps the input order, so the output is deterministic.
        for outputs in executor.map(_run_batch, batches, [params] * len(batches)):
            yield from outputs
