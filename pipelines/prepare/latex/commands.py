"""The converter's handlers of math (``$…$``, ``\\(…\\)``, ``\\[…\\]``, ``$$…$$``, math
environments, ``\\ensuremath``) and of single commands: sections and run-in headings, ``\\ref``
and ``\\label``, emphasis (a definition's terms), items, footnotes, front matter, accents,
``\\verb``, ``\\url`` and control symbols.

:class:`CommandHandlers` is the base class of
:class:`~pipelines.prepare.latex.converter.Converter`, which holds the state they write
(declared below), its scanner (``_find``) and its fragment cleaner (``_fragment``).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass, field

from pipelines.prepare.latex.math_text import MATH_ROW_ENVIRONMENTS, clean_math
from pipelines.prepare.latex.source import (
    CRUDE_MARKUP,
    Problems,
    read_argument,
    read_group,
    read_optional,
    runaway_end,
    skip_spaces,
)
from pipelines.prepare.latex.vocabulary import (
    ACCENTS,
    LAYOUT_ARGUMENTS,
    REF_PLACEHOLDER,
    SYMBOLS,
    TEXT_SYMBOLS,
)

#: Marks where a ``\\ref`` was written, for :meth:`Converter.citations`; like BLOCK_MARK a
#: private-use character sanitise removes from every source, and removed from every text
#: the converter returns.
REF_MARK = "\ue001"

_INLINE_MATH_BODY = re.compile(r"(?:[^$\\\n]++|\\.|\n(?![ \t]*\n))*+", re.S)


@dataclass
class OpenEnvironment:
    name: str
    statement: int = -1  # index into Converter._statements, -1 when not a statement
    text_start: int = 0  # index into the output where the statement's text starts
    label: str = ""
    closer: str = ""  # emitted when the environment closes
    proof_of: int = -1  # for a proof: the index of the statement it proves


@dataclass
class PendingStatement:
    kind: str
    name: str
    label: str = ""
    text: str | None = None
    terms: list[str] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)
    proof: str = ""
    proof_open: bool = False
    slogan: str = ""


@dataclass(frozen=True)
class Emphasis:
    """The closer of an emphasised group: where its text starts in the output."""

    start: int


#: Emphasis commands with an argument (``\emph{term}``) and font switches (``{\it term}``).
EMPHASIS_COMMANDS = frozenset({"emph", "textit", "textbf", "textsl"})
EMPHASIS_SWITCHES = frozenset({"it", "em", "bf", "sl", "itshape", "bfseries", "slshape"})
MAX_TERM_CHARS = 120  # an emphasised run longer than this is a stressed sentence, not a term


class CommandHandlers:
    """Handlers of math and of single commands: ``(text, name, pos) -> the position after it``."""

    _out: list[str]
    _problems: Problems
    _groups: list[str | Emphasis]
    _environments: list[OpenEnvironment]
    _statements: list[PendingStatement]
    _section_marks: list[tuple[int, str]]
    _ref_labels: list[tuple[str, ...]]

    def _fragment(self, text: str) -> str:
        raise NotImplementedError  # the converter's: a nested converter for a title

    def _find(self, text: str, needle: str | re.Pattern[str], pos: int) -> tuple[int, int] | None:
        raise NotImplementedError  # the converter's: the next occurrence, misses remembered

    # -- math

    def _emit_math(self, pieces: list[str], display: bool) -> None:
        if not pieces:
            return
        joined = " ".join(pieces)
        self._out.append(f" {joined} " if display else joined)

    def _dollar_math(self, text: str, opener: str, pos: int) -> int:
        if opener == "$$":
            found = self._find(text, "$$", pos)
            close = -1 if found is None else found[0]
            if close < 0:
                self._problems.add("unterminated $$ math")
                close = runaway_end(text, pos)
                self._emit_math(clean_math(text[pos:close]), display=True)
                return close
            self._emit_math(clean_math(text[pos:close]), display=True)
            return close + 2
        body = _INLINE_MATH_BODY.match(text, pos)
        close = body.end() if body else pos
        if close < len(text) and text[close] == "$":
            self._emit_math(clean_math(text[pos:close]), display=False)
            return close + 1
        self._problems.add("unterminated $ math")
        self._emit_math(clean_math(text[pos:close]), display=False)
        return close

    def _delimited_math(self, text: str, pos: int, closer: str) -> int:
        found = self._find(text, closer, pos)
        close = -1 if found is None else found[0]
        if close < 0:
            self._problems.add(f"math opened without {closer}")
            close = runaway_end(text, pos)
            self._emit_math(clean_math(text[pos:close]), display=True)
            return close
        self._emit_math(clean_math(text[pos:close]), display=closer == "\\]")
        return close + len(closer)

    def _environment_math(self, text: str, name: str, pos: int) -> int:
        base = name.rstrip("*")
        if base in ("alignat", "xalignat", "xxalignat"):
            group = read_group(text, pos, self._problems, f"\\begin{{{name}}}")
            if group is not None:
                pos = group[1]
        close = self._find(text, environment_end(name), pos)
        if close is None:
            self._problems.add(f"\\begin{{{name}}} without \\end{{{name}}}")
            end = runaway_end(text, pos)
            self._emit_math(clean_math(text[pos:end], base in MATH_ROW_ENVIRONMENTS), True)
            return end
        pieces = clean_math(text[pos : close[0]], base in MATH_ROW_ENVIRONMENTS)
        self._emit_math(pieces, display=True)
        return close[1]

    def _ensuremath(self, text: str, name: str, pos: int) -> int:
        group = read_group(text, pos, self._problems, "\\ensuremath")
        if group is None:
            return pos
        self._emit_math(clean_math(group[0]), display=False)
        return group[1]

    # -- single commands

    def _drop_arguments(self, text: str, pos: int, count: int) -> int:
        """Skip a command's [optional] arguments and ``count`` mandatory ones."""
        while (optional := read_optional(text, pos)) is not None:
            pos = optional[1]
        for _ in range(count):
            group = read_group(text, pos, self._problems, "a command")
            if group is None:
                break
            pos = group[1]
            while (optional := read_optional(text, pos)) is not None:
                pos = optional[1]
        return pos

    def _title_argument(self, text: str, pos: int, what: str) -> tuple[str, int]:
        optional = read_optional(text, pos)
        if optional is not None:
            pos = optional[1]
        group = read_group(text, pos, self._problems, what)
        if group is None:
            return "", pos
        return self._fragment(group[0]), group[1]

    def _section(self, text: str, name: str, pos: int) -> int:
        title, pos = self._title_argument(text, pos, f"\\{name}")
        self._out.append("\n\n")
        self._section_marks.append((len(self._out), title))
        return pos

    def _heading(self, text: str, name: str, pos: int) -> int:
        title, pos = self._title_argument(text, pos, f"\\{name}")
        if title:
            ending = "" if title[-1] in ".?!:" else "."
            self._out.append(f"\n\n{title}{ending} ")
        else:
            self._out.append("\n\n")
        return pos

    def _ref(self, text: str, name: str, pos: int) -> int:
        self._out.append(REF_MARK + REF_PLACEHOLDER)
        while (optional := read_optional(text, pos)) is not None:
            pos = optional[1]
        group = read_group(text, pos, self._problems, f"\\{name}")
        if group is None:
            self._ref_labels.append(())
            return pos
        # \cref{a,b} cites several labels at once.
        labels = tuple(label.strip() for label in group[0].split(",") if label.strip())
        self._ref_labels.append(labels)
        citing = self._innermost_statement()
        if citing is not None:
            citing.refs.extend(labels)
        return group[1]

    def _innermost_statement(self) -> PendingStatement | None:
        """The statement whose text (or proof) is being written, if any."""
        for environment in reversed(self._environments):
            if environment.statement >= 0:
                return self._statements[environment.statement]
            if environment.proof_of >= 0:
                return self._statements[environment.proof_of]
        return None

    def _emphasis(self, text: str, name: str, pos: int) -> int:
        """``\\emph{…}``: its text is kept; in a definition it is also a defined term."""
        start = skip_spaces(text, pos)
        if start < len(text) and text[start] == "{":
            self._groups.append(Emphasis(len(self._out)))
            return start + 1
        return pos

    def _emphasis_switch(self, text: str, name: str, pos: int) -> int:
        """``{\\it …}``: the group the switch opens is emphasised."""
        if self._groups and self._groups[-1] == "":
            self._groups[-1] = Emphasis(len(self._out))
        return pos

    def _emphasised(self, start: int) -> None:
        for environment in reversed(self._environments):
            if environment.statement >= 0:
                pending = self._statements[environment.statement]
                if pending.kind == "definition":
                    term = " ".join("".join(self._out[start:]).replace(REF_MARK, "").split())
                    if term and len(term) <= MAX_TERM_CHARS:
                        pending.terms.append(term)
                return

    def _label(self, text: str, name: str, pos: int) -> int:
        group = read_group(text, pos, self._problems, "\\label")
        if group is None:
            return pos
        for environment in reversed(self._environments):
            if environment.statement >= 0:
                if not environment.label:
                    environment.label = group[0].strip()
                break
        return group[1]

    def _layout_arguments(self, text: str, name: str, pos: int) -> int:
        """Drop the layout arguments; the text argument that follows is kept as a group."""
        return self._drop_arguments(text, pos, LAYOUT_ARGUMENTS[name])

    def _item(self, text: str, name: str, pos: int) -> int:
        optional = read_optional(text, pos)
        self._out.append("\n")
        if optional is not None:
            label = self._fragment(optional[0])
            if label:
                self._out.append(f"{label} ")
            pos = optional[1]
        return pos

    def _footnote(self, text: str, name: str, pos: int) -> int:
        optional = read_optional(text, pos)
        if optional is not None:
            pos = optional[1]
        probe = skip_spaces(text, pos)
        if probe < len(text) and text[probe] == "{":
            self._out.append(" (")
            self._groups.append(")")
            return probe + 1
        return pos

    def _front_matter(self, text: str, name: str, pos: int) -> int:
        optional = read_optional(text, pos)
        if optional is not None:
            pos = optional[1]
        group = read_group(text, pos, self._problems, f"\\{name}")
        if group is None:
            return pos
        value = self._fragment(group[0])
        if value:
            heading = "Keywords" if name == "keywords" else "Mathematics Subject Classification"
            self._out.append(f"\n\n{heading}: {value}\n\n")
        return group[1]

    def _accent(self, text: str, name: str, pos: int) -> int:
        argument = read_argument(text, pos) if name.isalpha() else None
        if argument is None:
            if pos < len(text) and text[pos] == "{":
                argument = read_argument(text, pos)
            elif pos < len(text) and not text[pos].isspace() and text[pos] != "\\":
                argument = (text[pos], pos + 1)
        if argument is None:
            return pos
        letter, end = argument
        if letter.startswith("\\"):  # \'\i: a symbol (or nothing)
            letter = SYMBOLS.get(letter[1:], "")
        # Only plain letters take an accent: never emit a bare backslash, brace or dollar.
        letter = CRUDE_MARKUP.sub("", letter)
        if letter:
            self._out.append(unicodedata.normalize("NFC", letter[0] + ACCENTS[name]) + letter[1:])
        return end

    def _verb(self, text: str, name: str, pos: int) -> int:
        if pos >= len(text):
            return pos
        delimiter = text[pos]
        close = text.find(delimiter, pos + 1)
        if close < 0 or "\n" in text[pos + 1 : close]:
            self._problems.add("unterminated \\verb")
            return pos + 1
        self._out.append(text[pos + 1 : close].replace("\\", "").replace("$", ""))
        return close + 1

    def _url(self, text: str, name: str, pos: int) -> int:
        group = read_group(text, pos, self._problems, "\\url")
        if group is None:
            return pos
        self._out.append(group[0].replace("\\", "").replace("$", ""))
        return group[1]

    def _symbol(self, text: str, token: str, pos: int) -> int:
        char = token[1:]
        if char == "(":
            return self._delimited_math(text, pos, "\\)")
        if char == "[":
            return self._delimited_math(text, pos, "\\]")
        if char in ACCENTS:
            return self._accent(text, char, pos)
        if char == "\\":
            # A line break, maybe starred and with a [length]: a space.
            if pos < len(text) and text[pos] == "*":
                pos += 1
            optional = read_optional(text, pos)
            if optional is not None:
                pos = optional[1]
        replacement = TEXT_SYMBOLS.get(char, "")
        if replacement:
            self._out.append(replacement)
        return pos


@functools.lru_cache(maxsize=512)
def environment_end(name: str) -> re.Pattern[str]:
    return re.compile(r"\\end\s*\{" + re.escape(name) + r"\}")
