"""The chunker: a section's cleaned text → passages for embedding.

:func:`chunk_text` cuts a section's text into passages of at most ``chunk_chars``
characters with about ``overlap_chars`` of overlap, ending at a paragraph end when one
lies in the second half of the window, else at a sentence end there, else at a word
boundary, never inside ``$…$``. The one documented exception to the size limit: a
single math block longer than ``chunk_chars`` becomes a passage of its own, kept whole
rather than cut into broken math. (A run of text with no break at all, which is not
math, is cut hard at the limit.) Passages under ``min_chunk_chars`` are dropped; a short
last piece is started earlier instead, so only a section shorter than that is lost.

It relies on the cleaner's invariant: ``$`` only ever delimits math.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Chunk:
    """A passage: the title of the section it comes from, and its text."""

    section: str
    text: str


# A math span, or an escaped character (so that "\$" is never read as a delimiter).
_MATH_OR_ESCAPE = re.compile(r"\\.|\$(?:[^$\\]|\\.)*\$", re.S)
_WHITESPACE = re.compile(r"\s+")
_SENTENCE_END = frozenset(".!?")
_CLOSERS = frozenset("\"')]")


def math_spans(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` of every ``$…$`` in cleaned text."""
    return [
        (match.start(), match.end())
        for match in _MATH_OR_ESCAPE.finditer(text)
        if text[match.start()] == "$"
    ]


@dataclass
class _Breaks:
    """Where a passage may end (start of a blank run) and the next may begin (its end).

    Three strengths: paragraph, sentence, word. Every list is sorted; a sentence break is
    also a word break, a paragraph break also a sentence and a word break.
    """

    paragraph_ends: list[int] = field(default_factory=list)
    sentence_ends: list[int] = field(default_factory=list)
    sentence_starts: list[int] = field(default_factory=list)
    word_ends: list[int] = field(default_factory=list)
    word_starts: list[int] = field(default_factory=list)


def _find_breaks(text: str, spans: list[tuple[int, int]]) -> _Breaks:
    breaks = _Breaks()
    span_index = 0
    n_spans = len(spans)
    length = len(text)
    for match in _WHITESPACE.finditer(text):
        start, end = match.span()
        while span_index < n_spans and spans[span_index][1] <= start:
            span_index += 1
        if span_index < n_spans and spans[span_index][0] < start:
            continue  # inside math
        if start == 0 or end == length:
            continue
        breaks.word_ends.append(start)
        breaks.word_starts.append(end)
        before = text[start - 1]
        if before in _CLOSERS and start >= 2:
            before = text[start - 2]
        if "\n" in match.group():
            breaks.paragraph_ends.append(start)
            breaks.sentence_ends.append(start)
            breaks.sentence_starts.append(end)
        elif before in _SENTENCE_END and not text[end].islower():
            breaks.sentence_ends.append(start)
            breaks.sentence_starts.append(end)
    return breaks


def _last_in(positions: list[int], low: int, high: int) -> int | None:
    """The largest position p with low < p <= high, if any."""
    index = bisect_right(positions, high) - 1
    if index >= 0 and positions[index] > low:
        return positions[index]
    return None


def _first_in(positions: list[int], low: int, high: int) -> int | None:
    """The smallest position p with low <= p < high, if any."""
    index = bisect_left(positions, low)
    if index < len(positions) and positions[index] < high:
        return positions[index]
    return None


def chunk_spans(
    text: str, chunk_chars: int, overlap_chars: int, min_chunk_chars: int = 0
) -> list[tuple[int, int]]:
    """Passage boundaries ``(start, end)`` in ``text`` (see :func:`chunk_text`).

    Every span starts and ends outside ``$…$``; consecutive spans overlap by at most
    ``overlap_chars`` (when a word boundary lies in that range) and together cover the
    text. A final piece shorter than ``min_chunk_chars`` is started earlier instead, at
    the latest word start that makes it long enough, even where that overlaps the
    previous passage by more than ``overlap_chars``: repeated text costs less than lost
    text. So short passages only happen when the whole text is short.
    """
    if chunk_chars < 1 or not 0 <= overlap_chars < chunk_chars or min_chunk_chars > chunk_chars:
        raise ValueError(
            f"chunking needs chunk_chars >= 1, 0 <= overlap_chars < chunk_chars and "
            f"min_chunk_chars <= chunk_chars (got {chunk_chars}, {overlap_chars}, "
            f"{min_chunk_chars}); fix the prepare section of params.yaml"
        )
    first = len(text) - len(text.lstrip())
    last = len(text.rstrip())
    if last <= first:
        return []
    if last - first <= chunk_chars:
        return [(first, last)]
    spans = math_spans(text)
    breaks = _find_breaks(text, spans)
    span_starts = [start for start, _end in spans]
    chunks: list[tuple[int, int]] = []
    start = first
    previous_end = first
    while True:
        if last - start <= chunk_chars:
            if last - start < min_chunk_chars and chunks:
                start = _earlier_tail_start(
                    text, breaks, spans, chunks[-1][0], start, last, chunk_chars, min_chunk_chars
                )
            chunks.append((start, last))
            return chunks
        limit = start + chunk_chars
        floor = max(start, previous_end)
        half = max(floor, start + chunk_chars // 2)
        end = (
            _last_in(breaks.paragraph_ends, half, limit)
            or _last_in(breaks.sentence_ends, half, limit)
            or _last_in(breaks.word_ends, floor, limit)
        )
        if end is None:
            start, end = _forced_span(text, spans, span_starts, start, floor, limit)
        chunks.append((start, end))
        if end >= last:
            return chunks
        previous_end = end
        target = end - overlap_chars
        next_start = _first_in(
            breaks.sentence_starts, max(target, start + 1), end - overlap_chars // 2
        )
        if next_start is None:
            next_start = _first_in(breaks.word_starts, max(target, start + 1), end)
        if next_start is None:  # no word boundary in reach: no overlap
            next_start = end
            while next_start < last and text[next_start].isspace():
                next_start += 1
        start = next_start


def _earlier_tail_start(
    text: str,
    breaks: _Breaks,
    spans: list[tuple[int, int]],
    previous_start: int,
    start: int,
    last: int,
    chunk_chars: int,
    min_chunk_chars: int,
) -> int:
    """Start a too-short final passage earlier, so it is kept (and its text not lost).

    At a word start if one gives a length between min_chunk_chars and chunk_chars,
    else exactly min_chunk_chars from the end unless that is inside math.
    """
    low = max(previous_start, last - chunk_chars - 1)
    earlier = _last_in(breaks.word_starts, low, last - min_chunk_chars)
    if earlier is not None:
        return earlier
    position = last - min_chunk_chars
    if position > previous_start and not any(a < position < b for a, b in spans):
        return position
    return start


def _forced_span(
    text: str,
    spans: list[tuple[int, int]],
    span_starts: list[int],
    start: int,
    floor: int,
    limit: int,
) -> tuple[int, int]:
    """No break in the window: cut at ``limit``, or around the math block covering it.

    Returns the passage's (start, end). A math block longer than the window makes a
    passage of its own (the documented oversized case); when the text before it is
    already in the previous passage, that passage starts at the math itself.
    """
    index = bisect_right(span_starts, limit - 1) - 1
    if index < 0:
        return start, limit
    math_start, math_end = spans[index]
    if not math_start < limit < math_end:
        return start, limit
    cut = math_start
    while cut > start and text[cut - 1].isspace():
        cut -= 1
    if cut > floor:
        return start, cut  # the text glued to the math ends here; the math comes next
    # Whatever precedes the math here is blank or already in the previous passage.
    return math_start, math_end


def chunk_text(text: str, chunk_chars: int, overlap_chars: int, min_chunk_chars: int) -> list[str]:
    """Cut cleaned text into passages; those under ``min_chunk_chars`` are dropped.

    A passage is at most ``chunk_chars`` long (but see the module docstring for the two
    exceptions), ends at a paragraph end if one falls in the second half of the window,
    else at a sentence end there, else at the last word boundary, and never splits
    ``$…$``. The next passage starts ``overlap_chars`` or a little less before the end
    of the previous one, at a sentence start if one is near, else at a word start.
    """
    return [
        text[start:end]
        for start, end in chunk_spans(text, chunk_chars, overlap_chars, min_chunk_chars)
        if end - start >= min_chunk_chars
    ]


def block_spans(
    text: str,
    starts: tuple[int, ...],
    chunk_chars: int,
    overlap_chars: int,
    min_chunk_chars: int = 0,
    pack_chars: int | None = None,
) -> list[tuple[int, int]]:
    """Passage boundaries in ``text`` that begin where its blocks begin.

    ``starts`` are where theorem-like blocks (a statement with its proof, a remark) begin.
    Consecutive blocks are packed into one passage while it stays within ``pack_chars``
    (``chunk_chars`` when None); a block longer than ``chunk_chars`` is cut by
    :func:`chunk_spans`, and a block shorter than ``min_chunk_chars`` joins its neighbour.
    So a statement opens its passage (what an embedding with a token limit reads first)
    instead of sitting in the middle of one: a packed block starts after the blocks before
    it, past what a 128-token model reads once they hold a few hundred characters.
    Without ``starts`` this is :func:`chunk_spans`.
    """
    pack_limit = chunk_chars if pack_chars is None else min(pack_chars, chunk_chars)
    bounds = sorted({0, len(text), *(start for start in starts if 0 < start < len(text))})
    packed: list[tuple[int, int]] = []
    for start, end in zip(bounds, bounds[1:], strict=False):
        fits = bool(packed) and end - packed[-1][0] <= pack_limit
        # A block (or a run of text before the first block) too short to be a passage joins
        # its neighbour rather than being dropped.
        tiny = bool(packed) and min(end - start, packed[-1][1] - packed[-1][0]) < min_chunk_chars
        if fits or tiny:
            packed[-1] = (packed[-1][0], end)
        else:
            packed.append((start, end))
    spans: list[tuple[int, int]] = []
    for start, end in packed:
        spans += [
            (start + low, start + high)
            for low, high in chunk_spans(
                text[start:end], chunk_chars, overlap_chars, min_chunk_chars
            )
        ]
    return spans
