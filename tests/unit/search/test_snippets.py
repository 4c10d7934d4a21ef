"""How much of a passage a hit shows (pipelines.search.snippets): never half a formula,
diagrams set aside with their source, sane on broken input."""

from __future__ import annotations

import pytest

from pipelines.search.snippets import (
    DIAGRAM,
    ELLIPSIS,
    FORMULA,
    Block,
    formula_spans,
    snippet,
)

# From homology.tex (the snake lemma), as prepare writes it.
SNAKE = (
    "Let $\\mathcal{A}$ be an abelian category. Let $\\xymatrix{ & x \\ar[r]^f \\ar[d]^\\alpha "
    "& y \\ar[r]^g \\ar[d]^\\beta & z \\ar[r] \\ar[d]^\\gamma & 0 \\\\ 0 \\ar[r] & u \\ar[r]^k "
    "& v \\ar[r]^l & w }$ be a commutative diagram with exact rows.\n\nThere exists a unique "
    "morphism $\\delta : \\mathop{\\mathrm{Ker}}(\\gamma) \\to \\mathop{\\mathrm{Coker}}(\\alpha)$ "
    "such that the diagram commutes."
)


def balanced(text: str) -> bool:
    """Every formula the text opens, it closes (dollars outside \\$ come in pairs)."""
    return text.replace("\\$", "").count("$") % 2 == 0


def test_a_diagram_becomes_a_marker_with_its_source_kept() -> None:
    shown = snippet(SNAKE, None)
    assert shown.text.startswith(f"Let $\\mathcal{{A}}$ be an abelian category. Let {DIAGRAM} be")
    assert "xymatrix" not in shown.text and "\n" not in shown.text
    (block,) = shown.blocks
    assert block.kind == "diagram" and block.source.startswith("$\\xymatrix{ & x")
    assert block.source.endswith("w }$") and block.as_json()["kind"] == "diagram"


@pytest.mark.parametrize("max_chars", range(20, len(SNAKE), 7))
def test_no_cut_falls_inside_a_formula(max_chars: int) -> None:
    shown = snippet(SNAKE, max_chars)
    assert len(shown.text) <= max_chars
    assert shown.text.endswith(ELLIPSIS) or shown.text == snippet(SNAKE, None).text
    assert balanced(shown.text), shown.text
    assert shown.text.count(DIAGRAM) == len(shown.blocks)


def test_the_cut_falls_between_words() -> None:
    shown = snippet("one two three four five six seven", 16)
    assert shown.text == "one two three" + ELLIPSIS


@pytest.mark.parametrize(
    ("text", "formula"),
    [
        ("See $$x + y = z$$ here.", "$$x + y = z$$"),
        ("See \\(x + y = z\\) here.", "\\(x + y = z\\)"),
        ("See \\[x + y = z\\] here.", "\\[x + y = z\\]"),
        ("See \\begin{align} a &= b \\\\ c &= d \\end{align} here.", "\\begin{align}"),
        ("See $\\begin{matrix} a \\\\ b \\end{matrix}$ here.", "$\\begin{matrix}"),
    ],
)
def test_every_kind_of_formula_stays_whole(text: str, formula: str) -> None:
    start = text.index(formula)
    (span,) = formula_spans(text)
    assert span[0] == start and text[span[1] - 1] in "$)]}"
    for max_chars in range(start + 2, span[1]):
        cut = snippet(text, max_chars).text
        # cut before the formula, or (when it alone is longer than the snippet) past its
        # marker: never a piece of it
        assert cut == "See" + ELLIPSIS or cut.startswith(f"See {FORMULA}"), (max_chars, cut)
        assert not any(opener in cut for opener in ("$", "\\(", "\\[", "\\begin"))


def test_nested_environments_and_escaped_dollars() -> None:
    nested = "a \\begin{x} \\begin{x} b \\end{x} c \\end{x} d"
    assert formula_spans(nested) == [(2, len(nested) - 2)]
    assert formula_spans("costs \\$5, not $x$") == [(15, 18)]
    assert formula_spans("$a \\$ b$ c") == [(0, 8)]  # \$ inside a formula
    assert formula_spans("line \\\\$x$") == [(7, 10)]  # \\ is a line break, $ opens


def test_an_unbalanced_dollar_is_text() -> None:
    text = "The price is $ five and then many more words follow here"
    assert formula_spans(text) == []
    shown = snippet(text, 25)
    assert shown.text == "The price is $ five and" + ELLIPSIS
    assert formula_spans("an \\begin{matrix} never closed") == []


def test_a_formula_longer_than_the_snippet_is_set_aside() -> None:
    huge = "$" + " + ".join(f"x_{{{i}}}" for i in range(200)) + "$"
    shown = snippet(f"We have {huge} for all $i$, and more text after it.", 60)
    assert shown.text.startswith(f"We have {FORMULA} for all $i$") and len(shown.text) <= 60
    assert shown.blocks == (Block("formula", huge),)
    alone = snippet(huge, 60)
    assert alone.text == FORMULA and alone.blocks == (Block("formula", huge),)


def test_blocks_cut_off_are_not_listed() -> None:
    text = "Intro words here. " * 10 + "$\\xymatrix{a \\ar[r] & b}$"
    shown = snippet(text, 50)
    assert DIAGRAM not in shown.text and shown.blocks == ()


def test_tikzcd_is_a_diagram_too_and_short_text_is_whole() -> None:
    text = "Consider \\begin{tikzcd} A \\arrow[r] & B \\end{tikzcd} now."
    shown = snippet(text, 400)
    assert shown.text == f"Consider {DIAGRAM} now."
    assert shown.blocks[0].source == "\\begin{tikzcd} A \\arrow[r] & B \\end{tikzcd}"
    assert snippet("", 10).text == ""
