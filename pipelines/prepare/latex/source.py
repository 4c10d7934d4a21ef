"""Reading LaTeX source: the small passes (control characters, comments, whitespace), the
problems list every pass reports repairs to, and the scanner that reads ``{…}``, ``[…]``
and macro arguments the way TeX does.

Pure functions, no I/O. Malformed input never raises: an argument that never closes runs
to the end of its paragraph, as TeX's "Runaway argument" does, and the repair is listed.
"""

from __future__ import annotations

import bisect
import re
import threading
from array import array
from collections import OrderedDict

from pipelines.mathtext.braces import BRACE_SCAN, closing_brace

ARG_SCAN_LIMIT = 20_000  # characters searched for an argument's closing brace
OPTIONAL_SCAN_LIMIT = 1_000  # characters searched for an [optional] argument's "]"
MAX_PROBLEMS = 20  # problems listed per document; the rest are counted


def name_set(spaced: str) -> frozenset[str]:
    """A set of names written as one space-separated string (compact for long lists)."""
    return frozenset(spaced.split())


# --------------------------------------------------------------------------- small passes

# U+E000 and U+E001 too: the converter's own block and ref marks
# (pipelines.prepare.latex.converter.BLOCK_MARK, REF_MARK).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f\ufffd\ue000\ue001]")


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

_BRACKET_SCAN = re.compile(r"\\.|[{}\]]", re.S)
_SPACES = re.compile(r"[ \t]*\n?[ \t]*")  # TeX skips blanks and at most one newline
_NEXT_PARAGRAPH = re.compile(r"\n[ \t]*\n")


def _group_end(text: str, open_pos: int) -> int:
    """Index of the ``}`` matching the ``{`` at ``open_pos``, or -1 if it never closes.

    A closer further than ARG_SCAN_LIMIT characters away does not count (the argument is
    then a runaway). The first search in a text reads forward as TeX does; once one in a
    text has failed, every later one is answered from that text's brace index, built in
    one pass: thousands of arguments that never close cost one pass, not 20,000
    characters each (issue 23, finding 1).
    """
    index = _indexes.get(text)
    if index is not None:
        close = index.close_of(open_pos)
        return close if 0 <= close < open_pos + ARG_SCAN_LIMIT else -1
    limit = min(len(text), open_pos + ARG_SCAN_LIMIT)
    close = closing_brace(text, open_pos, limit)
    if close >= 0:
        _count_scanned(close + 1 - open_pos)
        return close
    _count_scanned(limit - open_pos)
    _indexes.add(text)
    return -1


class BraceIndex:
    """Where each ``{`` of one text is closed, found in one pass over the text.

    Answers what :func:`_group_end`'s forward search would (without its distance limit)
    for every ``{``, an escaped ``\\{`` included (``\\def\\a\\{`` can point one at
    it): a real brace closes at its match; an escaped one where the group around it
    closes, or at the next ``}`` that closes nothing. Positions are kept in two integer
    arrays, 16 bytes a brace.
    """

    def __init__(self, text: str) -> None:
        opens: array[int] = array("q")
        closes: array[int] = array("q")
        stack: list[int] = []  # indexes into opens of the real groups open here
        waiting_on: dict[int, list[int]] = {}  # open group -> escaped braces it closes
        waiting_unmatched: list[int] = []  # escaped braces outside every group
        for match in BRACE_SCAN.finditer(text):
            token = match.group()
            if token == "{":
                stack.append(len(opens))
                opens.append(match.start())
                closes.append(-1)
            elif token == "}":
                if stack:
                    group = stack.pop()
                    closes[group] = match.start()
                    for escaped in waiting_on.pop(group, ()):
                        closes[escaped] = match.start()
                else:
                    for escaped in waiting_unmatched:
                        closes[escaped] = match.start()
                    waiting_unmatched.clear()
            elif token == "\\{":
                escaped = len(opens)
                opens.append(match.start() + 1)
                closes.append(-1)
                if stack:
                    waiting_on.setdefault(stack[-1], []).append(escaped)
                else:
                    waiting_unmatched.append(escaped)
        _count_scanned(len(text))
        self._opens = opens
        self._closes = closes

    def close_of(self, open_pos: int) -> int:
        """Where the ``{`` at ``open_pos`` closes; -1 if it never does."""
        found = bisect.bisect_left(self._opens, open_pos)
        if found < len(self._opens) and self._opens[found] == open_pos:
            return self._closes[found]
        return -1  # pragma: no cover - callers only ask at a "{"


class _IndexCache:
    """The brace indexes of the last few texts searched, by the text's identity.

    A text is known by its id, length and hash (a str caches its hash, so asking again is
    free), never kept alive by the cache. Sixteen covers the texts one document has in
    use at once: the body, the preamble and the titles being cleaned inside titles.
    """

    SIZE = 16

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple[int, int, int], BraceIndex] = OrderedDict()
        self._lock = threading.Lock()  # the cleaner is a library: callers may use threads

    @staticmethod
    def _key(text: str) -> tuple[int, int, int]:
        return id(text), len(text), hash(text)

    def get(self, text: str) -> BraceIndex | None:
        if not self._entries:
            return None
        key = self._key(text)
        with self._lock:
            index = self._entries.get(key)
            if index is not None:
                self._entries.move_to_end(key)
        return index

    def add(self, text: str) -> None:
        index = BraceIndex(text)
        with self._lock:
            self._entries[self._key(text)] = index
            while len(self._entries) > self.SIZE:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


_indexes = _IndexCache()
_scanned = [0]  # characters read looking for closing braces (a list: no global statement)


def _count_scanned(chars: int) -> None:
    _scanned[0] += chars


def characters_scanned() -> int:
    """Characters read so far, in this process, looking for arguments' closing braces.

    For the tests and the benchmark that check this work stays linear in the source.
    """
    return _scanned[0]


def forget_brace_indexes() -> None:
    """Drop the cached brace indexes (a measurement that must start cold)."""
    _indexes.clear()


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
    end = match.start() if match else len(text)
    _count_scanned(end - pos)
    return end


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
