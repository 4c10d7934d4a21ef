"""The evaluation set: the validated corpus, the held-out queries and their judgments,
checked against each other and indexed by corpus row.

The corpus is searched as search searches it: each passage's text headed by the statement
it holds (kind, name, label words, section title;
:func:`pipelines.mathtext.headings.search_texts`), so the gate measures the text users
search.

Sets (:data:`pipelines.common.tables.QUERY_SETS`). ``named``: a held-out concept's name ->
its defining passage. ``masked``: the same queries against a corpus in which every
relevant passage of a named query has that query's name masked out, header and text
(:mod:`pipelines.mathtext.masking`; :attr:`EvalSet.masked_texts`), so only its meaning
can find it. ``described``: a description people wrote (a slogan, a citing sentence) ->
the held-out statement it describes; the passage a citing sentence sits in holds the
query's own words and is not ranked for it (the query's ``exclude``).

The transfer sets (:data:`~pipelines.common.tables.TRANSFER_SETS`, built with the
papers table: :mod:`pipelines.evaluate.transfer`) search another corpus, the papers' plain
windows: :attr:`EvalSet.transfer` is an eval set of its own, and :meth:`EvalSet.holding`
says which one holds a set.

Subsets of ``named``: ``seen`` and ``unseen`` score the queries against only the relevant
chunks from seen / unseen papers (the qrels' ``unseen`` flag: papers whose chunks were
never training positives); the *other* side's relevant chunks are removed from the
ranking rather than counted as misses, because ranking a relevant passage first is not an
error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from pipelines.common import io
from pipelines.common.paths import Paths
from pipelines.common.tables import PASSAGE_SETS, QUERY_SETS, TABLES, TRANSFER_SETS
from pipelines.common.windows import WINDOW_CHARS, plain_windows
from pipelines.evaluate.foreign import FOREIGN_PREFIX, ForeignCorpus, read_foreign_corpus
from pipelines.evaluate.transfer import TRANSFER_CORPUS, WINDOW_SETS, transfer_queries
from pipelines.mathtext.headings import search_texts
from pipelines.mathtext.masking import mask_name, names_in
from pipelines.mathtext.statements import statements_by_passage

SUBSETS = ("seen", "unseen")
NAMED = "named"
MASKED = "masked"
DESCRIBED = "described"
#: The validated tables an evaluation reads: the passages, the queries, their judgments,
#: the statements that head the passages holding them, and the papers (titles and
#: abstracts: the transfer sets).
EVAL_TABLES = ("chunks", "queries", "qrels", "statements", "papers")
REPRO_HINT = "run `make repro` (dvc repro validate) to rebuild data/validated/"
#: The share of a foreign corpus's passages found word for word among this corpus's from
#: which it is this corpus (another version of it): a short passage ("Proof omitted.") may
#: occur in both by chance.
SHARED_PASSAGES = 0.1


@dataclass(frozen=True)
class Subset:
    """Queries scored together: their rows in the eval set, qrels, and ids left out of ranking."""

    name: str
    rows: npt.NDArray[np.int64]
    qrels: list[dict[int, int]]
    excluded: list[frozenset[int]]


@dataclass(frozen=True)
class EvalSet:
    """The corpus, the queries with at least one relevant chunk, and their qrels.

    ``qrels[i]`` maps a corpus row index to a grade for query ``i``.
    """

    corpus_ids: list[str]
    corpus_texts: list[str]
    query_ids: list[str]
    query_texts: list[str]
    qrels: list[dict[int, int]]
    unseen_docs: list[frozenset[int]]
    queries_without_relevant: list[str]
    # Per query its set, and the corpus rows not ranked for it; built in code without them,
    # every query is named and nothing is left out.
    query_sets: list[str] = field(default_factory=list)
    excluded: list[frozenset[int]] = field(default_factory=list)
    masked_texts: dict[int, str] = field(default_factory=dict)  # row -> text, changed rows
    #: The transfer sets over the papers' plain windows, and what they could not ask.
    transfer: EvalSet | None = None
    transfer_record: dict[str, Any] = field(default_factory=dict)
    #: The ``transfer_corpus`` set: the foreign corpus's queries over these passages (the
    #: same rows first) and the foreign passages after them.
    foreign: EvalSet | None = None

    def __post_init__(self) -> None:
        if not self.query_sets:
            object.__setattr__(self, "query_sets", [NAMED] * len(self.query_ids))
        if not self.excluded:
            object.__setattr__(self, "excluded", [frozenset()] * len(self.query_ids))

    def holding(self, query_set: str) -> EvalSet:
        """The eval set whose corpus ``query_set`` searches: :attr:`foreign` for
        ``transfer_corpus``, :attr:`transfer` for the other transfer sets (this one, with no
        such queries, when it has none), else this one."""
        held = self.foreign if query_set == TRANSFER_CORPUS else self.transfer
        if query_set in TRANSFER_SETS and held is not None:
            return held
        return self

    def rows_of(self, query_set: str) -> list[int]:
        """The query rows of one stored set (``masked`` asks the ``named`` queries)."""
        stored = NAMED if query_set == MASKED else query_set
        return [row for row, name in enumerate(self.query_sets) if name == stored]

    def subset(self, name: str) -> Subset:
        """A set of :data:`QUERY_SETS`, or the named queries scored only against ``seen`` /
        ``unseen`` relevant chunks. ``masked`` is scored against the corpus with
        :attr:`masked_texts` in place."""
        if name in QUERY_SETS:
            rows = self.rows_of(name)
            return Subset(
                name,
                np.asarray(rows, dtype=np.int64),
                [self.qrels[row] for row in rows],
                [self.excluded[row] for row in rows],
            )
        if name not in SUBSETS:
            raise ValueError(f"unknown subset {name!r}; expected one of {QUERY_SETS + SUBSETS}")
        keep_unseen = name == "unseen"
        rows_kept: list[int] = []
        qrels: list[dict[int, int]] = []
        excluded: list[frozenset[int]] = []
        for row in self.rows_of(NAMED):
            judged, unseen = self.qrels[row], self.unseen_docs[row]
            other_side = {d for d, g in judged.items() if g >= 1 and (d in unseen) != keep_unseen}
            if len(other_side) == sum(1 for g in judged.values() if g >= 1):
                continue  # no relevant chunk on this side
            rows_kept.append(row)
            qrels.append({doc: g for doc, g in judged.items() if doc not in other_side})
            excluded.append(frozenset(other_side) | self.excluded[row])
        return Subset(name, np.asarray(rows_kept, dtype=np.int64), qrels, excluded)

    def words_in_relevant(self, query_set: str) -> float:
        """The share of a set's queries whose text occurs (as a phrase, in any of its
        surface forms) in one of their relevant passages: how much string matching alone
        could find."""
        rows = self.rows_of(query_set)
        if not rows:
            return 0.0
        masked = self.masked_texts if query_set == MASKED else {}
        found = sum(
            1
            for row in rows
            if any(
                names_in(masked.get(doc, self.corpus_texts[doc]), self.query_texts[row])
                for doc, grade in self.qrels[row].items()
                if grade >= 1
            )
        )
        return found / len(rows)


def masked_texts(
    corpus_texts: Sequence[str], query_texts: Sequence[str], qrels: Sequence[dict[int, int]]
) -> dict[int, str]:
    """Corpus row -> its text with the names of the queries it is relevant to masked out,
    for every row that changes (only those are embedded again)."""
    names_of: dict[int, list[str]] = {}
    for text, judged in zip(query_texts, qrels, strict=True):
        for doc, grade in judged.items():
            if grade >= 1:
                names_of.setdefault(doc, []).append(text)
    changed: dict[int, str] = {}
    for doc, names in sorted(names_of.items()):
        text = corpus_texts[doc]
        for name in names:
            text = mask_name(text, name)
        if text != corpus_texts[doc]:
            changed[doc] = text
    return changed


def _require_columns(frame: pd.DataFrame, columns: Sequence[str], path: Path) -> None:
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise ValueError(
            f"{path}: missing column(s) {missing} (has {list(frame.columns)}); {REPRO_HINT}"
        )


def _examples(values: Sequence[Any], limit: int = 5) -> str:
    shown = ", ".join(repr(value) for value in list(values)[:limit])
    more = f" and {len(values) - limit} more" if len(values) > limit else ""
    return shown + more


def build_eval_set(
    chunks: pd.DataFrame,
    queries: pd.DataFrame,
    qrels: pd.DataFrame,
    *,
    statements: pd.DataFrame | None = None,
    papers: pd.DataFrame | None = None,
    sources: Mapping[str, Path] | None = None,
    foreign: Sequence[ForeignCorpus] = (),
) -> EvalSet:
    """Check the three tables against each other and index the qrels by corpus row.

    With ``statements`` each passage's text is its search text (headed by the statement it
    holds: :func:`~pipelines.mathtext.headings.search_texts`); without, its own text.
    With ``papers`` (``paper_id``, and ``title`` and ``abstract`` where known) it holds
    the transfer sets (:attr:`EvalSet.transfer`), and with ``foreign`` the
    ``transfer_corpus`` set over the first foreign corpus it does not hold
    (:mod:`pipelines.evaluate.foreign`). ``sources`` names the files
    the tables came from, for the error messages. A query with no relevant (grade >= 1)
    chunk cannot be scored; it is left out and listed in ``queries_without_relevant`` so the
    counts add up.
    """
    names = {table: Path(table) for table in EVAL_TABLES}
    names.update(sources or {})
    _require_columns(chunks, ["chunk_id", "text"], names["chunks"])
    _require_columns(queries, ["query_id", "text"], names["queries"])
    _require_columns(qrels, ["query_id", "chunk_id", "grade", "unseen"], names["qrels"])
    if chunks.empty:
        raise ValueError(f"{names['chunks']}: the corpus is empty; {REPRO_HINT}")
    if queries.empty:
        raise ValueError(
            f"{names['queries']}: no evaluation queries; the pairs stage needs held-out "
            f"concepts with enough papers (params.yaml pairs.held_out_fraction, "
            f"pairs.min_degree); {REPRO_HINT}"
        )
    for frame, column, key in ((chunks, "chunk_id", "chunks"), (queries, "query_id", "queries")):
        duplicated = frame.loc[frame[column].duplicated(), column].tolist()
        if duplicated:
            raise ValueError(
                f"{names[key]}: duplicate {column} {_examples(duplicated)}; {REPRO_HINT}"
            )

    corpus_ids = chunks["chunk_id"].astype(str).tolist()
    row_of_chunk = {chunk_id: row for row, chunk_id in enumerate(corpus_ids)}
    query_ids = queries["query_id"].astype(str).tolist()
    row_of_query = {query_id: row for row, query_id in enumerate(query_ids)}

    unknown_chunks = sorted(set(qrels["chunk_id"].astype(str)) - row_of_chunk.keys())
    if unknown_chunks:
        raise ValueError(
            f"{names['qrels']}: {len(unknown_chunks)} chunk_id(s) not in {names['chunks']}: "
            f"{_examples(unknown_chunks)}; qrels and corpus come from different runs — "
            f"{REPRO_HINT}"
        )
    unknown_queries = sorted(set(qrels["query_id"].astype(str)) - row_of_query.keys())
    if unknown_queries:
        raise ValueError(
            f"{names['qrels']}: {len(unknown_queries)} query_id(s) not in {names['queries']}: "
            f"{_examples(unknown_queries)}; {REPRO_HINT}"
        )
    pair = qrels[["query_id", "chunk_id"]].astype(str)
    duplicated_pairs = pair[pair.duplicated()].itertuples(index=False, name=None)
    duplicated_list = list(duplicated_pairs)
    if duplicated_list:
        raise ValueError(
            f"{names['qrels']}: (query_id, chunk_id) judged more than once: "
            f"{_examples(duplicated_list)}; {REPRO_HINT}"
        )

    judged: list[dict[int, int]] = [{} for _ in query_ids]
    unseen: list[set[int]] = [set() for _ in query_ids]
    for query_id, chunk_id, grade, is_unseen in zip(
        qrels["query_id"].astype(str),
        qrels["chunk_id"].astype(str),
        qrels["grade"],
        qrels["unseen"],
        strict=True,
    ):
        row, doc = row_of_query[query_id], row_of_chunk[chunk_id]
        judged[row][doc] = int(grade)
        if bool(is_unseen):
            unseen[row].add(doc)

    scorable = [row for row, docs in enumerate(judged) if any(g >= 1 for g in docs.values())]
    scorable_rows = set(scorable)
    if not scorable:
        raise ValueError(
            f"{names['qrels']}: none of the {len(query_ids)} queries in {names['queries']} "
            f"has a relevant (grade >= 1) chunk; {REPRO_HINT}"
        )
    query_texts = queries["text"].astype(str).tolist()
    # Tables written before the meaning sets hold named queries only.
    sets = queries["set"].astype(str).tolist() if "set" in queries else [NAMED] * len(queries)
    unknown_sets = sorted(set(sets) - set(PASSAGE_SETS))
    if unknown_sets:
        raise ValueError(
            f"{names['queries']}: unknown query set(s) {unknown_sets}, expected {PASSAGE_SETS}; "
            f"{REPRO_HINT}"
        )
    exclude = queries["exclude"].tolist() if "exclude" in queries else [[]] * len(queries)
    excluded = [frozenset(row_of_chunk[c] for c in ids if c in row_of_chunk) for ids in exclude]
    if statements is None:
        corpus_texts = chunks["text"].astype(str).tolist()
    else:
        _require_columns(chunks, ["paper_id"], names["chunks"])
        corpus_texts = search_texts(chunks, statements_by_passage(chunks, statements))
    kept_texts = [query_texts[row] for row in scorable]
    kept_qrels = [judged[row] for row in scorable]
    kept_sets = [sets[row] for row in scorable]
    named_rows = [i for i, name in enumerate(kept_sets) if name == NAMED]
    transfer: EvalSet | None = None
    transfer_record: dict[str, Any] = {}
    if papers is not None:
        _require_columns(papers, ["paper_id"], names["papers"])
        _require_columns(chunks, ["paper_id"], names["chunks"])
        named = [
            (
                query_ids[row],
                query_texts[row],
                {corpus_ids[doc]: grade for doc, grade in judged[row].items()},
            )
            for row in scorable
            if sets[row] == NAMED
        ]
        transfer, transfer_record = _transfer_set(chunks, papers, named)
    foreign_set: EvalSet | None = None
    if foreign:
        foreign_set, foreign_record = _foreign_set(corpus_ids, corpus_texts, papers, foreign)
        transfer_record = _with_foreign_record(transfer_record, foreign_record)
    return EvalSet(
        corpus_ids=corpus_ids,
        corpus_texts=corpus_texts,
        query_ids=[query_ids[row] for row in scorable],
        query_texts=kept_texts,
        qrels=kept_qrels,
        unseen_docs=[frozenset(unseen[row]) for row in scorable],
        queries_without_relevant=[
            query_id for row, query_id in enumerate(query_ids) if row not in scorable_rows
        ],
        query_sets=kept_sets,
        excluded=[excluded[row] for row in scorable],
        masked_texts=masked_texts(
            corpus_texts, [kept_texts[i] for i in named_rows], [kept_qrels[i] for i in named_rows]
        ),
        transfer=transfer,
        transfer_record=transfer_record,
        foreign=foreign_set,
    )


def _transfer_set(
    chunks: pd.DataFrame, papers: pd.DataFrame, named: list[tuple[str, str, dict[str, int]]]
) -> tuple[EvalSet, dict[str, Any]]:
    """The transfer sets as an eval set over the papers' plain windows, and its record:
    the windows' size and count, the queries per set, what could not be asked."""
    windows = plain_windows(chunks)
    asked = transfer_queries(papers, windows, named)
    record = {
        "window_chars": WINDOW_CHARS,
        "windows": len(windows.ids),
        "papers": len(set(windows.papers)),
        "queries": {name: asked.sets.count(name) for name in WINDOW_SETS},
        "skipped": asked.skipped,
    }
    transfer = EvalSet(
        corpus_ids=windows.ids,
        corpus_texts=windows.texts,
        query_ids=asked.ids,
        query_texts=asked.texts,
        qrels=asked.qrels,
        unseen_docs=[frozenset()] * len(asked.ids),
        queries_without_relevant=[],
        query_sets=asked.sets,
        excluded=asked.excluded,
    )
    return transfer, record


def _foreign_set(
    corpus_ids: list[str],
    corpus_texts: list[str],
    papers: pd.DataFrame | None,
    foreign: Sequence[ForeignCorpus],
) -> tuple[EvalSet | None, dict[str, Any]]:
    """The ``transfer_corpus`` set: the first foreign corpus this one does not hold, its
    queries over this corpus's passages (as searched: rows ``0..n-1``, the same rows as the
    eval set's) followed by its passages; and its record. None when this corpus holds them
    all."""
    holds = [_holds(corpus_texts, papers, corpus) for corpus in foreign]
    record: dict[str, Any] = {
        "skipped": {
            f"{TRANSFER_CORPUS}: {corpus.folder} holds this corpus's papers": len(corpus.query_ids)
            for corpus, held_here in zip(foreign, holds, strict=True)
            if held_here
        }
    }
    asked_corpus = next(
        (corpus for corpus, held_here in zip(foreign, holds, strict=True) if not held_here), None
    )
    if asked_corpus is None:
        return None, record
    passages = len(asked_corpus.passage_ids)
    record["foreign_corpus"] = {"folder": str(asked_corpus.folder), "passages": passages}
    offset = len(corpus_ids)
    qrels, excluded = asked_corpus.qrels, asked_corpus.excluded
    asked = [row for row, judged in enumerate(qrels) if max(judged.values(), default=0)]
    if len(asked) < len(qrels):
        record["skipped"][f"{TRANSFER_CORPUS}: no relevant passage"] = len(qrels) - len(asked)
    record["queries"] = len(asked)
    foreign_ids = [FOREIGN_PREFIX + passage for passage in asked_corpus.passage_ids]
    held = EvalSet(
        corpus_ids=[*corpus_ids, *foreign_ids],
        corpus_texts=[*corpus_texts, *asked_corpus.texts],
        query_ids=[FOREIGN_PREFIX + asked_corpus.query_ids[row] for row in asked],
        query_texts=[asked_corpus.query_texts[row] for row in asked],
        qrels=[{offset + doc: g for doc, g in qrels[row].items()} for row in asked],
        unseen_docs=[frozenset()] * len(asked),
        queries_without_relevant=[],
        query_sets=[TRANSFER_CORPUS] * len(asked),
        excluded=[frozenset(offset + doc for doc in excluded[row]) for row in asked],
    )
    return held, record


def _holds(corpus_texts: list[str], papers: pd.DataFrame | None, foreign: ForeignCorpus) -> bool:
    """Whether this corpus holds one of ``foreign``'s papers (the same content hash) or
    :data:`SHARED_PASSAGES` of its passages word for word (another version of its text)."""
    texts = set(foreign.texts)
    if len(texts.intersection(corpus_texts)) >= SHARED_PASSAGES * len(texts):
        return True
    if papers is None or "content_hash" not in papers:
        return False
    return bool(papers["content_hash"].astype(str).isin(foreign.content_hashes).any())


def _with_foreign_record(transfer: dict[str, Any], foreign: dict[str, Any]) -> dict[str, Any]:
    """The transfer record (eval.json's ``transfer``) with the foreign set's: the corpus
    asked (``foreign_corpus``: folder, passages), its queries among the others, what it
    could not ask."""
    skipped = {**transfer.get("skipped", {}), **foreign["skipped"]}
    return {
        **transfer,
        **foreign,
        "queries": {**transfer.get("queries", {}), TRANSFER_CORPUS: foreign.get("queries", 0)},
        "skipped": dict(sorted(skipped.items())),
    }


def load_eval_set(paths: Paths, foreign_corpora: Sequence[str] = ()) -> EvalSet:
    """Read the validated corpus, statements, queries and qrels (never the unvalidated
    tables), and the foreign corpora (``evaluate.foreign_corpora``, relative to the project
    root)."""
    sources = {name: TABLES[name].validated_path(paths) for name in EVAL_TABLES}
    tables = {}
    for name, path in sources.items():
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found; {REPRO_HINT}")
        tables[name] = io.read_parquet(path)
    return build_eval_set(
        tables["chunks"],
        tables["queries"],
        tables["qrels"],
        statements=tables["statements"],
        papers=tables["papers"],
        sources=sources,
        foreign=[read_foreign_corpus(paths.root / folder) for folder in foreign_corpora],
    )
