"""``mathembed search``: the top passages for a query, ranked by a registered model.

This is how a researcher uses what the pipeline produced. The corpus is the validated
passages (``data/validated/chunks.parquet``; ``data/processed/`` before validation has
run) with their papers' titles and links (:mod:`pipelines.search.links`). The model, its
persistent passage index and the ranking live in :mod:`pipelines.search.engine`; this
module holds what the one-shot command, the service and the tests share: the checks on a
request, the hit, the corpus and how hits are printed.

A hit is shown as the statement its passage holds (:mod:`pipelines.mathtext.headings`):
its kind, name and heading ("Lemma (snake lemma)", "From the proof of Lemma (snake
lemma)"; the section title for prose), its section, its slogan, a link to the statement
itself and a snippet cut where a reader can stop (:mod:`pipelines.search.snippets`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from pipelines.common import io
from pipelines.common.paths import Paths
from pipelines.common.tables import TABLES
from pipelines.mathtext import headings
from pipelines.mathtext.statements import StatementRef, statements_by_passage
from pipelines.search.links import paper_links, read_tags, statement_link
from pipelines.search.snippets import ELLIPSIS, Snippet, formula_spans, snippet

#: The most passages one request may ask for (the page and the API alike).
MAX_K = 100
#: Characters of a passage a hit shows: the CLI, the page, the API and the MCP server alike.
SNIPPET_CHARS = 400
#: The longest query: a statement or a question, not a page (the model reads 256 tokens,
#: and BM25's cost grows with the query's words).
MAX_QUERY_CHARS = 2000


@dataclass(frozen=True)
class Hit:
    """One ranked passage; ``score`` is the cosine between query and passage whatever the
    ranking (a fusion with BM25 only orders the hits). What a reader sees of it (kind,
    name, heading, slogan, link, snippet) is worked out from the statements it holds."""

    chunk_id: str
    paper_id: str
    title: str
    score: float
    text: str
    url: str | None = None
    #: The statements the passage holds (or holds part of), in the paper's order.
    statements: tuple[StatementRef, ...] = ()
    #: The title of the section the passage is in ("" when unknown).
    section: str = ""

    @property
    def statement(self) -> StatementRef | None:
        """The statement the hit is shown as (``None``: prose)."""
        return headings.primary_statement(self.statements)

    @property
    def kind(self) -> str:
        """The statement's kind ("lemma"); "proof" when only its proof; "text" for prose."""
        return headings.hit_kind(self.statement)

    @property
    def name(self) -> str:
        """The statement's name, bracketed or made from its label; "" when none."""
        statement = self.statement
        return headings.statement_name(statement).text if statement is not None else ""

    @property
    def heading(self) -> str:
        """ "Lemma (snake lemma)", "From the proof of Lemma (snake lemma)", or the section."""
        return headings.hit_heading(self.statement, self.section)

    @property
    def slogan(self) -> str:
        statement = self.statement
        return statement.slogan if statement is not None else ""

    @property
    def link(self) -> str | None:
        """The statement's own page (its Stacks tag, ...), else the paper's link."""
        statement = self.statement
        if statement is not None and statement.link is not None:
            return statement.link
        return self.url

    def snippet(self, max_chars: int | None) -> Snippet:
        """The passage from where its statement (or proof) starts, cut safely
        (:func:`pipelines.search.snippets.snippet`); "…" first when it starts mid-way."""
        return snippet(passage_start(self.text, self.statement), max_chars)

    def as_json(self, rank: int, *, max_chars: int | None = None) -> dict[str, Any]:
        shown = self.snippet(max_chars)
        statement = self.statement
        return {
            "rank": rank,
            **asdict(self),
            "text": trimmed(self.text, max_chars),
            "statements": [statement.as_json() for statement in self.statements],
            "kind": self.kind,
            "name": self.name,
            "name_derived": statement is not None and headings.statement_name(statement).derived,
            "heading": self.heading,
            "slogan": self.slogan,
            "link": self.link,
            "snippet": shown.text,
            "blocks": [block.as_json() for block in shown.blocks],
        }


@dataclass(frozen=True)
class Corpus:
    """The passages to search (row ``i`` of ``chunks`` is row ``i`` of the index), per
    paper its title and link, and per passage the statements it holds."""

    chunks: pd.DataFrame
    titles: dict[str, str]
    urls: dict[str, str | None]
    statements: Mapping[str, tuple[StatementRef, ...]] = field(default_factory=dict)
    #: The Stacks Project's tags, full label -> tag (:func:`pipelines.search.links.read_tags`).
    tags: Mapping[str, str] = field(default_factory=dict)

    @functools.cached_property
    def _chunk_ids(self) -> list[str]:
        return self.chunks["chunk_id"].astype(str).tolist()

    def statement_of(self, row: int) -> tuple[str, bool] | None:
        """The statement row's passage is shown as, and whether the passage holds its start;
        ``None`` for prose."""
        statement = headings.primary_statement(self.statements.get(self._chunk_ids[row], ()))
        return None if statement is None else (statement.statement_id, statement.holds == "start")

    def hit(self, row: int, score: float) -> Hit:
        chunk = self.chunks.iloc[row]
        paper_id = str(chunk["paper_id"])
        chunk_id = str(chunk["chunk_id"])
        url = self.urls.get(paper_id)
        section = chunk["section"] if "section" in chunk.index else ""
        return Hit(
            chunk_id=chunk_id,
            paper_id=paper_id,
            title=self.titles.get(paper_id, ""),
            score=float(score),
            text=str(chunk["text"]),
            url=url,
            statements=tuple(
                replace(ref, link=statement_link(ref.label, url, self.tags))
                for ref in self.statements.get(chunk_id, ())
            ),
            section=str(section) if isinstance(section, str) else "",
        )


def one_per_statement(
    rows: Sequence[int], statement_of: Callable[[int], tuple[str, bool] | None], limit: int
) -> list[int]:
    """The first ``limit`` of ranked ``rows`` with one hit per statement: where several
    passages of one statement are ranked (where it starts, the rest of its text, its proof),
    the statement takes the place of the first of them, shown by the passage where it starts
    when that one is ranked too (so "Lemma (snake lemma)" comes before "From the proof of
    Lemma (snake lemma)", not both). ``statement_of`` is :meth:`Corpus.statement_of`; prose
    passages stand alone."""
    shown_as = [statement_of(row) for row in rows]
    start_of: dict[str, int] = {}
    for row, shown in zip(rows, shown_as, strict=True):
        if shown is not None and shown[1]:
            start_of.setdefault(shown[0], row)
    kept: list[int] = []
    seen: set[str] = set()
    for row, shown in zip(rows, shown_as, strict=True):
        if len(kept) == limit:
            break
        if shown is None:
            kept.append(row)
        elif shown[0] not in seen:
            seen.add(shown[0])
            kept.append(start_of.get(shown[0], row))
    return kept


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
    if len(query) > MAX_QUERY_CHARS:
        raise ValueError(
            f"the query is {len(query):,} characters long; at most {MAX_QUERY_CHARS:,}: "
            "ask for a statement or a question, not a page"
        )
    if not 1 <= k <= MAX_K:
        raise ValueError(f"k must be at least 1 and at most {MAX_K}, got {k}")


def corpus_dir(paths: Paths) -> Path:
    """The validated tables when validation has run, else the processed ones."""
    validated = TABLES["chunks"].validated_path(paths)
    return paths.validated if validated.is_file() else paths.processed


def read_corpus(paths: Paths) -> Corpus:
    """The passages, titles, links, statements and the Stacks tags."""
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
    return Corpus(chunks.reset_index(drop=True), titles, urls, statements, read_tags(paths.root))


def passage_start(text: str, statement: StatementRef | None) -> str:
    """``text`` (one line) from where the passage's statement, or the proof it holds, starts;
    from the top without its kind heading ("Lemma." that prepare writes) when that start is
    not in it, after "…" when the passage goes on with a statement begun before it."""
    flat = " ".join(text.split())
    if statement is None:
        return flat
    if statement.opening:
        found = flat.find(statement.opening)
        if found >= 0:
            return flat[found:]
    kind_heading = re.match(
        rf"{re.escape(headings.kind_title(statement.kind))}(?: \([^)]*\))?\. ", flat
    )
    if kind_heading is not None:
        return flat[kind_heading.end() :]
    return ELLIPSIS + " " + flat if statement.holds != "start" else flat


def trimmed(text: str, max_chars: int | None) -> str:
    """``text`` on one line, cut to ``max_chars`` with an ellipsis, never inside a formula
    (``None``: whole)."""
    flat = " ".join(text.split())
    if max_chars is None or len(flat) <= max_chars:
        return flat
    pieces = formula_spans(flat)
    room = max_chars - len(ELLIPSIS)
    cut = room
    for start, end in pieces:
        if start < room < end:
            cut = start
            break
    return flat[:cut].rstrip() + ELLIPSIS


def format_hits(hits: list[Hit], *, width: int = SNIPPET_CHARS) -> str:
    """Hits as the CLI prints them: rank, score and heading; the link; the paper, section
    and passage id; the slogan; then the snippet (``width`` characters at most)."""
    lines = []
    for rank, hit in enumerate(hits, 1):
        lines.append(f"{rank:>2}. {hit.score:.4f}  {hit.heading}")
        if hit.link:
            lines.append(f"    {hit.link}")
        section = hit.section if hit.heading != hit.section else ""  # prose: in the heading
        where = (hit.title or hit.paper_id, section, f"[{hit.chunk_id}]")
        lines.append("    " + " · ".join(part for part in where if part))
        if hit.slogan:
            lines.append(f"    Slogan: {hit.slogan}")
        lines.append(f"    {hit.snippet(width).text}")
    return "\n".join(lines)
