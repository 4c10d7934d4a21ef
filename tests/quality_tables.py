"""Small hand-built tables for the data-quality report tests: ``valid_tables`` meets every
expectation of the chunks, pairs and eval_set suites (under :data:`REPORT_PARAMS`);
``broken_tables`` breaks one of each family."""

from __future__ import annotations

import pandas as pd

from pipelines.common.config import ValidateParams

Tables = dict[str, pd.DataFrame]

CATEGORIES = ("math.CO", "math.NT", "math.AT")
KINDS = ("name", "description", "edge", "statement")
N_QUERIES = 4
#: The eval set's bounds for these tables: a handful of queries over 18 passages.
REPORT_PARAMS = ValidateParams(min_queries=N_QUERIES, max_query_relevant_share=0.2)


def eval_tables(chunk_ids: list[str], n_queries: int = N_QUERIES) -> Tables:
    """Queries for held-out concepts, each with a defining passage and sometimes a second
    (citing) one; the last query's passages are in an unseen paper."""
    queries = pd.DataFrame(
        {
            "query_id": [f"q{q:012d}" for q in range(n_queries)],
            "concept": [f"held out {q}" for q in range(n_queries)],
            "text": [f"held out {q}" for q in range(n_queries)],
        }
    )
    rows = []
    for q, query_id in enumerate(queries["query_id"]):
        unseen = q == n_queries - 1
        rows.append((query_id, chunk_ids[(3 * q) % len(chunk_ids)], 2, unseen))
        if q % 2 == 0:
            rows.append((query_id, chunk_ids[(3 * q + 1) % len(chunk_ids)], 1, unseen))
    qrels = pd.DataFrame(rows, columns=["query_id", "chunk_id", "grade", "unseen"])
    return {"queries": queries, "qrels": qrels}


def passage(paper: int, index: int) -> str:
    """A distinct passage of ~500 characters."""
    words = " ".join(f"w{paper}x{index}x{k}" for k in range(45))
    return f"Passage {index} of paper {paper}. {words}."


def valid_tables(n_papers: int = 6, chunks_per_paper: int = 3, n_concepts: int = 12) -> Tables:
    """Tables that meet every expectation of the chunks and pairs suites."""
    papers = pd.DataFrame(
        {
            "paper_id": [f"2401.{p:05d}" for p in range(1, n_papers + 1)],
            "primary_category": [CATEGORIES[p % len(CATEGORIES)] for p in range(n_papers)],
            "authors": [[f"Author {p}"] for p in range(n_papers)],
        }
    )
    # Statements: what the corpus facts count (pipelines.validate.expected); half named.
    statements = pd.DataFrame(
        {
            "statement_id": [f"{paper_id}v1#s0000" for paper_id in papers["paper_id"]],
            "name": [f"Lemma {p}" if p % 2 else "" for p in range(n_papers)],
        }
    )
    chunk_rows = []
    for p, paper_id in enumerate(papers["paper_id"]):
        for index in range(chunks_per_paper):
            chunk_rows.append(
                {
                    "chunk_id": f"{paper_id}v1#c{index:04d}",
                    "paper_id": paper_id,
                    "version": 1,
                    "chunk_index": index,
                    "section": "" if index == 0 else "Introduction",
                    "text": passage(p, index),
                }
            )
    chunks = pd.DataFrame(chunk_rows)
    pair_rows = []
    chunk_ids = list(chunks["chunk_id"])
    for c in range(n_concepts):
        name = f"concept {c}"
        targets = [chunk_ids[(2 * c + k) % len(chunk_ids)] for k in range(3)]
        rows = [
            ("name", name, targets[0]),
            ("name", name, targets[1]),
            ("description", f"The {name} is what paper {c} defines.", targets[0]),
            ("edge", name, targets[2]),
        ]
        if c % 3 == 0:
            rows.append(("statement", f"Every {name} is a {name}.", targets[2]))
        for kind, anchor, chunk_id in rows:
            pair_rows.append(
                {
                    "anchor": anchor,
                    "positive": chunks.loc[chunks["chunk_id"] == chunk_id, "text"].iloc[0],
                    "kind": kind,
                    "concept": name,
                    "positive_id": chunk_id,
                    "split": "validation" if c == 0 else "train",
                }
            )
    return {
        "papers": papers,
        "statements": statements,
        "chunks": chunks,
        "pairs": pd.DataFrame(pair_rows),
        **eval_tables(chunk_ids),
    }


def broken_tables() -> Tables:
    """One break per expectation family: duplicates, nulls, lengths, coverage, mix, ids."""
    tables = valid_tables()
    chunks = tables["chunks"].copy()
    chunks.loc[1, "chunk_id"] = str(chunks["chunk_id"].iloc[0])  # duplicate id
    chunks["text"] = chunks["text"].str.slice(0, 60)  # every passage too short
    chunks.loc[len(chunks)] = {  # an orphan: its paper is not in papers
        "chunk_id": "2499.00001v1#c0000",
        "paper_id": "2499.00001",
        "version": 1,
        "chunk_index": 0,
        "section": "",
        "text": "An orphan passage whose paper was never listed in the papers table.",
    }
    pairs = tables["pairs"].copy()
    pairs["kind"] = "name"  # relation mix collapses to one kind
    pairs = pd.concat([pairs, pairs.iloc[:3]], ignore_index=True)  # duplicated pairs
    # The eval set: one query relevant to every passage, none with a defining passage.
    qrels = pd.DataFrame(
        {
            "query_id": tables["queries"]["query_id"].iloc[0],
            "chunk_id": chunks["chunk_id"].drop_duplicates(),
            "grade": 1,
            "unseen": False,
        }
    )
    return {
        "papers": tables["papers"],
        "statements": tables["statements"],
        "chunks": chunks,
        "pairs": pairs,
        "queries": tables["queries"].iloc[:1],
        "qrels": qrels,
    }
