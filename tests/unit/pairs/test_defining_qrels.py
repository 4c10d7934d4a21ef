"""The default eval set: graded, specific qrels from the papers' structure; and the
structural pairs (statement -> proof, statement -> cited statement) that never lead to what
a held-out concept's queries are judged by."""

from __future__ import annotations

from typing import Any

import pandas as pd

from pipelines.common.config import PairsParams
from pipelines.pairs.build import build_pairs
from pipelines.pairs.stable import query_id, stable_bucket

DEFINITION = "An affine scheme is a locally ringed space isomorphic to the spectrum of a ring."
LEMMA = "Every open subset of an affine scheme is a union of affine open subschemes of it."
PROOF = "By Definition [ref] the standard opens form a basis, which is what we need here."
FLAT = "A module over a ring is flat when tensoring with it preserves every injective map."
USE = "Let $M$ be a flat module over a ring; then the localisation of it is flat as well."


def chunk(paper: str, index: int, text: str) -> dict[str, Any]:
    return {
        "chunk_id": f"{paper}v1#c{index:04d}",
        "paper_id": paper,
        "chunk_index": index,
        "text": text,
    }


def statement(
    paper: str, index: int, kind: str, label: str, text: str, **more: Any
) -> dict[str, Any]:
    return {
        "statement_id": f"{paper}v1#s{index:03d}",
        "paper_id": paper,
        "kind": kind,
        "name": "",
        "label": label,
        "text": text,
        "refs": more.get("refs", []),
        "proof": more.get("proof", ""),
    }


def tables(filler: int = 0) -> dict[str, pd.DataFrame]:
    chunks = [
        chunk("2401.00001", 0, f"Definition. {DEFINITION}"),
        chunk("2401.00001", 1, f"Lemma. {LEMMA}\n\nProof. {PROOF}"),
        chunk("2401.00002", 0, f"Definition. {FLAT}"),
        chunk("2401.00002", 1, f"Lemma. {USE}"),
        *(
            chunk("2401.00003", 10 + i, f"Filler passage number {i} on nothing.")
            for i in range(filler)
        ),
    ]
    statements = [
        statement("2401.00001", 0, "definition", "definition-affine", DEFINITION),
        statement(
            "2401.00001", 1, "lemma", "lemma-open", LEMMA, refs=["definition-affine"], proof=PROOF
        ),
        statement("2401.00002", 0, "definition", "definition-flat", FLAT),
        statement(
            "2401.00002", 1, "lemma", "", USE, refs=["definition-flat", "x-definition-affine"]
        ),
    ]
    concepts = pd.DataFrame(
        {
            "name": ["affine scheme", "flat module"],
            "display_name": ["affine scheme", "flat module"],
            "type": ["definition", "definition"],
            "description": ["", ""],
            "aliases": [[], []],
            "papers": [["2401.00001"], ["2401.00002"]],
            "statements": [["2401.00001v1#s000"], ["2401.00002v1#s000"]],
        }
    )
    mentions = pd.DataFrame(
        [
            ("affine scheme", "2401.00001v1#c0000", "2401.00001", "definition"),
            ("affine scheme", "2401.00001v1#c0001", "2401.00001", "text"),
            ("flat module", "2401.00002v1#c0000", "2401.00002", "definition"),
            ("flat module", "2401.00002v1#c0001", "2401.00002", "text"),
        ],
        columns=["concept", "chunk_id", "paper_id", "evidence"],
    )
    return {
        "papers": pd.DataFrame({"paper_id": ["2401.00001", "2401.00002", "2401.00003"]}),
        "chunks": pd.DataFrame(chunks),
        "statements": pd.DataFrame(statements),
        "concepts": concepts,
        "edges": pd.DataFrame(columns=["source", "target", "relation", "papers"]),
        "mentions": mentions,
    }


def params(**changes: Any) -> PairsParams:
    # Hold out exactly "affine scheme": the fraction falls between the two names' buckets.
    held, kept = stable_bucket("affine scheme"), stable_bucket("flat module")
    assert held != kept
    fraction = (min(held, kept) + 1) / 1_000_000 if held < kept else None
    settings: dict[str, Any] = {
        "max_chunks_per_concept": 8,
        "max_edge_pairs": 0,
        "held_out_fraction": fraction if fraction is not None else 0.5,
        "min_degree": 1,
        "unseen_paper_fraction": 0.0,
        "validation_fraction": 0.0,
        "seed": 1,
        "qrels_scope": "defining",
        "max_relevant_share": 1.0,
        "hard_negatives": True,
        "max_structure_pairs": 1000,
        # the concepts' structure alone: descriptions and masked names have their own tests
        "held_out_statement_fraction": 0.0,
        "masked_name_pairs": False,
        "description_pairs": True,
    }
    settings.update(changes)
    return PairsParams(**settings)


def held_out_name() -> str:
    return (
        "affine scheme"
        if stable_bucket("affine scheme") < stable_bucket("flat module")
        else "flat module"
    )


def test_defining_passage_is_grade_2_and_citing_passages_grade_1() -> None:
    result = build_pairs(**tables(), params=params())
    name = held_out_name()
    assert result.queries["concept"].tolist() == [name]
    graded = {
        row.chunk_id: row.grade
        for row in result.qrels.itertuples()
        if row.query_id == query_id(name)
    }
    if name == "affine scheme":
        # Its lemma's proof cites it and names it. The other paper's lemma cites it too
        # (with a chapter prefix) but never names it: citing a definition is no use of it.
        assert graded == {"2401.00001v1#c0000": 2, "2401.00001v1#c0001": 1}
    else:
        assert graded == {"2401.00002v1#c0000": 2, "2401.00002v1#c0001": 1}


def test_what_defines_a_held_out_concept_is_never_a_positive() -> None:
    result = build_pairs(**tables(), params=params())
    name = held_out_name()
    defining_chunk = "2401.00001v1#c0000" if name == "affine scheme" else "2401.00002v1#c0000"
    defining_statement = defining_chunk.replace("#c0000", "#s000")
    assert defining_chunk not in set(result.pairs["positive_id"])
    assert defining_statement not in set(result.pairs["positive_id"])
    assert name not in set(result.pairs["anchor"])


def test_proof_and_citation_pairs_come_from_the_structure() -> None:
    result = build_pairs(**tables(), params=params(held_out_fraction=1e-6))
    by_kind = result.pairs.groupby("kind")
    proofs = by_kind.get_group("proof")
    assert proofs[["anchor", "positive", "positive_id"]].values.tolist() == [
        [LEMMA, PROOF, "2401.00001v1#s001"]
    ]
    citations = by_kind.get_group("citation")
    assert sorted(citations["positive"]) == sorted([DEFINITION, DEFINITION, FLAT])
    assert set(citations["concept"]) == {"2401.00001v1#s001", "2401.00002v1#s001"}


def test_a_query_with_too_much_of_the_corpus_relevant_is_left_out() -> None:
    # 4 passages + 2 fillers: 1/6 of the corpus is at most 1 passage; every query has 2+.
    result = build_pairs(**tables(filler=2), params=params(max_relevant_share=1 / 6))
    assert result.queries.empty
    assert result.counts["held_out_too_broad"] == 1
    kept = build_pairs(**tables(filler=2), params=params(max_relevant_share=0.5))
    assert len(kept.queries) == 1 and kept.counts["held_out_too_broad"] == 0


def test_a_name_pair_gets_a_passage_naming_the_concept_without_defining_it() -> None:
    result = build_pairs(**tables(), params=params(hard_negatives=True, max_chunks_per_concept=1))
    kept = "flat module" if held_out_name() == "affine scheme" else "affine scheme"
    paper = "2401.00002" if kept == "flat module" else "2401.00001"
    (row,) = result.pairs[result.pairs["anchor"] == kept].itertuples()
    assert (row.positive_id, row.negative_id) == (f"{paper}v1#c0000", f"{paper}v1#c0001")
    assert row.negative.startswith("Lemma.")
    # Every pair has a negative, none of them a passage defining the held-out concept.
    assert (result.pairs["negative_id"] != "").all()
    held_defining = "2401.00001v1#c0000" if kept == "flat module" else "2401.00002v1#c0000"
    assert held_defining not in set(result.pairs["negative_id"])


def test_without_hard_negatives_no_pair_has_one() -> None:
    result = build_pairs(**tables(), params=params(hard_negatives=False))
    assert (result.pairs["negative"] == "").all() and (result.pairs["negative_id"] == "").all()
