"""The package tree of the layout page, generated from the code: every module of
``pipelines/``, ``flows/``, ``tooling/`` and ``mathembed/`` with its line count and the first
sentence of its docstring, so the page lists what is there now, not what was there when
someone wrote it down."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from params_page import escape_prose

# RST roles and literals of the docstrings, as Markdown code.
_ROLE = re.compile(r":(?:mod|func|class|meth|data|attr|obj):`~?([^`]+)`")
_LITERAL = re.compile(r"``([^`]+)``")
_SENTENCE_END = re.compile(r"(?<=[a-z0-9)`'\"])\.(?:\s|$)")


def summary(docstring: str | None) -> str:
    """The first sentence of a docstring's first paragraph, as Markdown."""
    if not docstring:
        return ""
    paragraph = " ".join(docstring.strip().split("\n\n")[0].split())
    end = _SENTENCE_END.search(paragraph)
    sentence = paragraph[: end.start() + 1] if end else paragraph
    sentence = _ROLE.sub(r"``\1``", sentence)
    return escape_prose(_LITERAL.sub(r"`\1`", sentence))


def _module_line(path: Path, depth: int) -> str:
    text = path.read_text(encoding="utf-8")
    lines = len(text.splitlines())
    about = summary(ast.get_docstring(ast.parse(text)))
    return f"{'    ' * depth}- `{path.name}` ({lines} lines){': ' + about if about else ''}"


def _package_lines(folder: Path, depth: int) -> list[str]:
    init = folder / "__init__.py"
    about = summary(ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))))
    lines = [f"{'    ' * depth}- **`{folder.name}/`**{': ' + about if about else ''}"]
    for module in sorted(folder.glob("*.py")):
        if module.name != "__init__.py":
            lines.append(_module_line(module, depth + 1))
    for child in sorted(path for path in folder.iterdir() if (path / "__init__.py").is_file()):
        lines += _package_lines(child, depth + 1)
    return lines


def package_tree(
    repo: Path, packages: tuple[str, ...] = ("pipelines", "flows", "tooling", "mathembed")
) -> str:
    """A nested Markdown list of ``packages`` under ``repo``."""
    lines: list[str] = []
    for package in packages:
        lines += _package_lines(repo / package, 0)
    return "\n".join(lines) + "\n"
