"""Transfer sets: retrieval the model was not tuned for, in a format unlike its training
passages, so a night that only learns its own sets' shape shows it.

The corpus is each paper's cleaned text cut into plain fixed windows
(:mod:`pipelines.common.windows`, cut at a space): no statement headers, no block boundaries. Two of
the transfer sets (:data:`pipelines.common.tables.TRANSFER_SETS`) are searched in it:

``transfer_papers``
    A paper's title and the first :data:`ABSTRACT_SENTENCES` sentences of its abstract ->
    every window of that paper (paper-level retrieval; no training pair has a title or an
    abstract as its anchor). A window that holds the query's own words (an abstract
    repeated in the body) is not ranked for it, as a citing sentence's own passage is not.
``transfer_named``
    The named set's queries -> the windows holding their relevant passages (the passage's
    grade), over the same windows: the same meaning as ``named``, another format.

The third, ``transfer_corpus``, is another corpus's held-out queries over its passages and
this corpus's (:mod:`pipelines.evaluate.foreign`).

A query that cannot be asked is counted, not guessed: a paper without a title or an
abstract, a title or sentence that is all maths (no word outside ``$…$``), or
paper-level retrieval in a corpus of one paper.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from pipelines.common.tables import TRANSFER_SETS
from pipelines.common.windows import Windows
from pipelines.mathtext.sentences import split_sentences

TRANSFER_PAPERS, TRANSFER_NAMED, TRANSFER_CORPUS = TRANSFER_SETS
#: The transfer sets that search the plain windows (``transfer_corpus`` searches the
#: passages and the foreign corpus's: :mod:`pipelines.evaluate.foreign`).
WINDOW_SETS = (TRANSFER_PAPERS, TRANSFER_NAMED)
#: Abstract sentences asked per paper, its first ones.
ABSTRACT_SENTENCES = 2
_MATH = re.compile(r"\$\$.*?\$\$|\$.*?\$|\\\(.*?\\\)|\\\[.*?\\\]", re.DOTALL)
_WORD = re.compile(r"[^\W\d_]{2,}")


@dataclass(frozen=True)
class TransferQueries:
    """The transfer sets' queries over :class:`Windows`, aligned lists, and what could not
    be asked (``skipped``: reason -> count)."""

    ids: list[str]
    texts: list[str]
    sets: list[str]
    qrels: list[dict[int, int]]
    excluded: list[frozenset[int]]
    skipped: dict[str, int]


def words_outside_maths(text: str) -> int:
    """How many words ``text`` has outside its ``$…$`` maths."""
    return len(_WORD.findall(_MATH.sub(" ", text)))


def _normalised(text: str) -> str:
    return " ".join(text.split()).casefold()


def transfer_queries(
    papers: pd.DataFrame,
    windows: Windows,
    named: Sequence[tuple[str, str, dict[str, int]]],
) -> TransferQueries:
    """The two sets' queries: each paper's title and first abstract sentences, and the
    ``named`` queries (id, text, relevant passage id -> grade) over the windows."""
    ids: list[str] = []
    texts: list[str] = []
    sets: list[str] = []
    qrels: list[dict[int, int]] = []
    excluded: list[frozenset[int]] = []
    skipped: Counter[str] = Counter()

    rows_of_paper: dict[str, list[int]] = {}
    for row, paper_id in enumerate(windows.papers):
        rows_of_paper.setdefault(paper_id, []).append(row)
    normalised = [_normalised(text) for text in windows.texts]

    def add(query_id: str, text: str, query_set: str, judged: dict[int, int]) -> None:
        # A sentence found whole in a window is a copy there (an abstract repeated in the
        # body): that window is not ranked for it. A title is a name any window may use.
        own = _normalised(text)
        copied = (
            frozenset(row for row, window in enumerate(normalised) if own in window)
            if query_id.startswith("abstract")
            else frozenset()
        )
        if not any(grade >= 1 and row not in copied for row, grade in judged.items()):
            skipped[f"{query_set}: no relevant window left"] += 1
            return
        ids.append(query_id)
        texts.append(text)
        sets.append(query_set)
        qrels.append(judged)
        excluded.append(copied)

    if len(rows_of_paper) < 2:
        skipped["one paper: nothing to tell apart"] += len(rows_of_paper)
    else:
        for paper in papers.itertuples(index=False):
            paper_id = str(paper.paper_id)
            if paper_id not in rows_of_paper:
                continue  # no passage of it survived validation
            whole_paper = dict.fromkeys(rows_of_paper[paper_id], 1)
            for kind, asked in _paper_questions(paper, skipped):
                add(f"{kind}:{paper_id}", asked, TRANSFER_PAPERS, whole_paper)
    for query_id, text, relevant in named:
        judged: dict[int, int] = {}
        for chunk_id, grade in relevant.items():
            for row in windows.of_chunk.get(chunk_id, []):
                judged[row] = max(grade, judged.get(row, 0))
        add(query_id, text, TRANSFER_NAMED, judged)
    return TransferQueries(ids, texts, sets, qrels, excluded, dict(sorted(skipped.items())))


def _paper_questions(paper: Any, skipped: Counter[str]) -> list[tuple[str, str]]:
    """A paper's title and first abstract sentences as ``(kind, text)``, counting in
    ``skipped`` what cannot be asked."""
    asked: list[tuple[str, str]] = []
    title = _text(getattr(paper, "title", None))
    if not title:
        skipped["no title"] += 1
    elif not words_outside_maths(title):
        skipped["title all maths"] += 1
    else:
        asked.append(("title", title))
    abstract = _text(getattr(paper, "abstract", None))
    if not abstract:
        skipped["no abstract"] += 1
        return asked
    sentences = split_sentences(abstract)[:ABSTRACT_SENTENCES]
    for number, sentence in enumerate(sentences):
        if not words_outside_maths(sentence):
            skipped["abstract sentence all maths"] += 1
        else:
            asked.append((f"abstract{number}", sentence))
    return asked


def _text(value: object) -> str:
    """A table cell as one line of text; a missing one (None, NaN) as ``""``."""
    missing = value is None or (isinstance(value, float) and math.isnan(value))
    return "" if missing else " ".join(str(value).split())
