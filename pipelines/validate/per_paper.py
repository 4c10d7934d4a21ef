"""Row-level failures judged per paper: one bad paper is set aside whole, not the corpus
(issue 23, finding 4).

``max_row_failure_fraction`` stops the run when too much of a table fails its row-level
checks: a stage that broke. But one legitimate-looking paper can hold that much alone (220
display equations of 4,200 characters each were 5.7 % of a 3,833-passage corpus), and then
every night failed for it. So, in a table whose rows belong to papers: a paper with more
than ``max_paper_row_failure_fraction`` of its rows failing is quarantined whole, and the
threshold counts the rows of the other papers only. At most ``max(1, ⌊max_row_failure_fraction
× papers⌋)`` papers are set aside this way, the worst first: more bad papers than that is
the stage's fault, not a paper's, and they stay in the count.

Pure functions over the checked frames; :mod:`pipelines.validate.stage` applies them.
"""

from __future__ import annotations

import math

import pandas as pd

from pipelines.common.config import ValidateParams

PAPER_COLUMN = "paper_id"
#: ``failed_check`` of a set-aside paper's rows that passed every check themselves.
PAPER_CHECK = "max_paper_row_failure_fraction"
#: Papers named in a message, at most.
PAPERS_NAMED = 5


def judged_per_paper(table: str, frame: pd.DataFrame) -> bool:
    """Whether ``table``'s rows are parts of papers (not the papers table itself)."""
    return table != "papers" and PAPER_COLUMN in frame.columns


def failing_per_paper(frame: pd.DataFrame, failing: pd.Index) -> list[tuple[str, int]]:
    """(paper, failing rows) for each paper with some, most first (ties by paper id)."""
    counts = frame.loc[failing, PAPER_COLUMN].value_counts()
    pairs = [(str(paper), int(count)) for paper, count in counts.items()]
    return sorted(pairs, key=lambda pair: (-pair[1], pair[0]))


def papers_set_aside(
    table: str, frame: pd.DataFrame, failing: pd.Index, params: ValidateParams
) -> list[str]:
    """The papers of ``frame`` quarantined whole (see the module docstring), sorted."""
    if failing.empty or not judged_per_paper(table, frame):
        return []
    rows_of = {
        str(paper): int(count) for paper, count in frame[PAPER_COLUMN].value_counts().items()
    }
    over = [
        paper
        for paper, count in failing_per_paper(frame, failing)
        if count > params.max_paper_row_failure_fraction * rows_of[paper]
    ]
    allowed = max(1, math.floor(params.max_row_failure_fraction * len(rows_of)))
    return sorted(over[:allowed])


def rows_of_papers(frame: pd.DataFrame, papers: list[str]) -> pd.Index:
    """The row labels of ``papers`` in ``frame``."""
    if not papers:
        return frame.index[:0]
    return frame.index[frame[PAPER_COLUMN].isin(papers).to_numpy()]


def with_set_aside(labels: pd.Series, frame: pd.DataFrame, papers: list[str]) -> pd.Series:
    """``labels`` (failing row -> its checks) plus the set-aside papers' other rows."""
    rest = rows_of_papers(frame, papers).difference(labels.index)
    if rest.empty:
        return labels
    together: pd.Series = pd.concat([labels, pd.Series(PAPER_CHECK, index=rest, dtype="str")])
    return together.sort_index()


def describe(frame: pd.DataFrame, failing: pd.Index) -> str:
    """The papers holding the most failing rows, for a message: ``2401.00001 (220), ...``."""
    if PAPER_COLUMN not in frame.columns or failing.empty:
        return ""
    failed = failing_per_paper(frame, failing)
    named = ", ".join(f"{paper} ({count})" for paper, count in failed[:PAPERS_NAMED])
    more = len(failed) - PAPERS_NAMED
    return named + (f" and {more} more" if more > 0 else "")
