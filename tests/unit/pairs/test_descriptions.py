"""Descriptions written by people: slogans and citing sentences as pairs and as the
described eval set."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from pipelines.common.config import PairsParams
from pipelines.pairs.build import build_pairs
from pipelines.pairs.descriptions import (
    STATEMENT_SALT,
    clean_citing_sentence,
    description_problem,
    reference_left_a_hole,
    statement_key,
)
from pipelines.pairs.stable import stable_bucket

P1, P2 = "2401.00001", "2401.00002"
TEXT_A = "Let $f$ be flat and locally of finite presentation. Then $f$ is an open map of schemes."
TEXT_B = "Let $U$ be a quasi-compact open of an affine scheme. Then $U$ is a quasi-affine scheme."
SLOGAN_A = "Flat finitely presented morphisms are open maps between schemes."
SLOGAN_B = "Quasi-compact open subschemes of affine schemes are quasi-affine."
CITES_A = "We use that flat morphisms locally of finite presentation are open maps (Lemma [ref])."
CITES_B = (
    "Quasi-compact open subschemes of affine schemes are always quasi-affine, see Lemma [ref]."
)
CITES_NOTHING = "Nothing here is cited by a label that any statement carries, see Lemma [ref]."
ALL_MATH = "Hence $\\mathcal{O}_{X, x} \\to \\mathcal{O}_{Y, y}$ is flat (Lemma [ref])."


def held_and_kept() -> tuple[str, str, float]:
    """Labels of the held-out and the kept statement, and a fraction between their buckets."""
    a = stable_bucket(f"{STATEMENT_SALT}:{statement_key(P1, 'lemma-a', '')}")
    b = stable_bucket(f"{STATEMENT_SALT}:{statement_key(P1, 'lemma-b', '')}")
    held, kept = ("lemma-a", "lemma-b") if a < b else ("lemma-b", "lemma-a")
    return held, kept, (min(a, b) + 1) / 1_000_000


def tables() -> dict[str, pd.DataFrame]:
    statement: dict[str, Any] = {"kind": "lemma", "name": "", "refs": [], "proof": ""}
    return {
        "papers": pd.DataFrame(
            {
                "paper_id": [P1, P2],
                "citing_sentences": [[], [CITES_A, CITES_B, CITES_NOTHING, ALL_MATH]],
                "citing_labels": [[], ["one-lemma-a", "one-lemma-b", "one-lemma-z", "one-lemma-b"]],
            }
        ),
        "chunks": pd.DataFrame(
            {
                "chunk_id": [f"{P1}v1#c0000", f"{P1}v1#c0001", f"{P2}v1#c0000"],
                "paper_id": [P1, P1, P2],
                "chunk_index": [0, 1, 0],
                "text": [
                    f"Lemma. {TEXT_A}",
                    f"Lemma. {TEXT_B}",
                    " ".join([CITES_A, CITES_B, CITES_NOTHING, ALL_MATH]),
                ],
            }
        ),
        "statements": pd.DataFrame(
            [
                {
                    **statement,
                    "statement_id": f"{P1}v1#s000",
                    "paper_id": P1,
                    "label": "lemma-a",
                    "text": TEXT_A,
                    "slogan": SLOGAN_A,
                },
                {
                    **statement,
                    "statement_id": f"{P1}v1#s001",
                    "paper_id": P1,
                    "label": "lemma-b",
                    "text": TEXT_B,
                    "slogan": SLOGAN_B,
                },
            ]
        ),
        "concepts": pd.DataFrame(
            columns=["name", "display_name", "description", "aliases", "papers", "statements"]
        ),
        "edges": pd.DataFrame(columns=["source", "target", "relation"]),
        "mentions": pd.DataFrame(columns=["concept", "chunk_id", "paper_id", "evidence"]),
    }


def params(**changes: Any) -> PairsParams:
    _held, _kept, fraction = held_and_kept()
    settings: dict[str, Any] = {
        "held_out_fraction": 0.5,
        "held_out_statement_fraction": fraction,
        "unseen_paper_fraction": 0.0,
        "validation_fraction": 0.0,
        "described_per_statement": 2,
        "hard_negatives": False,
    }
    return PairsParams(**{**settings, **changes})


def test_held_out_statement_is_described_and_the_other_trains() -> None:
    held, _kept, _fraction = held_and_kept()
    held_id, kept_id = (
        (f"{P1}v1#s000", f"{P1}v1#s001") if held == "lemma-a" else (f"{P1}v1#s001", f"{P1}v1#s000")
    )
    held_text, kept_text = (TEXT_A, TEXT_B) if held == "lemma-a" else (TEXT_B, TEXT_A)
    held_slogan, kept_slogan = (SLOGAN_A, SLOGAN_B) if held == "lemma-a" else (SLOGAN_B, SLOGAN_A)
    held_cites, kept_cites = (CITES_A, CITES_B) if held == "lemma-a" else (CITES_B, CITES_A)
    result = build_pairs(**tables(), params=params())

    described = result.queries[result.queries["set"] == "described"]
    assert sorted(described["text"]) == sorted([held_slogan, clean_citing_sentence(held_cites)])
    assert set(described["concept"]) == {held_id}
    exclude = dict(zip(described["text"], described["exclude"].map(list), strict=True))
    assert exclude[held_slogan] == []
    assert exclude[clean_citing_sentence(held_cites)] == [f"{P2}v1#c0000"]  # its own passage
    relevant = result.qrels[result.qrels["query_id"].isin(described["query_id"])]
    held_passage = f"{P1}v1#c000{0 if held == 'lemma-a' else 1}"
    assert set(relevant["chunk_id"]) == {held_passage} and set(relevant["grade"]) == {2}

    pairs = result.pairs
    trained = {(row.kind, row.anchor, row.positive) for row in pairs.itertuples()}
    # The positive is the passage the statement starts, as retrieval ranks it.
    assert ("slogan", kept_slogan, f"Lemma. {kept_text}") in trained
    assert ("citing", clean_citing_sentence(kept_cites), f"Lemma. {kept_text}") in trained
    assert set(pairs.loc[pairs["kind"] == "citing", "concept"]) == {kept_id}
    # Nothing held out is ever a training anchor or positive.
    assert not set(pairs["anchor"]) & set(described["text"])
    assert f"Lemma. {held_text}" not in set(pairs["positive"])
    assert held_passage not in set(pairs["positive_id"])

    counts = result.counts["descriptions"]
    assert counts["found"] == {"citing_sentences": 4, "slogans": 2}
    assert counts["left_out"]["citing_cites_no_statement"] == 1
    assert counts["left_out"]["citing_mostly_math"] == 1
    assert counts["pairs"] == {"slogan": 1, "citing": 1}
    assert result.counts["queries_by_set"] == {"named": 0, "described": 2}


def test_a_citing_sentence_in_two_overlapping_passages_excludes_both() -> None:
    # Passages overlap: the held-out statement's citing sentence closes P2's first passage
    # and opens its second again. Left in the ranking, that second passage would hold the
    # query verbatim.
    held, _kept, _fraction = held_and_kept()
    held_cites = CITES_A if held == "lemma-a" else CITES_B
    data = tables()
    p2_text = " ".join([CITES_A, CITES_B, CITES_NOTHING, ALL_MATH])
    overlap = pd.DataFrame(
        {
            "chunk_id": [f"{P2}v1#c0000", f"{P2}v1#c0001"],
            "paper_id": [P2, P2],
            "chunk_index": [0, 1],
            "text": [p2_text, f"{held_cites} The proof goes on from here with more words."],
        }
    )
    chunks = data["chunks"]
    data["chunks"] = pd.concat([chunks[chunks["paper_id"] == P1], overlap], ignore_index=True)
    result = build_pairs(**data, params=params())

    described = result.queries[result.queries["set"] == "described"]
    exclude = dict(zip(described["text"], described["exclude"].map(list), strict=True))
    assert exclude[clean_citing_sentence(held_cites)] == [f"{P2}v1#c0000", f"{P2}v1#c0001"]


def test_citing_pairs_are_capped_and_can_be_turned_off() -> None:
    result = build_pairs(**tables(), params=params(max_citing_pairs=0, slogan_pairs=False))
    assert set(result.pairs["kind"]) <= {"statement"}
    left_out = result.counts["descriptions"]["left_out"]
    assert left_out["citing_over_max_citing_pairs"] == 1 and left_out["slogan_pairs_off"] == 1


def test_no_statement_held_out_means_no_described_set() -> None:
    result = build_pairs(**tables(), params=params(held_out_statement_fraction=0.0))
    assert (result.queries["set"] != "described").all()
    assert result.counts["descriptions"]["pairs"] == {"slogan": 2, "citing": 2}


@pytest.mark.parametrize(
    ("sentence", "cleaned"),
    [
        (
            "Hence $B$ is finite over $A$ (Algebra, Lemma [ref]).",
            "Hence $B$ is finite over $A$.",
        ),
        (
            "By More on Algebra, Lemmas [ref] and [ref] the map is flat.",
            "The map is flat.",
        ),
        ("The ring is Noetherian, see [cite].", "The ring is Noetherian."),
        ("This follows from Propositions [ref], [ref], and [ref].", "This follows."),
        (
            "Using Lemma [ref] we see that $f$ is flat over $S$.",
            "We see that $f$ is flat over $S$.",
        ),
        (
            "It follows from Lemma [ref] that the sheaf is coherent.",
            "It follows that the sheaf is coherent.",
        ),
        (
            "In particular, Theorem [ref] states that for every $k$ the equation is solvable.",
            "For every $k$ the equation is solvable.",
        ),
    ],
)
def test_reference_phrases_leave_the_sentence(sentence: str, cleaned: str) -> None:
    assert clean_citing_sentence(sentence) == cleaned


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("word " * 200, "too_long"),
        ("$\\mathcal{O}_{X, x} \\to \\mathcal{O}_{Y, y} \\otimes_{A} B$ is $C$.", "mostly_math"),
        ("This follows from the lemma above.", "too_few_words"),
        ("Flat morphisms locally of finite presentation are open.", None),
    ],
)
def test_what_is_no_description(text: str, reason: str | None) -> None:
    assert description_problem(text, max_chars=600) == reason


@pytest.mark.parametrize(
    ("sentence", "hole"),
    [
        # Asides and bracketed references leave a whole sentence.
        ("Hence $B$ is finite over $A$ (Algebra, Lemma [ref]).", False),
        ("By Lemmas [ref] and [ref] the morphism $f$ is flat and open.", False),
        ("The ring is Noetherian, see [cite], and every ideal is finitely generated.", False),
        ("The map is proper (as $Z$ is proper over $S$, see Lemma [ref]) and finite.", False),
        # A reference that was a part of the sentence leaves a fragment.
        ("Using [ref] we see that $A \\to B$ is pseudo-coherent.", False),
        ("It follows from Lemma [ref] that the sheaf is coherent on $X$.", False),
        ("Property (3) of Lemma [ref] shows that the module is flat.", False),
        ("In other words, the hypotheses of Lemma [ref] hold for the sheaf.", True),
        ("Lemma [ref] shows that the sheaf is coherent on the scheme.", False),
        ("As shown in [ref], this law characterizes abelian groups of exponent two.", True),
        ("The module is flat as in Lemma [ref].", True),
        # A dangling preposition without a reference phrase too (the older rule).
        ("This follows from and the fact that the map is open.", True),
        ("This law was shown in [cite] to characterize the Sheffer stroke.", True),
        # A preposition run into "to" is a word, not a hole.
        ("The map factors through a scheme mapping onto the base and into $S$.", False),
        # The introducer stays with what it also introduced.
        ("By [ref] and the pigeonhole principle, some fibre has two points.", False),
        ("This follows from Lemma [ref] and the fact that $F$ is coherent.", False),
    ],
)
def test_a_reference_that_was_part_of_the_sentence_leaves_a_hole(sentence: str, hole: bool) -> None:
    assert reference_left_a_hole(sentence) is hole


@pytest.mark.parametrize(
    ("sentence", "cleaned"),
    [
        (
            "By [ref] and the pigeonhole principle, some fibre has two points.",
            "By the pigeonhole principle, some fibre has two points.",
        ),
        (
            "The optimization follows from Lemma [ref] and routine calculations.",
            "The optimization follows from routine calculations.",
        ),
        (
            "This follows from Lemma [ref] and the fact that $F$ is coherent.",
            "This follows from the fact that $F$ is coherent.",
        ),
        # "and" joining two references, or a reference and a citation: both go.
        (
            "It follows from Lemma [ref] and Lemma [ref] that the sheaf is coherent.",
            "It follows that the sheaf is coherent.",
        ),
        ("By Lemma [ref] and Proposition [ref] the map is flat.", "The map is flat."),
        # Mid-sentence "by" with "and" joining predicates: the introducer goes as before.
        (
            "Then $A$ is geometrically irreducible by Lemma [ref] and hence an abelian variety.",
            "Then $A$ is geometrically irreducible and hence an abelian variety.",
        ),
        (
            "Thus we obtain a morphism (see Lemma [ref] and the discussion following it).",
            "Thus we obtain a morphism (see the discussion following it).",
        ),
    ],
)
def test_a_reference_joined_by_and_leaves_its_introducer(sentence: str, cleaned: str) -> None:
    assert clean_citing_sentence(sentence) == cleaned


def with_bare_labels(authors: list[list[str]]) -> dict[str, pd.DataFrame]:
    """The tables, P2's sentences citing P1's lemmas by bare label (a work whose chapters
    are served as papers: a Lean blueprint), P1 and P2 written by ``authors``."""
    data = tables()
    papers = data["papers"].copy()
    papers["citing_labels"] = [[], ["lemma-a", "lemma-b", "lemma-z", "lemma-b"]]
    papers["authors"] = pd.Series(authors, dtype=object)
    data["papers"] = papers
    return data


def test_the_papers_of_one_work_cite_each_other_by_bare_label() -> None:
    same = [["Ann Author", "Bo Writer"], ["Bo Writer", "Ann Author"]]
    counts = build_pairs(**with_bare_labels(same), params=params()).counts
    assert counts["descriptions"]["pairs"] == {"slogan": 1, "citing": 1}
    assert counts["descriptions"]["left_out"]["citing_cites_no_statement"] == 1  # lemma-z
    assert counts["queries_by_set"] == {"named": 0, "described": 2}


def test_a_bare_label_in_a_strangers_paper_cites_nothing() -> None:
    strangers = [["Ann Author"], ["Cy Other"]]
    counts = build_pairs(**with_bare_labels(strangers), params=params()).counts
    assert counts["descriptions"]["pairs"] == {"slogan": 1, "citing": 0}
    assert counts["descriptions"]["left_out"]["citing_cites_no_statement"] == 4  # all of them
    assert counts["queries_by_set"] == {"named": 0, "described": 1}  # the held-out slogan
