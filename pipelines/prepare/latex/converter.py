"""The converter: one linear pass over a document body in text mode, from LaTeX to text.

One class, whose handlers share the output and the open environments; the handlers of
single commands (``\\section``, ``\\ref``, ``\\emph``, ``\\label``, accents …) are its base
class, :class:`~pipelines.prepare.latex.commands.CommandHandlers`.

* math in every form (``$…$``, ``\\(…\\)``, ``\\[…\\]``, ``$$…$$``, ``\\ensuremath``
  and the ``equation`` / ``align`` / ``gather`` / ``multline`` / ``flalign`` / ``alignat``
  / ``eqnarray`` / ``displaymath`` environments, starred or not) becomes ``$…$``
  (:mod:`pipelines.prepare.latex.math_text`);
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
from collections.abc import Callable
from dataclasses import dataclass

from pipelines.prepare.citations import Citation, citing_sentences
from pipelines.prepare.latex.commands import (
    EMPHASIS_COMMANDS,
    EMPHASIS_SWITCHES,
    REF_MARK,
    CommandHandlers,
    Emphasis,
    OpenEnvironment,
    PendingStatement,
    environment_end,
)
from pipelines.prepare.latex.math_text import MATH_ENVIRONMENTS
from pipelines.prepare.latex.source import (
    CRUDE_MARKUP,
    Problems,
    normalise_whitespace,
    read_group,
    read_optional,
    runaway_end,
    sanitise,
    strip_comments,
)
from pipelines.prepare.latex.vocabulary import (
    ACCENTS,
    CITE_PLACEHOLDER,
    DROP_COMMANDS,
    ENVIRONMENT_ARGS,
    HEADING_COMMANDS,
    LAYOUT_ARGUMENTS,
    REF_COMMANDS,
    SECTION_COMMANDS,
    SKIP_ENVIRONMENTS,
    SLOGAN_ENVIRONMENTS,
    SYMBOLS,
)
from pipelines.prepare.statements import DEFAULT_THEOREMS, Statement, statement_kind

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


class Converter(CommandHandlers):
    """One linear pass over a document body in text mode (see the module docstring)."""

    def __init__(self, theorems: dict[str, str], problems: Problems, depth: int = 0) -> None:
        self._theorems = {**DEFAULT_THEOREMS, **theorems}
        self._problems = problems
        self._depth = depth  # how deep inside titles/names this converter runs
        self._missing: dict[str, int] = {}  # closer → a position after which it is absent
        self._out: list[str] = []
        self._groups: list[str | Emphasis] = []  # what to emit when each brace closes
        self._environments: list[OpenEnvironment] = []
        self._section_marks: list[tuple[int, str]] = [(0, "")]
        self._statements: list[PendingStatement] = []
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
                    if isinstance(closer, Emphasis):
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
        self._environments.append(OpenEnvironment(name, closer=closer))
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
            self._statements.append(PendingStatement(kind, statement_name))
        proof_of = -1
        if is_proof and self._statements:
            # A proof proves the statement just before it (its first proof only).
            last = self._statements[-1]
            if not last.proof and not last.proof_open and last.text is not None:
                proof_of = len(self._statements) - 1
                last.proof_open = True
        self._environments.append(
            OpenEnvironment(name, index, len(self._out), proof_of=proof_of, closer="\n\n")
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

    def _close(self, environment: OpenEnvironment) -> None:
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
        found = self._find(text, environment_end(name), pos)
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
        while (found := self._find(text, environment_end(name), search)) is not None:
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


@functools.lru_cache(maxsize=512)
def _environment_begin(name: str) -> re.Pattern[str]:
    return re.compile(r"\\begin\s*\{" + re.escape(name) + r"\}")
