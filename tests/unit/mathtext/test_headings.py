"""What a hit is called (pipelines.mathtext.headings): names from labels, headings, kinds and
the text search could index; on real Stacks Project and blueprint labels."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from pipelines.mathtext.headings import (
    HEADER_PART_CHARS,
    hit_heading,
    hit_kind,
    name_from_label,
    primary_statement,
    search_header,
    search_texts,
    statement_heading,
    statement_name,
)
from pipelines.mathtext.statements import StatementRef, statements_by_passage

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
        # a bare counter names nothing (equational_theories' eq3588); after a kind it does
        ("eq3588", "theorem", ""),
        ("thm1", "lemma", ""),
        ("example-cosk0", "example", "cosk0"),
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


def test_the_search_header_names_the_statement_and_its_section() -> None:
    snake = search_header(StatementRef("s", "lemma", "", "lemma-snake"), "Abelian  categories")
    assert snake == "Lemma (snake lemma). Abelian categories.\n\n"
    proper = search_header(
        StatementRef(
            "p", "lemma", "Valuative criterion for properness", "lemma-characterize-proper"
        ),
        "",
    )
    # the label's words add what the name lacks
    assert proper == "Lemma (Valuative criterion for properness). characterize proper.\n\n"
    yoneda = search_header(StatementRef("y", "lemma", "Yoneda lemma", "lemma-yoneda"), "")
    assert yoneda == "Lemma (Yoneda lemma).\n\n"
    proof = search_header(StatementRef("s", "lemma", "", "lemma-snake", holds="proof"), "")
    assert proof == "From the proof of Lemma (snake lemma).\n\n"
    # a statement with neither name nor label is still headed by its kind
    assert search_header(StatementRef("n", "remark", "", ""), "") == "Remark.\n\n"
    assert search_header(None, "Abelian categories") == ""  # prose is searched as it is


def test_search_texts_head_each_passage_with_the_statement_it_is_shown_as() -> None:
    lemma = "Let $f$ be a morphism of abelian groups. Then the kernel is a subgroup."
    proof = "Omitted: a kernel is closed under sums."
    chunks = pd.DataFrame(
        {
            "chunk_id": ["p#c0", "p#c1", "p#c2"],
            "paper_id": ["p", "p", "p"],
            "chunk_index": [0, 1, 2],
            "section": ["Kernels", None, "Kernels"],
            "text": ["Some prose about groups and their maps.", lemma, proof],
        }
    )
    statements = pd.DataFrame(
        {
            "statement_id": ["p#s1"],
            "paper_id": ["p"],
            "kind": ["lemma"],
            "name": [""],
            "label": ["lemma-kernel-subgroup"],
            "text": [lemma],
            "proof": [proof],
        }
    )
    texts = search_texts(chunks, statements_by_passage(chunks, statements))
    assert texts == [
        "Some prose about groups and their maps.",
        f"Lemma (kernel subgroup).\n\n{lemma}",  # no section: none said
        f"From the proof of Lemma (kernel subgroup). Kernels.\n\n{proof}",
    ]
    # without statements every passage is its own text
    assert search_texts(chunks.drop(columns="section"), {}) == chunks["text"].tolist()


def test_a_hostile_name_label_or_section_cannot_crowd_the_passage_out() -> None:
    # A paper's 10 KB bracketed title or section: the header keeps a readable start of each.
    words = "very " * 2000
    hostile = StatementRef("h", "theorem", f"Main {words}theorem", "thm:" + "x" * 5000)
    header = search_header(hostile, "Section " + words)
    assert header.startswith("Theorem (Main very very")
    assert len(header) < 4 * HEADER_PART_CHARS
    name = header.split("(", 1)[1].split(")", 1)[0]
    assert len(name) <= HEADER_PART_CHARS and not name.endswith(" ")
