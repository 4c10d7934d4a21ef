"""MkDocs hooks of the mathembed docs (``hooks:`` in ``mkdocs.yml``).

- A page's ``<!-- generated: NAME -->`` line is replaced at build time by what the code
  says now: ``configuration`` (params.yaml's knobs with their declared ranges,
  :mod:`params_page`), ``layout`` (the package tree, :mod:`layout_page`) and
  ``demo-figures`` (the demo's figures from its records in ``metrics/``,
  :mod:`record_figures`, which also writes the README's copy).
- Markdown files kept beside the code (``infra/README.md``, ``benchmarks/README.md``, the
  records in ``benchmarks/results/``) become pages as they are (:mod:`repo_pages`); the
  records are listed in the navigation under Benchmarks.
- KaTeX is copied into the site from the copy the search service serves
  (``pipelines/search/static/katex/``): the pages render ``$…$`` with no CDN.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from layout_page import package_tree
from params_page import configuration_tables
from record_figures import BLOCKS, read_records
from repo_pages import repo_pages, results_pages, rewrite_links

REPO = Path(__file__).resolve().parents[2]
PARAMS_YAML = REPO / "params.yaml"
KATEX = REPO / "pipelines" / "search" / "static" / "katex"
#: Where the site serves KaTeX from (mkdocs.yml's extra_javascript/extra_css name it).
KATEX_SITE_FOLDER = "assets/katex"
#: The navigation section the benchmark records are appended to.
BENCHMARKS_NAV = "Benchmarks"

_MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)


def generated(name: str) -> str:
    """The Markdown that stands for ``<!-- generated: name -->``."""
    if name == "configuration":
        return configuration_tables(PARAMS_YAML.read_text(encoding="utf-8"))
    if name == "layout":
        return package_tree(REPO)
    if name in BLOCKS:
        return BLOCKS[name](read_records())
    known = ", ".join(("configuration", "layout", *BLOCKS))
    raise ValueError(f"unknown generated block {name!r}; known: {known}")


def expand(markdown: str) -> str:
    """``markdown`` with every generated marker replaced."""
    return _MARKER.sub(lambda match: generated(match.group(1)), markdown)


def on_config(config: Any) -> Any:
    records = results_pages(repo_pages(REPO))
    for entry in config["nav"]:
        if isinstance(entry, dict) and BENCHMARKS_NAV in entry:
            entry[BENCHMARKS_NAV].append({"Records": records})
            return config
    raise ValueError(f"mkdocs.yml's nav has no {BENCHMARKS_NAV!r} section for the records")


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File  # only mkdocs runs this hook

    for page, source in repo_pages(REPO).items():
        files.append(File.generated(config, page, abs_src_path=str(REPO / source)))
    if not (KATEX / "katex.min.js").is_file():
        raise FileNotFoundError(f"{KATEX} lacks katex.min.js: the docs render math with it")
    for path in sorted(KATEX.rglob("*")):
        # What the pages load, and KaTeX's MIT licence (the minified files carry none).
        if path.is_file() and (path.suffix in {".js", ".css", ".woff2"} or path.name == "LICENSE"):
            uri = f"{KATEX_SITE_FOLDER}/{path.relative_to(KATEX).as_posix()}"
            files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    pages = repo_pages(REPO)
    if page.file.src_uri in pages:
        return rewrite_links(markdown, page.file.src_uri, pages)
    return expand(markdown)
