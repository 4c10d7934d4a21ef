"""LaTeX source → clean text: passages for embedding and the statements a paper proves.

Pure functions, no I/O. :func:`prepare_document` is what the ``prepare`` stage calls on
one ``source.tex``; it runs, in order:

1. **sanitise**: CRLF → LF, control characters removed (and counted: a source with
   more than :data:`BINARY_FRACTION` control characters or U+FFFD is binary, not
   LaTeX, and is reported *fatal*);
2. **comments**: ``%`` to the end of the line, the newline and the next line's leading
   blanks (TeX's own rule), but not ``\\%``;
3. **preamble**: everything before ``\\begin{document}`` is dropped, after collecting
   from it the macro definitions, ``\\newtheorem`` declarations and ``\\keywords`` /
   ``\\subjclass`` (kept as "Keywords: …" / "Mathematics Subject Classification: …"
   paragraphs at the top, for the graph stage); everything after ``\\end{document}``
   is dropped too;
4. **macros**: ``\\newcommand`` / ``\\renewcommand`` / ``\\providecommand`` /
   ``\\DeclareMathOperator`` / ``\\def`` / ``\\let`` / ``\\newenvironment``, with
   ``[n]`` arguments and an optional first-argument default, defined in the preamble
   or the body, are expanded everywhere (math included). Expansion repeats until
   nothing changes, for nested macros, but at most :data:`MAX_EXPANSION_PASSES`
   passes and :data:`MAX_EXPANSION_GROWTH` times the size, so a recursive macro
   cannot loop. The last definition of a name wins. Delimited ``\\def`` parameters
   and redefinitions of structural commands (``\\section``, ``\\begin``, ...) are not
   expanded;
5. **conversion** (one linear pass over the body):

   * math in every form (``$…$``, ``\\(…\\)``, ``\\[…\\]``, ``$$…$$``, ``\\ensuremath``
     and the ``equation`` / ``align`` / ``gather`` / ``multline`` / ``flalign`` /
     ``alignat`` / ``eqnarray`` / ``displaymath`` environments, starred or not) becomes
     ``$…$`` with its content kept verbatim except: whitespace collapsed, ``\\label``
     / ``\\tag`` / ``\\nonumber`` / ``\\notag`` removed, nested ``$`` removed, and the
     rows of a multi-row environment (top-level ``\\\\``) written as separate ``$…$``
     with their alignment ``&`` removed;
   * formatting and unknown macros are dropped and their arguments' text kept
     (``\\emph{x}`` → ``x``); an unknown macro's ``[optional]`` argument is dropped;
   * ``\\cite…{…}`` → ``[cite]`` (keeps the sentence readable: "proved in [cite]"),
     ``\\ref`` / ``\\eqref`` / ``\\cref`` … → ``[ref]``; ``\\label`` and layout
     commands (``\\vspace``, ``\\usepackage``, ``\\title``, ``\\author`` …) vanish
     with their arguments (title and authors come from the metadata);
   * ``\\section`` / ``\\chapter`` start a new :class:`Section` (its title is the
     ``section`` column of the passages); ``\\subsection`` … ``\\paragraph`` become a
     run-in heading "Title. " at the start of a paragraph;
   * theorem-like environments (``theorem``, ``lemma``, ``proposition``,
     ``corollary``, ``definition``, ``conjecture``, their starred forms, the usual
     abbreviations and anything declared with ``\\newtheorem``) are written as
     "Theorem (Name). text" and, for those six kinds, also returned as a
     :class:`Statement` with the optional ``[name]`` and the first ``\\label``;
   * ``figure`` / ``table`` keep only their captions; ``tikzpicture``,
     ``thebibliography``, ``verbatim``, ``comment`` and the like are dropped whole;
     other environments keep their content;
6. **whitespace**: paragraphs are separated by exactly one blank line; inside a
   paragraph every whitespace run is one space.

The cleaned text keeps one invariant the chunker and later stages rely on: ``$`` only
ever delimits math (a literal dollar in the text is written ``\\$``).

Malformed input never raises: unbalanced braces (an argument that never closes runs to
the end of its paragraph, as TeX's "Runaway argument" does), unterminated math or
environments, a missing ``\\begin{document}``, unknown environments. Each such repair
is listed in ``problems``; a source with nothing usable left has ``fatal`` set.

:func:`chunk_text` cuts a section's text into passages of at most ``chunk_chars``
characters with about ``overlap_chars`` of overlap, ending at a paragraph end when one
lies in the second half of the window, else at a sentence end there, else at a word
boundary, never inside ``$…$``. The one documented exception to the size limit: a
single math block longer than ``chunk_chars`` becomes a passage of its own, kept whole
rather than cut into broken math. (A run of text with no break at all, which is not
math, is cut hard at the limit.) Passages under ``min_chunk_chars`` are dropped; a short
last piece is started earlier instead, so only a section shorter than that is lost.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field

# Bump when the cleaner's output changes, so that cached per-paper outputs are redone.
CLEANER_VERSION = "1"


def _names(spaced: str) -> frozenset[str]:
    """A set of names written as one space-separated string (compact for long lists)."""
    return frozenset(spaced.split())


STATEMENT_KINDS = ("theorem", "lemma", "proposition", "corollary", "definition", "conjecture")

CITE_PLACEHOLDER = "[cite]"
REF_PLACEHOLDER = "[ref]"

MAX_EXPANSION_PASSES = 10
MAX_EXPANSION_GROWTH = 4  # expanded body may be at most this many times the original (+64 KiB)
ARG_SCAN_LIMIT = 20_000  # characters searched for an argument's closing brace
OPTIONAL_SCAN_LIMIT = 1_000  # characters searched for an [optional] argument's "]"
MAX_FRAGMENT_DEPTH = 8  # titles/names cleaned inside titles/names; deeper is malformed
MAX_OPEN_ENVIRONMENTS = 64  # deeper nesting is malformed input; inner \begin ignored
MAX_PROBLEMS = 20  # problems listed per document; the rest are counted
BINARY_FRACTION = 0.01  # more control/replacement characters than this → not LaTeX


@dataclass(frozen=True)
class Section:
    """A top-level section's title ("" before the first ``\\section``) and cleaned text."""

    title: str
    text: str


@dataclass(frozen=True)
class Statement:
    """A theorem-like environment: kind (one of STATEMENT_KINDS), name, label, cleaned text."""

    kind: str
    name: str
    label: str
    text: str


@dataclass(frozen=True)
class Chunk:
    section: str
    text: str


@dataclass(frozen=True)
class CleanedDocument:
    sections: tuple[Section, ...]
    statements: tuple[Statement, ...]
    problems: tuple[str, ...]
    fatal: str | None = None

    @property
    def text(self) -> str:
        return "\n\n".join(section.text for section in self.sections if section.text)


@dataclass(frozen=True)
class PreparedDocument:
    """What ``prepare`` keeps of one paper: passages, statements and what went wrong.

    ``fatal`` is set when nothing usable is left (the stage quarantines the paper);
    ``problems`` lists the repairs made on malformed input (informational).
    """

    chunks: tuple[Chunk, ...]
    statements: tuple[Statement, ...]
    problems: tuple[str, ...]
    fatal: str | None
    dropped_short: int = 0


# --------------------------------------------------------------------------- entry points


def prepare_document(
    source: str, *, chunk_chars: int, overlap_chars: int, min_chunk_chars: int
) -> PreparedDocument:
    """Clean ``source`` (a whole ``.tex`` file) and cut each section into passages."""
    cleaned = clean_latex(source)
    if cleaned.fatal is not None:
        return PreparedDocument((), (), cleaned.problems, cleaned.fatal)
    chunks: list[Chunk] = []
    dropped = 0
    for section in cleaned.sections:
        for start, end in chunk_spans(section.text, chunk_chars, overlap_chars, min_chunk_chars):
            if end - start >= min_chunk_chars:
                chunks.append(Chunk(section.title, section.text[start:end]))
            else:
                dropped += 1
    fatal = None
    if not chunks:
        fatal = f"no passage of at least {min_chunk_chars} characters after cleaning"
    return PreparedDocument(tuple(chunks), cleaned.statements, cleaned.problems, fatal, dropped)


def clean_latex(source: str) -> CleanedDocument:
    """Clean a whole LaTeX document (see the module docstring for the rules)."""
    problems = _Problems()
    text, bad_chars = sanitise(source)
    if text.strip() == "":
        return CleanedDocument((), (), problems.items(), "empty source")
    if bad_chars > BINARY_FRACTION * len(source) and bad_chars > 8:
        share = bad_chars / max(len(source), 1)
        return CleanedDocument(
            (), (), problems.items(), f"not LaTeX: {share:.0%} control or undecodable characters"
        )
    text = strip_comments(text)
    begin = _BEGIN_DOCUMENT.search(text)
    if begin is None:
        problems.add("no \\begin{document}: the whole file is read as the body")
        preamble, body = "", text
    else:
        preamble, body = text[: begin.start()], text[begin.end() :]
    end = _END_DOCUMENT.search(body)
    if end is not None:
        body = body[: end.start()]
    elif begin is not None:
        problems.add("no \\end{document}: read to the end of the file")

    definitions = Definitions()
    preamble = collect_definitions(preamble, definitions, problems)
    body = collect_definitions(body, definitions, problems)
    front_matter = "".join(
        f"\\{match.group(1)}" + preamble[match.end() : _arg_span_end(preamble, match.end())]
        for match in _FRONT_MATTER.finditer(preamble)
    )
    body = expand_macros(front_matter + "\n\n" + body, definitions, problems)

    converter = _Converter(definitions.theorems, problems)
    converter.convert(body)
    sections = converter.sections()
    statements = converter.statements()
    fatal = None if any(section.text for section in sections) else "no text left after cleaning"
    return CleanedDocument(sections, statements, problems.items(), fatal)


def clean_inline(text: str) -> str:
    """Clean a short LaTeX fragment (a title, an abstract, a statement name) to one paragraph.

    Paragraph breaks become spaces; macros are not expanded (a fragment has no preamble).
    """
    return _clean_fragment(strip_comments(sanitise(text)[0]), {}, 0)


def _clean_fragment(text: str, theorems: dict[str, str], depth: int) -> str:
    if depth >= MAX_FRAGMENT_DEPTH:
        # A title inside a title inside ...: malformed input; keep the words only.
        return " ".join(_CRUDE_MARKUP.sub(" ", text).split())
    converter = _Converter(theorems, _Problems(), depth)
    converter.convert(text)
    return " ".join(" ".join(section.text for section in converter.sections()).split())


def clean_paragraphs(text: str) -> str:
    """Like :func:`clean_inline` but keeping paragraph breaks (for abstracts)."""
    converter = _Converter({}, _Problems())
    converter.convert(strip_comments(sanitise(text)[0]))
    return "\n\n".join(section.text for section in converter.sections() if section.text)


# --------------------------------------------------------------------------- small passes

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f\ufffd]")


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
_BEGIN_DOCUMENT = re.compile(r"\\begin\s*\{document\}")
_END_DOCUMENT = re.compile(r"\\end\s*\{document\}")
_FRONT_MATTER = re.compile(r"\\(keywords|subjclass)(?![A-Za-z@])")


class _Problems:
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


def _runaway_end(text: str, pos: int) -> int:
    """Where an argument that never closes ends: at the next blank line, as in TeX."""
    match = _NEXT_PARAGRAPH.search(text, pos)
    return match.start() if match else len(text)


def _skip_spaces(text: str, pos: int) -> int:
    match = _SPACES.match(text, pos)
    return match.end() if match else pos


def _read_group(text: str, pos: int, problems: _Problems, what: str) -> tuple[str, int] | None:
    """Read a ``{…}`` argument at ``pos`` (after blanks): (content, position after it)."""
    pos = _skip_spaces(text, pos)
    if pos >= len(text) or text[pos] != "{":
        return None
    end = _group_end(text, pos)
    if end < 0:
        problems.add(f"unbalanced '{{' in the argument of {what}")
        end = _runaway_end(text, pos)
        return text[pos + 1 : end], end
    return text[pos + 1 : end], end + 1


def _read_optional(text: str, pos: int) -> tuple[str, int] | None:
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


def _read_argument(text: str, pos: int) -> tuple[str, int] | None:
    """A macro argument: a braced group, a control sequence or one character."""
    pos = _skip_spaces(text, pos)
    if pos >= len(text):
        return None
    char = text[pos]
    if char == "{":
        end = _group_end(text, pos)
        if end < 0:
            end = _runaway_end(text, pos)
            return text[pos + 1 : end], end
        return text[pos + 1 : end], end + 1
    if char == "\\":
        match = _CONTROL_SEQUENCE.match(text, pos)
        end = match.end() if match else pos + 1
        return text[pos:end], end
    if char == "}":
        return None
    return char, pos + 1


def _arg_span_end(text: str, pos: int) -> int:
    """End of ``[opt]{arg}`` at ``pos`` (for copying front matter out of the preamble)."""
    optional = _read_optional(text, pos)
    if optional is not None:
        pos = optional[1]
    group = _read_group(text, pos, _Problems(), "front matter")
    return group[1] if group is not None else pos


_CONTROL_SEQUENCE = re.compile(r"\\(?:[A-Za-z@]+|.)", re.S)
_CRUDE_MARKUP = re.compile(r"\\[A-Za-z@]+\*?|\\.|[{}$]", re.S)


# --------------------------------------------------------------------------- macro definitions


@dataclass(frozen=True)
class Macro:
    """A user macro: ``n_args`` arguments, the first optional when ``default`` is set.

    ``parts`` is the body split at its parameters: strings, and ints for ``#n``.
    """

    n_args: int
    default: str | None
    parts: tuple[str | int, ...]


@dataclass
class Definitions:
    """Macros, environments and theorem declarations collected from one document."""

    macros: dict[str, Macro] = field(default_factory=dict)  # name without the backslash
    environments: dict[str, tuple[Macro, str]] = field(default_factory=dict)  # begin, end code
    theorems: dict[str, str] = field(default_factory=dict)  # environment → display name


# Commands whose redefinition we ignore: expanding them would break the structure the
# converter relies on (a paper that redefines \section still has sections).
_PROTECTED = _names(
    "begin end section subsection subsubsection paragraph chapter part label ref cite item "
    "newcommand renewcommand providecommand def gdef edef xdef let newenvironment newtheorem "
    "documentclass usepackage input include ensuremath text"
)

_DEFINITION = re.compile(
    r"\\(?:(?P<cmd>newcommand|renewcommand|providecommand|DeclareRobustCommand"
    r"|DeclareMathOperator|newenvironment|renewenvironment|newtheorem)\*?"
    r"|(?P<tex>def|gdef|edef|xdef|let))(?![A-Za-z@])"
)
_PARAMETER = re.compile(r"##|#([1-9])")
_CONTROL_WORD_END = re.compile(r"\\[A-Za-z@]+$")
_DEF_PARAMETERS = re.compile(r"(?:#[1-9])*")


def _compile_body(body: str, n_args: int) -> tuple[str | int, ...]:
    """Split a macro body at ``#n``; a space guards a control word directly before ``#n``.

    (``\\mathbf#1`` with argument ``x`` must become ``\\mathbf x``, not ``\\mathbfx``.)
    """
    parts: list[str | int] = []
    pos = 0
    for match in _PARAMETER.finditer(body):
        literal = body[pos : match.start()]
        if match.group(1) is None:  # "##" is a literal "#"
            parts.append(literal + "#")
        else:
            index = int(match.group(1))
            if _CONTROL_WORD_END.search(literal):
                literal += " "
            parts.append(literal)
            if index <= n_args:
                parts.append(index - 1)
        pos = match.end()
    parts.append(body[pos:])
    return tuple(part for part in parts if part != "")


def collect_definitions(text: str, definitions: Definitions, problems: _Problems) -> str:
    """Record the macro/environment/theorem definitions in ``text``; return it without them."""
    if "\\" not in text:
        return text
    pieces: list[str] = []
    pos = 0
    search = _DEFINITION.search
    while (match := search(text, pos)) is not None:
        pieces.append(text[pos : match.start()])
        if match.group("cmd") is not None:
            command = match.group("cmd")
            if command == "newtheorem":
                end = _parse_newtheorem(text, match.end(), definitions)
            elif command.endswith("environment"):
                end = _parse_newenvironment(text, match.end(), definitions, problems)
            else:
                end = _parse_newcommand(text, match.end(), command, definitions, problems)
        else:
            end = _parse_tex_def(text, match.end(), match.group("tex"), definitions, problems)
        pos = max(end, match.end())
    pieces.append(text[pos:])
    return "".join(pieces)


def _read_name(text: str, pos: int) -> tuple[str, int] | None:
    """A defined command's name: ``{\\name}`` or ``\\name`` (returned without the backslash)."""
    pos = _skip_spaces(text, pos)
    if pos < len(text) and text[pos] == "{":
        group = _read_group(text, pos, _Problems(), "a definition")
        if group is None:
            return None
        name = group[0].strip()
        if not name.startswith("\\"):
            return None
        return name[1:], group[1]
    match = _CONTROL_SEQUENCE.match(text, pos)
    if match is None:
        return None
    return match.group()[1:], match.end()


def _parse_newcommand(
    text: str, pos: int, command: str, definitions: Definitions, problems: _Problems
) -> int:
    named = _read_name(text, pos)
    if named is None:
        problems.add(f"unreadable \\{command}")
        return pos
    name, pos = named
    n_args = 0
    default: str | None = None
    if command != "DeclareMathOperator":
        count = _read_optional(text, pos)
        if count is not None:
            try:
                n_args = min(max(int(count[0].strip()), 0), 9)
            except ValueError:
                problems.add(
                    f"\\{command}{{\\{name}}}: argument count {count[0]!r} is not a number"
                )
            pos = count[1]
            optional = _read_optional(text, pos)
            if optional is not None and n_args > 0:
                default, pos = optional
    body = _read_group(text, pos, problems, f"\\{command}{{\\{name}}}")
    if body is None:
        problems.add(f"\\{command}{{\\{name}}} has no body")
        return pos
    content, pos = body
    if command == "DeclareMathOperator":
        content = f"\\operatorname{{{content}}}"
    if name in _PROTECTED:
        problems.add(f"redefinition of \\{name} ignored")
    elif command != "providecommand" or name not in definitions.macros:
        definitions.macros[name] = Macro(n_args, default, _compile_body(content, n_args))
    return pos


def _parse_tex_def(
    text: str, pos: int, command: str, definitions: Definitions, problems: _Problems
) -> int:
    named = _read_name(text, pos)
    if named is None:
        problems.add(f"unreadable \\{command}")
        return pos
    name, pos = named
    if command == "let":
        pos = _skip_spaces(text, pos)
        if pos < len(text) and text[pos] == "=":
            pos = _skip_spaces(text, pos + 1)
        target = _CONTROL_SEQUENCE.match(text, pos)
        if target is None:
            return pos
        if name not in _PROTECTED:
            definitions.macros[name] = Macro(0, None, (target.group(),))
        return target.end()
    brace = text.find("{", pos)
    if brace < 0:
        problems.add(f"\\{command}\\{name} has no body")
        return pos
    parameter_text = text[pos:brace]
    body = _read_group(text, brace, problems, f"\\{command}\\{name}")
    if body is None:  # pragma: no cover - text[brace] is "{"
        return brace
    content, end = body
    if not _DEF_PARAMETERS.fullmatch(parameter_text.strip()):
        problems.add(f"\\{command}\\{name} has delimited parameters; not expanded")
    elif name in _PROTECTED:
        problems.add(f"redefinition of \\{name} ignored")
    else:
        n_args = parameter_text.count("#")
        definitions.macros[name] = Macro(n_args, None, _compile_body(content, n_args))
    return end


def _parse_newenvironment(
    text: str, pos: int, definitions: Definitions, problems: _Problems
) -> int:
    group = _read_group(text, pos, problems, "\\newenvironment")
    if group is None:
        problems.add("unreadable \\newenvironment")
        return pos
    name, pos = group[0].strip(), group[1]
    n_args = 0
    default: str | None = None
    count = _read_optional(text, pos)
    if count is not None:
        try:
            n_args = min(max(int(count[0].strip()), 0), 9)
        except ValueError:
            problems.add(f"\\newenvironment{{{name}}}: bad argument count {count[0]!r}")
        pos = count[1]
        optional = _read_optional(text, pos)
        if optional is not None and n_args > 0:
            default, pos = optional
    begin_code = _read_group(text, pos, problems, f"\\newenvironment{{{name}}}")
    if begin_code is None:
        problems.add(f"\\newenvironment{{{name}}} has no body")
        return pos
    end_code = _read_group(text, begin_code[1], problems, f"\\newenvironment{{{name}}}")
    if end_code is None:
        problems.add(f"\\newenvironment{{{name}}} has no end code")
        return begin_code[1]
    if name and name not in _PROTECTED_ENVIRONMENTS:
        begin_macro = Macro(n_args, default, _compile_body(begin_code[0], n_args))
        definitions.environments[name] = (begin_macro, end_code[0])
    return end_code[1]


_PROTECTED_ENVIRONMENTS = frozenset({"document"})


def _parse_newtheorem(text: str, pos: int, definitions: Definitions) -> int:
    """``\\newtheorem{env}[counter]{Title}[within]``: remember env → Title."""
    problems = _Problems()  # a malformed \newtheorem just declares nothing
    group = _read_group(text, pos, problems, "\\newtheorem")
    if group is None:
        return pos
    environment, pos = group[0].strip(), group[1]
    shared = _read_optional(text, pos)
    if shared is not None:
        pos = shared[1]
    title = _read_group(text, pos, problems, "\\newtheorem")
    if title is None:
        return pos
    pos = title[1]
    within = _read_optional(text, pos)
    if within is not None:
        pos = within[1]
    if environment:
        definitions.theorems[environment] = clean_inline(title[0]) or environment
    return pos


# --------------------------------------------------------------------------- macro expansion


def expand_macros(text: str, definitions: Definitions, problems: _Problems) -> str:
    """Expand the user macros and environments in ``text`` until none is left (bounded)."""
    pattern = _usage_pattern(
        tuple(sorted(definitions.macros)), tuple(sorted(definitions.environments))
    )
    if pattern is None:
        return text
    limit = MAX_EXPANSION_GROWTH * len(text) + 65_536
    for _pass in range(MAX_EXPANSION_PASSES):
        text, expanded = _expand_once(text, pattern, definitions, problems)
        if expanded == 0:
            return text
        if len(text) > limit:
            problems.add("macro expansion stopped: text grew too much (recursive macro?)")
            return text
    problems.add(f"macro expansion stopped after {MAX_EXPANSION_PASSES} passes (recursive macro?)")
    return text


@functools.lru_cache(maxsize=256)
def _usage_pattern(
    macro_names: tuple[str, ...], environment_names: tuple[str, ...]
) -> re.Pattern[str] | None:
    alternatives = []
    words = [re.escape(name) for name in macro_names if name.isalpha() or "@" in name]
    symbols = [re.escape(name) for name in macro_names if not (name.isalpha() or "@" in name)]
    if words:
        words.sort(key=len, reverse=True)
        alternatives.append(r"\\(?P<word>" + "|".join(words) + r")(?![A-Za-z@])")
    if symbols:
        alternatives.append(r"\\(?P<symbol>" + "|".join(symbols) + ")")
    if environment_names:
        names = "|".join(re.escape(name) for name in environment_names)
        alternatives.append(r"\\(?P<edge>begin|end)\s*\{(?P<env>" + names + r")\}")
    if not alternatives:
        return None
    return re.compile("|".join(alternatives))


def _expand_once(
    text: str, pattern: re.Pattern[str], definitions: Definitions, problems: _Problems
) -> tuple[str, int]:
    pieces: list[str] = []
    pos = 0
    count = 0
    while (match := pattern.search(text, pos)) is not None:
        pieces.append(text[pos : match.start()])
        end = match.end()
        if match.lastgroup == "env":
            begin_macro, end_code = definitions.environments[match.group("env")]
            if match.group("edge") == "end":
                pieces.append(end_code)
            else:
                replacement, end = _apply(begin_macro, text, end, problems)
                pieces.append(replacement)
        else:
            name = match.group(match.lastgroup or 0)
            replacement, end = _apply(definitions.macros[name], text, end, problems)
            pieces.append(replacement)
        pos = end
        count += 1
    if count == 0:
        return text, 0
    pieces.append(text[pos:])
    return "".join(pieces), count


def _apply(macro: Macro, text: str, pos: int, problems: _Problems) -> tuple[str, int]:
    """The expansion of ``macro`` whose arguments start at ``pos``; and where they end."""
    if macro.n_args == 0:
        return "".join(part for part in macro.parts if isinstance(part, str)), pos
    arguments: list[str] = []
    if macro.default is not None:
        optional = _read_optional(text, pos)
        if optional is None:
            arguments.append(macro.default)
        else:
            arguments.append(optional[0])
            pos = optional[1]
    while len(arguments) < macro.n_args:
        argument = _read_argument(text, pos)
        if argument is None:
            problems.add("a macro is missing an argument; expanded with an empty one")
            arguments.append("")
            continue
        arguments.append(argument[0])
        pos = argument[1]
    out: list[str] = []
    for part in macro.parts:
        if isinstance(part, int):
            value = arguments[part]
            if out and out[-1].endswith(" ") is False and _CONTROL_WORD_END.search(out[-1]):
                out.append(" ")
            out.append(value)
        else:
            out.append(part)
    return "".join(out), pos


# --------------------------------------------------------------------------- math


_MATH_ROW_ENVIRONMENTS = _names("align flalign alignat eqnarray gather xalignat xxalignat")
_MATH_ENVIRONMENTS = _names(
    "equation align flalign alignat eqnarray gather multline displaymath math dmath dgroup "
    "xalignat xxalignat"
)
# Escapes \$ and \\ are kept (group 1); labels, tags and bare (nested) dollars go.
_MATH_NOISE = re.compile(
    r"(\\[$\\])|\\(?:label|tag\*?)\s*\{[^{}]*\}|\\no(?:number|tag)(?![A-Za-z@])|\$"
)
_MATH_STRUCTURE = re.compile(
    r"\\begin\s*\{[^{}]*\}|\\end\s*\{[^{}]*\}|\\\\\*?(?:[ \t]*\[[^\]]*\])?|\\.|[{}&]", re.S
)


def clean_math(content: str, rows: bool = False) -> list[str]:
    """The ``$…$`` pieces for one math block; several when ``rows`` splits an align block."""
    content = _MATH_NOISE.sub(_keep_escape, content)
    if "\\\\" in content or "&" in content:
        content_rows = _split_math_rows(content)
        if rows:
            pieces = [_math_text(row) for row in content_rows]
            return [f"${piece}$" for piece in pieces if piece]
        content = " ".join(content_rows)
    collapsed = _math_text(content)
    return [f"${collapsed}$"] if collapsed else []


def _keep_escape(match: re.Match[str]) -> str:
    return match.group(1) or ""


def _math_text(content: str) -> str:
    # A trailing backslash would escape the closing "$" (and a trailing \\ means nothing).
    return " ".join(content.split()).rstrip("\\").rstrip()


def _split_math_rows(content: str) -> list[str]:
    """Split at top-level ``\\\\`` and drop top-level ``&`` (nested matrices keep theirs)."""
    rows: list[str] = []
    current: list[str] = []
    depth = 0
    pos = 0
    for match in _MATH_STRUCTURE.finditer(content):
        token = match.group()
        if token == "{" or token.startswith("\\begin"):
            depth += 1
        elif token == "}" or token.startswith("\\end"):
            depth = max(depth - 1, 0)
        elif depth == 0 and token == "&":
            current.append(content[pos : match.start()])
            current.append(" ")
            pos = match.end()
        elif depth == 0 and token.startswith("\\\\"):
            current.append(content[pos : match.start()])
            rows.append("".join(current))
            current = []
            pos = match.end()
    current.append(content[pos:])
    rows.append("".join(current))
    return rows


# --------------------------------------------------------------------------- the converter

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

_SECTION_COMMANDS = frozenset({"section", "chapter", "part"})
_HEADING_COMMANDS = frozenset({"subsection", "subsubsection", "paragraph", "subparagraph"})
_REF_COMMANDS = _names("ref eqref autoref cref Cref pageref nameref vref Vref labelcref cpageref")
# Commands whose first arguments are layout (a URL, a colour, a size) and whose last is
# text: name → number of leading arguments dropped.
_LAYOUT_ARGUMENTS = {
    "href": 1, "textcolor": 1, "colorbox": 1, "scalebox": 1, "resizebox": 2, "raisebox": 1,
    "fcolorbox": 2, "parbox": 1, "rotatebox": 1, "hyperref": 0,
}  # fmt: skip
# Commands dropped with their arguments: name → number of mandatory arguments.
_DROP_COMMANDS: dict[str, int] = {
    **dict.fromkeys(
        _names(
            "label vspace hspace bibliographystyle bibliography pagestyle thispagestyle "
            "pagenumbering index nocite usepackage RequirePackage documentclass input include "
            "includegraphics includeonly theoremstyle title author date address email thanks "
            "urladdr curraddr dedicatory affil affiliation institute color hypersetup "
            "graphicspath enlargethispage linespread newcounter phantom hphantom vphantom "
            "bibitem markright footnotemark settowidth translator contrib "
            "orcid keyword MSC PACS received accepted communicated"
        ),
        1,
    ),
    **dict.fromkeys(
        _names("setlength addtolength setcounter addtocounter numberwithin markboth rule"),
        2,
    ),
    **dict.fromkeys(_names("addcontentsline crefname Crefname"), 3),
    **dict.fromkeys(
        _names(
            "maketitle tableofcontents listoffigures listoftables newpage clearpage "
            "cleardoublepage pagebreak nopagebreak noindent indent centering raggedright "
            "raggedleft smallskip medskip bigskip vfill hfill hfil vfil qed qedhere "
            "makeatletter makeatother appendix frontmatter mainmatter backmatter "
            "allowdisplaybreaks normalsize small footnotesize scriptsize tiny large Large "
            "LARGE huge Huge bf it rm sf tt sc sl em normalfont bfseries itshape mdseries "
            "upshape scshape slshape rmfamily sffamily ttfamily boldmath unboldmath "
            "hline toprule midrule bottomrule protect relax leavevmode null nobreak "
            "sloppy fussy displaystyle textstyle today"
        ),
        0,
    ),
}
_SYMBOLS = {
    "ss": "ß", "o": "ø", "O": "Ø", "ae": "æ", "AE": "Æ", "oe": "œ", "OE": "Œ", "aa": "å",
    "AA": "Å", "l": "ł", "L": "Ł", "i": "ı", "j": "ȷ", "dots": "…", "ldots": "…",
    "textendash": "–", "textemdash": "—", "LaTeX": "LaTeX", "TeX": "TeX", "S": "§",
    "P": "¶", "copyright": "©", "dag": "†", "ddag": "‡", "textbackslash": "",
    "textasciitilde": "~", "textbar": "|", "textless": "<", "textgreater": ">",
    "slash": "/", "quad": " ", "qquad": " ", "par": "\n\n", "newline": " ",
    "linebreak": " ", "break": " ", "space": " ", "enspace": " ", "thinspace": " ",
    "textquotedblleft": '"', "textquotedblright": '"', "textquoteleft": "'",
    "textquoteright": "'", "etal": "et al.", "ie": "i.e.", "eg": "e.g.",
}  # fmt: skip
_ACCENTS = {
    "'": "\u0301", "`": "\u0300", "^": "\u0302", '"': "\u0308", "~": "\u0303",
    "=": "\u0304", ".": "\u0307", "c": "\u0327", "v": "\u030c", "u": "\u0306",
    "H": "\u030b", "r": "\u030a", "k": "\u0328", "d": "\u0323", "b": "\u0331",
}  # fmt: skip
_TEXT_SYMBOLS = {
    "%": "%", "&": "&", "#": "#", "_": "_", "{": "{", "}": "}", "$": "\\$", " ": " ",
    "\n": " ", "\t": " ", ",": " ", ";": " ", ":": " ", "!": "", "/": "", "-": "", "@": "",
    "\\": " ", "|": "|", "<": "", ">": "",
}  # fmt: skip

# Environments dropped whole; those naming figures or tables keep their captions.
_SKIP_ENVIRONMENTS = _names(
    "figure table tikzpicture tikzcd thebibliography comment verbatim lstlisting minted "
    "picture pspicture filecontents xy wrapfigure wraptable algorithm algorithmic "
    "sidewaysfigure sidewaystable subfigure subtable SCfigure longtable forest"
)
# Environments whose mandatory arguments are layout, not text.
_ENVIRONMENT_ARGS = {
    "tabular": 1, "tabular*": 2, "tabularx": 2, "tabulary": 2, "minipage": 1,
    "multicols": 1, "list": 2, "adjustbox": 1, "wrapfigure": 2, "array": 1,
}  # fmt: skip
_DEFAULT_THEOREMS = {
    "theorem": "Theorem", "thm": "Theorem", "lemma": "Lemma", "lem": "Lemma",
    "proposition": "Proposition", "prop": "Proposition", "corollary": "Corollary",
    "cor": "Corollary", "coro": "Corollary", "definition": "Definition", "defn": "Definition",
    "dfn": "Definition", "defi": "Definition", "conjecture": "Conjecture",
    "conj": "Conjecture", "remark": "Remark", "rem": "Remark", "example": "Example",
    "claim": "Claim", "problem": "Problem", "question": "Question", "note": "Note",
    "notation": "Notation", "observation": "Observation", "fact": "Fact",
    "exercise": "Exercise", "assumption": "Assumption", "hypothesis": "Hypothesis",
}  # fmt: skip
_CAPTION = re.compile(r"\\caption\*?(?![A-Za-z@])")


def statement_kind(display_name: str) -> str | None:
    """Which of STATEMENT_KINDS a theorem-like title names ("Main Lemma" → lemma), if any."""
    words: list[str] = re.findall(r"[a-z]+", display_name.lower())
    for word in reversed(words):
        singular = word[:-1] if word.endswith("s") and word[:-1] in STATEMENT_KINDS else word
        if singular in STATEMENT_KINDS:
            return singular
    return None


@dataclass
class _OpenEnvironment:
    name: str
    statement: int = -1  # index into _Converter._statements, -1 when not a statement
    text_start: int = 0  # index into the output where the statement's text starts
    label: str = ""
    closer: str = ""  # emitted when the environment closes


@dataclass
class _PendingStatement:
    kind: str
    name: str
    label: str = ""
    text: str | None = None


class _Converter:
    """One linear pass over a document body in text mode (see the module docstring)."""

    def __init__(self, theorems: dict[str, str], problems: _Problems, depth: int = 0) -> None:
        self._theorems = {**_DEFAULT_THEOREMS, **theorems}
        self._problems = problems
        self._depth = depth  # how deep inside titles/names this converter runs
        self._missing: dict[str, int] = {}  # closer → a position after which it is absent
        self._out: list[str] = []
        self._groups: list[str] = []  # what to emit when each open brace closes
        self._environments: list[_OpenEnvironment] = []
        self._section_marks: list[tuple[int, str]] = [(0, "")]
        self._statements: list[_PendingStatement] = []
        self._words: dict[str, Callable[[str, str, int], int]] = {
            **dict.fromkeys(_SECTION_COMMANDS, self._section),
            **dict.fromkeys(_HEADING_COMMANDS, self._heading),
            **dict.fromkeys(_REF_COMMANDS, self._ref),
            **dict.fromkeys(_LAYOUT_ARGUMENTS, self._layout_arguments),
            **dict.fromkeys(_ACCENTS, self._accent),
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
            text = normalise_whitespace("".join(self._out[start:end]))
            if text or title:
                sections.append(Section(title, text))
        return tuple(sections)

    def statements(self) -> tuple[Statement, ...]:
        self._close_all()
        return tuple(
            Statement(pending.kind, pending.name, pending.label, pending.text)
            for pending in self._statements
            if pending.text
        )

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
                elif name in _DROP_COMMANDS:
                    end = self._drop_arguments(text, end, _DROP_COMMANDS[name])
                elif name in _SYMBOLS:
                    append(_SYMBOLS[name])
                else:
                    # An unknown macro (or a formatting one such as \emph): drop the
                    # macro and its [optional] argument, keep the text of its {arguments}.
                    optional = _read_optional(text, end)
                    if optional is not None:
                        end = optional[1]
            elif kind == "open":
                self._groups.append("")
            elif kind == "close":
                if self._groups:
                    closer = self._groups.pop()
                    if closer:
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
                close = _runaway_end(text, pos)
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
            close = _runaway_end(text, pos)
            self._emit_math(clean_math(text[pos:close]), display=True)
            return close
        self._emit_math(clean_math(text[pos:close]), display=closer == "\\]")
        return close + len(closer)

    def _environment_math(self, text: str, name: str, pos: int) -> int:
        base = name.rstrip("*")
        if base in ("alignat", "xalignat", "xxalignat"):
            group = _read_group(text, pos, self._problems, f"\\begin{{{name}}}")
            if group is not None:
                pos = group[1]
        close = self._find(text, _environment_end(name), pos)
        if close is None:
            self._problems.add(f"\\begin{{{name}}} without \\end{{{name}}}")
            end = _runaway_end(text, pos)
            self._emit_math(clean_math(text[pos:end], base in _MATH_ROW_ENVIRONMENTS), True)
            return end
        pieces = clean_math(text[pos : close[0]], base in _MATH_ROW_ENVIRONMENTS)
        self._emit_math(pieces, display=True)
        return close[1]

    def _ensuremath(self, text: str, name: str, pos: int) -> int:
        group = _read_group(text, pos, self._problems, "\\ensuremath")
        if group is None:
            return pos
        self._emit_math(clean_math(group[0]), display=False)
        return group[1]

    # -- environments

    def _begin(self, text: str, name: str, pos: int) -> int:
        base = name.rstrip("*")
        if base in _MATH_ENVIRONMENTS:
            return self._environment_math(text, name, pos)
        if name in _SKIP_ENVIRONMENTS or base in _SKIP_ENVIRONMENTS:
            return self._skip_environment(text, name, pos)
        if len(self._environments) >= MAX_OPEN_ENVIRONMENTS:
            self._problems.add(f"more than {MAX_OPEN_ENVIRONMENTS} nested environments")
            return pos
        title = self._theorems.get(name) or self._theorems.get(base)
        if title is not None or base == "proof":
            return self._begin_statement(text, name, title or "Proof", pos)
        for _ in range(_ENVIRONMENT_ARGS.get(name, 0)):
            group = _read_group(text, pos, self._problems, f"\\begin{{{name}}}")
            if group is not None:
                pos = group[1]
        optional = _read_optional(text, pos)
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
        optional = _read_optional(text, pos)
        statement_name = ""
        if optional is not None:
            statement_name = self._fragment(optional[0])
            pos = optional[1]
        heading = title
        if statement_name:
            heading = (
                statement_name if name.rstrip("*") == "proof" else f"{title} ({statement_name})"
            )
        self._out.append(f"\n\n{heading}. ")
        index = -1
        kind = statement_kind(title)
        if kind is not None:
            index = len(self._statements)
            self._statements.append(_PendingStatement(kind, statement_name))
        self._environments.append(_OpenEnvironment(name, index, len(self._out), closer="\n\n"))
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
            pending.text = normalise_whitespace("".join(self._out[environment.text_start :]))
            pending.label = environment.label
        if environment.closer:
            self._out.append(environment.closer)

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
        end = _runaway_end(text, pos)
        self._captions(text[pos:end], name)
        return end

    def _captions(self, content: str, name: str) -> None:
        if "fig" not in name and "table" not in name:
            return
        pos = 0
        while (match := _CAPTION.search(content, pos)) is not None:
            pos = max(self._caption(content, "caption", match.end()), match.end())

    def _caption(self, text: str, name: str, pos: int) -> int:
        optional = _read_optional(text, pos)
        if optional is not None:
            pos = optional[1]
        group = _read_group(text, pos, self._problems, "\\caption")
        if group is None:
            return pos
        caption = self._fragment(group[0])
        if caption:
            self._out.append(f"\n\n{caption}\n\n")
        return group[1]

    # -- commands with special handling

    def _drop_arguments(self, text: str, pos: int, count: int) -> int:
        """Skip a command's [optional] arguments and ``count`` mandatory ones."""
        while (optional := _read_optional(text, pos)) is not None:
            pos = optional[1]
        for _ in range(count):
            group = _read_group(text, pos, self._problems, "a command")
            if group is None:
                break
            pos = group[1]
            while (optional := _read_optional(text, pos)) is not None:
                pos = optional[1]
        return pos

    def _title_argument(self, text: str, pos: int, what: str) -> tuple[str, int]:
        optional = _read_optional(text, pos)
        if optional is not None:
            pos = optional[1]
        group = _read_group(text, pos, self._problems, what)
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
        self._out.append(REF_PLACEHOLDER)
        return self._drop_arguments(text, pos, 1)

    def _label(self, text: str, name: str, pos: int) -> int:
        group = _read_group(text, pos, self._problems, "\\label")
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
        return self._drop_arguments(text, pos, _LAYOUT_ARGUMENTS[name])

    def _item(self, text: str, name: str, pos: int) -> int:
        optional = _read_optional(text, pos)
        self._out.append("\n")
        if optional is not None:
            label = self._fragment(optional[0])
            if label:
                self._out.append(f"{label} ")
            pos = optional[1]
        return pos

    def _footnote(self, text: str, name: str, pos: int) -> int:
        optional = _read_optional(text, pos)
        if optional is not None:
            pos = optional[1]
        probe = _skip_spaces(text, pos)
        if probe < len(text) and text[probe] == "{":
            self._out.append(" (")
            self._groups.append(")")
            return probe + 1
        return pos

    def _front_matter(self, text: str, name: str, pos: int) -> int:
        optional = _read_optional(text, pos)
        if optional is not None:
            pos = optional[1]
        group = _read_group(text, pos, self._problems, f"\\{name}")
        if group is None:
            return pos
        value = self._fragment(group[0])
        if value:
            heading = "Keywords" if name == "keywords" else "Mathematics Subject Classification"
            self._out.append(f"\n\n{heading}: {value}\n\n")
        return group[1]

    def _accent(self, text: str, name: str, pos: int) -> int:
        argument = _read_argument(text, pos) if name.isalpha() else None
        if argument is None:
            if pos < len(text) and text[pos] == "{":
                argument = _read_argument(text, pos)
            elif pos < len(text) and not text[pos].isspace() and text[pos] != "\\":
                argument = (text[pos], pos + 1)
        if argument is None:
            return pos
        letter, end = argument
        if letter.startswith("\\"):  # \'\i: a symbol (or nothing)
            letter = _SYMBOLS.get(letter[1:], "")
        # Only plain letters take an accent: never emit a bare backslash, brace or dollar.
        letter = _CRUDE_MARKUP.sub("", letter)
        if letter:
            self._out.append(unicodedata.normalize("NFC", letter[0] + _ACCENTS[name]) + letter[1:])
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
        group = _read_group(text, pos, self._problems, "\\url")
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
        if char in _ACCENTS:
            return self._accent(text, char, pos)
        if char == "\\":
            # A line break, maybe starred and with a [length]: a space.
            if pos < len(text) and text[pos] == "*":
                pos += 1
            optional = _read_optional(text, pos)
            if optional is not None:
                pos = optional[1]
        replacement = _TEXT_SYMBOLS.get(char, "")
        if replacement:
            self._out.append(replacement)
        return pos


@functools.lru_cache(maxsize=512)
def _environment_end(name: str) -> re.Pattern[str]:
    return re.compile(r"\\end\s*\{" + re.escape(name) + r"\}")


@functools.lru_cache(maxsize=512)
def _environment_begin(name: str) -> re.Pattern[str]:
    return re.compile(r"\\begin\s*\{" + re.escape(name) + r"\}")


# --------------------------------------------------------------------------- chunking

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
    text. A final piece shorter than ``min_chunk_chars`` is started earlier instead, so
    short passages only happen when the whole text is short.
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
