"""Which failed data-quality expectations this corpus explains, and why (pure).

The suites (:mod:`pipelines.validate.suites`) describe a harvest of arXiv papers: many
papers of tens of passages each, over several categories. A corpus that is something else
fails some of them for a reason of its own, not a fault: the demo corpus is 16 chapters of
one book (the Stacks Project) in one category, math.AG. Each such reason is a
:class:`KnownReason`: the expectation it explains, the side of its bound the reason pushes
the observed value to, and the fact about the corpus it rests on, measured from the
validated tables (:func:`corpus_facts`), never declared by hand.

A failed expectation is *expected for this corpus* only when a known reason names it, the
value failed on that reason's side, and the reason's fact holds for the tables at hand
(:func:`expected_failure`). It still counts as failed (a suite's verdict stays GX's); it
carries its reason. Every other failure (another expectation, the other side of the bound,
a fact that does not hold) is unexpected, and the report and ``mathembed report`` set it
apart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import pandas as pd

#: Where an observed value fell outside its expectation's bounds.
Side = Literal["below", "above"]

#: The pair kind made from named statements ("Theorem (Name)" -> the statement).
NAMED_STATEMENT_KIND = "statement"
#: A corpus "rarely names its results" when fewer than one statement in fifty has a name:
#: a book that labels its results and cites them by number (the Stacks Project names 26 of
#: its 2504, 1.0%).
RARELY_NAMED_SHARE = 0.02
#: Author lists shown in a reason, at most.
AUTHORS_SHOWN = 3


@dataclass(frozen=True)
class CorpusFacts:
    """What the validated tables say about the corpus as a whole."""

    papers: int  # papers with at least one passage
    categories: tuple[str, ...]  # their distinct primary categories, sorted
    shared_authors: tuple[str, ...]  # the author list every one of them has; () if two differ
    statements: int
    named_statements: int  # statements whose authors gave them a name
    kind_shares: Mapping[str, float]  # pair kind -> its share of the pairs

    @property
    def one_category(self) -> bool:
        return len(self.categories) == 1

    @property
    def one_book(self) -> bool:
        """Two or more papers all by the same authors: chapters of one work."""
        return self.papers >= 2 and bool(self.shared_authors)


def corpus_facts(
    papers: pd.DataFrame, chunks: pd.DataFrame, statements: pd.DataFrame, pairs: pd.DataFrame
) -> CorpusFacts:
    """The facts :data:`KNOWN_REASONS` rest on, measured from the validated tables."""
    with_passages = papers[papers["paper_id"].isin(set(chunks["paper_id"]))]
    author_lists = {tuple(authors) for authors in with_passages["authors"]}
    kind_counts = pairs["kind"].value_counts()
    return CorpusFacts(
        papers=int(with_passages["paper_id"].nunique()),
        categories=tuple(sorted(set(with_passages["primary_category"]))),
        shared_authors=next(iter(author_lists)) if len(author_lists) == 1 else (),
        statements=len(statements),
        named_statements=int((statements["name"].str.strip() != "").sum()),
        kind_shares={str(kind): float(count) / len(pairs) for kind, count in kind_counts.items()},
    )


# -- the reasons ------------------------------------------------------------------------


@dataclass(frozen=True)
class KnownReason:
    """A failure a corpus can have for a reason of its own.

    ``because(facts, bound)`` is the reason in words when its fact holds for ``facts``,
    else None; ``bound`` is the bound the value crossed.
    """

    suite: str
    expectation: str  # a GX expectation type
    column: str
    side: Side
    because: Callable[[CorpusFacts, float], str | None]


def _one_category(facts: CorpusFacts, bound: float) -> str | None:
    if not facts.one_category:
        return None
    return (
        f"one category: all {facts.papers} papers are {facts.categories[0]}, so every "
        "passage is in it (the suite expects a harvest of several categories)"
    )


def _book_chapters(facts: CorpusFacts, bound: float) -> str | None:
    if not facts.one_book:
        return None
    authors = ", ".join(facts.shared_authors[:AUTHORS_SHOWN])
    if len(facts.shared_authors) > AUTHORS_SHOWN:
        authors += " et al."
    return (
        f"book chapters: all {facts.papers} papers are by {authors}, chapters of one book; "
        "a chapter runs to hundreds of passages where an arXiv paper has tens"
    )


def _rarely_named(facts: CorpusFacts, bound: float) -> str | None:
    rare = sorted(kind for kind, share in facts.kind_shares.items() if share < bound)
    if rare != [NAMED_STATEMENT_KIND] or not facts.statements:
        return None
    named_share = facts.named_statements / facts.statements
    if named_share >= RARELY_NAMED_SHARE:
        return None
    return (
        f"results rarely named: {NAMED_STATEMENT_KIND} pairs come from named statements "
        f'("Theorem (Name)"), and this corpus names {facts.named_statements} of its '
        f"{facts.statements} statements ({named_share:.1%}); a book labels its results "
        "and cites them by number"
    )


#: Every known reason; a failure none of them explains is unexpected.
KNOWN_REASONS: tuple[KnownReason, ...] = (
    KnownReason(
        "chunks",
        "expect_column_unique_value_count_to_be_between",
        "primary_category",
        "below",
        _one_category,
    ),
    KnownReason(
        "chunks", "expect_column_max_to_be_between", "category_share", "above", _one_category
    ),
    KnownReason(
        "chunks",
        "expect_column_median_to_be_between",
        "passages_per_paper",
        "above",
        _book_chapters,
    ),
    KnownReason("pairs", "expect_column_min_to_be_between", "kind_share", "below", _rarely_named),
)


# -- the decision -----------------------------------------------------------------------


def failed_side(kwargs: Mapping[str, Any], observed: Any) -> tuple[Side, float] | None:
    """Which bound a numeric observed value crossed, and the bound; None when the value is
    not a number or lies within its bounds."""
    value = _number(observed)
    if value is None:
        return None
    low, high = _number(kwargs.get("min_value")), _number(kwargs.get("max_value"))
    if low is not None and value < low:
        return "below", low
    if high is not None and value > high:
        return "above", high
    return None


def expected_failure(
    suite: str,
    expectation: str,
    kwargs: Mapping[str, Any],
    observed: Any,
    facts: CorpusFacts,
) -> str | None:
    """Why this corpus fails the expectation (``expectation`` of type, ``kwargs`` as GX
    holds them, ``observed`` its observed value), or None: not a known reason's failure."""
    crossed = failed_side(kwargs, observed)
    if crossed is None:
        return None
    side, bound = crossed
    for reason in KNOWN_REASONS:
        if (reason.suite, reason.expectation, reason.column, reason.side) == (
            suite,
            expectation,
            kwargs.get("column"),
            side,
        ):
            return reason.because(facts, bound)
    return None


def _number(value: Any) -> float | None:
    """``value`` as a float when it is a number (not a bool, a string or a parameter)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None
