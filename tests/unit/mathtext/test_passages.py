"""Finding a statement among its paper's passages: many statements open alike."""

from __future__ import annotations

import os
import random

from pipelines.mathtext.passages import PassageFinder, common_prefix_length

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


def test_a_sentence_in_the_overlap_of_two_passages_is_held_by_both() -> None:
    # Consecutive passages overlap: the sentence ends c1 and opens c2 again, and c1 is where
    # find() places it; holding() must name c2 too (a described query excludes both).
    sentence = "The morphism is finite locally free by Lemma [ref], hence it is open."
    finder = PassageFinder(
        [
            ("c0", "Intro text only, nothing else to see here at all."),
            ("c1", "Proof. Consider the cover. " + sentence),
            ("c2", sentence + " Next we show the map is surjective."),
            ("c3", "Another passage that quotes only: the morphism is finite."),
        ]
    )
    assert finder.span(sentence) == ("c1",)
    assert finder.holding(sentence) == ("c1", "c2")
    assert finder.holding("A sentence that is nowhere in the paper at all, really.") == ()


def test_text_split_between_two_passages_is_not_found_as_if_one_held_it() -> None:
    # The paper's passages are searched as one text: a statement whose first part ends one
    # passage and whose rest opens the next (no overlap) starts in the first and ends in the
    # second, and a piece across the cut is held by neither.
    statement = (
        "Let $k$ be a field and let $V$ be a vector space of finite dimension over $k$. "
        "Then every linear injection of $V$ into itself is a bijection onto $V$."
    )
    finder = PassageFinder(
        [("c0", "Lemma. " + statement[:60]), ("c1", statement[60:] + " Proof. Omitted.")]
    )
    assert finder.find(statement) == "c0"
    assert finder.span(statement) == ("c0", "c1")
    assert finder.holding(statement) == ("c0", "c1")
    assert finder.find(statement[40:90]) == ""  # across the cut: in no passage
    assert finder.holding(statement[40:90]) == ()


def test_the_common_prefix_is_the_one_a_character_loop_finds() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        first = "".join(rng.choice("ab$ ") for _ in range(rng.randrange(0, 40)))
        second = first[: rng.randrange(0, len(first) + 1)] + "".join(
            rng.choice("ab$ ") for _ in range(rng.randrange(0, 10))
        )
        expected = len(os.path.commonprefix([first, second]))
        assert common_prefix_length(first, second) == expected
        assert common_prefix_length(second, first) == expected
