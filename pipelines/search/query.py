"""``mathembed search``: the top passages for a query, ranked by a registered model.

This is how a researcher uses what the pipeline produced. The corpus is the validated
passages (``data/validated/chunks.parquet``; ``data/processed/`` before validation has
run) with their papers' titles and links (:mod:`pipelines.search.links`). The model, its
persistent passage index and the ranking live in :mod:`pipelines.search.engine`; this
module holds what the one-shot command, the service and the tests share: the checks on a
request, the hit, the corpus and how hits are printed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from pipelines.common import io
from pipelines.common.paths import Paths
from pipelines.common.tables import TABLES
from pipelines.search.links import paper_links
from pipelines.search.statements import StatementRef, statements_by_passage

#: The most passages one request may ask for (the page and the API alike).
MAX_K = 100


@dataclass(frozen=True)
class Hit:
    """One ranked passage; ``score`` is its ranking's: the cosine between query and passage
    (dense) or the reciprocal-rank fusion score (hybrid)."""

    chunk_id: str
    paper_id: str
    title: str
    score: float
    text: str
    url: str | None = None
    #: The statements the passage holds (or holds part of), in the paper's order.
    statements: tuple[StatementRef, ...] = ()

    def as_json(self, rank: int, *, max_chars: int | None = None) -> dict[str, Any]:
        return {
            "rank": rank,
            **asdict(self),
            "text": trimmed(self.text, max_chars),
            "statements": [statement.as_json() for statement in self.statements],
        }


@dataclass(frozen=True)
class Corpus:
    """The passages to search (row ``i`` of ``chunks`` is row ``i`` of the index), per
    paper its title and link, and per passage the statements it holds."""

    chunks: pd.DataFrame
    titles: dict[str, str]
    urls: dict[str, str | None]
    statements: Mapping[str, tuple[StatementRef, ...]] = field(default_factory=dict)

    def hit(self, row: int, score: float) -> Hit:
        chunk = self.chunks.iloc[row]
        paper_id = str(chunk["paper_id"])
        chunk_id = str(chunk["chunk_id"])
        return Hit(
            chunk_id=chunk_id,
            paper_id=paper_id,
            title=self.titles.get(paper_id, ""),
            score=float(score),
            text=str(chunk["text"]),
            url=self.urls.get(paper_id),
            statements=self.statements.get(chunk_id, ()),
        )


def check_request(query: str, k: int) -> None:
    """Refuse what no model could answer, before anything is loaded (``ValueError``)."""
    if not query.strip():
        raise ValueError("the query is empty; pass some text, e.g. mathembed search 'prime gaps'")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as error:  # e.g. a lone surrogate: argv bytes that were not UTF-8
        raise ValueError(
            f"the query is not valid UTF-8 text (character {error.start + 1} cannot be "
            "encoded); pass it in a UTF-8 terminal or locale, e.g. LANG=C.UTF-8"
        ) from None
    if not 1 <= k <= MAX_K:
        raise ValueError(f"k must be at least 1 and at most {MAX_K}, got {k}")


def corpus_dir(paths: Paths) -> Path:
    """The validated tables when validation has run, else the processed ones."""
    validated = TABLES["chunks"].validated_path(paths)
    return paths.validated if validated.is_file() else paths.processed


def read_corpus(paths: Paths) -> Corpus:
    """The passages, titles, links and statements."""
    folder = corpus_dir(paths)
    chunks_path = folder / TABLES["chunks"].file_name
    papers_path = folder / TABLES["papers"].file_name
    if not chunks_path.is_file():
        raise FileNotFoundError(
            f"no corpus to search: {chunks_path} not found; run the pipeline (`make repro`)"
        )
    chunks = io.read_parquet(chunks_path)
    missing = [c for c in ("chunk_id", "paper_id", "text") if c not in chunks.columns]
    if missing:
        raise ValueError(f"{chunks_path}: missing column(s) {missing}; rerun `make repro`")
    if chunks.empty:
        raise FileNotFoundError(f"no corpus to search: {chunks_path} has no passages")
    titles: dict[str, str] = {}
    urls: dict[str, str | None] = {}
    if papers_path.is_file():
        papers = io.read_parquet(papers_path)
        titles = dict(zip(papers["paper_id"].astype(str), papers["title"].astype(str), strict=True))
        urls = paper_links(papers)
    statements_path = folder / TABLES["statements"].file_name
    statements = (
        statements_by_passage(chunks, io.read_parquet(statements_path))
        if statements_path.is_file()
        else {}
    )
    return Corpus(chunks.reset_index(drop=True), titles, urls, statements)


def trimmed(text: str, max_chars: int | None) -> str:
    """``text`` on one line, cut to ``max_chars`` with an ellipsis (``None``: whole)."""
    flat = " ".join(text.split())
    if max_chars is None or len(flat) <= max_chars:
        return flat
    return flat[: max_chars - 1] + "…"


def format_hits(hits: list[Hit], *, width: int = 160) -> str:
    """Hits as the CLI prints them: rank, score, paper id, title, link, passage start."""
    lines = []
    for rank, hit in enumerate(hits, 1):
        lines.append(f"{rank:>2}. {hit.score:.4f}  {hit.paper_id}  {hit.title}")
        if hit.url:
            lines.append(f"    {hit.url}")
        lines.append(f"    [{hit.chunk_id}] {trimmed(hit.text, width)}")
    return "\n".join(lines)
