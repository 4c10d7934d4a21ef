"""Where a statement sits among its paper's passages (prepare cuts both from one text), and
what stands in a passage's text for a citation and a cross-reference."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator

#: What a passage holds where its LaTeX cited a work (``\\cite``) or referred to a label
#: (``\\ref`` and its kin): keeps the sentence readable ("proved in [cite]").
CITE_PLACEHOLDER = "[cite]"
REF_PLACEHOLDER = "[ref]"

# The start of a statement searched for first: long enough to be specific...
PROBE_CHARS = 50
# ... and a statement shorter than this is not looked for at all.
MIN_PROBE_CHARS = 20


def common_prefix_length(first: str, second: str) -> int:
    """How many characters ``first`` and ``second`` agree on from the start: halving by
    slice comparisons (C speed), not a character loop as ``os.path.commonprefix`` runs."""
    agree, differ = 0, min(len(first), len(second)) + 1  # first[:agree] == second[:agree]
    while differ - agree > 1:
        middle = (agree + differ) // 2
        if first[:middle] == second[:middle]:
            agree = middle
        else:
            differ = middle
    return agree


def _flat(text: str) -> str:
    # Passages keep paragraph breaks, statements are one line: compare both flattened.
    return " ".join(text.split())


#: What joins a paper's flattened passages into one text searched at once: a character
#: flattened text never holds (a probe cannot run across two passages).
JOIN = "\x00"


class PassageFinder:
    """Finds, among one paper's passages, the one holding a statement (or a proof).

    The paper's passages are searched as one text (joined by :data:`JOIN`), each match
    mapped back to its passage: one scan per probe rather than one per passage (a Stacks
    chapter has hundreds)."""

    def __init__(self, chunks: Iterable[tuple[str, str]]) -> None:
        """``chunks``: ``(chunk_id, text)`` in paper order."""
        self._chunks = [(chunk_id, _flat(text)) for chunk_id, text in chunks]
        self._text = JOIN.join(text for _chunk_id, text in self._chunks)
        self._starts: list[int] = []
        offset = 0
        for _chunk_id, text in self._chunks:
            self._starts.append(offset)
            offset += len(text) + len(JOIN)

    def find(self, text: str) -> str:
        """The id of the passage holding the most of the start of ``text``, or "".

        Many statements open alike ("Let $S$ be a scheme. Let $X$ be ..."), so the first
        passage holding the opening words is often not the statement's: every place the
        opening occurs is extended as far as it agrees with ``text``, and the longest
        agreement wins (the earliest passage on a tie).
        """
        found = self._find_start(_flat(text))
        return self._chunks[found][0] if found is not None else ""

    def span(self, text: str) -> tuple[str, ...]:
        """The ids of the passages ``text`` runs over: from the one holding its start to the
        first after it holding its end (only the first when its end is not found)."""
        flat = _flat(text)
        first = self._find_start(flat)
        if first is None:
            return ()
        at = self._text.find(flat[-PROBE_CHARS:], self._starts[first]) if JOIN not in flat else -1
        if at < 0:
            return (self._chunks[first][0],)
        last = self._passage_at(at)
        return tuple(chunk_id for chunk_id, _text in self._chunks[first : last + 1])

    def holding(self, text: str) -> tuple[str, ...]:
        """The passages ``text`` runs over (:meth:`span`) and every other one holding all of
        it: passages overlap, so a sentence near a cut sits whole in two of them."""
        flat = _flat(text)
        spanned = self.span(text)
        if not spanned:
            return ()
        whole = {self._chunks[index][0] for index, _start in self._matches(flat)}
        return tuple(
            chunk_id for chunk_id, _text in self._chunks if chunk_id in whole or chunk_id in spanned
        )

    def _passage_at(self, offset: int) -> int:
        return bisect.bisect_right(self._starts, offset) - 1

    def _matches(self, needle: str) -> Iterator[tuple[int, int]]:
        """Each place ``needle`` occurs, as (passage index, offset in the joined text), in
        the passages' order and then by position."""
        if not needle or JOIN in needle:
            return
        at = self._text.find(needle)
        while at >= 0:
            yield self._passage_at(at), at
            at = self._text.find(needle, at + 1)

    def _find_start(self, flat: str) -> int | None:
        probe = flat[:PROBE_CHARS]
        if len(probe) < MIN_PROBE_CHARS:
            return None
        best: int | None = None
        best_length = 0
        for position, at in self._matches(probe):
            end = self._starts[position] + len(self._chunks[position][1])
            length = common_prefix_length(self._text[at : min(at + len(flat), end)], flat)
            if length > best_length:
                best, best_length = position, length
        return best
