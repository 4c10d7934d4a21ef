"""The converter: one linear pass over a document body in text mode, from LaTeX to text.

Over 500 lines: one class, whose handlers share the output and the open environments.

* math in every form (``$…$``, ``\\(…\\)``, ``\\[…\\]``, ``$$…$$``, ``\\ensuremath``
  and the ``equation`` / ``align`` / ``gather`` / ``multline`` / ``flalign`` / ``alignat``
  / ``eqnarray`` / ``displaymath`` environments, starred or not) becomes ``$…$``
  (:mod:`pipelines.prepare.math_text`);
* formatting and unknown macros are dropped and their arguments' text kept
  (``\\emph{x}`` → ``x``); an unknown macro's ``[optional]`` argument is dropped;
* ``\\cite…{…}`` → ``[cite]`` (keeps the sentence readable: "proved in [cite]"),
  ``\\ref`` / ``\\eqref`` / ``\\cref`` … → ``[ref]``; ``\\label`` and layout
  commands (``\\vspace``, ``\\usepackage``, ``\\title``, ``\\author`` …) vanish
  with their arguments (title and authors come from the metadata);
* ``\\section`` / ``\\chapter`` start a new :class:`Section` (its title is the
  ``section`` column of the passages); ``\\subsection`` … ``\\paragraph`` become a
  run-in heading "Title. " at the start of a paragraph;
* theorem-like environments (``theorem``, ``lemma``, ``proposition``, ``corollary``,
  ``definition``, ``conjecture``, their starred forms, the usual abbreviations and
  anything declared with ``\\newtheorem``) are written as "Theorem (Name). text" and,
  for those six kinds, also returned as a :class:`Statement` with the optional
  ``[name]``, the first ``\\label``, the labels it and its proof ``\\ref`` (the
  statements it builds on), the ``proof`` that follows it and, in a definition, the
  terms its author emphasised (``\\emph{…}``, ``{\\it …}``, ``\\textit``, ``\\textbf``:
  how mathematicians mark the term being defined);
* every ``\\ref`` also marks its place (:data:`REF_MARK`), so :meth:`Converter.citations`
  can return the sentences that cite a label, in the authors' own words
  (:mod:`pipelines.prepare.citations`); a ``slogan`` environment (the Stacks Project's
  one-line summary of a statement) is taken out of the text and kept as the statement's
  ``slogan``, a description written by people;
* ``figure`` / ``table`` keep only their captions; ``tikzpicture``,
  ``thebibliography``, ``verbatim``, ``comment`` and the like are dropped whole; other
  environments keep their content.

Unbalanced braces, unterminated math and unclosed environments are repaired and listed
in the problems, never raised.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field

from pipelines.prepare.citations import Citation, citing_sentences
from pipelines.prepare.math_text import MATH_ENVIRONMENTS, MATH_ROW_ENVIRONMENTS, clean_math
from pipelines.prepare.source import (
    CRUDE_MARKUP,
    Problems,
    normalise_whitespace,
    read_argument,
    read_group,
    read_optional,
    runaway_end,
    sanitise,
    skip_spaces,
    strip_comments,
)
from pipelines.prepare.statements import DEFAULT_THEOREMS, Statement, statement_kind
from pipelines.prepare.vocabulary import (
    ACCENTS,
    CITE_PLACEHOLDER,
    DROP_COMMANDS,
    ENVIRONMENT_ARGS,
    HEADING_COMMANDS,
    LAYOUT_ARGUMENTS,
    REF_COMMANDS,
    REF_PLACEHOLDER,
    SECTION_COMMANDS,
    SKIP_ENVIRONMENTS,
    SLOGAN_ENVIRONMENTS,
    SYMBOLS,
    TEXT_SYMBOLS,
)

MAX_FRAGMENT_DEPTH = 8  # titles/names cleaned inside titles/names; deeper is malformed
MAX_OPEN_ENVIRONMENTS = 64  # deeper nesting is malformed input; inner \begin ignored

# Text mode: a run of ordinary characters, \begin{…}, \end{…}, a control word (with an
# optional star), a control symbol, a brace, one or two dollars, a tie or an ampersand.
_TOKEN = re.compile(
    r"(?P<text>[^\\{}$~&]+)"
    r"|(?P<begin>\\begin[ \t]*\{(?P<benv>[^{}\\]*)\})"
    r"|(?P<end>\\end[ \t]*\{(?P<eenv>[^{}\\]*)\})"
    r"|(?P<word>\\[A-Za-z@]+\*?)"
    r"|(?P<symbol>\\.?)"
    r"|(?P<open>\{)|(?P<close>\})"
    r"|(?P<dollar>\$\$?)"
    r"|(?P<tie>~)|(?P<amp>&)",
    re.S,
)
_TEXT_LIGATURES = re.compile(r"---|--|``|''")
_LIGATURES = {"---": "\u2014", "--": "\u2013", "``": '"', "''": '"'}
_INLINE_MATH_BODY = re.compile(r"(?:[^$\\\n]++|\\.|\n(?![ \t]*\n))*+", re.S)

_CAPTION = re.compile(r"\\caption\*?(?![A-Za-z@])")


@dataclass(frozen=True)
class Section:
    """A top-level section's title ("" before the first ``\\section``) and cleaned text.

    ``starts``: where in ``text`` each theorem-like block (a statement with its proof, a
    remark, an example) begins, so passages can begin there too.
    """

    title: str
    text: str
    starts: tuple[int, ...] = ()


#: Marks a theorem-like block's start in the output: a private-use character (not
#: whitespace, so paragraph normalisation keeps it) that sanitise removes from every source;
#: removed from every text the converter returns.
BLOCK_MARK = "\ue000"


#: Marks where a ``\\ref`` was written, for :meth:`Converter.citations`; like BLOCK_MARK a
#: private-use character sanitise removes from every source, and removed from every text
#: the converter returns.
REF_MARK = "\ue001"


def _unmarked(text: str) -> tuple[str, tuple[int, ...]]:
    """``text`` without block or ref marks, and where the block marks were."""
    pieces = text.replace(REF_MARK, "").split(BLOCK_MARK)
    starts, offset = [], len(pieces[0])
    for piece in pieces[1:]:
        starts.append(offset)
        offset += len(piece)
    return "".join(pieces), tuple(starts)


def clean_inline(text: str) -> str:
    """Clean a short LaTeX fragment (a title, an abstract, a statement name) to one paragraph.

    Paragraph breaks become spaces; macros are not expanded (a fragment has no preamble).
    """
    return _clean_fragment(strip_comments(sanitise(text)[0]), {}, 0)


def _clean_fragment(text: str, theorems: dict[str, str], depth: int) -> str:
    if depth >= MAX_FRAGMENT_DEPTH:
        # A title inside a title inside ...: malformed input; keep the words only.
        return " ".join(CRUDE_MARKUP.sub(" ", text).split())
    converter = Converter(theorems, Problems(), depth)
    converter.convert(text)
    return " ".join(" ".join(section.text for section in converter.sections()).split())


def clean_paragraphs(text: str) -> str:
    """Like :func:`clean_inline` but keeping paragraph breaks (for abstracts)."""
    converter = Converter({}, Problems())
    converter.convert(strip_comments(sanitise(text)[0]))
    return "\n\n".join(section.text for section in converter.sections() if section.text)


@dataclass
class _OpenEnvironment:
    name: str
    statement: int = -1  # index into Converter._statements, -1 when not a statement
    text_start: int = 0  # index into the output where the statement's text starts
    label: str = ""
    closer: str = ""  # emitted when the environment closes
    proof_of: int = -1  # for a proof: the index of the statement it proves


@dataclass
class _PendingStatement:
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
class _Emphasis:
    """The closer of an emphasised group: where its text starts in the output."""

    start: int


#: Emphasis commands with an argument (``\emph{term}``) and font switches (``{\it term}``).
EMPHASIS_COMMANDS = frozenset({"emph", "textit", "textbf", "textsl"})
EMPHASIS_SWITCHES = frozenset({"it", "em", "bf", "sl", "itshape", "bfseries", "slshape"})
MAX_TERM_CHARS = 120  # an emphasised run longer than this is a stressed sentence, not a term


class Converter:
    """One linear pass over a document body in text mode (see the module docstring)."""

    def __init__(self, theorems: dict[str, str], problems: Problems, depth: int = 0) -> None:
        self._theorems = {**DEFAULT_THEOREMS, **theorems}
        self._problems = problems
        self._depth = depth  # how deep inside titles/names this converter runs
        self._missing: dict[str, int] = {}  # closer → a position after which it is absent
        self._out: list[str] = []
        self._groups: list[str | _Emphasis] = []  # what to emit when each brace closes
        self._environments: list[_OpenEnvironment] = []
        self._section_marks: list[tuple[int, str]] = [(0, "")]
        self._statements: list[_PendingStatement] = []
        self._ref_labels: list[tuple[str, ...]] = []  # per REF_MARK written, in order
        self._words: dict[str, Callable[[str, str, int], int]] = {
            **dict.fromkeys(SECTION_COMMANDS, self._section),
            **dict.fromkeys(HEADING_COMMANDS, self._heading),
            **dict.fromkeys(REF_COMMANDS, self._ref),
            **dict.fromkeys(LAYOUT_ARGUMENTS, self._layout_arguments),
            **dict.fromkeys(ACCENTS, self._accent),
            **dict.fromkeys(EMPHASIS_COMMANDS, self._emphasis),
            **dict.fromkeys(EMPHASIS_SWITCHES, self._emphasis_switch),
            "label": self._label,
            "item": self._item,
            "footnote": self._footnote,
            "ensuremath": self._ensuremath,
            "verb": self._verb,
            "url": self._url,
            "keywords": self._front_matter,
            "subjclass": self._front_matter,
            "caption": self._caption,
        }

    def _fragment(self, text: str) -> str:
        """Clean a title, name, caption or label found inside the document, to one line."""
        return _clean_fragment(text, self._theorems, self._depth + 1)

    def _find(self, text: str, needle: str | re.Pattern[str], pos: int) -> tuple[int, int] | None:
        """Where ``needle`` next occurs at or after ``pos``; remembers misses.

        Once a closer is known to be missing after some position, later unterminated
        openers of the same kind cost nothing, so "\\begin{figure}" repeated without an
        end is linear, not quadratic.
        """
        key = needle if isinstance(needle, str) else needle.pattern
        missing_from = self._missing.get(key)
        if missing_from is not None and pos >= missing_from:
            return None
        if isinstance(needle, str):
            index = text.find(needle, pos)
            found = None if index < 0 else (index, index + len(needle))
        else:
            match = needle.search(text, pos)
            found = None if match is None else match.span()
        if found is None:
            self._missing[key] = pos if missing_from is None else min(pos, missing_from)
        return found

    # -- results

    def sections(self) -> tuple[Section, ...]:
        self._close_all()
        marks = [*self._section_marks, (len(self._out), "")]
        sections = []
        for (start, title), (end, _next) in zip(marks, marks[1:], strict=False):
            text, starts = _unmarked(normalise_whitespace("".join(self._out[start:end])))
            if text or title:
                sections.append(Section(title, text, starts))
        return tuple(sections)

    def statements(self) -> tuple[Statement, ...]:
        self._close_all()
        return tuple(
            Statement(
                pending.kind,
                pending.name,
                pending.label,
                pending.text,
                terms=tuple(dict.fromkeys(pending.terms)),
                refs=tuple(dict.fromkeys(pending.refs)),
                proof=pending.proof,
                slogan=pending.slogan,
            )
            for pending in self._statements
            if pending.text
        )

    def citations(self) -> tuple[Citation, ...]:
        """The sentences that cite a label by ``\\ref``, cleaned, with the labels they cite."""
        self._close_all()
        marked = normalise_whitespace("".join(self._out).replace(BLOCK_MARK, ""))
        return citing_sentences(marked, REF_MARK, self._ref_labels)

    # -- the main loop

    def convert(self, text: str) -> None:
        out = self._out
        append = out.append
        match_token = _TOKEN.match
        words = self._words
        pos = 0
        length = len(text)
        while pos < length:
            match = match_token(text, pos)
            if match is None:  # pragma: no cover - every character starts some token
                pos += 1
                continue
            kind = match.lastgroup
            end = match.end()
            if kind == "text":
                token = match.group()
                if "`" in token or "''" in token or "--" in token:
                    token = _TEXT_LIGATURES.sub(lambda m: _LIGATURES[m.group()], token)
                append(token)
            elif kind == "word":
                token = match.group()
                name = token[1:]
                handler = words.get(name)
                if handler is None and name.endswith("*"):
                    name = name[:-1]
                    handler = words.get(name)
                if handler is not None:
                    end = handler(text, name, end)
                elif name.startswith("cite") or name.endswith("cite") or name == "Cite":
                    end = self._drop_arguments(text, end, 1)
                    append(CITE_PLACEHOLDER)
                elif name in DROP_COMMANDS:
                    end = self._drop_arguments(text, end, DROP_COMMANDS[name])
                elif name in SYMBOLS:
                    append(SYMBOLS[name])
                else:
                    # An unknown macro (or a formatting one such as \emph): drop the
                    # macro and its [optional] argument, keep the text of its {arguments}.
                    optional = read_optional(text, end)
                    if optional is not None:
                        end = optional[1]
            elif kind == "open":
                self._groups.append("")
            elif kind == "close":
                if self._groups:
                    closer = self._groups.pop()
                    if isinstance(closer, _Emphasis):
                        self._emphasised(closer.start)
                    elif closer:
                        append(closer)
                    if end < length and text[end] == "{":
                        append(" ")  # \foo{a}{b}: keep the arguments apart
                else:
                    self._problems.add("unbalanced '}' ignored")
            elif kind == "dollar":
                end = self._dollar_math(text, match.group(), end)
            elif kind == "begin":
                end = self._begin(text, match.group("benv").strip(), end)
            elif kind == "end":
                self._end(match.group("eenv").strip())
            elif kind == "symbol":
                end = self._symbol(text, match.group(), end)
            else:  # tie or ampersand: a space
                append(" ")
            pos = end

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
        close = self._find(text, _environment_end(name), pos)
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

    # -- environments

    def _begin(self, text: str, name: str, pos: int) -> int:
        base = name.rstrip("*")
        if base in MATH_ENVIRONMENTS:
            return self._environment_math(text, name, pos)
        if name in SKIP_ENVIRONMENTS or base in SKIP_ENVIRONMENTS:
            return self._skip_environment(text, name, pos)
        if base in SLOGAN_ENVIRONMENTS:
            return self._slogan(text, name, pos)
        if len(self._environments) >= MAX_OPEN_ENVIRONMENTS:
            self._problems.add(f"more than {MAX_OPEN_ENVIRONMENTS} nested environments")
            return pos
        title = self._theorems.get(name) or self._theorems.get(base)
        if title is not None or base == "proof":
            return self._begin_statement(text, name, title or "Proof", pos)
        for _ in range(ENVIRONMENT_ARGS.get(name, 0)):
            group = read_group(text, pos, self._problems, f"\\begin{{{name}}}")
            if group is not None:
                pos = group[1]
        optional = read_optional(text, pos)
        if optional is not None:
            pos = optional[1]
        closer = ""
        if base in ("keywords", "keyword"):
            self._out.append("\n\nKeywords: ")
            closer = "\n\n"
        elif base in ("abstract", "itemize", "enumerate", "description", "quote", "center"):
            self._out.append("\n\n")
            closer = "\n\n"
        self._environments.append(_OpenEnvironment(name, closer=closer))
        return pos

    def _begin_statement(self, text: str, name: str, title: str, pos: int) -> int:
        optional = read_optional(text, pos)
        statement_name = ""
        if optional is not None:
            statement_name = self._fragment(optional[0])
            pos = optional[1]
        heading = title
        if statement_name:
            heading = (
                statement_name if name.rstrip("*") == "proof" else f"{title} ({statement_name})"
            )
        is_proof = name.rstrip("*") == "proof"
        # A proof stays in its statement's block; anything else theorem-like starts one.
        self._out.append(f"\n\n{'' if is_proof else BLOCK_MARK}{heading}. ")
        index = -1
        kind = statement_kind(title)
        if kind is not None:
            index = len(self._statements)
            self._statements.append(_PendingStatement(kind, statement_name))
        proof_of = -1
        if is_proof and self._statements:
            # A proof proves the statement just before it (its first proof only).
            last = self._statements[-1]
            if not last.proof and not last.proof_open and last.text is not None:
                proof_of = len(self._statements) - 1
                last.proof_open = True
        self._environments.append(
            _OpenEnvironment(name, index, len(self._out), proof_of=proof_of, closer="\n\n")
        )
        return pos

    def _end(self, name: str) -> None:
        environments = self._environments
        for depth in range(len(environments) - 1, -1, -1):
            if environments[depth].name == name:
                break
        else:
            self._problems.add(f"\\end{{{name}}} without \\begin{{{name}}} ignored")
            return
        while len(environments) > depth + 1:
            inner = environments[-1]
            self._problems.add(f"\\begin{{{inner.name}}} closed by \\end{{{name}}}")
            self._close(environments.pop())
        self._close(environments.pop())

    def _close(self, environment: _OpenEnvironment) -> None:
        if environment.statement >= 0:
            pending = self._statements[environment.statement]
            pending.text = self._written_since(environment.text_start)
            pending.label = environment.label
        if environment.proof_of >= 0:
            proved = self._statements[environment.proof_of]
            proved.proof = self._written_since(environment.text_start)
        if environment.closer:
            self._out.append(environment.closer)

    def _written_since(self, start: int) -> str:
        written = "".join(self._out[start:]).replace(BLOCK_MARK, "").replace(REF_MARK, "")
        return normalise_whitespace(written)

    def _slogan(self, text: str, name: str, pos: int) -> int:
        """A slogan leaves the text; the statement it sits in keeps it (the first one)."""
        found = self._find(text, _environment_end(name), pos)
        end = len(text) if found is None else found[0]
        if found is None:
            self._problems.add(f"\\begin{{{name}}} never closed")
        slogan = self._fragment(text[pos:end])
        pending = self._innermost_statement()
        if pending is not None and slogan and not pending.slogan:
            pending.slogan = slogan
        return len(text) if found is None else found[1]

    def _close_all(self) -> None:
        while self._environments:
            environment = self._environments.pop()
            self._problems.add(f"\\begin{{{environment.name}}} never closed")
            self._close(environment)

    def _skip_environment(self, text: str, name: str, pos: int) -> int:
        """Drop an environment whole (keeping figure and table captions)."""
        begin_pattern = _environment_begin(name)
        depth = 1
        search = pos
        while (found := self._find(text, _environment_end(name), search)) is not None:
            depth += len(begin_pattern.findall(text, search, found[0])) - 1
            if depth <= 0:
                self._captions(text[pos : found[0]], name)
                return found[1]
            search = found[1]
        self._problems.add(f"\\begin{{{name}}} without \\end{{{name}}}")
        if name.startswith("thebibliography"):
            return len(text)
        end = runaway_end(text, pos)
        self._captions(text[pos:end], name)
        return end

    def _captions(self, content: str, name: str) -> None:
        if "fig" not in name and "table" not in name:
            return
        pos = 0
        while (match := _CAPTION.search(content, pos)) is not None:
            pos = max(self._caption(content, "caption", match.end()), match.end())

    def _caption(self, text: str, name: str, pos: int) -> int:
        optional = read_optional(text, pos)
        if optional is not None:
            pos = optional[1]
        group = read_group(text, pos, self._problems, "\\caption")
        if group is None:
            return pos
        caption = self._fragment(group[0])
        if caption:
            self._out.append(f"\n\n{caption}\n\n")
        return group[1]

    # -- commands with special handling

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

    def _innermost_statement(self) -> _PendingStatement | None:
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
            self._groups.append(_Emphasis(len(self._out)))
            return start + 1
        return pos

    def _emphasis_switch(self, text: str, name: str, pos: int) -> int:
        """``{\\it …}``: the group the switch opens is emphasised."""
        if self._groups and self._groups[-1] == "":
            self._groups[-1] = _Emphasis(len(self._out))
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
def _environment_end(name: str) -> re.Pattern[str]:
    return re.compile(r"\\end\s*\{" + re.escape(name) + r"\}")


@functools.lru_cache(maxsize=512)
def _environment_begin(name: str) -> re.Pattern[str]:
    return re.compile(r"\\begin\s*\{" + re.escape(name) + r"\}")
