"""Cleaning papers: one paper's rows (or why it has none), and many papers in order, each
in a worker process with a time budget (more workers when there are enough papers)."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pipelines.common.config import PrepareParams
from pipelines.common.isolation import Deferred, Failure, StageBudget, run_isolated
from pipelines.prepare.chunker import Chunk
from pipelines.prepare.citations import Citation
from pipelines.prepare.cleaner import prepare_document
from pipelines.prepare.latex.converter import clean_inline, clean_paragraphs
from pipelines.prepare.raw_store import RawPaper
from pipelines.prepare.statements import Statement

# Below this many papers to clean, more than one worker costs more than it saves.
MIN_PAPERS_FOR_POOL = 400


@dataclass(frozen=True)
class PaperOutput:
    """Everything ``prepare`` writes for one paper (or why it could not)."""

    paper: dict[str, Any]
    chunks: tuple[Chunk, ...]
    statements: tuple[Statement, ...]
    problems: tuple[str, ...]
    fatal: str | None
    short_chunks_dropped: int = 0


def paper_row(
    raw: RawPaper,
    content_hash: str,
    n_chunks: int,
    n_statements: int,
    citations: tuple[Citation, ...] = (),
) -> dict[str, Any]:
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
        "citing_sentences": [citation.sentence for citation in citations],
        "citing_labels": [",".join(citation.refs) for citation in citations],
        "url": meta.get("url") or "",
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
        pack_chars=params.pack_chars,
    )
    row = paper_row(
        raw, content_hash, len(document.chunks), len(document.statements), document.citations
    )
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


def clean_in_order(
    jobs: list[Job], params: PrepareParams, workers: int
) -> Iterator[PaperOutput | Failure | Deferred]:
    """Clean ``jobs`` in order, each in a worker process stopped once it has cleaned one
    paper for ``params.paper_timeout_seconds``. A paper whose cleaning raises, kills its
    worker or runs out of time comes back as a :class:`Failure` and the others go on
    (:mod:`pipelines.common.isolation`); once the cleaning has taken
    ``params.stage_budget_seconds``, the papers not started come back as :class:`Deferred`.
    ``workers`` processes from :data:`MIN_PAPERS_FOR_POOL` papers on, one below."""
    yield from run_isolated(
        functools.partial(_run_job, params=params),
        jobs,
        workers=workers if len(jobs) >= MIN_PAPERS_FOR_POOL else 1,
        timeout_seconds=params.paper_timeout_seconds,
        preload=(__name__,),
        budget=StageBudget(params.stage_budget_seconds),
    )
