"""Cross-references: which statement a ``\\ref{…}`` in another statement (or its proof) cites.

Prepare keeps each statement's first ``\\label`` and the labels it and its proof ``\\ref``.
A label is resolved in the citing paper first. A multi-part work cites across its parts
with a prefix (the Stacks Project writes ``\\ref{schemes-definition-scheme}`` for the label
``definition-scheme`` of its chapter ``schemes``); such a reference resolves to another
paper's statement only when exactly one statement of the corpus has that label as a
suffix after a ``-``: an ambiguous reference cites nothing rather than the wrong thing.

A work published as several papers by the same authors (a Lean blueprint's chapters, a
series written with ``xr``) cites across its parts by the bare label. A label the citing
paper does not hold resolves to the one statement with that label among the other papers
of its work (:func:`work_keys`: the same authors), never to a stranger's paper, where a
shared ``thm:main`` is a coincidence. Pure functions.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence


def work_keys(authors_of: Iterable[tuple[str, Sequence[str] | None]]) -> dict[str, str]:
    """``paper_id -> work key`` for ``(paper_id, authors)``: papers with the same authors
    (in any order, case and spacing aside) share a key; a paper without authors has none."""
    keys: dict[str, str] = {}
    for paper_id, authors in authors_of:
        listed = () if authors is None else authors  # a missing list: no work
        names = sorted({" ".join(str(name).split()).casefold() for name in listed} - {""})
        if names:
            keys[paper_id] = "; ".join(names)
    return keys


class LabelIndex:
    """Statements by ``(paper_id, label)``, and by label across papers."""

    def __init__(
        self, labelled: Iterable[tuple[str, str, str]], work_of: Mapping[str, str] | None = None
    ) -> None:
        """``labelled``: ``(statement_id, paper_id, label)`` for every labelled statement;
        ``work_of``: each paper's work key (:func:`work_keys`), where known."""
        self._in_paper: dict[tuple[str, str], str] = {}
        self._by_label: dict[str, list[tuple[str, str]]] = defaultdict(list)
        self._work_of = dict(work_of or {})
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
        work = self._work_of.get(paper_id)
        if work is not None:
            in_work = {
                statement_id
                for other_paper, statement_id in self._by_label.get(ref, ())
                if other_paper != paper_id and self._work_of.get(other_paper) == work
            }
            if in_work:
                return in_work.pop() if len(in_work) == 1 else None
        candidates = {
            statement_id
            for position, char in enumerate(ref)
            if char == "-"
            for other_paper, statement_id in self._by_label.get(ref[position + 1 :], ())
            if other_paper != paper_id
        }
        return candidates.pop() if len(candidates) == 1 else None

    def cited(self, citing: Iterable[tuple[str, str, Iterable[str]]]) -> dict[str, list[str]]:
        """``statement_id -> [cited statement_id, ...]`` for ``(statement_id, paper_id,
        refs)``, in order, each once; a statement citing itself is no citation."""
        cited: dict[str, list[str]] = {}
        for statement_id, paper_id, refs in citing:
            targets = [self.resolve(paper_id, ref) for ref in refs]
            resolved = [t for t in dict.fromkeys(targets) if t is not None and t != statement_id]
            if resolved:
                cited[statement_id] = resolved
        return cited


def cited_statements(
    statements: Iterable[tuple[str, str, str, Iterable[str]]],
    work_of: Mapping[str, str] | None = None,
) -> dict[str, list[str]]:
    """Each statement's resolved citations: ``statement_id -> [cited statement_id, ...]``.

    ``statements``: ``(statement_id, paper_id, label, refs)``; ``work_of`` as for
    :class:`LabelIndex`. A statement citing itself (a proof's "by the lemma above" written
    as its own label) is no citation.
    """
    rows = [(sid, paper, label, list(refs)) for sid, paper, label, refs in statements]
    index = LabelIndex([(sid, paper, label) for sid, paper, label, _refs in rows], work_of)
    return index.cited((sid, paper, refs) for sid, paper, _label, refs in rows)


def citing_statements(cited: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """The inverse: ``statement_id -> [statements citing it, ...]`` (sorted)."""
    citing: dict[str, list[str]] = defaultdict(list)
    for source, targets in cited.items():
        for target in targets:
            citing[target].append(source)
    return {target: sorted(sources) for target, sources in citing.items()}
