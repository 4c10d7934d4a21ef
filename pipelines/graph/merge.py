"""Concept candidates from every paper, merged into concepts by normalised name and alias.

Papers name one concept in many ways; :func:`merge_candidates` groups the sightings whose
keys or aliases meet (:func:`~pipelines.mathtext.names.merge_keys`) and picks, per concept,
the display name, type, description and aliases the sightings agree on most.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from pipelines.common.tables import EVIDENCE_ORDER
from pipelines.graph.extractor import ConceptCandidate
from pipelines.mathtext.names import merge_keys, normalise_name, words_of


@dataclass
class MergedConcept:
    """One concept of the graph, as its sightings agree; matched in text by ``surfaces``."""

    name: str
    display_name: str = ""
    type: str = "other"
    description: str = ""
    aliases: list[str] = field(default_factory=list)
    papers: set[str] = field(default_factory=set)
    surfaces: set[str] = field(default_factory=set)
    statements: set[str] = field(default_factory=set)  # the statements defining/stating it


def evidence_rank(evidence: str) -> int:
    """0 for the strongest evidence (a definition), then in :data:`EVIDENCE_ORDER`."""
    return EVIDENCE_ORDER.index(evidence)


def _type_rank(concept_type: str) -> int:
    # On a tie the more specific type wins; "definition" and "other" are the fallbacks.
    order = ("theorem", "identity", "conjecture", "technique", "object", "definition", "other")
    return order.index(concept_type) if concept_type in order else len(order)


def merge_candidates(
    sightings: Sequence[tuple[str, ConceptCandidate]],
) -> tuple[dict[str, MergedConcept], dict[str, str]]:
    """Merge ``(paper_id, candidate)`` sightings into concepts by key and shared alias.

    Returns the concepts by key and the key map (every candidate and alias key -> the
    concept key it was merged into).
    """
    keyed = [
        (paper_id, candidate, candidate.key, [normalise_name(a) for a in candidate.aliases])
        for paper_id, candidate in sightings
    ]
    keyed = _join_bare_names([entry for entry in keyed if entry[2]])
    key_map = merge_keys((key, aliases) for _paper, _candidate, key, aliases in keyed)
    for _paper, _candidate, key, aliases in keyed:
        for alias in aliases:
            key_map.setdefault(alias, key_map[key])

    members: dict[str, list[tuple[str, ConceptCandidate, str]]] = defaultdict(list)
    for paper_id, candidate, key, _aliases in keyed:
        members[key_map[key]].append((paper_id, candidate, key))

    concepts: dict[str, MergedConcept] = {}
    for name, group in members.items():
        displays = Counter(c.display_name for _p, c, _k in group if c.key == name)
        # The singular form first ("Catalan number" over "Catalan numbers"), then the
        # most frequent, then the shortest.
        display_name = min(
            displays,
            key=lambda d: (words_of(d) != name.split(), -displays[d], len(d), d),
        )
        types = Counter(candidate.type for _p, candidate, _k in group)
        concept_type = min(types, key=lambda t: (-types[t], _type_rank(t)))
        described = sorted(
            (
                (evidence_rank(candidate.evidence), paper_id, candidate.description)
                for paper_id, candidate, _k in group
                if candidate.description
            ),
        )
        # One written form per other key: the alias as most often written.
        written: dict[str, Counter[str]] = defaultdict(Counter)
        for _p, candidate, _key in group:
            written[candidate.key][candidate.display_name] += 1
            for alias in candidate.aliases:
                written[normalise_name(alias)][alias] += 1
        aliases = sorted(
            min(forms, key=lambda form: (-forms[form], len(form), form))
            for key, forms in written.items()
            if key and key != name
        )
        concepts[name] = MergedConcept(
            name=name,
            display_name=display_name,
            type=concept_type,
            description=described[0][2] if described else "",
            aliases=aliases,
            papers={paper_id for paper_id, _c, _k in group},
            surfaces={display_name, *aliases},
            statements={c.statement_id for _p, c, _k in group if c.statement_id},
        )
    return concepts, key_map


def _join_bare_names(
    keyed: list[tuple[str, ConceptCandidate, str, list[str]]],
) -> list[tuple[str, ConceptCandidate, str, list[str]]]:
    """Let a bare statement name join the concept others name with one more word.

    ``\\begin{theorem}[Andrews–Gordon]`` gives "Andrews–Gordon theorem" (the kind added)
    with the alias "Andrews–Gordon"; other papers say "Andrews–Gordon identities". When
    exactly one other key is the bare name plus one word, the sighting takes that key,
    keeping its own as an alias, so the name the papers use wins.
    """
    longer: dict[str, set[str]] = defaultdict(set)
    for _paper, _candidate, key, _aliases in keyed:
        words = key.split()
        if len(words) >= 3:
            longer[" ".join(words[:-1])].add(key)
    joined = []
    for paper_id, candidate, key, aliases in keyed:
        for alias in aliases:
            others = longer.get(alias, set()) - {key}
            if len(alias.split()) >= 2 and len(others) == 1:
                key, aliases = next(iter(others)), [*aliases, key]
                break
        joined.append((paper_id, candidate, key, aliases))
    return joined
