"""Reading LaTeX source: the small passes (control characters, comments, whitespace), the
problems list every pass reports repairs to, and the scanner that reads ``{…}``, ``[…]``
and macro arguments the way TeX does.

Pure functions, no I/O. Malformed input never raises: an argument that never closes runs
to the end of its paragraph, as TeX's "Runaway argument" does, and the repair is listed.
"""

from __future__ import annotations

import re

ARG_SCAN_LIMIT = 20_000  # characters searched for an argument's closing brace
OPTIONAL_SCAN_LIMIT = 1_000  # characters searched for an [optional] argument's "]"
MAX_PROBLEMS = 20  # problems listed per document; the rest are counted


def name_set(spaced: str) -> frozenset[str]:
    """A set of names written as one space-separated string (compact for long lists)."""
    return frozenset(spaced.split())


# --------------------------------------------------------------------------- small passes

# U+E000 too: the converter's own block mark (pipelines.prepare.converter.BLOCK_MARK).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f\ufffd\ue000]")


def sanitise(source: str) -> tuple[str, int]:
    """LF line ends, form feeds as blank lines, control characters removed; and how many."""
    text = source.replace("\r\n", "\n").replace("\r", "\n").replace("\x0c", "\n\n")
    text, removed = _CONTROL.subn("", text)
    return text, removed


# A % preceded by an even number of backslashes (zero included) starts a comment, which
# eats the newline and the next line's indentation, exactly as TeX reads it.
_COMMENT = re.compile(r"(?<!\\)((?:\\\\)*)%[^\n]*(?:\n[ \t]*)?")


def strip_comments(text: str) -> str:
    if "%" not in text:
        return text
    return _COMMENT.sub(r"\1", text)


def normalise_whitespace(text: str) -> str:
    """One blank line between paragraphs, one space for any other whitespace run."""
    paragraphs = (" ".join(part.split()) for part in _PARAGRAPH_BREAK.split(text))
    return "\n\n".join(paragraph for paragraph in paragraphs if paragraph)


_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")


class Problems:
    """Problems found in one document: the first MAX_PROBLEMS, plus a count of the rest."""

    def __init__(self) -> None:
        self._items: list[str] = []
        self._more = 0

    def add(self, problem: str) -> None:
        if len(self._items) < MAX_PROBLEMS:
            self._items.append(problem)
        else:
            self._more += 1

    def items(self) -> tuple[str, ...]:
        if self._more:
            return (*self._items, f"... and {self._more} more problems")
        return tuple(self._items)


# --------------------------------------------------------------------------- brace scanning

_BRACE_SCAN = re.compile(r"\\.|[{}]", re.S)
_BRACKET_SCAN = re.compile(r"\\.|[{}\]]", re.S)
_SPACES = re.compile(r"[ \t]*\n?[ \t]*")  # TeX skips blanks and at most one newline
_NEXT_PARAGRAPH = re.compile(r"\n[ \t]*\n")


def _group_end(text: str, open_pos: int) -> int:
    """Index of the ``}`` matching the ``{`` at ``open_pos``, or -1 if it never closes."""
    depth = 0
    limit = min(len(text), open_pos + ARG_SCAN_LIMIT)
    for match in _BRACE_SCAN.finditer(text, open_pos, limit):
        char = match.group()
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return match.start()
    return -1


def _bracket_end(text: str, open_pos: int) -> int:
    """Index of the ``]`` closing the ``[`` at ``open_pos`` (outside braces), or -1.

    Optional arguments are short, so the search stops after OPTIONAL_SCAN_LIMIT
    characters: text like "\\foo [" repeated must not cost quadratic time.
    """
    limit = min(len(text), open_pos + OPTIONAL_SCAN_LIMIT)
    first_close = text.find("]", open_pos + 1, limit)
    if first_close < 0:
        return -1
    if "{" not in text[open_pos + 1 : first_close]:
        return first_close  # the usual case: no braces, so the first "]" closes it
    depth = 0
    for match in _BRACKET_SCAN.finditer(text, open_pos + 1, limit):
        char = match.group()
        if char == "{":
            depth += 1
        elif char == "}":
            depth = max(depth - 1, 0)
        elif char == "]" and depth == 0:
            return match.start()
    return -1


def runaway_end(text: str, pos: int) -> int:
    """Where an argument that never closes ends: at the next blank line, as in TeX."""
    match = _NEXT_PARAGRAPH.search(text, pos)
    return match.start() if match else len(text)


def skip_spaces(text: str, pos: int) -> int:
    match = _SPACES.match(text, pos)
    return match.end() if match else pos


def read_group(text: str, pos: int, problems: Problems, what: str) -> tuple[str, int] | None:
    """Read a ``{…}`` argument at ``pos`` (after blanks): (content, position after it)."""
    pos = skip_spaces(text, pos)
    if pos >= len(text) or text[pos] != "{":
        return None
    end = _group_end(text, pos)
    if end < 0:
        problems.add(f"unbalanced '{{' in the argument of {what}")
        end = runaway_end(text, pos)
        return text[pos + 1 : end], end
    return text[pos + 1 : end], end + 1


def read_optional(text: str, pos: int) -> tuple[str, int] | None:
    """Read a ``[…]`` argument at ``pos`` (after blanks on the same line), if there is one."""
    probe = pos
    while probe < len(text) and text[probe] in " \t":
        probe += 1
    if probe >= len(text) or text[probe] != "[":
        return None
    end = _bracket_end(text, probe)
    if end < 0:
        return None
    return text[probe + 1 : end], end + 1


def read_argument(text: str, pos: int) -> tuple[str, int] | None:
    """A macro argument: a braced group, a control sequence or one character."""
    pos = skip_spaces(text, pos)
    if pos >= len(text):
        return None
    char = text[pos]
    if char == "{":
        end = _group_end(text, pos)
        if end < 0:
            end = runaway_end(text, pos)
            return text[pos + 1 : end], end
        return text[pos + 1 : end], end + 1
    if char == "\\":
        match = CONTROL_SEQUENCE.match(text, pos)
        end = match.end() if match else pos + 1
        return text[pos:end], end
    if char == "}":
        return None
    return char, pos + 1


def arg_span_end(text: str, pos: int) -> int:
    """End of ``[opt]{arg}`` at ``pos`` (for copying front matter out of the preamble)."""
    optional = read_optional(text, pos)
    if optional is not None:
        pos = optional[1]
    group = read_group(text, pos, Problems(), "front matter")
    return group[1] if group is not None else pos


CONTROL_SEQUENCE = re.compile(r"\\(?:[A-Za-z@]+|.)", re.S)
CRUDE_MARKUP = re.compile(r"\\[A-Za-z@]+\*?|\\.|[{}$]", re.S)
