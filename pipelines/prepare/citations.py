"""Citing sentences: the sentences of a paper that cite a statement by ``\\ref``.

They are how mathematicians describe a result in their own words when they use it ("the
morphisms are open since they are finite locally free (Lemmas \\ref{a} and \\ref{b})"): a
far larger source of descriptions written by people than slogans or abstracts. The
converter marks where each ``\\ref`` was written; :func:`citing_sentences` splits the
marked text into sentences (never inside ``$…$``, not after "e.g.") and keeps those
holding a mark, as they read in the passages ("[ref]" placeholders included, so the pairs
stage can find the passage a sentence sits in). The pairs stage cleans them into
descriptions and decides, with a counted reason, which are good enough
(:mod:`pipelines.pairs.descriptions`). Pure functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pipelines.mathtext.sentences import split_sentences


@dataclass(frozen=True)
class Citation:
    """One sentence, as it reads in the passages, and the labels it cites in order."""

    sentence: str
    refs: tuple[str, ...]


def citing_sentences(
    marked_text: str, mark: str, labels: Sequence[tuple[str, ...]]
) -> tuple[Citation, ...]:
    """The sentences of ``marked_text`` holding a ``mark``, each with the labels
    its marks cite (``labels[i]`` for the i-th mark of the text). A sentence whose marks
    cite no label (a ``\\ref`` without its argument) is left out."""
    citations: list[Citation] = []
    mark_index = 0
    for paragraph in marked_text.split("\n\n"):
        for sentence in split_sentences(paragraph):
            marks = sentence.count(mark)
            if not marks:
                continue
            cited = labels[mark_index : mark_index + marks]
            mark_index += marks
            refs = tuple(dict.fromkeys(label for group in cited for label in group))
            if refs:
                citations.append(Citation(sentence.replace(mark, ""), refs))
    return tuple(citations)
