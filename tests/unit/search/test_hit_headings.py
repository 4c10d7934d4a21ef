"""What a hit is called (pipelines.search.headings): names from labels, headings, kinds and
the text search could index; on real Stacks Project and blueprint labels."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipelines.search.headings import (
    hit_heading,
    hit_kind,
    name_from_label,
    primary_statement,
    statement_heading,
    statement_name,
    statement_search_text,
)
from pipelines.search.statements import StatementRef

STACKS = Path(__file__).parents[3] / "corpora" / "stacks-project"


@pytest.mark.parametrize(
    ("label", "kind", "name"),
    [
        # Stacks: one word names the result, with its kind after it
        ("lemma-snake", "lemma", "snake lemma"),
        ("lemma-yoneda", "lemma", "yoneda lemma"),
        ("lemma-tube", "lemma", "tube lemma"),
        ("lemma-Kummer", "lemma", "Kummer lemma"),
        ("lemma-NAK", "lemma", "NAK lemma"),
        ("theorem-chevalley", "theorem", "chevalley theorem"),
        ("theorem-B", "theorem", "theorem B"),
        ("lemma-H0", "lemma", "lemma H0"),
        # ... but not after an adjective or a plural, and never for a definition
        ("lemma-flat", "lemma", "flat"),
        ("lemma-artinian", "lemma", "artinian"),
        ("lemma-products", "lemma", "products"),
        ("definition-category", "definition", "category"),
        # several words: the label's words, hyphens kept where mathematics writes them
        ("proposition-generic-flatness", "proposition", "generic flatness"),
        ("lemma-composition-quasi-finite", "lemma", "composition quasi-finite"),
        ("lemma-K-flat-quasi-isomorphism", "lemma", "K-flat quasi-isomorphism"),
        ("lemma-yoneda-2category", "lemma", "yoneda 2category"),
        ("lemma-Artin-Schreier", "lemma", "Artin-Schreier"),
        ("theorem-bondal-van-den-Bergh", "theorem", "bondal van den Bergh"),
        ("definition-ring-of-rational-functions", "definition", "ring of rational functions"),
        # a last word that only tells labels apart goes
        ("lemma-J-2", "lemma", "lemma J"),
        ("example-grothendieck-sharp-bis", "example", "grothendieck sharp"),
        # blueprints: prefixes with a colon, underscores; a bare label takes no kind
        ("lem:satisfied_or_refund", "lemma", "satisfied or refund"),
        ("thm:ingham-first", "theorem", "ingham first"),
        ("def:hol_partial", "definition", "hol partial"),
        ("Frey_curve_reducible_structure", "lemma", "Frey curve reducible structure"),
        ("key", "lemma", "key"),
        # no words at all: a Lean declaration, digits, nothing
        ("MeasureTheory.ringHaarChar_pi", "lemma", ""),
        ("7111", "theorem", ""),
        ("1681-3877-1701-1035", "theorem", ""),
        ("", "lemma", ""),
        ("lemma-", "lemma", ""),
    ],
)
def test_a_name_is_made_from_a_label_as_a_mathematician_would_say_it(
    label: str, kind: str, name: str
) -> None:
    assert name_from_label(label, kind) == name


def test_every_label_of_the_stacks_chapters_gives_a_name_or_none_without_failing() -> None:
    kinds = "lemma|theorem|proposition|definition|remark|example|exercise|situation"
    labels = [
        label
        for chapter in sorted(STACKS.glob("*.tex"))
        for label in re.findall(
            rf"\\label\{{((?:{kinds})-[^}}]*)\}}", chapter.read_text(encoding="utf-8")
        )
    ]
    assert len(labels) > 2500
    names = {label: name_from_label(label, label.partition("-")[0]) for label in labels}
    assert names["lemma-snake"] == "snake lemma"
    for label, name in names.items():
        kind = label.partition("-")[0]
        assert name == name.strip() and "  " not in name, label
        # the kind prefix goes; it comes back only to name a one-word result ("theorem B")
        assert not name.startswith(f"{kind} ") or len(name.split()) == 2, label
    unnamed = [label for label, name in names.items() if not name]
    assert len(unnamed) < len(labels) / 100  # nearly every Stacks label makes a name


def test_a_bracketed_name_wins_over_the_label_and_a_derived_one_says_so() -> None:
    yoneda = StatementRef("s", "lemma", "Yoneda  lemma", "lemma-yoneda")
    snake = StatementRef("s", "lemma", "", "lemma-snake")
    unnamed = StatementRef("s", "lemma", "", "")
    assert statement_name(yoneda).text == "Yoneda lemma" and not statement_name(yoneda).derived
    assert statement_name(snake).text == "snake lemma" and statement_name(snake).derived
    assert statement_name(unnamed).text == "" and not statement_name(unnamed).derived


def test_headings_say_statement_proof_or_section() -> None:
    snake = StatementRef("s", "lemma", "", "lemma-snake")
    proof = StatementRef("s", "lemma", "", "lemma-snake", holds="proof")
    assert statement_heading(snake) == "Lemma (snake lemma)"
    assert statement_heading(proof) == "From the proof of Lemma (snake lemma)"
    assert statement_heading(StatementRef("s", "definition", "", "")) == "Definition"
    assert hit_heading(None, " Abelian  categories ") == "Abelian categories"
    assert hit_heading(None, "") == "Text"
    assert (hit_kind(snake), hit_kind(proof), hit_kind(None)) == ("lemma", "proof", "text")


def test_a_passage_is_shown_as_the_statement_that_starts_in_it() -> None:
    proof_of_a = StatementRef("a", "lemma", "", "lemma-a", holds="proof")
    rest_of_b = StatementRef("b", "lemma", "", "lemma-b", holds="rest")
    start_of_c = StatementRef("c", "definition", "", "definition-c", holds="start")
    assert primary_statement((proof_of_a, rest_of_b, start_of_c)) == start_of_c
    assert primary_statement((proof_of_a, rest_of_b)) == rest_of_b
    assert primary_statement((proof_of_a,)) == proof_of_a
    assert primary_statement(()) is None


def test_the_text_search_could_index_names_the_statement_and_its_section() -> None:
    text = "Let $\\mathcal{A}$ be an abelian category."
    snake = statement_search_text(
        kind="lemma", name="", label="lemma-snake", section="Abelian categories", text=text
    )
    assert snake == f"Lemma (snake lemma). Abelian categories.\n\n{text}"
    proper = statement_search_text(
        kind="lemma",
        name="Valuative criterion for properness",
        label="lemma-characterize-proper",
        section="",
        text="x",
    )
    # the label's words add what the name lacks
    assert proper == "Lemma (Valuative criterion for properness). characterize proper.\n\nx"
    yoneda = statement_search_text(
        kind="lemma", name="Yoneda lemma", label="lemma-yoneda", section="", text="x"
    )
    assert yoneda == "Lemma (Yoneda lemma).\n\nx"
