"""The whole sample ontology, ``CONCEPTS``, and lookups by name and by relation."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from types import MappingProxyType

from pipelines.mirror.corpora.synthetic.ontology.algebra import ALGEBRA
from pipelines.mirror.corpora.synthetic.ontology.analysis import ANALYSIS
from pipelines.mirror.corpora.synthetic.ontology.combinatorics import COMBINATORICS
from pipelines.mirror.corpora.synthetic.ontology.model import Concept, RelationKind
from pipelines.mirror.corpora.synthetic.ontology.number_theory import NUMBER_THEORY
from pipelines.mirror.corpora.synthetic.ontology.q_series import Q_SERIES
from pipelines.mirror.corpora.synthetic.ontology.topology import TOPOLOGY

CONCEPTS: tuple[Concept, ...] = (
    *COMBINATORICS,
    *Q_SERIES,
    *NUMBER_THEORY,
    *TOPOLOGY,
    *ALGEBRA,
    *ANALYSIS,
)


@cache
def concepts_by_name() -> Mapping[str, Concept]:
    """Display name → concept (read-only)."""
    return MappingProxyType({concept.name: concept for concept in CONCEPTS})


def concept(name: str) -> Concept:
    """The concept with display name ``name``; ``KeyError`` naming it if there is none."""
    try:
        return concepts_by_name()[name]
    except KeyError:
        raise KeyError(f"no concept named {name!r} in the sample ontology") from None


def relations() -> list[tuple[str, RelationKind, str]]:
    """Every relation as ``(source, kind, target)``, in ontology order."""
    return [
        (source.name, relation.kind, relation.target)
        for source in CONCEPTS
        for relation in source.relations
    ]


@cache
def neighbours(name: str) -> tuple[str, ...]:
    """Concepts related to ``name`` in either direction, in ontology order, without repeats."""
    related: dict[str, None] = {}
    for source, _kind, target in relations():
        if source == name:
            related[target] = None
        elif target == name:
            related[source] = None
    related.pop(name, None)
    return tuple(related)
