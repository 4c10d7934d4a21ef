"""Issue 23, finding 1: an argument that never closes, once per paragraph, made each
occurrence search up to ARG_SCAN_LIMIT (20,000) characters for its closing brace, so a
100 KB source took 24 s to prepare. The search is now linear in the source; these tests
count the characters it reads (not the time it takes) for 1, 10 and 100 KB of such input.
"""

from __future__ import annotations

import random

import pytest

from pipelines.prepare.cleaner import prepare_document
from pipelines.prepare.latex.source import (
    ARG_SCAN_LIMIT,
    BraceIndex,
    characters_scanned,
    forget_brace_indexes,
    read_argument,
)

SIZES = (1_000, 10_000, 100_000)
#: Characters read per character of source, at most: one pass to index the braces, the
#: runaway arguments' reads to the end of their paragraphs, a few forward searches.
MAX_READS_PER_CHAR = 4

HOSTILE_PARAGRAPHS = {
    # The campaign's input: a 9-argument macro whose first argument never closes.
    "macro": "Some words \\a{ and more words\n\n",
    "macro with groups": "\\a{ {x}{y}{z}{w}{v}{u}\n\n",
    "bare": "\\a{\n\n",
    "section": "Some words \\section{ and more words\n\n",
    "label": "Some words \\label{ and more words\n\n",
    "nested": "w \\a{\\a{\\a{ x\n\n",
    "no paragraphs": "Some words \\a{ and more words ",
}


def hostile_source(size: int, paragraph: str) -> str:
    head = "\\documentclass{article}\n\\newcommand{\\a}[9]{x}\n\\begin{document}\n"
    repeats = max(1, (size - len(head)) // len(paragraph))
    return head + paragraph * repeats + "\\end{document}\n"


def scanned_while_preparing(source: str) -> int:
    forget_brace_indexes()  # start cold, as a fresh worker does
    before = characters_scanned()
    prepare_document(source, chunk_chars=1500, overlap_chars=200, min_chunk_chars=50)
    return characters_scanned() - before


@pytest.mark.parametrize("paragraph", HOSTILE_PARAGRAPHS.values(), ids=HOSTILE_PARAGRAPHS.keys())
def test_unclosed_arguments_cost_work_linear_in_the_source(
    paragraph: str, bounded_in_time: None
) -> None:
    scanned = {size: scanned_while_preparing(hostile_source(size, paragraph)) for size in SIZES}
    for size, reads in scanned.items():
        # Before the fix: 100 KB of the macro paragraph read ~80 million characters.
        assert reads <= MAX_READS_PER_CHAR * size, (size, reads)
    # Ten times the source, about ten times the work (not a hundred).
    assert scanned[100_000] <= 15 * max(scanned[10_000], 1), scanned


def forward_search(text: str, open_pos: int) -> int:
    """The search as it was before the index (the reference the index must agree with)."""
    depth = 0
    position = open_pos
    end = min(len(text), open_pos + ARG_SCAN_LIMIT)
    while position < end:
        char = text[position]
        if char == "\\":
            position += 2
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return position
        position += 1
    return -1


def test_the_index_finds_every_closer_the_forward_search_finds() -> None:
    """Random texts of braces and backslashes (escaped braces included), every ``{``."""
    rng = random.Random(23)
    for _ in range(2_000):
        text = "".join(rng.choice("{}{}\\ab\n") for _ in range(rng.randint(1, 60)))
        index = BraceIndex(text)
        for position, char in enumerate(text):
            if char == "{":
                assert index.close_of(position) == forward_search(text, position), (
                    text,
                    position,
                )


def test_an_argument_closed_past_the_scan_limit_is_still_a_runaway() -> None:
    """Same output as before on long arguments: a closer further than ARG_SCAN_LIMIT does
    not count, whether the forward search or the index answers."""
    text = "\\a{" + "x" * ARG_SCAN_LIMIT + "}\n\nnext"
    runaway = (text[3 : text.index("\n\n")], text.index("\n\n"))
    forget_brace_indexes()
    assert read_argument(text, 2) == runaway  # the forward search fails and indexes the text
    assert read_argument(text, 2) == runaway  # the index answers
