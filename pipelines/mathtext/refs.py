"""Cross-references: which statement a ``\\ref{…}`` in another statement (or its proof) cites.

Prepare keeps each statement's first ``\\label`` and the labels it and its proof ``\\ref``.
A label is resolved in the citing paper first. A multi-part work cites across its parts
with a prefix (the Stacks Project writes ``\\ref{schemes-definition-scheme}`` for the label
``definition-scheme`` of its chapter ``schemes``); such a reference resolves to another
paper's statement only when exactly one statement of the corpus has that label as a
suffix after a ``-``: an ambiguous reference cites nothing rather than the wrong thing.
Pure functions.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping


class LabelIndex:
    """Statements by ``(paper_id, label)``, and by label across papers."""

    def __init__(self, labelled: Iterable[tuple[str, str, str]]) -> None:
        """``labelled``: ``(statement_id, paper_id, label)`` for every labelled statement."""
        self._in_paper: dict[tuple[str, str], str] = {}
        self._by_label: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for statement_id, paper_id, label in labelled:
            if not label:
                continue
            self._in_paper.setdefault((paper_id, label), statement_id)
            self._by_label[label].append((paper_id, statement_id))

    def resolve(self, paper_id: str, ref: str) -> str | None:
        """The statement ``ref`` cites from ``paper_id``, if one can be told."""
        ref = ref.strip()
        found = self._in_paper.get((paper_id, ref))
        if found is not None:
            return found
        candidates = {
            statement_id
            for position, char in enumerate(ref)
            if char == "-"
            for other_paper, statement_id in self._by_label.get(ref[position + 1 :], ())
            if other_paper != paper_id
        }
        return candidates.pop() if len(candidates) == 1 else None


def cited_statements(
    statements: Iterable[tuple[str, str, str, Iterable[str]]],
) -> dict[str, list[str]]:
    """Each statement's resolved citations: ``statement_id -> [cited statement_id, ...]``.

    ``statements``: ``(statement_id, paper_id, label, refs)``; a statement citing itself
    (a proof's "by the lemma above" written as its own label) is no citation.
    """
    rows = [(sid, paper, label, list(refs)) for sid, paper, label, refs in statements]
    index = LabelIndex((sid, paper, label) for sid, paper, label, _refs in rows)
    cited: dict[str, list[str]] = {}
    for statement_id, paper_id, _label, refs in rows:
        targets = [index.resolve(paper_id, ref) for ref in refs]
        resolved = [t for t in dict.fromkeys(targets) if t is not None and t != statement_id]
        if resolved:
            cited[statement_id] = resolved
    return cited


def citing_statements(cited: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """The inverse: ``statement_id -> [statements citing it, ...]`` (sorted)."""
    citing: dict[str, list[str]] = defaultdict(list)
    for source, targets in cited.items():
        for target in targets:
            citing[target].append(source)
    return {target: sorted(sources) for target, sources in citing.items()}
