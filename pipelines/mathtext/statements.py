"""Which statements a passage holds, and what of each (its start, the rest of its text,
its proof), so a hit can say what it is ("Lemma (Yoneda lemma)", "From the proof of Lemma
(snake lemma)": :mod:`pipelines.mathtext.headings`) above its text.

Prepare cuts a paper's statements and its passages from one text but records no link
between them; :class:`~pipelines.mathtext.passages.PassageFinder` finds where each statement
and its proof run (as pairs does for its positives), one paper at a time, when a hit of
that paper is first shown.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import pandas as pd

from pipelines.mathtext.passages import PROBE_CHARS, PassageFinder

#: The statements table's columns a hit shows.
COLUMNS = ("statement_id", "paper_id", "kind", "name", "label", "text")
#: Columns it shows when the table has them (tables written before them lack them).
OPTIONAL_COLUMNS = ("proof", "slogan")

#: What of a statement a passage holds: its start, a later part of its text, or (of all it
#: says) only its proof.
Holds = Literal["start", "rest", "proof"]


@dataclass(frozen=True)
class StatementRef:
    """A statement as a hit names it: its kind ("lemma"), its name ("Yoneda lemma"; often
    "") and its LaTeX label ("lemma-yoneda"; "" when it has none); what of it the passage
    holds; its slogan (a one-line summary some Stacks results carry; often ""); the
    opening words of what the passage holds of it (its text or its proof, whitespace
    flattened), so a snippet can start there; and where it can be read (``None``: nowhere
    known; :func:`pipelines.search.links.statement_link` fills it in). Refs compare as the
    statement they name: what of it a passage holds, and how it is shown, make it no other."""

    statement_id: str
    kind: str
    name: str
    label: str
    holds: Holds = field(default="start", compare=False)
    slogan: str = field(default="", compare=False)
    opening: str = field(default="", compare=False)
    link: str | None = field(default=None, compare=False)

    def as_json(self) -> dict[str, Any]:
        return {
            "statement_id": self.statement_id,
            "kind": self.kind,
            "name": self.name,
            "label": self.label,
            "holds": self.holds,
            "slogan": self.slogan,
            "link": self.link,
        }


class PassageStatements(Mapping[str, tuple[StatementRef, ...]]):
    """Per passage id, the statements whose text or proof runs over it, in their paper's
    order (a passage packs short blocks, so it may hold several); a passage holding none
    is absent. Statements not found in any passage (cut by a quarantine, say) are skipped.

    Worked out one paper at a time, when a hit of that paper is first shown: a search names
    a few papers, and a service starting up should not wait for all of them (1.8 s for the
    demo's 4,200 passages on the 2-core machine, most of it for the proofs)."""

    def __init__(self, chunks: pd.DataFrame, statements: pd.DataFrame) -> None:
        missing = [column for column in COLUMNS if column not in statements.columns]
        if missing:
            raise ValueError(f"the statements table lacks column(s) {missing}; rerun `make repro`")
        order = ["paper_id", "chunk_index"] if "chunk_index" in chunks.columns else ["paper_id"]
        ordered = chunks.sort_values(order, kind="stable")
        self._passages: dict[str, list[tuple[str, str]]] = defaultdict(list)
        self._paper_of: dict[str, str] = {}
        for paper_id, chunk_id, text in zip(
            ordered["paper_id"].astype(str),
            ordered["chunk_id"].astype(str),
            ordered["text"].astype(str),
            strict=True,
        ):
            self._passages[paper_id].append((chunk_id, text))
            self._paper_of[chunk_id] = paper_id
        optional = (
            statements[column] if column in statements.columns else pd.Series("", statements.index)
            for column in OPTIONAL_COLUMNS
        )
        self._statements: dict[str, list[tuple[StatementRef, str, str]]] = defaultdict(list)
        for statement_id, paper_id, kind, name, label, text, proof, slogan in zip(
            *(statements[column].fillna("").astype(str) for column in COLUMNS),
            *(column.fillna("").astype(str) for column in optional),
            strict=True,
        ):
            ref = StatementRef(statement_id, kind, name, label, slogan=slogan)
            self._statements[paper_id].append((ref, text, proof))
        self._held: dict[str, dict[str, tuple[StatementRef, ...]]] = {}

    def _of_paper(self, paper_id: str) -> dict[str, tuple[StatementRef, ...]]:
        held = self._held.get(paper_id)
        if held is None:
            finder = PassageFinder(self._passages.get(paper_id, []))
            found: dict[str, list[StatementRef]] = defaultdict(list)
            for ref, text, proof in self._statements.get(paper_id, ()):
                # A passage that only goes on with a statement's proof belongs to it too.
                spanned = finder.span(text)
                parts: dict[str, StatementRef] = {}
                for chunk_id in spanned:
                    holds: Holds = "start" if chunk_id == spanned[0] else "rest"
                    parts[chunk_id] = replace(ref, holds=holds, opening=_opening(text))
                for chunk_id in finder.span(proof) if proof else ():
                    parts.setdefault(chunk_id, replace(ref, holds="proof", opening=_opening(proof)))
                for chunk_id, part in parts.items():
                    found[chunk_id].append(part)
            held = {chunk_id: tuple(refs) for chunk_id, refs in found.items()}
            self._held[paper_id] = held  # two threads may both work it out: the same answer
        return held

    def __getitem__(self, chunk_id: str) -> tuple[StatementRef, ...]:
        paper_id = self._paper_of.get(chunk_id)
        refs = None if paper_id is None else self._of_paper(paper_id).get(chunk_id)
        if refs is None:
            raise KeyError(chunk_id)
        return refs

    def __iter__(self) -> Iterator[str]:
        for paper_id in self._passages:
            yield from self._of_paper(paper_id)

    def __len__(self) -> int:
        return sum(len(self._of_paper(paper_id)) for paper_id in self._passages)


def statements_by_passage(chunks: pd.DataFrame, statements: pd.DataFrame) -> PassageStatements:
    """The statements each passage holds (:class:`PassageStatements`); ``statements`` may
    lack the ``proof`` column, the others are required."""
    return PassageStatements(chunks, statements)


def _opening(text: str) -> str:
    return " ".join(text.split())[:PROBE_CHARS]
