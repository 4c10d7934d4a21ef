"""Math mode: one math block's content → the ``$…$`` pieces the cleaned text keeps.

Content is kept verbatim except: whitespace collapsed, ``\\label`` / ``\\tag`` /
``\\nonumber`` / ``\\notag`` removed, nested ``$`` removed, and the rows of a multi-row
environment (top-level ``\\\\``) written as separate ``$…$`` with their alignment ``&``
removed.
"""

from __future__ import annotations

import re

from pipelines.prepare.latex.source import name_set

MATH_ROW_ENVIRONMENTS = name_set("align flalign alignat eqnarray gather xalignat xxalignat")
MATH_ENVIRONMENTS = name_set(
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
