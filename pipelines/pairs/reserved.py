"""What no training pair may touch, and the check on the output that none does.

A concept is held out and a paper unseen by a stable hash of its name or id
(:mod:`pipelines.pairs.stable`); a held-out concept's statements, and the statements held
out for the described set (:mod:`pipelines.pairs.descriptions`), are reserved with the
passages that hold them. A candidate pair is kept only when its anchor is none of a
held-out concept's names, aliases or description, and it leads from no reserved
statement; and each ``(anchor, positive)`` only once (:func:`allowed_and_unique`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from pipelines.common.config import PairsParams
from pipelines.mathtext.names import normalise_name
from pipelines.pairs.candidates import Pair
from pipelines.pairs.descriptions import STATEMENT_SALT, statement_key
from pipelines.pairs.evaluation import PaperStructure
from pipelines.pairs.stable import held_out_concepts, in_stable_fraction, unseen_papers


@dataclass(frozen=True)
class ConceptTable:
    """The concepts table, by normalised name."""

    names: list[str]
    display: dict[str, str]
    description: dict[str, str]
    aliases: dict[str, list[str]]
    papers_of: dict[str, list[str]]
    statements_of: dict[str, list[str]]

    @classmethod
    def of(cls, concepts: pd.DataFrame) -> ConceptTable:
        names = concepts["name"].tolist()

        def lists(column: str) -> dict[str, list[str]]:
            return {
                name: list(values) for name, values in zip(names, concepts[column], strict=True)
            }

        return cls(
            names=names,
            display=dict(zip(names, concepts["display_name"].tolist(), strict=True)),
            description=dict(zip(names, concepts["description"].tolist(), strict=True)),
            aliases=lists("aliases"),
            papers_of=lists("papers"),
            statements_of=lists("statements"),
        )


@dataclass(frozen=True)
class Reserved:
    """What no training pair may lead to or start from: held-out concepts, unseen papers,
    held-out statements and the passages defining or holding them."""

    concepts: set[str]  # held out, by a stable hash of the name
    papers: set[str]  # unseen, by a stable hash of the id
    statements: set[str]
    chunks: set[str]

    @classmethod
    def of(
        cls,
        table: ConceptTable,
        papers: pd.DataFrame,
        statements: pd.DataFrame,
        structure: PaperStructure,
        defining: dict[str, set[str]],
        params: PairsParams,
    ) -> Reserved:
        held_out = held_out_concepts(table.names, params.held_out_fraction)
        unseen = unseen_papers(papers["paper_id"].tolist(), params.unseen_paper_fraction)
        statements_held = reserved_statements(held_out, table, statements, params)
        chunks = {chunk_id for name in held_out for chunk_id in defining[name]}
        chunks |= {
            chunk_id for sid in statements_held for chunk_id in structure.span_of.get(sid, ())
        }
        return cls(held_out, unseen, statements_held, chunks)


def reserved_statements(
    held_out: set[str], table: ConceptTable, statements: pd.DataFrame, params: PairsParams
) -> set[str]:
    """A held-out concept's statements, and those held out for the described set."""
    # What defines or states a held-out concept is never a positive: the model must not
    # have seen any anchor lead to the passages its queries are judged by.
    reserved = {sid for name in held_out for sid in table.statements_of[name]}
    # ... and a statement held out for the described set (its slogan, the sentences citing it).
    reserved |= {
        statement_id
        for statement_id, paper_id, label in zip(
            statements["statement_id"].tolist(),
            statements["paper_id"].tolist(),
            statements["label"].tolist(),
            strict=True,
        )
        if in_stable_fraction(
            f"{STATEMENT_SALT}:{statement_key(paper_id, label, statement_id)}",
            params.held_out_statement_fraction,
        )
    }
    return reserved


def forbidden_anchors(held_out: set[str], table: ConceptTable) -> tuple[set[str], set[str]]:
    """Normalised names and exact texts that must never be a training anchor."""
    keys: set[str] = set()
    texts: set[str] = set()
    for name in held_out:
        keys.add(name)
        keys.update(normalise_name(alias) for alias in table.aliases[name])
        texts.add(table.display[name])
        texts.update(table.aliases[name])
        if table.description[name]:
            texts.add(table.description[name])
    keys.discard("")
    return keys, texts


@dataclass(frozen=True)
class Kept:
    """The pairs kept, and how many candidates were dropped and why."""

    pairs: list[Pair]
    dropped_held_out: int
    duplicates: int


def allowed_and_unique(candidates: list[Pair], table: ConceptTable, reserved: Reserved) -> Kept:
    """The candidates that pass the leakage check on the output, each (anchor, positive)
    once: the first in priority order."""
    forbidden_keys, forbidden_texts = forbidden_anchors(reserved.concepts, table)
    kept: list[Pair] = []
    seen_pairs: set[tuple[str, str]] = set()
    dropped_held_out = 0
    duplicates = 0
    for candidate in candidates:
        anchor, positive = candidate[0], candidate[1]
        if (
            anchor in forbidden_texts
            or normalise_name(anchor) in forbidden_keys
            or candidate[4] in reserved.statements  # a proof pair's is its statement's
        ):
            dropped_held_out += 1
            continue
        if (anchor, positive) in seen_pairs:
            duplicates += 1
            continue
        seen_pairs.add((anchor, positive))
        kept.append(candidate)
    return Kept(kept, dropped_held_out, duplicates)
