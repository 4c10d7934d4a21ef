"""Which statements a passage holds, so a hit can say what it is part of ("Lemma (Yoneda
lemma)", :func:`pipelines.search.page.statement_heading`) above its text.

Prepare cuts a paper's statements and its passages from one text but records no link
between them; :class:`~pipelines.common.passages.PassageFinder` finds where each statement
and its proof run (as pairs does for its positives), once, when the corpus is read: 1.8 s
for the demo's 4,200 passages and 2,504 statements on the 2-core machine (0.5 s of it for
the statements, the rest for their proofs, which cover 700 more passages).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import pandas as pd

from pipelines.common.passages import PassageFinder

#: The statements table's columns a hit shows.
COLUMNS = ("statement_id", "paper_id", "kind", "name", "label", "text")


@dataclass(frozen=True)
class StatementRef:
    """A statement as a hit names it: its kind ("lemma"), its name ("Yoneda lemma"; often
    "") and its LaTeX label ("lemma-yoneda"; "" when it has none)."""

    statement_id: str
    kind: str
    name: str
    label: str

    def as_json(self) -> dict[str, Any]:
        return {
            "statement_id": self.statement_id,
            "kind": self.kind,
            "name": self.name,
            "label": self.label,
        }


def statements_by_passage(
    chunks: pd.DataFrame, statements: pd.DataFrame
) -> dict[str, tuple[StatementRef, ...]]:
    """Per passage id, the statements whose text or proof runs over it, in their paper's
    order (a passage packs short blocks, so it may hold several); a passage holding none
    is absent. Statements not found in any passage (cut by a quarantine, say) are skipped.
    ``statements`` may lack the ``proof`` column; the others are required."""
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
    finders = {paper_id: PassageFinder(texts) for paper_id, texts in passages.items()}
    held: dict[str, list[StatementRef]] = defaultdict(list)
    proofs = (
        statements["proof"] if "proof" in statements.columns else pd.Series("", statements.index)
    )
    for statement_id, paper_id, kind, name, label, text, proof in zip(
        *(statements[column].fillna("").astype(str) for column in COLUMNS),
        proofs.fillna("").astype(str),
        strict=True,
    ):
        finder = finders.get(paper_id)
        if finder is None:
            continue
        ref = StatementRef(statement_id, kind, name, label)
        # A passage that only goes on with a statement's proof belongs to it too.
        spans = finder.span(text) + (finder.span(proof) if proof else ())
        for chunk_id in dict.fromkeys(spans):
            held[chunk_id].append(ref)
    return {chunk_id: tuple(refs) for chunk_id, refs in held.items()}
