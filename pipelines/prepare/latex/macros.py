"""User macros: ``\\newcommand`` and friends collected from a document, then expanded.

``\\newcommand`` / ``\\renewcommand`` / ``\\providecommand`` / ``\\DeclareMathOperator`` /
``\\def`` / ``\\let`` / ``\\newenvironment``, with ``[n]`` arguments and an optional
first-argument default, defined in the preamble or the body, are expanded everywhere (math
included). Expansion repeats until nothing changes, for nested macros, but at most
:data:`MAX_EXPANSION_PASSES` passes, so a recursive macro cannot loop; and the text may
never grow past :func:`expansion_limit` (checked while it is built, so a macro bomb stops
before it takes the memory): crossing it raises :class:`ExpansionLimitError`. The last
definition of a name wins. Delimited ``\\def`` parameters and redefinitions of structural
commands (``\\section``, ``\\begin``, ...) are not expanded. ``\\newtheorem`` declarations
are collected for the converter.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from pipelines.prepare.latex.converter import clean_inline
from pipelines.prepare.latex.source import (
    CONTROL_SEQUENCE,
    Problems,
    name_set,
    read_argument,
    read_group,
    read_optional,
    skip_spaces,
)
from pipelines.prepare.latex.vocabulary import BLUEPRINT_MARKUP, SLOGAN_ENVIRONMENTS

MAX_EXPANSION_PASSES = 10
MAX_EXPANSION_GROWTH = 4  # expanded body may be at most this many times the original (+64 KiB)
EXPANSION_SLACK = 65_536  # so that a short paper with a few long macros is never stopped


class ExpansionLimitError(ValueError):
    """Macro expansion crossed :func:`expansion_limit`: a macro bomb or a runaway macro."""


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
_PROTECTED = name_set(
    "begin end section subsection subsubsection paragraph chapter part label ref cite item "
    "newcommand renewcommand providecommand def gdef edef xdef let newenvironment newtheorem "
    "documentclass usepackage input include ensuremath text"
).union(BLUEPRINT_MARKUP)  # dropped by the converter, however a paper defines them

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


def collect_definitions(text: str, definitions: Definitions, problems: Problems) -> str:
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
    pos = skip_spaces(text, pos)
    if pos < len(text) and text[pos] == "{":
        group = read_group(text, pos, Problems(), "a definition")
        if group is None:
            return None
        name = group[0].strip()
        if not name.startswith("\\"):
            return None
        return name[1:], group[1]
    match = CONTROL_SEQUENCE.match(text, pos)
    if match is None:
        return None
    return match.group()[1:], match.end()


def _parse_newcommand(
    text: str, pos: int, command: str, definitions: Definitions, problems: Problems
) -> int:
    named = _read_name(text, pos)
    if named is None:
        problems.add(f"unreadable \\{command}")
        return pos
    name, pos = named
    n_args = 0
    default: str | None = None
    if command != "DeclareMathOperator":
        count = read_optional(text, pos)
        if count is not None:
            try:
                n_args = min(max(int(count[0].strip()), 0), 9)
            except ValueError:
                problems.add(
                    f"\\{command}{{\\{name}}}: argument count {count[0]!r} is not a number"
                )
            pos = count[1]
            optional = read_optional(text, pos)
            if optional is not None and n_args > 0:
                default, pos = optional
    body = read_group(text, pos, problems, f"\\{command}{{\\{name}}}")
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
    text: str, pos: int, command: str, definitions: Definitions, problems: Problems
) -> int:
    named = _read_name(text, pos)
    if named is None:
        problems.add(f"unreadable \\{command}")
        return pos
    name, pos = named
    if command == "let":
        pos = skip_spaces(text, pos)
        if pos < len(text) and text[pos] == "=":
            pos = skip_spaces(text, pos + 1)
        target = CONTROL_SEQUENCE.match(text, pos)
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
    body = read_group(text, brace, problems, f"\\{command}\\{name}")
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


def _parse_newenvironment(text: str, pos: int, definitions: Definitions, problems: Problems) -> int:
    group = read_group(text, pos, problems, "\\newenvironment")
    if group is None:
        problems.add("unreadable \\newenvironment")
        return pos
    name, pos = group[0].strip(), group[1]
    n_args = 0
    default: str | None = None
    count = read_optional(text, pos)
    if count is not None:
        try:
            n_args = min(max(int(count[0].strip()), 0), 9)
        except ValueError:
            problems.add(f"\\newenvironment{{{name}}}: bad argument count {count[0]!r}")
        pos = count[1]
        optional = read_optional(text, pos)
        if optional is not None and n_args > 0:
            default, pos = optional
    begin_code = read_group(text, pos, problems, f"\\newenvironment{{{name}}}")
    if begin_code is None:
        problems.add(f"\\newenvironment{{{name}}} has no body")
        return pos
    end_code = read_group(text, begin_code[1], problems, f"\\newenvironment{{{name}}}")
    if end_code is None:
        problems.add(f"\\newenvironment{{{name}}} has no end code")
        return begin_code[1]
    if name and name not in _PROTECTED_ENVIRONMENTS:
        begin_macro = Macro(n_args, default, _compile_body(begin_code[0], n_args))
        definitions.environments[name] = (begin_macro, end_code[0])
    return end_code[1]


# A slogan is kept for the converter even where a preamble hides it (the Stacks Project
# defines it as a comment): it is a statement's summary written by people.
_PROTECTED_ENVIRONMENTS = frozenset({"document", *SLOGAN_ENVIRONMENTS})


def _parse_newtheorem(text: str, pos: int, definitions: Definitions) -> int:
    """``\\newtheorem{env}[counter]{Title}[within]``: remember env → Title."""
    problems = Problems()  # a malformed \newtheorem just declares nothing
    group = read_group(text, pos, problems, "\\newtheorem")
    if group is None:
        return pos
    environment, pos = group[0].strip(), group[1]
    shared = read_optional(text, pos)
    if shared is not None:
        pos = shared[1]
    title = read_group(text, pos, problems, "\\newtheorem")
    if title is None:
        return pos
    pos = title[1]
    within = read_optional(text, pos)
    if within is not None:
        pos = within[1]
    if environment:
        definitions.theorems[environment] = clean_inline(title[0]) or environment
    return pos


# --------------------------------------------------------------------------- macro expansion


def expansion_limit(source_chars: int) -> int:
    """The most characters macro expansion may produce from ``source_chars`` characters."""
    return MAX_EXPANSION_GROWTH * source_chars + EXPANSION_SLACK


def expand_macros(text: str, definitions: Definitions, problems: Problems) -> str:
    """Expand the user macros and environments in ``text`` until none is left (bounded).

    Raises :class:`ExpansionLimitError` the moment the output would pass
    :func:`expansion_limit` of ``len(text)``: a 187-byte gzip of ``\\def\\a{…}`` used 20k
    times would otherwise expand to hundreds of MB in one pass.
    """
    pattern = _usage_pattern(
        tuple(sorted(definitions.macros)), tuple(sorted(definitions.environments))
    )
    if pattern is None:
        return text
    source_chars = len(text)
    limit = expansion_limit(source_chars)
    for _pass in range(MAX_EXPANSION_PASSES):
        try:
            text, expanded = _expand_once(text, pattern, definitions, problems, limit)
        except ExpansionLimitError as error:
            raise ExpansionLimitError(
                f"{error} ({source_chars:,} characters before expansion, limit {limit:,})"
            ) from None
        if expanded == 0:
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
    text: str, pattern: re.Pattern[str], definitions: Definitions, problems: Problems, limit: int
) -> tuple[str, int]:
    """One pass over ``text``; raises :class:`ExpansionLimitError` past ``limit`` characters."""
    pieces: list[str] = []
    size = 0  # characters in ``pieces``: checked as they are added, so memory stays bounded
    pos = 0
    count = 0
    while (match := pattern.search(text, pos)) is not None:
        end = match.end()
        if match.lastgroup == "env":
            begin_macro, end_code = definitions.environments[match.group("env")]
            if match.group("edge") == "end":
                replacement = end_code
            else:
                replacement, end = _apply(begin_macro, text, end, problems, limit - size)
        else:
            name = match.group(match.lastgroup or 0)
            replacement, end = _apply(definitions.macros[name], text, end, problems, limit - size)
        size += match.start() - pos + len(replacement)
        if size > limit:
            raise _too_large()
        pieces.append(text[pos : match.start()])
        pieces.append(replacement)
        pos = end
        count += 1
    if count == 0:
        return text, 0
    pieces.append(text[pos:])
    return "".join(pieces), count


def _too_large() -> ExpansionLimitError:
    return ExpansionLimitError(
        f"macro expansion would grow the text past {MAX_EXPANSION_GROWTH}x the source + 64 KiB: "
        "a macro bomb or a runaway macro"
    )


def _apply(macro: Macro, text: str, pos: int, problems: Problems, budget: int) -> tuple[str, int]:
    """The expansion of ``macro`` whose arguments start at ``pos``; and where they end.

    Raises :class:`ExpansionLimitError` before joining an expansion longer than ``budget``
    (one ``#1`` repeated in a body times a long argument is a bomb in a single call).
    """
    if macro.n_args == 0:
        return "".join(part for part in macro.parts if isinstance(part, str)), pos
    arguments: list[str] = []
    if macro.default is not None:
        optional = read_optional(text, pos)
        if optional is None:
            arguments.append(macro.default)
        else:
            arguments.append(optional[0])
            pos = optional[1]
    while len(arguments) < macro.n_args:
        argument = read_argument(text, pos)
        if argument is None:
            problems.add("a macro is missing an argument; expanded with an empty one")
            arguments.append("")
            continue
        arguments.append(argument[0])
        pos = argument[1]
    length = sum(
        len(arguments[part]) if isinstance(part, int) else len(part) for part in macro.parts
    )
    if length > budget:
        raise _too_large()
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
