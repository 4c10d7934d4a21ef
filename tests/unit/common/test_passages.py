"""Finding a statement among its paper's passages: many statements open alike."""

from __future__ import annotations

from pipelines.common.passages import PassageFinder

OPENING = "Let $S$ be a scheme. Let $X$ be an algebraic space over $S$. "
FIRST = OPENING + "Then $X$ is quasi-separated. This lemma is about something else."
SECOND = OPENING + "We say $X$ is decent if every point is quasi-compact. More text follows."


def test_the_passage_agreeing_longest_with_the_statement_wins_not_the_first() -> None:
    finder = PassageFinder(
        [
            ("c0", "Lemma. " + FIRST),
            ("c1", "Some words.\n\nDefinition. " + SECOND),
        ]
    )
    assert finder.find(SECOND) == "c1"
    assert finder.find(FIRST) == "c0"


def test_paragraph_breaks_do_not_hide_a_statement() -> None:
    finder = PassageFinder(
        [("c0", "Definition. Let $S$ be a scheme.\n\nWe say $X$ is decent here.")]
    )
    assert finder.find("Let $S$ be a scheme. We say $X$ is decent here.") == "c0"


def test_a_statement_runs_over_the_passages_up_to_its_end() -> None:
    statement = "Let $R$ be a ring. " + "A module is of finite presentation if ... " * 3 + "END."
    finder = PassageFinder(
        [
            ("c0", "Intro text only, nothing else to see."),
            ("c1", statement[:70]),
            ("c2", statement[60:]),
            ("c3", "Another passage."),
        ]
    )
    assert finder.span(statement) == ("c1", "c2")


def test_nothing_found_or_too_short_to_look_for() -> None:
    finder = PassageFinder([("c0", "A passage about something else entirely, at length.")])
    assert finder.find("A statement that is nowhere in the paper at all.") == ""
    assert finder.span("A statement that is nowhere in the paper at all.") == ()
    assert finder.find("Too short.") == ""
