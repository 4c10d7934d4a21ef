"""The hand-written ontology behind the offline sample corpus: real mathematical concepts.

Each :class:`Concept` has a display name, aliases, LaTeX notation, a one- or two-sentence
description written for this project, a type, the arXiv category a paper about it would
be filed under, and typed relations to other concepts of the ontology. The generator
(:mod:`pipelines.mirror.corpora.synthetic`) writes papers about a few related concepts each and
records them in the mirror's manifest as the papers' true concepts, so later stages can
be checked against a known answer.

Conventions the generator relies on (and the tests check):

* a description starting with "A", "An" or "The" is a noun phrase (it completes
  "we call ... a *name*"); any other description starts with a verb agreeing with the
  display name ("Counts ...", "States that ...", "Equate ..." for a plural name);
* descriptions and formulas are LaTeX-ready: math is in ``$...$``, an en dash in a name
  ("Rogers–Ramanujan") is written ``--`` by :func:`latex_text`;
* ``notation`` holds LaTeX math without delimiters; ``formula`` is a display formula.

Pure data plus small lookup helpers; nothing happens at import time beyond building the
tuples. :mod:`.model` defines the shape, one module per area holds its concepts
(``combinatorics``, ``q_series``, ``number_theory``, ``topology``, ``algebra``,
``analysis``), and :mod:`.lookup` joins them.
"""

from pipelines.mirror.corpora.synthetic.ontology.lookup import (
    CONCEPTS,
    concept,
    concepts_by_name,
    neighbours,
    relations,
)
from pipelines.mirror.corpora.synthetic.ontology.model import (
    CONCEPT_TYPES,
    RELATIONS,
    Concept,
    ConceptType,
    Relation,
    RelationKind,
    latex_text,
)

__all__ = [
    "CONCEPTS",
    "CONCEPT_TYPES",
    "RELATIONS",
    "Concept",
    "ConceptType",
    "Relation",
    "RelationKind",
    "concept",
    "concepts_by_name",
    "latex_text",
    "neighbours",
    "relations",
]
