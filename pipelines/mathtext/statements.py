"""Which statements a passage holds, and what of each (its start, the rest of its text,
its proof), so a hit can say what it is ("Lemma (Yoneda lemma)", "From the proof of Lemma
(snake lemma)": :mod:`pipelines.mathtext.headings`) above its text.

Prepare cuts a paper's statements and its passages from one text but records no link
between them; :class:`~pipelines.mathtext.passages.PassageFinder` finds where each statement
and its proof run (as pairs does for its positives), one paper at a time.
"""

from __future__ import annotations

from collections import defaultdict
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


def statements_by_passage(
    chunks: pd.DataFrame, statements: pd.DataFrame
) -> dict[str, tuple[StatementRef, ...]]:
    """Per passage id, the statements whose text or proof runs over it, in their paper's
    order (a passage packs short blocks, so it may hold several); a passage holding none
    is absent. Statements not found in any passage (cut by a quarantine, say) are skipped.
    ``statements`` may lack the ``proof`` and ``slogan`` columns, the others are required.

    Worked out for every paper at once: evaluate and search both head every passage with
    its statement (:func:`pipelines.mathtext.headings.search_texts`), so every paper is
    needed (0.6 s for the demo's 4,200 passages on the 2-core machine)."""
    missing = [column for column in COLUMNS if column not in statements.columns]
    if missing:
        raise ValueError(f"the statements table lacks column(s) {missing}; rerun `make repro`")
    order = ["paper_id", "chunk_index"] if "chunk_index" in chunks.columns else ["paper_id"]
    ordered = chunks.sort_values(order, kind="stable")
    passages: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for paper_id, chunk_id, text in zip(
        ordered["paper_id"].astype(str),
        ordered["chunk_id"].astype(str),
        ordered["text"].astype(str),
        strict=True,
    ):
        passages[paper_id].append((chunk_id, text))
    optional = (
        statements[column] if column in statements.columns else pd.Series("", statements.index)
        for column in OPTIONAL_COLUMNS
    )
    of_paper: dict[str, list[tuple[StatementRef, str, str]]] = defaultdict(list)
    for statement_id, paper_id, kind, name, label, text, proof, slogan in zip(
        *(statements[column].fillna("").astype(str) for column in COLUMNS),
        *(column.fillna("").astype(str) for column in optional),
        strict=True,
    ):
        ref = StatementRef(statement_id, kind, name, label, slogan=slogan)
        of_paper[paper_id].append((ref, text, proof))
    held: dict[str, tuple[StatementRef, ...]] = {}
    for paper_id, paper_passages in passages.items():
        finder = PassageFinder(paper_passages)
        found: dict[str, list[StatementRef]] = defaultdict(list)
        for ref, text, proof in of_paper.get(paper_id, ()):
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
        held.update((chunk_id, tuple(refs)) for chunk_id, refs in found.items())
    return held


def _opening(text: str) -> str:
    return " ".join(text.split())[:PROBE_CHARS]
