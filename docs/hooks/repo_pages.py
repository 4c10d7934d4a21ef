"""Markdown files that live beside the code, shown in the site as they are.

``infra/README.md``, ``benchmarks/README.md``, every record in ``benchmarks/results/`` and
the corpus's note of origin stay where their code is (one place each); the site shows them
as pages. A relative link in them that points at another such file becomes a link to its
page; one that points at anything else (a JSON record, a script) becomes its repository
path in code, since the site does not carry it.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

# The fixed ones: site page -> file in the repository.
_FIXED = {
    "operations/infra.md": "infra/README.md",
    "benchmarks/method.md": "benchmarks/README.md",
    "reference/stacks-project.md": "corpora/stacks-project/README.md",
}
RESULTS_FOLDER = "benchmarks/results"

_LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\(([^)\s]+)\)")


def repo_pages(repo: Path) -> dict[str, str]:
    """Site page (``src_uri``) -> repository path, for every file shown as it is."""
    pages = {page: source for page, source in _FIXED.items() if (repo / source).is_file()}
    for record in sorted((repo / RESULTS_FOLDER).glob("*.md")):
        pages[f"{RESULTS_FOLDER}/{record.name}"] = f"{RESULTS_FOLDER}/{record.name}"
    return pages


def results_pages(pages: dict[str, str]) -> list[str]:
    return [page for page in pages if page.startswith(f"{RESULTS_FOLDER}/")]


def rewrite_links(markdown: str, page: str, pages: dict[str, str]) -> str:
    """``markdown`` of ``page`` (shown from ``pages[page]``) with its relative links
    pointing at site pages, or at repository paths in code where no page exists."""
    source_dir = posixpath.dirname(pages[page])
    page_of = {source: site_page for site_page, source in pages.items()}

    def replace(match: re.Match[str]) -> str:
        text, target = match.group(1), match.group(2)
        if "://" in target or target.startswith(("#", "mailto:")):
            return match.group(0)
        path, _, anchor = target.partition("#")
        source = posixpath.normpath(posixpath.join(source_dir, path))
        if source in page_of:
            url = posixpath.relpath(page_of[source], posixpath.dirname(page))
            return f"[{text}]({url}{'#' + anchor if anchor else ''})"
        shown = f"`{source}`"
        return shown if text.strip("`") == path else f"{text} ({shown})"

    return _LINK.sub(replace, markdown)
