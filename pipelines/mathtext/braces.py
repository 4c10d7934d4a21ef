"""Where a TeX group closes: the ``}`` matching a ``{``, read forward as TeX reads it (a
backslash escapes the next character, so ``\\{`` and ``\\}`` count for nothing).

Prepare reads macro arguments with it (behind its runaway limit and per-text brace index,
:mod:`pipelines.prepare.latex.source`); search finds where a diagram's group ends in a
passage (:mod:`pipelines.search.snippets`).
"""

from __future__ import annotations

import re

#: A backslash with the character it escapes, or a brace: what a forward scan reads.
BRACE_SCAN = re.compile(r"\\.|[{}]", re.S)


def closing_brace(text: str, open_pos: int, limit: int | None = None) -> int:
    """Index of the ``}`` closing the group that opens at ``open_pos`` (a ``{``), looked for
    before ``limit`` (default: the text's end); -1 when it does not close before then."""
    depth = 0
    end = len(text) if limit is None else limit
    for match in BRACE_SCAN.finditer(text, open_pos, end):
        token = match.group()
        if token == "{":
            depth += 1
        elif token == "}":
            depth -= 1
            if depth == 0:
                return match.start()
    return -1
