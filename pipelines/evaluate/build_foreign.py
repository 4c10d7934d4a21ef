"""Build a foreign corpus (:mod:`pipelines.evaluate.foreign`) from a project after a night.

The project's evaluation set, as its evaluate stage searched it, becomes the folder's
tables: its named queries over its passages with their names masked out (``masked``), its
described queries, and at most ``--max-passages`` passages (every judged one, the rest a
stable draw). The shipped ``corpora/blueprints-eval/`` was built from a night on the six
Lean blueprints of ``../shared/corpora/blueprints/`` (``sample.corpus: blueprints``)::

    python -m pipelines.evaluate.build_foreign --project /tmp/bpclone \\
        --out corpora/blueprints-eval --licence ../shared/corpora/blueprints/teorth-pfr/LICENSE

A night on a corpus that shares a paper with the foreign one does not ask it (the papers'
content hashes tell).
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pandas as pd

from pipelines.common import io
from pipelines.common.paths import Paths
from pipelines.common.tables import TABLES
from pipelines.evaluate.eval_set import DESCRIBED, NAMED, EvalSet, load_eval_set
from pipelines.evaluate.foreign import FOREIGN_TABLES, foreign_corpus_from_tables, kept_passages

#: The foreign set each of the project's stored sets becomes (named: its names masked out).
FOREIGN_SET_OF = {NAMED: "masked", DESCRIBED: "described"}


def foreign_tables(
    eval_set: EvalSet, paper_of: dict[str, str], hashes: pd.DataFrame, max_passages: int
) -> dict[str, pd.DataFrame]:
    """The four tables of a foreign corpus from ``eval_set`` (pure): ``paper_of`` maps a
    passage id to its paper, ``hashes`` is the papers table (``paper_id, content_hash``)."""
    rows = [row for row, name in enumerate(eval_set.query_sets) if name in FOREIGN_SET_OF]
    needed = {doc for row in rows for doc, grade in eval_set.qrels[row].items() if grade >= 1}
    kept = kept_passages(eval_set.corpus_ids, needed, max_passages)
    kept_set = set(kept)
    texts = [eval_set.masked_texts.get(row, eval_set.corpus_texts[row]) for row in kept]
    ids = [eval_set.corpus_ids[row] for row in kept]
    passages = pd.DataFrame(
        {"passage_id": ids, "paper_id": [paper_of[i] for i in ids], "text": texts}
    )
    queries = pd.DataFrame(
        {
            "query_id": [eval_set.query_ids[row] for row in rows],
            "text": [eval_set.query_texts[row] for row in rows],
            "set": [FOREIGN_SET_OF[eval_set.query_sets[row]] for row in rows],
            "exclude": [
                sorted(eval_set.corpus_ids[doc] for doc in eval_set.excluded[row] & kept_set)
                for row in rows
            ],
        }
    )
    qrels = pd.DataFrame(
        [
            (eval_set.query_ids[row], eval_set.corpus_ids[doc], grade)
            for row in rows
            for doc, grade in sorted(eval_set.qrels[row].items())
            if doc in kept_set
        ],
        columns=list(FOREIGN_TABLES["qrels"]),
    )
    papers = hashes[list(FOREIGN_TABLES["papers"])].astype(str).reset_index(drop=True)
    return {"passages": passages, "queries": queries, "qrels": qrels, "papers": papers}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, required=True, help="a project after a night")
    parser.add_argument("--out", type=Path, required=True, help="the folder to write")
    parser.add_argument("--max-passages", type=int, default=1200)
    parser.add_argument("--licence", type=Path, help="the corpus's licence, copied beside it")
    args = parser.parse_args()
    paths = Paths(args.project)
    chunks = TABLES["chunks"].read(paths, ["chunk_id", "paper_id"])
    papers = TABLES["papers"].read(paths, ["paper_id", "content_hash"])
    paper_of = dict(
        zip(chunks["chunk_id"].astype(str), chunks["paper_id"].astype(str), strict=True)
    )
    tables = foreign_tables(load_eval_set(paths), paper_of, papers, args.max_passages)
    foreign_corpus_from_tables(args.out, tables)  # what evaluate will check, checked now
    args.out.mkdir(parents=True, exist_ok=True)
    for name, frame in tables.items():
        io.write_parquet(args.out / f"{name}.parquet", frame)
    if args.licence:
        shutil.copyfile(args.licence, args.out / args.licence.name)
    counts = {name: len(frame) for name, frame in tables.items()}
    print(f"{args.out}: {counts}; sets {tables['queries']['set'].value_counts().to_dict()}")


if __name__ == "__main__":
    main()
