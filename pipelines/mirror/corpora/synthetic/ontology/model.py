"""The shape of the sample ontology: :class:`Concept`, :class:`Relation` and their kinds.

The data modules beside this one (``combinatorics``, ``q_series``, ...) write their
concepts with :func:`define_concept`; :mod:`.lookup` joins them into ``CONCEPTS``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# The graph's own vocabularies (the concepts and edges tables), so the ontology's concepts
# and relations are always ones the pipeline can find and the tests can compare.
from pipelines.common.tables import CONCEPT_TYPES, RELATIONS, ConceptType
from pipelines.common.tables import Relation as RelationKind

__all__ = [
    "CONCEPT_TYPES",
    "RELATIONS",
    "Concept",
    "ConceptType",
    "Relation",
    "RelationKind",
    "define_concept",
    "latex_text",
]


@dataclass(frozen=True)
class Relation:
    """``source --kind--> target``; the source is the concept holding the relation."""

    kind: RelationKind
    target: str  # display name of another concept in the ontology


@dataclass(frozen=True)
class Concept:
    name: str  # display name, lower case except proper nouns: "Schur function"
    type: ConceptType
    category: str  # arXiv category of a paper focused on this concept
    description: str
    aliases: tuple[str, ...] = ()
    notation: tuple[str, ...] = ()  # LaTeX math without $ delimiters
    formula: str = ""  # a display formula (LaTeX, no delimiters) stating or defining it
    relations: tuple[Relation, ...] = ()
    article: str = "the"  # "" for possessive or mass-noun names ("Bailey's lemma")
    macro: str = ""  # name of a \newcommand authors use as shorthand for the name
    plural: str = ""  # plural of a countable name ("Schur functions"); "" if unique or mass
    msc: str = ""  # Mathematics Subject Classification 2020 code of the topic

    @property
    def is_noun_phrase(self) -> bool:
        """Whether the description is a noun phrase (else it starts with a verb)."""
        return self.description.split(" ", 1)[0] in {"A", "An", "The"}

    def mentions(self) -> tuple[str, ...]:
        """Every surface form of the concept: name, aliases and ``$notation$``."""
        return (self.name, *self.aliases, *(f"${symbol}$" for symbol in self.notation))


def latex_text(text: str) -> str:
    """Plain prose → LaTeX source: en and em dashes become ``--`` and ``---``."""
    return text.replace("—", "---").replace("–", "--")


def define_concept(
    name: str,
    type_: ConceptType,
    category: str,
    description: str,
    *,
    aliases: Iterable[str] = (),
    notation: Iterable[str] = (),
    formula: str = "",
    relations: Iterable[tuple[RelationKind, str]] = (),
    article: str | None = None,
    macro: str = "",
    plural: str = "",
    msc: str = "",
) -> Concept:
    """A :class:`Concept` from keyword arguments; the article defaults to "the", or to
    none for a possessive name ("Bailey's lemma")."""
    if article is None:
        article = "" if "'s " in f"{name} " else "the"
    return Concept(
        name=name,
        type=type_,
        category=category,
        description=description,
        aliases=tuple(aliases),
        notation=tuple(notation),
        formula=formula,
        relations=tuple(Relation(kind, target) for kind, target in relations),
        article=article,
        macro=macro,
        plural=plural,
        msc=msc,
    )
