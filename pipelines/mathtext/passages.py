"""Where a statement sits among its paper's passages (prepare cuts both from one text), and
what stands in a passage's text for a citation and a cross-reference."""

from __future__ import annotations

import os
from collections.abc import Iterable

#: What a passage holds where its LaTeX cited a work (``\\cite``) or referred to a label
#: (``\\ref`` and its kin): keeps the sentence readable ("proved in [cite]").
CITE_PLACEHOLDER = "[cite]"
REF_PLACEHOLDER = "[ref]"

# The start of a statement searched for first: long enough to be specific...
PROBE_CHARS = 50
# ... and a statement shorter than this is not looked for at all.
MIN_PROBE_CHARS = 20


def _flat(text: str) -> str:
    # Passages keep paragraph breaks, statements are one line: compare both flattened.
    return " ".join(text.split())


class PassageFinder:
    """Finds, among one paper's passages, the one holding a statement (or a proof)."""

    def __init__(self, chunks: Iterable[tuple[str, str]]) -> None:
        """``chunks``: ``(chunk_id, text)`` in paper order."""
        self._chunks = [(chunk_id, _flat(text)) for chunk_id, text in chunks]

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
        tail = flat[-PROBE_CHARS:]
        for index in range(first, len(self._chunks)):
            if tail in self._chunks[index][1]:
                return tuple(chunk_id for chunk_id, _text in self._chunks[first : index + 1])
        return (self._chunks[first][0],)

    def holding(self, text: str) -> tuple[str, ...]:
        """The passages ``text`` runs over (:meth:`span`) and every other one holding all of
        it: passages overlap, so a sentence near a cut sits whole in two of them."""
        flat = _flat(text)
        spanned = self.span(text)
        if not spanned:
            return ()
        whole = {chunk_id for chunk_id, chunk_text in self._chunks if flat in chunk_text}
        return tuple(
            chunk_id for chunk_id, _text in self._chunks if chunk_id in whole or chunk_id in spanned
        )

    def _find_start(self, flat: str) -> int | None:
        probe = flat[:PROBE_CHARS]
        if len(probe) < MIN_PROBE_CHARS:
            return None
        best: int | None = None
        best_length = 0
        for position, (_chunk_id, chunk_text) in enumerate(self._chunks):
            start = chunk_text.find(probe)
            while start >= 0:
                window = chunk_text[start : start + len(flat)]
                length = len(os.path.commonprefix([window, flat]))
                if length > best_length:
                    best, best_length = position, length
                start = chunk_text.find(probe, start + 1)
        return best
