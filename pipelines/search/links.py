"""Where a hit can be read: its paper's link, as ingest recorded it, and the statement's own.

Search decides nothing about a paper's link. Ingest gave each paper its link when it stored
it (its abstract page on arXiv; a Stacks chapter's source at the commit the corpus was
copied from; none for the synthetic sample, whose ids look like arXiv ids but name no real
paper), prepare carried it to ``papers.url`` and validate checked it is an https link.

A statement's link goes further, to the statement itself (:func:`statement_link`): a Stacks
result has a permanent tag, its page at ``https://stacks.math.columbia.edu/tag/TAG``; the
book's tags file (``corpora/stacks-project/tags``, lines ``TAG,chapter-label``) gives it.
Elsewhere the paper's link says where: an arXiv abstract page with the label as its anchor,
or a source file with the statement's line as ``#L<n>`` when that line is known (prepare
records no lines yet, so today the source file itself).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from urllib.parse import quote

import pandas as pd

from pipelines.common.paths import STACKS_CORPUS_DIR
from pipelines.common.tables import ARXIV_ABS

#: The Stacks Project's tags file, relative to the project root (its README says whence).
STACKS_TAGS_FILE = STACKS_CORPUS_DIR / "tags"
#: A result's page, by its tag: ``STACKS_TAG_PAGE + "010H"``.
STACKS_TAG_PAGE = "https://stacks.math.columbia.edu/tag/"
# A Stacks chapter's source, as ingest links it: the chapter is the file's name.
_STACKS_SOURCE = re.compile(
    r"^https://github\.com/stacks/stacks-project/blob/[^/]+/(?P<chapter>[\w-]+)\.tex$"
)
_TAG = re.compile(r"^[0-9A-Z]{4}$")


def paper_links(papers: pd.DataFrame) -> dict[str, str | None]:
    """Paper id -> its link, ``None`` where none is known (``""`` in the table, or a table
    written before papers carried links)."""
    if "url" not in papers.columns:
        return {}
    return {
        str(paper_id): str(url) if url else None
        for paper_id, url in zip(papers["paper_id"], papers["url"], strict=True)
    }


def parse_tags(lines: Iterable[str]) -> dict[str, str]:
    """The tags file's lines -> full label (``homology-lemma-snake``) -> tag (``010H``);
    comments (``#``), blank and malformed lines are skipped."""
    tags: dict[str, str] = {}
    for line in lines:
        tag, comma, label = line.strip().partition(",")
        if comma and _TAG.match(tag) and label:
            tags[label] = tag
    return tags


def read_tags(root: Path) -> dict[str, str]:
    """The Stacks tags of the checkout at ``root``; empty when it holds no tags file."""
    path = root / STACKS_TAGS_FILE
    if not path.is_file():
        return {}
    return parse_tags(path.read_text(encoding="utf-8").splitlines())


def stacks_chapter(paper_url: str | None) -> str | None:
    """The Stacks chapter a paper is, from its link (``…/blob/<commit>/homology.tex`` ->
    ``homology``); ``None`` for any other paper."""
    match = _STACKS_SOURCE.match(paper_url or "")
    return match.group("chapter") if match else None


def stacks_tag(label: str, chapter: str | None, tags: Mapping[str, str]) -> str | None:
    """A label's tag: the tags file spells labels ``chapter-label`` (``homology-lemma-snake``),
    a chapter's own LaTeX ``lemma-snake``; a label already in full is looked up as it is."""
    if not label:
        return None
    if chapter is not None and (tag := tags.get(f"{chapter}-{label}")) is not None:
        return tag
    return tags.get(label)


def statement_link(
    label: str,
    paper_url: str | None,
    tags: Mapping[str, str],
    *,
    line: int | None = None,
) -> str | None:
    """Where a statement can be read: its Stacks tag page when its tag is known; else its
    arXiv abstract page with the label as anchor (``…/abs/2401.00007#lemma-key``); else its
    paper's source with the statement's line (``…/file.tex#L1012``) when known; else its
    paper's link (``None``: none)."""
    tag = stacks_tag(label, stacks_chapter(paper_url), tags)
    if tag is not None:
        return STACKS_TAG_PAGE + tag
    if paper_url is None:
        return None
    if paper_url.startswith(ARXIV_ABS):
        return f"{paper_url}#{quote(label, safe=':-_.')}" if label else paper_url
    if line is not None and line > 0 and "#" not in paper_url:
        return f"{paper_url}#L{line}"
    return paper_url
