"""The extractor interface: what an extractor reads (:class:`PaperDocument`, one paper) and
what it proposes for it (:class:`Extraction`: concepts and relations, by name as written).

Two extractors implement it: the rule-based default (:mod:`pipelines.graph.rules`) and the
optional LLM one (:mod:`pipelines.graph.llm`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from pipelines.common.tables import ConceptType, Evidence, Relation
from pipelines.mathtext.names import normalise_name


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    text: str


@dataclass(frozen=True)
class Statement:
    statement_id: str
    kind: str
    name: str
    text: str
    terms: tuple[str, ...] = ()  # a definition's emphasised (defined) terms, as written
    label: str = ""
    refs: tuple[str, ...] = ()  # the labels it and its proof cite


@dataclass(frozen=True)
class PaperDocument:
    """One paper as the extractors see it: metadata, chunks and statements in order."""

    paper_id: str
    title: str
    abstract: str
    categories: tuple[str, ...] = ()
    chunks: tuple[Chunk, ...] = ()
    statements: tuple[Statement, ...] = ()
    # Only for resolving a multi-part work's \ref across its papers (not extracted from,
    # so not in the cache's document hash).
    authors: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConceptCandidate:
    """A concept as one paper names it; :mod:`pipelines.graph.merge` merges them by key."""

    display_name: str
    type: ConceptType
    evidence: Evidence
    description: str = ""
    aliases: tuple[str, ...] = ()
    # Text that defines the concept: the other concepts it mentions become `uses` edges.
    defining_text: str = ""
    # The chunk the concept was found in, when known: it gets a mention with `evidence`
    # even when the name itself is not written there (a definition's name is in its
    # header, which cleaning removed).
    chunk_id: str = ""
    # The statement that defines or states it, when one does (its \\ref edges are the
    # concept's uses).
    statement_id: str = ""

    @property
    def key(self) -> str:
        return normalise_name(self.display_name)


@dataclass(frozen=True)
class RelationCandidate:
    """A relation between two concepts, by name as written; resolved to keys later."""

    source: str
    target: str
    relation: Relation


@dataclass(frozen=True)
class Extraction:
    paper_id: str
    concepts: tuple[ConceptCandidate, ...] = ()
    relations: tuple[RelationCandidate, ...] = ()
    # Why the paper contributed nothing, when an extractor had to give up on it.
    skipped_reason: str = ""


class Extractor(Protocol):
    """Proposes concepts and relations for one paper at a time."""

    name: str

    def extract(self, paper: PaperDocument) -> Extraction: ...
