"""Where a hit's paper can be read: the one rule that turns a paper id into a link.

Only a link that is true is given. The demo's Stacks Project chapters (``stacks/2607001``,
...) link to their LaTeX source in the Stacks Project's own repository at the commit the
corpus was copied from (``corpora/stacks-project/README.md``); a paper fetched from arXiv
links to its abstract page; the synthetic sample's ids look like arXiv ids but name no
real paper, so they get no link at all rather than someone else's paper.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pipelines.ingest.sample.corpus import ID_ARCHIVE, load_corpus_manifest

ARXIV_ABS = "https://arxiv.org/abs/"
#: The commit ``corpora/stacks-project/`` was copied from, byte for byte (its README).
STACKS_COMMIT = "4ac4815d5a00dc2eacab7824cf4e4baafe2773ac"
STACKS_SOURCE = f"https://github.com/stacks/stacks-project/blob/{STACKS_COMMIT}/"


def paper_url(paper_id: str, *, from_arxiv: bool, stacks_chapters: Mapping[str, str]) -> str | None:
    """The link for ``paper_id``, or ``None`` when no true one is known.

    ``from_arxiv``: the corpus was harvested from arXiv (``ingest.source: arxiv``);
    ``stacks_chapters``: Stacks paper id -> chapter file (``categories.tex``).
    """
    if paper_id.startswith(f"{ID_ARCHIVE}/"):
        chapter = stacks_chapters.get(paper_id)
        return f"{STACKS_SOURCE}{chapter}" if chapter else None
    return f"{ARXIV_ABS}{paper_id}" if from_arxiv else None


def stacks_chapters(mirror_dir: Path) -> dict[str, str]:
    """Paper id -> chapter file of the Stacks mirror in ``mirror_dir``; empty for any other
    mirror (the synthetic sample) or none."""
    try:
        manifest = load_corpus_manifest(mirror_dir)
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return {}
    return {record.paper_id: record.chapter for record in manifest.versions}
