"""Sentences of cleaned LaTeX prose: a paragraph split where a sentence ends, never inside
``$…$`` and not after an abbreviation ("e.g.", "Lemma 3.", "J. Smith"). Prepare splits
the text around a citation with it; evaluate, a paper's abstract. Pure."""

from __future__ import annotations

import bisect
import re

_MATH = re.compile(r"\$[^$]*\$")
# A sentence ends at . ! or ? followed by a space and what can start one.
_BOUNDARY = re.compile(r"[.!?](?=\s+[A-Z(\[$\"])")
# Words whose trailing period does not end a sentence: "e.g.", "Lemma 3.", "J. Smith".
_NO_BREAK_BEFORE = re.compile(
    r"(?:\b(?:e\.g|i\.e|cf|resp|etc|vs|al|approx|Prop|Props|Thm|Thms|Lem|Cor|Def|Defs|Sec|Secs"
    r"|Eq|Eqs|Fig|No|Ch|Rem|Ex|Vol|pp|p)|\b[A-Z])$"
)


def split_sentences(paragraph: str) -> list[str]:
    """``paragraph``'s sentences, never split inside ``$…$`` or after an abbreviation."""
    math_spans = [match.span() for match in _MATH.finditer(paragraph)]
    math_starts = [start for start, _end in math_spans]
    sentences: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(paragraph):
        position = match.start()
        inside = bisect.bisect_right(math_starts, position) - 1
        if inside >= 0 and position < math_spans[inside][1]:
            continue
        if _NO_BREAK_BEFORE.search(paragraph, max(0, position - 12), position):
            continue
        sentences.append(paragraph[start : position + 1].strip())
        start = position + 1
    sentences.append(paragraph[start:].strip())
    return [sentence for sentence in sentences if sentence]
