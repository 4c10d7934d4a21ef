"""Where a hit's paper can be read: the link ingest recorded, as the papers table holds it.

Search decides nothing about links. Ingest gave each paper its link when it stored it
(its abstract page on arXiv; a Stacks chapter's source at the commit the corpus was copied
from; none for the synthetic sample, whose ids look like arXiv ids but name no real
paper), prepare carried it to ``papers.url`` and validate checked it is an https link.
"""

from __future__ import annotations

import pandas as pd


def paper_links(papers: pd.DataFrame) -> dict[str, str | None]:
    """Paper id -> its link, ``None`` where none is known (``""`` in the table, or a table
    written before papers carried links)."""
    if "url" not in papers.columns:
        return {}
    return {
        str(paper_id): str(url) if url else None
        for paper_id, url in zip(papers["paper_id"], papers["url"], strict=True)
    }
