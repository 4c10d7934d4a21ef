"""What one paper's text says once every concept is known: where each is mentioned, and the
relations written between them.

These are the corpus-level rules: they need every paper's concepts first, so they run in
a second pass over the text (:func:`scan_document`, one :class:`DocumentScan` per paper),
on text in :func:`~pipelines.mathtext.names.match_form` between the mentions a
:class:`~pipelines.mathtext.names.SurfaceMatcher` found. A stated relation is one of the
patterns "X generalizes Y", "Y is a special case of X", "X is a Y", "X implies Y", "Y
follows from X" (:func:`find_relations`).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pipelines.common.tables import Relation
from pipelines.graph.extractor import PaperDocument
from pipelines.mathtext.names import BARRIER, Mention, SurfaceMatcher, match_form

# -- relation patterns ----------------------------------------------------------------

# Searched for in the words between two consecutive mentions (match form: lower-case
# words, single spaces, "|" at sentence ends).
_RELATION_TRIGGERS = re.compile(
    r"(?<![a-z0-9])(?:"
    r"(?P<generalizes_backward>(?:is|are) (?:a |an |the )?(?:special|particular) cases? of"
    r"|(?:is|are) (?:a |an )?speciali[sz]ations? of|(?:is|are) (?:a |an )?restrictions? of)"
    r"|(?P<generalizes_forward>(?:is|are) (?:a |an |the )?(?:common |natural )?"
    r"generali[sz]ations? of|(?:is|are) (?:an? )?extensions? of|generali[sz]es|generali[sz]e"
    r"|speciali[sz]es to|reduces to)"
    r"|(?P<implies_backward>follows? (?:directly |immediately |easily )?from"
    r"|(?:is|are) implied by)"
    r"|(?P<implies_forward>implies|imply)"
    r"|(?P<instance>(?:is|are) (?:an? )?(?:examples?|instances?|kinds?|types?) of)"
    r"|(?P<instance_adjacent>is an?|are)"
    r")(?![a-z0-9])"
)
_NEGATIONS = frozenset({"not", "never", "no", "cannot", "neither", "nor"})
_MAX_GAP_WORDS = 2
# The longest trigger plus two words each side, generously.
_MAX_GAP_CHARS = 90


def _gap_ok(gap: str, max_words: int) -> bool:
    words = gap.split()
    return len(words) <= max_words and BARRIER not in words and not _NEGATIONS & set(words)


def find_relations(text: str, mentions: Sequence[Mention]) -> list[tuple[str, str, Relation]]:
    """Relations stated in ``text`` (match form) between the concepts in ``mentions``.

    A pattern counts when it stands between two consecutive mentions with at most two
    other words on either side, no sentence end and no negation in between ("X does not
    imply Y" is no edge). "X is a Y" is stricter (nothing else in between at all),
    because "is a" is everywhere. Returns ``(source, target, relation)`` with the
    relation's direction applied.
    """
    relations: list[tuple[str, str, Relation]] = []
    for left, right in itertools.pairwise(mentions):
        if left.key == right.key or right.start - left.end > _MAX_GAP_CHARS:
            continue
        gap = text[left.end : right.start]
        trigger = _RELATION_TRIGGERS.search(gap)
        if trigger is None:
            continue
        kind = trigger.lastgroup
        max_gap = 0 if kind == "instance_adjacent" else _MAX_GAP_WORDS
        if not (
            _gap_ok(gap[: trigger.start()], max_gap) and _gap_ok(gap[trigger.end() :], max_gap)
        ):
            continue
        if kind == "generalizes_forward":
            relations.append((left.key, right.key, "generalizes"))
        elif kind == "generalizes_backward":
            relations.append((right.key, left.key, "generalizes"))
        elif kind == "implies_forward":
            relations.append((left.key, right.key, "implies"))
        elif kind == "implies_backward":
            relations.append((right.key, left.key, "implies"))
        else:
            relations.append((left.key, right.key, "is_instance_of"))
    return relations


# -- one paper ------------------------------------------------------------------------


@dataclass(frozen=True)
class DocumentScan:
    """What one paper's text says once the concepts are known."""

    paper_id: str
    mentions: list[tuple[str, str]]  # (concept, chunk_id), each once
    relations: list[tuple[str, str, Relation]]  # stated in its chunks
    statement_concepts: list[tuple[str, frozenset[str]]]  # (statement text, concepts named)
    # The words (:data:`WORD` runs) of its scanned text: a surface form added later can
    # only match in this paper if all its words are here (see :mod:`pipelines.graph.cache`).
    words: frozenset[str] = frozenset()


# A word as the matcher's boundaries see it: a maximal run of these characters.
WORD = re.compile(r"[a-z0-9]+")


def scan_document(document: PaperDocument, matcher: SurfaceMatcher) -> DocumentScan:
    """Mentions and stated relations in a paper's chunks; concepts named in its statements."""
    mentions: dict[tuple[str, str], None] = {}
    relations: list[tuple[str, str, Relation]] = []
    words: set[str] = set()
    for chunk in document.chunks:
        chunk_text = match_form(chunk.text)
        found = matcher.find(chunk_text)
        for mention in found:
            mentions[(mention.key, chunk.chunk_id)] = None
        relations += find_relations(chunk_text, found)
        words.update(WORD.findall(chunk_text))
    statement_concepts = []
    for statement in document.statements:
        statement_text = match_form(statement.text)
        statement_concepts.append((statement.text, frozenset(matcher.keys_in(statement_text))))
        words.update(WORD.findall(statement_text))
    return DocumentScan(
        document.paper_id, list(mentions), relations, statement_concepts, frozenset(words)
    )
