"""The candidate training pairs of each kind (:mod:`pipelines.pairs.build` says what each
kind is), drawn in the priority order de-duplication keeps: a concept's name, masked name
and description -> its passages; an edge's ends -> each other's passages; a named
statement -> its text; a statement -> its proof and the statements it cites; then the
descriptions written by people (:mod:`pipelines.pairs.descriptions`).

Pure: tables and lookups in, ``(anchor, positive, kind, concept, positive_id)`` tuples out.
Nothing here leaves out a held-out anchor: :func:`pipelines.pairs.build.build_pairs` checks
every candidate, whatever drew it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Set
from dataclasses import dataclass

import pandas as pd

from pipelines.common.config import PairsParams
from pipelines.common.tables import EVIDENCE_ORDER
from pipelines.mathtext.concept_phrases import statement_concept_name
from pipelines.mathtext.masking import mask_name, names_in
from pipelines.mathtext.names import normalise_name
from pipelines.pairs.descriptions import Descriptions, StatementInfo, build_descriptions
from pipelines.pairs.evaluation import PaperStructure
from pipelines.pairs.stable import ranked_by_hash, rotated_window, stable_digest

#: ``(anchor, positive, kind, concept, positive_id)``
Pair = tuple[str, str, str, str, str]


@dataclass(frozen=True)
class EdgeCounts:
    used: int
    dropped_held_out: int
    dropped_unknown: int  # the graph stage never writes one; counted if it did


@dataclass(frozen=True)
class Candidates:
    """Every candidate pair, in priority order, and what drawing them counted."""

    pairs: list[Pair]
    edges: EdgeCounts
    statements_unnamed: int
    descriptions: Descriptions


def usable_passages(
    mentions: pd.DataFrame,
    paper_of_chunk: dict[str, str],
    unseen: set[str],
    reserved_chunks: set[str],
) -> dict[str, list[tuple[int, str]]]:
    """Concept -> ``(evidence rank, chunk id)`` of the passages mentioning it that may be a
    positive: in a known chunk of a seen paper, and not reserved for evaluation."""
    evidence_rank = {evidence: rank for rank, evidence in enumerate(EVIDENCE_ORDER)}
    usable: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for concept, chunk_id, evidence in zip(
        mentions["concept"].tolist(),
        mentions["chunk_id"].tolist(),
        mentions["evidence"].tolist(),
        strict=True,
    ):
        if (
            chunk_id in paper_of_chunk
            and paper_of_chunk[chunk_id] not in unseen
            and chunk_id not in reserved_chunks
        ):
            usable[concept].append((evidence_rank.get(evidence, len(EVIDENCE_ORDER)), chunk_id))
    return usable


def ranked_passages(usable: dict[str, list[tuple[int, str]]], seed: int) -> dict[str, list[str]]:
    """Each concept's usable passages, strongest evidence first, then by a seeded hash."""
    return {
        concept: ranked_by_hash(found, f"{seed}:{concept}") for concept, found in usable.items()
    }


def draw_candidates(
    *,
    display: dict[str, str],
    description: dict[str, str],
    held_out: set[str],
    ranked: dict[str, list[str]],
    edges: pd.DataFrame,
    statements: pd.DataFrame,
    papers: pd.DataFrame,
    structure: PaperStructure,
    info: StatementInfo,
    params: PairsParams,
) -> Candidates:
    """Every kind's candidates, in the priority order de-duplication keeps."""
    unseen = info.unseen_papers
    candidates = concept_pairs(display, description, held_out, ranked, info.text_of_chunk, params)
    by_edge, edge_counts = edge_pairs(edges, display, held_out, ranked, info.text_of_chunk, params)
    candidates += by_edge
    by_name, statements_unnamed = statement_pairs(statements, unseen)
    candidates += by_name
    candidates += structure_pairs(structure, info.text, info.paper, unseen, params)
    descriptions = build_descriptions(
        statements,
        papers,
        info,
        params,
        rank=lambda salt: stable_digest(f"{params.seed}:{salt}"),
    )
    candidates += descriptions.pairs
    return Candidates(candidates, edge_counts, statements_unnamed, descriptions)


def concept_pairs(
    display: dict[str, str],
    description: dict[str, str],
    held_out: set[str],
    ranked: dict[str, list[str]],
    text_of_chunk: Mapping[str, str],
    params: PairsParams,
) -> list[Pair]:
    """``name``, ``masked_name`` and ``description`` pairs: a concept -> its top passages."""
    pairs: list[Pair] = []
    for name in sorted(display):
        if name in held_out:
            continue
        for chunk_id in ranked.get(name, [])[: params.max_chunks_per_concept]:
            pairs.append((display[name], text_of_chunk[chunk_id], "name", name, chunk_id))
            if params.masked_name_pairs and names_in(text_of_chunk[chunk_id], display[name]):
                # The same passage without its term: the model must learn what it says.
                masked = mask_name(text_of_chunk[chunk_id], display[name])
                pairs.append((display[name], masked, "masked_name", name, chunk_id))
            if params.description_pairs and description[name]:
                pairs.append(
                    (description[name], text_of_chunk[chunk_id], "description", name, chunk_id)
                )
    return pairs


def edge_pairs(
    edges: pd.DataFrame,
    display: dict[str, str],
    held_out: set[str],
    ranked: dict[str, list[str]],
    text_of_chunk: Mapping[str, str],
    params: PairsParams,
) -> tuple[list[Pair], EdgeCounts]:
    """``edge`` pairs: each end's name -> a window of the other end's passages; edges touching
    a held-out concept are dropped."""
    pairs: list[Pair] = []
    used = dropped_held_out = dropped_unknown = 0
    for source, target in zip(edges["source"].tolist(), edges["target"].tolist(), strict=True):
        if source in held_out or target in held_out:
            dropped_held_out += 1
            continue
        if source not in display or target not in display:
            dropped_unknown += 1
            continue
        used += 1
        for anchor_end, other_end in ((source, target), (target, source)):
            salt = f"{params.seed}:{anchor_end}->{other_end}"
            for chunk_id in rotated_window(ranked.get(other_end, []), salt, params.max_edge_pairs):
                pairs.append(
                    (display[anchor_end], text_of_chunk[chunk_id], "edge", anchor_end, chunk_id)
                )
    return pairs, EdgeCounts(used, dropped_held_out, dropped_unknown)


def statement_pairs(statements: pd.DataFrame, unseen: Set[str]) -> tuple[list[Pair], int]:
    """``statement`` pairs: a named statement's concept name -> its text (none from an unseen
    paper); and how many statements carry no concept name."""
    pairs: list[Pair] = []
    unnamed = 0
    for statement_id, paper_id, kind, name, text in sorted(
        zip(
            statements["statement_id"].tolist(),
            statements["paper_id"].tolist(),
            statements["kind"].tolist(),
            statements["name"].tolist(),
            statements["text"].tolist(),
            strict=True,
        )
    ):
        stated = statement_concept_name(kind, name) if name else None
        if stated is None:
            unnamed += 1
            continue
        if paper_id in unseen:
            continue
        pairs.append((stated, text, "statement", normalise_name(stated), statement_id))
    return pairs, unnamed


def structure_pairs(
    structure: PaperStructure,
    text_of_statement: Mapping[str, str],
    paper_of_statement: Mapping[str, str],
    unseen: Set[str],
    params: PairsParams,
) -> list[Pair]:
    """The papers' own structure: a statement leads to its proof, and a statement (with its
    proof) to the statements it cites; at most ``max_structure_pairs`` (a stable draw)."""
    structural: list[Pair] = []
    for statement_id, proof in sorted(structure.proof_of.items()):
        if paper_of_statement[statement_id] in unseen:
            continue
        anchor = text_of_statement[statement_id]
        structural.append((anchor, proof, "proof", statement_id, statement_id))
    for statement_id, cited in sorted(structure.cited.items()):
        for target in cited:
            if paper_of_statement[target] in unseen:
                continue
            anchor = text_of_statement[statement_id]
            structural.append((anchor, text_of_statement[target], "citation", statement_id, target))
    structural.sort(key=lambda pair: stable_digest(f"{params.seed}:{pair[2]}:{pair[3]}:{pair[4]}"))
    return structural[: params.max_structure_pairs]
