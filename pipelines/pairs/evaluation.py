"""The evaluation set of the ``pairs`` stage (``data/eval/``): named queries and their qrels.

Evaluation (``data/eval/``): one query per held-out concept with at least ``min_degree``
papers and at least one relevant chunk, its text the display name. What defines or states a
held-out concept (its statements and the passages holding them) is never a positive, for
any anchor. Its qrels depend on ``qrels_scope``:

* ``defining`` (the default): graded, specific. Grade 2: the passage holding the statement
  that defines or states the concept (a definition whose author emphasised the term, a
  named theorem); grade 1: the passages whose statement, or proof, cites that statement
  by ``\\ref`` — they use it in a substantive way. A query with more than
  ``max_relevant_share`` of the corpus relevant is left out (``held_out_too_broad``): a
  concept every second passage relies on tests nothing.
* ``unnamed``: the chunks of the concept's papers that do *not* name it —
  no surface form of its name or of any alias the graph knows (:func:`chunks_naming`, the
  graph's own matcher). These passages speak of the concept through notation, other
  names, its description or its neighbours, so finding them is the semantic retrieval an
  embedding model is for ("Rogers–Ramanujan identities" should find a passage on Bailey's
  lemma and q-series that never says the phrase); a passage that does name it is found by
  string matching, which every general model already does (the base model scored
  MRR@10 = 1.0 on the "papers" scope of the sample corpus, leaving nothing to improve).
  A chunk that names the concept stays in the corpus as a non-relevant passage for that
  query: the eval asks for the passages the phrase does not give away.
* ``papers``: every chunk of the concept's papers, named or not.
* ``mentions``: only the chunks the graph found mentioning it (name, alias, keyword,
  definition or statement) — a ground truth that rewards exact string matching.

A held-out concept whose scope leaves no relevant chunk gets no query (counted in
``held_out_without_relevant``). Every qrel row says whether its chunk's paper is unseen,
so the evaluation reports seen and unseen papers separately.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import pandas as pd

from pipelines.common.config import PairsParams
from pipelines.common.tables import QRELS_SCHEMA, QUERIES_SCHEMA
from pipelines.mathtext.names import SurfaceMatcher, match_form
from pipelines.mathtext.passages import PassageFinder
from pipelines.mathtext.refs import LabelIndex, citing_statements
from pipelines.pairs.stable import query_id

QUERY_COLUMNS = QUERIES_SCHEMA.names
QREL_COLUMNS = QRELS_SCHEMA.names


def chunks_naming(concept: str, surfaces: Iterable[str], texts: dict[str, str]) -> set[str]:
    """The ids in ``texts`` (chunk id -> text) whose text names ``concept`` by one of ``surfaces``.

    The graph's matcher and normal form: case, accents, dashes, possessives and the head
    noun's number do not matter ("Rogers-Ramanujan identity" names "Rogers–Ramanujan
    identities"); whole words only.
    """
    matcher = SurfaceMatcher({concept: list(surfaces)})
    return {chunk_id for chunk_id, text in texts.items() if matcher.keys_in(match_form(text))}


@dataclass(frozen=True)
class PaperStructure:
    """Where each statement and proof sits among the passages, and what cites what."""

    span_of: dict[str, tuple[str, ...]]  # statement_id -> the passages its text runs over
    proof_span_of: dict[str, tuple[str, ...]]  # ... and those its proof runs over
    proof_of: dict[str, str]  # statement_id -> its proof's text
    cited: dict[str, list[str]]  # statement_id -> the statements it (or its proof) cites
    citing: dict[str, list[str]]  # the inverse
    finders: dict[str, PassageFinder]  # paper_id -> its passages, in order
    labels: LabelIndex  # what a \ref resolves to, here and in the descriptions

    @classmethod
    def of(
        cls,
        chunks: pd.DataFrame,
        statements: pd.DataFrame,
        work_of: Mapping[str, str] | None = None,
    ) -> PaperStructure:
        """``work_of``: each paper's work (:func:`~pipelines.mathtext.refs.work_keys`), so
        the parts of one work cite each other by bare label."""
        ordered = chunks.sort_values(["paper_id", "chunk_index"], kind="stable")
        texts: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for paper_id, chunk_id, text in zip(
            ordered["paper_id"].tolist(),
            ordered["chunk_id"].tolist(),
            ordered["text"].tolist(),
            strict=True,
        ):
            texts[paper_id].append((chunk_id, text))
        passages = {paper_id: PassageFinder(chunks) for paper_id, chunks in texts.items()}
        nowhere = PassageFinder(())
        span_of: dict[str, tuple[str, ...]] = {}
        proof_span_of: dict[str, tuple[str, ...]] = {}
        proof_of: dict[str, str] = {}
        rows = list(
            zip(
                statements["statement_id"].tolist(),
                statements["paper_id"].tolist(),
                statements["label"].tolist(),
                statements["text"].tolist(),
                statements["refs"].tolist(),
                statements["proof"].tolist(),
                strict=True,
            )
        )
        for statement_id, paper_id, _label, text, _refs, proof in rows:
            finder = passages.get(paper_id, nowhere)
            span_of[statement_id] = finder.span(text)
            if proof:
                proof_of[statement_id] = proof
                proof_span_of[statement_id] = finder.span(proof)
        labels = LabelIndex([(sid, paper, label) for sid, paper, label, *_ in rows], work_of)
        cited = labels.cited((sid, paper, refs) for sid, paper, _l, _t, refs, _p in rows)
        return cls(
            span_of, proof_span_of, proof_of, cited, citing_statements(cited), passages, labels
        )

    def defining(self, statement_ids: Iterable[str], naming: set[str]) -> set[str]:
        """The passages defining or stating a concept: where each of its ``statement_ids``
        starts, and the rest of the statement's passages that name it (``naming``: a long
        definition's clause for this term may sit in its second passage)."""
        found: set[str] = set()
        for statement_id in statement_ids:
            span = self.span_of.get(statement_id, ())
            found.update(span[:1])
            found.update(chunk_id for chunk_id in span[1:] if chunk_id in naming)
        return found

    def using(self, statement_ids: Iterable[str], naming: set[str]) -> set[str]:
        """The passages that use a concept in a substantive way: they hold a statement, or a
        proof, citing one of ``statement_ids`` by \\ref, and name the concept (a definition
        block defines several terms; citing it is no use of every one)."""
        found: set[str] = set()
        for target in statement_ids:
            for source in self.citing.get(target, ()):
                found.update(self.span_of.get(source, ()))
                found.update(self.proof_span_of.get(source, ()))
        return found & naming


@dataclass(frozen=True)
class Evaluation:
    queries: pd.DataFrame
    qrels: pd.DataFrame
    below_min_degree: int  # held-out concepts with fewer than min_degree papers
    without_relevant: int  # ... with no relevant passage in qrels_scope
    too_broad: int  # ... with more than max_relevant_share of the corpus relevant


def evaluation_set(
    held_out: set[str],
    display: dict[str, str],
    aliases: dict[str, list[str]],
    papers_of: dict[str, list[str]],
    statements_of: dict[str, list[str]],
    structure: PaperStructure,
    naming: dict[str, set[str]],
    defining: dict[str, set[str]],
    chunks: pd.DataFrame,
    unseen: set[str],
    params: PairsParams,
) -> Evaluation:
    """Queries and their graded qrels (see the module docstring for ``qrels_scope``)."""
    enough_papers = sorted(name for name in held_out if len(papers_of[name]) >= params.min_degree)
    chunks_of_paper: dict[str, list[str]] = defaultdict(list)
    paper_of_chunk = dict(
        zip(chunks["chunk_id"].tolist(), chunks["paper_id"].tolist(), strict=True)
    )
    text_of_chunk = dict(zip(chunks["chunk_id"].tolist(), chunks["text"].tolist(), strict=True))
    for chunk_id, paper_id in paper_of_chunk.items():
        chunks_of_paper[paper_id].append(chunk_id)
    max_relevant = max(1, int(params.max_relevant_share * len(paper_of_chunk)))

    query_concepts: list[str] = []
    qrel_rows: list[tuple[str, str, int, bool]] = []
    without_relevant = too_broad = 0
    for name in enough_papers:
        graded: dict[str, int]
        if params.qrels_scope == "defining":
            defines = defining[name]
            used_by = structure.using(statements_of[name], naming[name]) - defines
            graded = {**dict.fromkeys(used_by, 1), **dict.fromkeys(defines, 2)}
        else:
            of_papers = {
                chunk_id for paper_id in papers_of[name] for chunk_id in chunks_of_paper[paper_id]
            }
            if params.qrels_scope == "mentions":
                relevant = naming[name] & paper_of_chunk.keys()
            elif params.qrels_scope == "unnamed":
                texts = {chunk_id: text_of_chunk[chunk_id] for chunk_id in of_papers}
                relevant = of_papers - chunks_naming(name, [display[name], *aliases[name]], texts)
            else:
                relevant = of_papers
            graded = dict.fromkeys(relevant, 1)
        if not graded:
            without_relevant += 1
            continue
        if len(graded) > max_relevant:
            too_broad += 1
            continue
        query_concepts.append(name)
        qrel_rows.extend(
            (query_id(name), chunk_id, grade, paper_of_chunk[chunk_id] in unseen)
            for chunk_id, grade in sorted(graded.items())
        )
    queries = pd.DataFrame(
        [(query_id(name), name, display[name], "named", []) for name in query_concepts],
        columns=QUERY_COLUMNS,
    )
    qrels = pd.DataFrame(qrel_rows, columns=QREL_COLUMNS).astype(
        {"grade": "int64", "unseen": "bool"}
    )
    return Evaluation(
        queries, qrels, len(held_out) - len(enough_papers), without_relevant, too_broad
    )
