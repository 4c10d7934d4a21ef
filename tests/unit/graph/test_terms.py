"""Which names are concepts: marked terms, discourse words, corroboration of weak names."""

from __future__ import annotations

import pytest

from pipelines.graph.terms import corroborated, defined_term, is_everyday_word
from pipelines.mathtext.concept_phrases import is_discourse


@pytest.mark.parametrize(
    ("raw", "term"),
    [
        ("affine scheme", "affine scheme"),
        ("local ring of $X$ at $x$", "local ring"),
        ("structure sheaf $\\mathcal{O}_{Spec(R)}$ of the spectrum of $R$", "structure sheaf"),
        ("locally ringed space $(X, \\mathcal{O}_X)$", "locally ringed space"),
        ("scheme over $S$", "scheme"),
        ("$R$-module", "$R$-module"),
        ("quasi-compact", "quasi-compact"),
    ],
)
def test_a_marked_term_loses_its_notation_and_trailing_prepositions(raw: str, term: str) -> None:
    assert defined_term(raw) == term


@pytest.mark.parametrize(
    "raw",
    ["not", "there", "our assumption", "covers $F$", "satisfies the sheaf property",
     "$X$", "presheaf of $\\mathcal{O", "computation above", ""],
)  # fmt: skip
def test_prose_notation_and_broken_math_are_no_terms(raw: str) -> None:
    assert defined_term(raw) is None


@pytest.mark.parametrize(
    ("name", "discourse"),
    [
        ("there", True),
        ("now", True),
        ("result now", True),
        ("last conclusion thus", True),
        ("further claim about square", True),
        ("our assumption", True),
        ("computation above", True),
        ("first equality", True),
        ("Zariski topology", False),
        ("morphism of schemes", False),
        ("Bailey's lemma", False),
    ],
)
def test_discourse_words_at_either_end_make_prose(name: str, discourse: bool) -> None:
    assert is_discourse(name) is discourse


def test_everyday_words_are_told_from_mathematical_ones() -> None:
    assert is_everyday_word("choice") and is_everyday_word("latter")
    assert not is_everyday_word("surjective") and not is_everyday_word("presheaf")
    assert not is_everyday_word("exact couple")  # only single words are judged


def test_a_weak_name_needs_papers_and_rarity() -> None:
    assert corroborated("surjective", 2)
    assert not corroborated("surjective", 1)
    assert not corroborated("choice", 5)
    assert not corroborated("there", 40)


def test_every_name_passes_the_one_discourse_rule_and_a_statement_meets_it_with_its_kind() -> None:
    from pipelines.mathtext.concept_phrases import clean_term, statement_concept_name

    assert clean_term("our assumption") is None and clean_term("result now") is None
    assert clean_term("Zariski topology") == "Zariski topology"
    # "Genus one" ends in a discourse word, "Genus one lemma" does not: the name stays.
    assert statement_concept_name("lemma", "Genus one") == "Genus one lemma"
    assert statement_concept_name("definition", "our assumption") is None
