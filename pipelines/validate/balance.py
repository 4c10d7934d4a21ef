"""Corpus balance: no paper may hold an absurd share of all passages.

Each paper's chunks can be fine one by one while the paper as a whole is not: a macro
bomb once turned a 187-byte gzip into 260,002 passages, and every row-level check passed
them. Training on such a corpus learns one paper. The check is structural (validate stops)
and only judges a corpus of at least :data:`MIN_PAPERS` papers: in a tiny one a single long
paper may well hold most passages.
"""

from __future__ import annotations

import pandas as pd

CHECK = "paper_share"
MAX_PAPER_SHARE = 0.5  # more passages than all other papers together
MIN_PAPERS = 10


def dominant_papers(chunks: pd.DataFrame) -> pd.Series:
    """Passages per paper of the papers above :data:`MAX_PAPER_SHARE` of ``chunks``."""
    per_paper = chunks["paper_id"].value_counts()
    if len(per_paper) < MIN_PAPERS:
        return per_paper.iloc[:0]
    return per_paper[per_paper > MAX_PAPER_SHARE * len(chunks)]


def describe(dominant: pd.Series, chunks: pd.DataFrame) -> tuple[tuple[str, ...], str]:
    """Examples (one line per paper) and the note of a failed balance check."""
    total = len(chunks)
    examples = tuple(
        f"paper {paper_id}: {count:,} of {total:,} passages ({count / total:.0%})"
        for paper_id, count in dominant.items()
    )
    papers = chunks["paper_id"].nunique()
    note = (
        f"a paper holds more than {MAX_PAPER_SHARE:.0%} of the passages of {papers} papers "
        "(a macro bomb or a broken source): rerun mathembed prepare, which quarantines "
        "such papers, or remove the paper from data/raw"
    )
    return examples, note
