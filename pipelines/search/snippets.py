"""A passage's text as a hit shows it: on one line, cut where a reader can stop, with what
KaTeX cannot draw set aside.

A cut never falls inside a formula (``$…$``, ``$$…$$``, ``\\(…\\)``, ``\\[…\\]``) or an
environment (``\\begin{matrix}…\\end{matrix}``): the page typesets each formula on its own,
and half a formula is either red source or, worse, a different formula. So a snippet is
cut at the last space before its limit that lies outside every formula, and ends in "…".

A commutative diagram (``\\xymatrix{…}``, ``tikzcd``) is a formula KaTeX cannot draw: it
shows as pages of red source. Such a formula is replaced by :data:`DIAGRAM`, and a formula
longer than the whole snippet (it could only be cut, or fill the snippet alone) by
:data:`FORMULA`; each marker's source is kept, in order, in :attr:`Snippet.blocks`, so the
page can show "diagram" and its source on demand. The markers read like the ``[cite]`` and
``[ref]`` that prepare leaves for citations and references.

A ``$`` that opens no formula (no closing one follows: a passage cut by prepare, a typo) is
a dollar sign, not a formula: what follows it is cut like any text.

Pure functions only; no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from pipelines.mathtext.braces import closing_brace

DIAGRAM = "[diagram]"
FORMULA = "[formula]"
ELLIPSIS = "…"

#: A formula holding one of these is a diagram KaTeX cannot draw.
DIAGRAM_COMMAND = re.compile(
    r"\\(?:xymatrix|xy(?![A-Za-z])|begin\{(?:tikzcd|tikzpicture|xy|diagram)\}|diagram(?![A-Za-z]))"
)
# Where a formula or an environment may open.
_OPENER = re.compile(r"\\\$|\$\$?|\\\(|\\\[|\\begin\{([^{}]+)\}|\\xymatrix\s*\{")
_CLOSERS = {"$": "$", "$$": "$$", "\\(": "\\)", "\\[": "\\]"}

BlockKind = Literal["diagram", "formula"]


@dataclass(frozen=True)
class Block:
    """A formula set aside: a diagram, or one too long for the snippet; ``source`` as written."""

    kind: BlockKind
    source: str

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "source": self.source}


@dataclass(frozen=True)
class Snippet:
    """The text to show, with a :data:`DIAGRAM` or :data:`FORMULA` marker where each block
    was, and the blocks in the order of their markers."""

    text: str
    blocks: tuple[Block, ...] = ()


def formula_spans(text: str) -> list[tuple[int, int]]:
    """Where ``text``'s formulas and environments run, ``(start, end)``, in order and apart:
    a cut must fall outside all of them. An opener without its closer is text."""
    spans: list[tuple[int, int]] = []
    position = 0
    while (match := _OPENER.search(text, position)) is not None:
        opener, start = match.group(), match.start()
        if opener == "\\$":
            if not _escaped_backslash(text, start):
                position = match.end()  # \$: a dollar sign
                continue
            opener, start = "$", start + 1  # \\$: a line break, then a formula
        end: int | None
        if match.group(1) is not None:
            end = _environment_end(text, match.group(1), match.end())
        elif opener.startswith("\\xymatrix"):
            close = closing_brace(text, match.end() - 1)
            end = close + 1 if close >= 0 else None
        else:
            end = _closer_end(text, _CLOSERS[opener], start + len(opener))
        if end is None:
            position = match.end()  # unbalanced: the opener is plain text
            continue
        spans.append((start, end))
        position = end
    return spans


def snippet(text: str, max_chars: int | None) -> Snippet:
    """``text`` on one line, its diagrams (and formulas longer than ``max_chars``) set aside
    as blocks, cut to at most ``max_chars`` characters outside every formula, "…" ending a
    cut one (``None``: whole)."""
    flat = " ".join(text.split())
    pieces: list[tuple[str, bool]] = []  # (text, may be cut inside)
    blocks: list[Block] = []
    position = 0
    for start, end in formula_spans(flat):
        pieces.append((flat[position:start], True))
        formula = flat[start:end]
        if DIAGRAM_COMMAND.search(formula):
            blocks.append(Block("diagram", formula))
            pieces.append((DIAGRAM, False))
        elif max_chars is not None and len(formula) >= max_chars:
            blocks.append(Block("formula", formula))
            pieces.append((FORMULA, False))
        else:
            pieces.append((formula, False))
        position = end
    pieces.append((flat[position:], True))
    whole = "".join(piece for piece, _ in pieces)
    if max_chars is None or len(whole) <= max_chars:
        return Snippet(whole, tuple(blocks))
    kept, shown_blocks = _cut(pieces, max_chars - len(ELLIPSIS))
    return Snippet(kept + ELLIPSIS, tuple(blocks[:shown_blocks]))


def _cut(pieces: list[tuple[str, bool]], room: int) -> tuple[str, int]:
    """The longest start of ``pieces`` within ``room`` characters that ends at a space of
    a cuttable piece or after a whole formula; and how many block markers it keeps."""
    kept = ""
    markers = 0
    for piece, cuttable in pieces:
        if len(kept) + len(piece) <= room:
            kept += piece
            markers += int(piece in (DIAGRAM, FORMULA) and not cuttable)
            continue
        if cuttable:
            space = piece.rfind(" ", 0, room - len(kept) + 1)
            if space >= 0:
                kept += piece[:space]
        break
    return kept.rstrip(" ,;:"), markers


def _closer_end(text: str, closer: str, position: int) -> int | None:
    while True:
        found = text.find(closer, position)
        if found < 0:
            return None
        if (
            closer == "$"
            and found > 0
            and text[found - 1] == "\\"
            and not _escaped_backslash(text, found - 1)
        ):
            position = found + 1  # \$ inside a formula: a dollar sign
            continue
        return found + len(closer)


def _escaped_backslash(text: str, index: int) -> bool:
    # text[index] is a backslash: is it itself escaped (\\$ ends a formula)?
    count = 0
    while index - count - 1 >= 0 and text[index - count - 1] == "\\":
        count += 1
    return count % 2 == 1


def _environment_end(text: str, name: str, position: int) -> int | None:
    begin, end = f"\\begin{{{name}}}", f"\\end{{{name}}}"
    depth = 1
    while depth:
        next_end = text.find(end, position)
        if next_end < 0:
            return None
        next_begin = text.find(begin, position, next_end)
        if next_begin >= 0:
            depth += 1
            position = next_begin + len(begin)
        else:
            depth -= 1
            position = next_end + len(end)
    return position
