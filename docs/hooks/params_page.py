"""The configuration reference, generated from ``params.yaml`` and the declared types.

Each knob's row comes from two places that the code itself reads, so the page cannot
drift from them: its value and its comment from ``params.yaml`` (the one place defaults
are written), what it may hold from its field in :mod:`pipelines.common.config` (the type
and the ``Range``/``NonEmpty``/... rules of :mod:`pipelines.common.allowed` that the
loader checks). A comment-only line inside a section is a note on the keys after it.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Literal

from pipelines.common.allowed import Allowed, NonEmpty, Range
from pipelines.common.config import Params

# -- params.yaml, read as a person reads it: values and comments ------------------------


@dataclass
class Knob:
    """One ``section.key`` line of params.yaml (and its comment's continuation lines)."""

    key: str
    value: str
    comment: str
    note: str = ""  # a comment-only line at key level just above this key


@dataclass
class Section:
    name: str
    comment: str
    knobs: list[Knob] = field(default_factory=list)


@dataclass
class ParamsFile:
    header: str
    sections: list[Section]


_SECTION = re.compile(r"^([A-Za-z_]\w*):(.*)$")
_KEY = re.compile(r"^( +)([A-Za-z_]\w*):(.*)$")
_COMMENT_ONLY = re.compile(r"^( *)#(.*)$")


def _split_comment(rest: str) -> tuple[str, str]:
    """``' 3.0   # why'`` -> ``('3.0', 'why')``: a ``#`` outside quotes after a space."""
    quote = ""
    for index, char in enumerate(rest):
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == "#" and (index == 0 or rest[index - 1].isspace()):
            return rest[:index].strip(), rest[index + 1 :].strip()
    return rest.strip(), ""


def _join(text: str, more: str) -> str:
    return f"{text} {more}".strip() if more else text


def read_params_file(text: str) -> ParamsFile:
    """params.yaml's sections, keys, raw values and comments, in file order."""
    header_lines: list[str] = []
    sections: list[Section] = []
    pending_note = ""
    last: Knob | Section | None = None
    key_indent = 0
    for line in text.splitlines():
        if not line.strip():
            last = None if sections else last  # a blank line ends a comment's continuation
            continue
        comment_only = _COMMENT_ONLY.match(line)
        if comment_only:
            indent, words = len(comment_only.group(1)), comment_only.group(2).strip()
            if not sections:
                header_lines.append(words)
            elif last is not None and indent > key_indent:
                last.comment = _join(last.comment, words)  # aligned under the comment above
            else:
                pending_note = _join(pending_note, words)
                last = None
            continue
        section = _SECTION.match(line)
        if section:
            value, comment = _split_comment(section.group(2))
            if value:
                raise ValueError(f"params.yaml: top-level {section.group(1)!r} is not a section")
            sections.append(Section(section.group(1), comment))
            last, pending_note = sections[-1], ""
            continue
        key = _KEY.match(line)
        if not key or not sections:
            raise ValueError(f"params.yaml: cannot read the line {line!r}")
        key_indent = len(key.group(1))
        value, comment = _split_comment(key.group(3))
        knob = Knob(key.group(2), value, comment, note=pending_note)
        sections[-1].knobs.append(knob)
        last, pending_note = knob, ""
    return ParamsFile(" ".join(header_lines), sections)


# -- what a knob may hold, from its declared type ----------------------------------------

_TYPE_NAMES = {int: "int", float: "number", str: "text", bool: "`true` or `false`"}


def _number(value: float) -> str:
    text = f"{value:g}"
    return text if "e" not in text else f"{value:,.0f}"


def describe_range(rule: Range) -> str:
    """``Range(0, 1, high_open=True)`` -> ``in [0, 1)``; ``Range(1)`` -> ``≥ 1``."""
    if rule.low is not None and rule.high is not None:
        left, right = "(" if rule.low_open else "[", ")" if rule.high_open else "]"
        return f"in {left}{_number(rule.low)}, {_number(rule.high)}{right}"
    if rule.low is not None:
        return f"{'>' if rule.low_open else '≥'} {_number(rule.low)}"
    assert rule.high is not None
    return f"{'<' if rule.high_open else '≤'} {_number(rule.high)}"


def describe_type(hint: Any) -> str:
    """What a field of a params section may hold, in the words of the page."""
    if typing.get_origin(hint) is typing.Annotated:
        inner, *metadata = typing.get_args(hint)
        return _describe_annotated(inner, [item for item in metadata if isinstance(item, Allowed)])
    origin = typing.get_origin(hint)
    if origin is Literal:
        choices = [f"`{choice}`" for choice in typing.get_args(hint)]
        return choices[0] if len(choices) == 1 else "one of " + ", ".join(choices)
    if origin is tuple:
        return f"list of {describe_type(typing.get_args(hint)[0])}"
    if origin in (typing.Union, types.UnionType):
        return " or ".join(describe_type(member) for member in typing.get_args(hint))
    if hint in _TYPE_NAMES:
        return _TYPE_NAMES[hint]
    raise TypeError(f"no description for the params type {hint!r}; add it to {__name__}")


def _describe_annotated(inner: Any, rules: list[Allowed]) -> str:
    """A type with its rules: ``int ≥ 1``, ``non-empty list of text``, ``a date ...``."""
    base = describe_type(inner)
    words: list[str] = []
    for rule in rules:
        if isinstance(rule, Range):
            words.append(f"{base} {describe_range(rule)}")
        elif isinstance(rule, NonEmpty):
            words.append(f"non-empty {base}")
        else:
            words.append(rule.describe())  # its own words name the type: "a date YYYY-MM-DD"
    return "; ".join(words) if words else base


def section_types() -> dict[str, dict[str, Any]]:
    """``{section: {key: type hint}}`` of :class:`pipelines.common.config.Params`."""
    sections: dict[str, dict[str, Any]] = {}
    for section in dataclasses.fields(Params):
        section_class = typing.get_type_hints(Params)[section.name]
        sections[section.name] = typing.get_type_hints(section_class, include_extras=True)
    return sections


# -- the page ---------------------------------------------------------------------------


_MARKDOWN_SPECIALS = re.compile(r"([\\`*_$|<\[\]])")


def escape_prose(text: str) -> str:
    """``text`` shown as written in params.yaml: Markdown's and arithmatex's special
    characters escaped outside its `code spans`, a table's ``|`` escaped everywhere."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code spans
        parts = [text]
    shown = [
        part.replace("|", "\\|") if index % 2 else _MARKDOWN_SPECIALS.sub(r"\\\1", part)
        for index, part in enumerate(parts)
    ]
    return "`".join(shown)


def _value_cell(value: str) -> str:
    return f"`{value}`" if value else ""


def configuration_tables(params_text: str) -> str:
    """One heading and table per section of ``params_text``: key, value, allowed, meaning."""
    params = read_params_file(params_text)
    declared = section_types()
    lines: list[str] = []
    for section in params.sections:
        hints = declared.get(section.name)
        if hints is None:
            raise ValueError(f"params.yaml section {section.name!r} is not in config.Params")
        lines += [f"### `{section.name}`", ""]
        if section.comment:
            lines += [escape_prose(section.comment), ""]
        table_open = False
        for knob in section.knobs:
            if knob.key not in hints:
                raise ValueError(f"params.yaml key {section.name}.{knob.key} is not declared")
            if knob.note:
                note = escape_prose(knob.note)
                lines += ["", note, ""] if table_open else [note, ""]
                table_open = False
            if not table_open:
                lines += ["| key | value | allowed | meaning |", "| --- | --- | --- | --- |"]
                table_open = True
            allowed = describe_type(hints[knob.key])
            row = [f"`{knob.key}`", _value_cell(knob.value), allowed, knob.comment]
            lines.append("| " + " | ".join(escape_prose(cell) for cell in row) + " |")
        lines.append("")
    return "\n".join(lines)
