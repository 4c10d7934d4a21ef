"""The ``graph`` stage's I/O shell: processed papers in, the knowledge graph out.

:func:`run_graph` reads ``data/processed``, builds the graph
(:func:`~pipelines.graph.build.build_graph`, reusing the per-paper cache of
:mod:`pipelines.graph.cache`), writes ``data/graph/{concepts,edges,mentions}.parquet``
atomically through the table contract and the counts to ``metrics/graph.json``;
``mathembed graph`` runs it. A paper whose per-paper work raises, kills its worker or runs
past ``graph.paper_timeout_seconds`` is recorded in ``data/quarantine/graph/`` and left
out of the graph; it is retried on later nights with backoff, up to
``graph.max_paper_retries`` times (:mod:`pipelines.graph.retries`). Once the per-paper
work has taken ``graph.stage_budget_seconds``, the papers not started wait for the next
run (deferred, counted, not quarantined): ``papers = papers_kept + quarantined +
deferred``.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, date, datetime

import pandas as pd

from pipelines.common import io
from pipelines.common.config import ConfigError, GraphParams
from pipelines.common.paths import Paths
from pipelines.common.tables import (
    CONCEPTS_SCHEMA,
    EDGES_SCHEMA,
    MENTIONS_SCHEMA,
    TABLES,
    write_table,
)
from pipelines.graph.build import GraphReport, build_graph
from pipelines.graph.cache import (
    cache_path,
    document_hash,
    load_cache,
    save_cache,
    work_fingerprint,
)
from pipelines.graph.extractor import Chunk, Extractor, PaperDocument, Statement
from pipelines.graph.llm import LLMExtractor
from pipelines.graph.retries import (
    Conditions,
    FailedWork,
    FailedWorkRecords,
    after_failure,
    describe,
    plan_retries,
)
from pipelines.graph.rules import RulesExtractor

REQUIRED_COLUMNS = {
    "papers": ["paper_id", "title", "abstract", "categories", "authors"],
    "chunks": ["chunk_id", "paper_id", "chunk_index", "text"],
    "statements": ["statement_id", "paper_id", "kind", "name", "text", "terms", "label", "refs"],
}


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
    for paper_id, statement_id, kind, name, text, terms, label, refs in zip(
        statements["paper_id"].tolist(),
        statements["statement_id"].tolist(),
        statements["kind"].tolist(),
        statements["name"].tolist(),
        statements["text"].tolist(),
        statements["terms"].tolist(),
        statements["label"].tolist(),
        statements["refs"].tolist(),
        strict=True,
    ):
        statements_of[paper_id].append(
            Statement(
                statement_id,
                kind,
                name or "",
                text,
                terms=tuple(terms),
                label=label or "",
                refs=tuple(refs),
            )
        )
    documents = [
        PaperDocument(
            paper_id=paper_id,
            title=title or "",
            abstract=abstract or "",
            categories=tuple(categories if categories is not None else ()),
            chunks=tuple(chunks_of.get(paper_id, ())),
            statements=tuple(statements_of.get(paper_id, ())),
            authors=tuple(authors if authors is not None else ()),
        )
        for paper_id, title, abstract, categories, authors in zip(
            papers["paper_id"].tolist(),
            papers["title"].tolist(),
            papers["abstract"].tolist(),
            papers["categories"].tolist(),
            papers["authors"].tolist(),
            strict=True,
        )
    ]
    return sorted(documents, key=lambda document: document.paper_id)


def read_processed(paths: Paths) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The prepare stage's tables, checked for the columns this stage reads."""
    papers, chunks, statements = (
        TABLES[name].read(paths, columns) for name, columns in REQUIRED_COLUMNS.items()
    )
    return papers, chunks, statements


# -- the run --------------------------------------------------------------------------


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


def update_quarantine(
    records: FailedWorkRecords,
    paper_ids: Iterable[str],
    report: GraphReport,
    held: Mapping[str, str],
    failed_before: Mapping[str, FailedWork],
    conditions_of: Callable[[str], Conditions],
    today: date,
    max_retries: int,
) -> dict[str, str]:
    """Record tonight's failures in ``records`` (one failure more for a paper retried in
    vain) and drop the records of the papers whose work went through; returns the
    quarantine reasons of tonight's failures, each saying when it is tried again. The
    record of a paper ``held`` or deferred stands."""
    reasons: dict[str, str] = {}
    for paper_id, failure in report.quarantined.items():
        if paper_id in held:
            continue
        conditions = conditions_of(paper_id)
        record = after_failure(failed_before.get(paper_id), paper_id, failure, conditions, today)
        records.write(record, max_retries)
        reasons[paper_id] = describe(record, max_retries)
        print(f"graph: quarantined {paper_id}: {reasons[paper_id]}", file=sys.stderr)
    for paper_id in paper_ids:
        if paper_id not in report.quarantined and paper_id not in report.deferred:
            records.remove(paper_id)  # an earlier failure no longer holds
    return reasons


def run_graph(
    params: GraphParams,
    paths: Paths,
    *,
    extractor: Extractor | None = None,
    workers: int | None = None,
    today: date | None = None,
) -> GraphReport:
    """Build the graph from ``paths.processed`` and write it under ``paths.graph``,
    reusing and then updating the per-paper cache at
    :func:`~pipelines.graph.cache.cache_path`.

    The per-paper work runs in worker processes, each paper stopped past
    ``params.paper_timeout_seconds``: ``workers`` of them (default: one per CPU) on a
    corpus of at least :data:`~pipelines.graph.workers.MIN_PAPERS_FOR_POOL` papers, one
    below; ``workers=0`` runs it in this process, without the per-paper budget (the
    stage's still applies). ``today`` is the night the retries count in (default: today,
    UTC). A script calling this needs the usual ``if __name__ == "__main__":`` guard
    (workers come from a forkserver).
    """
    io.ensure_quarantine(paths.quarantine, "graph")
    papers, chunks, statements = read_processed(paths)
    documents = documents_from_tables(papers, chunks, statements)
    extractor = extractor or make_extractor(params, paths)
    tonight = today or datetime.now(UTC).date()
    records = FailedWorkRecords(paths.quarantine)
    failed_before = records.read_all()
    by_id = {document.paper_id: document for document in documents}
    fingerprint = work_fingerprint(extractor, params)

    def conditions_of(paper_id: str) -> Conditions:
        content = document_hash(by_id[paper_id])
        return Conditions(fingerprint, content, params.paper_timeout_seconds)

    now = {paper_id: conditions_of(paper_id) for paper_id in failed_before if paper_id in by_id}
    max_retries = params.max_paper_retries
    held, retrying = plan_retries(failed_before, now, tonight, max_retries)
    cache = load_cache(cache_path(paths))
    graph, report = build_graph(
        documents,
        extractor,
        params,
        workers=workers if workers is not None else (os.cpu_count() or 1),
        paper_timeout_seconds=None if workers == 0 else params.paper_timeout_seconds,
        stage_budget_seconds=params.stage_budget_seconds,
        held=held,
        retrying=retrying,
        cache=cache,
    )
    failures = update_quarantine(
        records, by_id, report, held, failed_before, conditions_of, tonight, max_retries
    )
    report = dataclasses.replace(report, quarantined={**report.quarantined, **failures})
    if held:
        print(
            f"graph: {len(held)} papers stay quarantined, not due for a retry tonight "
            "(graph.max_paper_retries)",
            file=sys.stderr,
        )
    if report.deferred:
        print(
            f"graph: {len(report.deferred)} papers deferred to the next run: the per-paper "
            f"work took graph.stage_budget_seconds ({params.stage_budget_seconds:g} s)",
            file=sys.stderr,
        )
    write_table(TABLES["concepts"].path(paths), graph.concepts, CONCEPTS_SCHEMA)
    write_table(TABLES["edges"].path(paths), graph.edges, EDGES_SCHEMA)
    write_table(TABLES["mentions"].path(paths), graph.mentions, MENTIONS_SCHEMA)
    save_cache(cache_path(paths), cache)
    io.write_json(paths.metric_file("graph"), report.as_dict())
    return report
