"""The pairs stage: leakage, stability across growing data, determinism, caps, counts.

Inputs are built here as tables (the graph stage has its own tests); a generated graph of
a few hundred papers exercises the properties, small hand-made ones the exact cases.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from pipelines import cli
from pipelines.common import io
from pipelines.common.config import PairsParams
from pipelines.common.paths import Paths
from pipelines.common.tables import PAIR_KINDS, PAIRS_SCHEMA, STATEMENTS_SCHEMA
from pipelines.mathtext.names import normalise_name
from pipelines.pairs.build import PairsResult, build_pairs
from pipelines.pairs.evaluation import chunks_naming
from pipelines.pairs.stable import held_out_concepts, query_id, stable_bucket, unseen_papers
from pipelines.pairs.stage import run_pairs

Tables = dict[str, pd.DataFrame]
STATEMENT_COLUMNS = STATEMENTS_SCHEMA.names
PARAMS = PairsParams(
    max_chunks_per_concept=3,
    max_edge_pairs=2,
    held_out_fraction=0.25,
    min_degree=2,
    unseen_paper_fraction=0.15,
    validation_fraction=0.2,
    seed=13,
    qrels_scope="unnamed",
    max_relevant_share=1.0,
    # the concepts alone: descriptions and masked names have their own tests
    held_out_statement_fraction=0.0,
    masked_name_pairs=False,
    description_pairs=True,
)


def generated(n_papers: int, n_concepts: int, *, seed: int = 3) -> Tables:
    """A graph-shaped corpus; every paper and concept depends only on its own index, so
    a bigger corpus contains a smaller one (the nightly run's data only grows)."""
    papers = [f"2401.{index:05d}" for index in range(n_papers)]
    chunks: list[dict[str, Any]] = []
    statements: list[dict[str, Any]] = []
    mentions: list[dict[str, Any]] = []
    concept_papers: dict[str, set[str]] = {}
    defined_in: dict[str, set[str]] = {}
    # No digits in names: the graph stage never makes such names (they read as numbering).
    names = [
        f"{WORDS[index % len(WORDS)].lower()} {letters(index)} object"
        for index in range(n_concepts)
    ]
    for paper_index, paper_id in enumerate(papers):
        rng = random.Random(seed * 1_000_003 + paper_index)
        about = rng.sample(range(n_concepts), k=min(3, n_concepts))
        for chunk_index in range(4):
            chunk_id = f"{paper_id}v1#c{chunk_index:04d}"
            # The last passage names only the paper's first concept: the others are
            # there without their names (the "unnamed" qrels scope's relevant chunks).
            named = about if chunk_index < 3 else about[:1]
            chunks.append(
                {
                    "chunk_id": chunk_id,
                    "paper_id": paper_id,
                    "chunk_index": chunk_index,
                    "text": f"Passage {chunk_index} of {paper_id}: on the "
                    + " and the ".join(display_of(names[c]) for c in named)
                    + ".",
                }
            )
            for concept in about:
                if rng.random() < 0.7:
                    evidence = "definition" if chunk_index == 0 and concept == about[0] else "text"
                    mentions.append(
                        {
                            "concept": names[concept],
                            "chunk_id": chunk_id,
                            "paper_id": paper_id,
                            "evidence": evidence,
                        }
                    )
                    concept_papers.setdefault(names[concept], set()).add(paper_id)
        defined_in.setdefault(names[about[0]], set()).add(f"{paper_id}v1#s000")
        statements.append(
            {
                "statement_id": f"{paper_id}v1#s000",
                "paper_id": paper_id,
                "kind": "definition",
                "name": display_of(names[about[0]]),
                "label": "",
                "text": f"A {display_of(names[about[0]])} is defined in {paper_id}.",
                "refs": [],
                "proof": "",
                "slogan": "",
            }
        )
        statements.append(
            {
                "statement_id": f"{paper_id}v1#s001",
                "paper_id": paper_id,
                "kind": "theorem",
                "name": "",
                "label": "",
                "text": f"Everything in {paper_id} holds.",
                "refs": [],
                "proof": "",
                "slogan": "",
            }
        )
    edges = []
    for index in range(1, n_concepts):
        rng = random.Random(seed * 7_000_003 + index)
        other = rng.randrange(index)
        edges.append(
            {
                "source": names[index],
                "target": names[other],
                "relation": rng.choice(["generalizes", "uses", "related_to"]),
                "papers": [],
            }
        )
    concepts = pd.DataFrame(
        {
            "name": names,
            "display_name": [display_of(name) for name in names],
            "type": ["object"] * n_concepts,
            "description": [
                f"The {display_of(name)} is a thing numbered in its name." for name in names
            ],
            "aliases": [[f"{display_of(name)} alias"] for name in names],
            "papers": [sorted(concept_papers.get(name, ())) for name in names],
            "statements": [sorted(defined_in.get(name, ())) for name in names],
        }
    )
    return {
        "papers": pd.DataFrame(
            {
                "paper_id": papers,
                "authors": [[f"Author {paper_id}"] for paper_id in papers],
                "citing_sentences": [[] for _ in papers],
                "citing_labels": [[] for _ in papers],
            }
        ),
        "chunks": pd.DataFrame(chunks),
        "statements": pd.DataFrame(statements),
        "concepts": concepts,
        "edges": pd.DataFrame(edges, columns=["source", "target", "relation", "papers"]),
        "mentions": pd.DataFrame(mentions),
    }


WORDS = ["Durfee", "Bailey", "Catalan", "Lucas", "Schur", "Hecke", "Kostka", "Dyck"]


def letters(index: int) -> str:
    """0 -> "aa", 1 -> "ab", ...: a distinct digit-free word per index."""
    return chr(ord("a") + index // 26) + chr(ord("a") + index % 26)


def display_of(name: str) -> str:
    return name[:1].upper() + name[1:]


def build(tables: Tables, params: PairsParams = PARAMS) -> PairsResult:
    return build_pairs(**tables, params=params)


def paper_of(positive_id: str) -> str:
    return positive_id.split("#", 1)[0].rsplit("v", 1)[0]


@pytest.fixture(scope="module")
def big() -> Tables:
    return generated(300, 120)


@pytest.fixture(scope="module")
def big_result(big: Tables) -> PairsResult:
    return build(big)


# -- stable choices -------------------------------------------------------------------


def test_stable_bucket_is_sha256_mod_a_million() -> None:
    for text in ("durfee square", "2401.00001", "math/0501001", ""):
        expected = int(hashlib.sha256(text.encode()).hexdigest(), 16) % 1_000_000
        assert stable_bucket(text) == expected


def test_held_out_and_unseen_ignore_the_seed_and_follow_the_fraction(big: Tables) -> None:
    names = list(big["concepts"]["name"])
    first = build(big, PARAMS)
    second = build(big, PairsParams(**{**PARAMS.__dict__, "seed": 99}))
    assert first.held_out == second.held_out == held_out_concepts(names, 0.25)
    assert first.unseen_papers == second.unseen_papers
    assert held_out_concepts(names, 0.0) == set()
    assert held_out_concepts(names, 1.0) == set(names)
    assert 0.1 < len(first.held_out) / len(names) < 0.4
    assert 0.05 < len(first.unseen_papers) / 300 < 0.3
    assert unseen_papers(["2401.00001"], 0.5) == unseen_papers(["2401.00001"], 0.5)


def test_held_out_set_is_stable_when_data_grows_by_a_fifth() -> None:
    small, grown = generated(250, 100), generated(300, 120)
    small_result, grown_result = build(small), build(grown)
    small_names = set(small["concepts"]["name"])
    assert small_result.held_out == grown_result.held_out & small_names
    assert small_result.unseen_papers == grown_result.unseen_papers & set(
        small["papers"]["paper_id"]
    )
    # Yesterday's queries are still queries (degrees only grow), with the same ids.
    small_queries = set(
        zip(small_result.queries["query_id"], small_result.queries["concept"], strict=True)
    )
    grown_queries = set(
        zip(grown_result.queries["query_id"], grown_result.queries["concept"], strict=True)
    )
    assert small_queries and small_queries <= grown_queries
    # ... and none of them became a training anchor.
    anchors = {normalise_name(anchor) for anchor in grown_result.pairs["anchor"]}
    assert not anchors & {concept for _id, concept in small_queries}


# -- leakage --------------------------------------------------------------------------


def test_no_held_out_name_alias_or_description_is_an_anchor(
    big: Tables, big_result: PairsResult
) -> None:
    concepts = big["concepts"].set_index("name")
    held = concepts.loc[sorted(big_result.held_out)]
    forbidden_texts = set(held["display_name"]) | set(held["description"])
    forbidden_texts |= {alias for aliases in held["aliases"] for alias in aliases}
    forbidden_keys = {normalise_name(text) for text in forbidden_texts}
    anchors = big_result.pairs["anchor"]
    assert not set(anchors) & forbidden_texts
    assert not {normalise_name(anchor) for anchor in anchors} & forbidden_keys
    assert not set(big_result.pairs["concept"]) & big_result.held_out
    assert big_result.counts["pairs"]["dropped_held_out"] > 0  # statements named after them


def test_edges_touching_held_out_concepts_are_dropped(big: Tables, big_result: PairsResult) -> None:
    edges = big["edges"]
    touching = edges["source"].isin(big_result.held_out) | edges["target"].isin(big_result.held_out)
    assert big_result.counts["edges_dropped_held_out"] == int(touching.sum()) > 0
    assert big_result.counts["edges_used"] == int((~touching).sum())
    # Every edge pair's positive mentions a concept joined to the anchor by a kept edge.
    kept = edges[~touching]
    neighbours: dict[str, set[str]] = {}
    for source, target in zip(kept["source"], kept["target"], strict=True):
        neighbours.setdefault(source, set()).add(target)
        neighbours.setdefault(target, set()).add(source)
    chunk_concepts = big["mentions"].groupby("chunk_id")["concept"].agg(set)
    edge_pairs = big_result.pairs[big_result.pairs["kind"] == "edge"]
    assert len(edge_pairs) > 0
    for concept, chunk_id in zip(edge_pairs["concept"], edge_pairs["positive_id"], strict=True):
        assert chunk_concepts[chunk_id] & neighbours[concept]


def test_unseen_papers_are_never_positives(big_result: PairsResult) -> None:
    assert big_result.unseen_papers
    positives = {paper_of(positive_id) for positive_id in big_result.pairs["positive_id"]}
    assert not positives & big_result.unseen_papers
    unseen_rows = big_result.qrels[big_result.qrels["unseen"]]
    assert len(unseen_rows) > 0
    assert {paper_of(chunk) for chunk in unseen_rows["chunk_id"]} <= big_result.unseen_papers
    seen_rows = big_result.qrels[~big_result.qrels["unseen"]]
    assert not {paper_of(chunk) for chunk in seen_rows["chunk_id"]} & big_result.unseen_papers


def test_statement_named_like_a_held_out_concept_is_dropped() -> None:
    tables = generated(40, 12)
    held = sorted(held_out_concepts(tables["concepts"]["name"], PARAMS.held_out_fraction))
    assert held
    alias = tables["concepts"].set_index("name").loc[held[0], "aliases"][0]
    extra = pd.DataFrame(
        [
            {
                "statement_id": "2401.00000v1#s009",
                "paper_id": "2401.00000",
                "kind": "definition",
                "name": alias.upper(),  # written differently, same key as the alias
                "label": "",
                "text": "A definition by another name.",
                "refs": [],
                "proof": "",
                "slogan": "",
            }
        ]
    )
    tables["statements"] = pd.concat([tables["statements"], extra], ignore_index=True)
    result = build(tables)
    assert "2401.00000v1#s009" not in set(result.pairs["positive_id"])


# -- the pairs ------------------------------------------------------------------------


def test_caps_per_concept_and_per_edge_direction(big_result: PairsResult) -> None:
    pairs = big_result.pairs
    for kind in ("name", "description"):
        per_concept = pairs[pairs["kind"] == kind].groupby("concept").size()
        assert per_concept.max() <= PARAMS.max_chunks_per_concept
        assert (per_concept == PARAMS.max_chunks_per_concept).any()


def test_exact_caps_on_a_small_graph() -> None:
    chunk_ids = [f"2401.00001v1#c{index:04d}" for index in range(10)]
    tables: Tables = {
        "papers": pd.DataFrame({"paper_id": ["2401.00001"]}),
        "chunks": pd.DataFrame(
            {
                "chunk_id": chunk_ids,
                "paper_id": ["2401.00001"] * 10,
                "chunk_index": list(range(10)),
                "text": [
                    f"Passage {index} on Dyck paths and Catalan numbers." for index in range(10)
                ],
            }
        ),
        "statements": pd.DataFrame(columns=STATEMENT_COLUMNS),
        "concepts": pd.DataFrame(
            {
                "name": ["catalan number", "dyck path"],
                "display_name": ["Catalan number", "Dyck path"],
                "type": ["object", "object"],
                "description": ["", "A lattice path above the axis."],
                "aliases": [[], []],
                "papers": [["2401.00001"], ["2401.00001"]],
                "statements": [[], []],
            }
        ),
        "edges": pd.DataFrame(
            {"source": ["catalan number"], "target": ["dyck path"], "relation": ["uses"]}
        ),
        # Chunks 0-4 mention Catalan numbers, 5-9 Dyck paths (chunk 7 defines them).
        "mentions": pd.DataFrame(
            {
                "concept": ["catalan number"] * 5 + ["dyck path"] * 5,
                "chunk_id": chunk_ids,
                "paper_id": ["2401.00001"] * 10,
                "evidence": ["text"] * 7 + ["definition"] + ["text"] * 2,
            }
        ),
    }
    params = PairsParams(
        max_chunks_per_concept=4,
        max_edge_pairs=3,
        held_out_fraction=0.0,
        unseen_paper_fraction=0.0,
        validation_fraction=0.0,
        masked_name_pairs=False,
        description_pairs=True,
    )
    pairs = build(tables, params).pairs
    counts = pairs.groupby(["kind", "concept"]).size().to_dict()
    assert counts == {
        ("name", "catalan number"): 4,
        ("name", "dyck path"): 4,
        ("description", "dyck path"): 4,  # Catalan numbers have no description
        ("edge", "catalan number"): 3,
        ("edge", "dyck path"): 3,
    }
    # The chunk holding the definition comes first.
    dyck_chunks = pairs[(pairs["kind"] == "name") & (pairs["concept"] == "dyck path")]
    assert chunk_ids[7] in set(dyck_chunks["positive_id"])
    # The seed changes which chunks are picked.
    reseeded = build(tables, PairsParams(**{**params.__dict__, "seed": 14})).pairs
    assert set(reseeded["positive_id"]) != set(pairs["positive_id"]) or set(
        zip(reseeded["anchor"], reseeded["positive_id"], strict=True)
    ) != set(zip(pairs["anchor"], pairs["positive_id"], strict=True))


def test_duplicates_are_kept_once() -> None:
    tables = generated(30, 10)
    # Two chunks with the same text, both mentioning one concept: one (name, text) pair.
    chunks = tables["chunks"]
    chunks.loc[1, "text"] = chunks.loc[0, "text"]
    mentions = tables["mentions"]
    concept = mentions["concept"].iloc[0]
    for chunk_id in chunks.loc[[0, 1], "chunk_id"]:
        mentions = mentions[
            ~((mentions["concept"] == concept) & (mentions["chunk_id"] == chunk_id))
        ]
        mentions = pd.concat(
            [
                mentions,
                pd.DataFrame(
                    [
                        {
                            "concept": concept,
                            "chunk_id": chunk_id,
                            "paper_id": chunk_id[:10],
                            "evidence": "definition",
                        }
                    ]
                ),
            ],
            ignore_index=True,
        )
    tables["mentions"] = mentions
    # The same edge twice with two relations: its pairs are not doubled.
    tables["edges"] = pd.concat(
        [tables["edges"], tables["edges"].iloc[:1].assign(relation="implies")], ignore_index=True
    )
    params = PairsParams(
        **{**PARAMS.__dict__, "held_out_fraction": 0.0, "unseen_paper_fraction": 0.0}
    )
    result = build(tables, params)
    pairs = result.pairs
    assert not pairs.duplicated(["anchor", "positive"]).any()
    assert result.counts["pairs"]["duplicates"] >= 1 + params.max_edge_pairs


def test_no_pair_and_no_anchor_in_both_splits(big_result: PairsResult) -> None:
    pairs = big_result.pairs
    train, validation = pairs[pairs["split"] == "train"], pairs[pairs["split"] == "validation"]
    assert len(validation) > 0 and len(train) > len(validation)
    assert not set(zip(train["anchor"], train["positive"], strict=True)) & set(
        zip(validation["anchor"], validation["positive"], strict=True)
    )
    assert not set(train["anchor"]) & set(validation["anchor"])
    assert set(pairs["split"]) == {"train", "validation"}
    assert set(pairs["kind"]) == {"name", "description", "edge", "statement"}


def test_pairs_are_deterministic(big: Tables, big_result: PairsResult) -> None:
    again = build({name: frame.copy() for name, frame in big.items()})
    pd.testing.assert_frame_equal(again.pairs, big_result.pairs)
    pd.testing.assert_frame_equal(again.queries, big_result.queries)
    pd.testing.assert_frame_equal(again.qrels, big_result.qrels)
    # Row order of the inputs does not matter either.
    shuffled = {name: frame.sample(frac=1.0, random_state=5) for name, frame in big.items()}
    pd.testing.assert_frame_equal(build(shuffled).pairs, big_result.pairs)


# -- evaluation set -------------------------------------------------------------------


def with_scope(scope: str) -> PairsParams:
    return PairsParams(**{**PARAMS.__dict__, "qrels_scope": scope})


def chunks_of_papers(tables: Tables, concept: str) -> set[str]:
    chunks_of = tables["chunks"].groupby("paper_id")["chunk_id"].agg(set)
    papers = tables["concepts"].set_index("name")["papers"]
    return set().union(*(chunks_of[paper] for paper in papers[concept]))


def qrels_of(result: PairsResult, concept: str) -> set[str]:
    qrels = result.qrels
    return set(qrels.loc[qrels["query_id"] == query_id(concept), "chunk_id"])


@pytest.mark.parametrize("scope", ["unnamed", "papers", "mentions"])
def test_queries_are_held_out_concepts_with_enough_papers_and_a_relevant_chunk(
    big: Tables, scope: str
) -> None:
    result = build(big, with_scope(scope))
    papers = big["concepts"].set_index("name")["papers"].map(len)
    enough = {name for name in result.held_out if papers[name] >= PARAMS.min_degree}
    queries = set(result.queries["concept"])
    assert queries <= enough
    assert set(result.qrels["query_id"]) == set(result.queries["query_id"])
    for concept in enough - queries:  # left out only for want of a relevant chunk
        assert not qrels_of(result, concept)
    counts = result.counts
    assert counts["held_out_below_min_degree"] == len(result.held_out) - len(enough)
    assert counts["held_out_without_relevant"] == len(enough) - len(queries)
    assert counts["held_out_concepts"] == (
        counts["queries"]
        + counts["held_out_below_min_degree"]
        + counts["held_out_without_relevant"]
    )
    display = big["concepts"].set_index("name")["display_name"]
    for qid, concept, text, query_set, exclude in result.queries.itertuples(index=False):
        assert qid == query_id(concept) and text == display[concept]
        assert query_set == "named" and list(exclude) == []


def test_qrels_types_and_grade(big_result: PairsResult) -> None:
    qrels = big_result.qrels
    assert qrels.dtypes.to_dict() == {
        "query_id": qrels["query_id"].dtype,
        "chunk_id": qrels["chunk_id"].dtype,
        "grade": "int64",
        "unseen": "bool",
    }
    assert set(qrels["grade"]) == {1}


def test_qrels_scope_unnamed_is_the_papers_chunks_that_do_not_name_the_concept(
    big: Tables, big_result: PairsResult
) -> None:
    concepts = big["concepts"].set_index("name")
    text_of = big["chunks"].set_index("chunk_id")["text"]
    assert len(big_result.queries) >= 20
    left_out = 0
    for concept in big_result.queries["concept"]:
        names = [concepts.at[concept, "display_name"], *concepts.at[concept, "aliases"]]
        of_papers = chunks_of_papers(big, concept)
        naming = {chunk for chunk in of_papers if any(n in text_of[chunk] for n in names)}
        assert qrels_of(big_result, concept) == of_papers - naming
        assert naming  # the rule removed something: a chunk with the phrase is no qrel
        left_out += len(naming)
    # Counts add up: papers scope = unnamed + naming, per query, summed.
    papers_scope = build(big, with_scope("papers"))
    in_papers_scope = papers_scope.qrels["query_id"].isin(big_result.queries["query_id"]).sum()
    assert in_papers_scope == len(big_result.qrels) + left_out


def test_qrels_scope_papers_is_every_chunk_of_the_concepts_papers(big: Tables) -> None:
    result = build(big, with_scope("papers"))
    assert result.counts["held_out_without_relevant"] == 0
    for concept in result.queries["concept"]:
        assert qrels_of(result, concept) == chunks_of_papers(big, concept)


def test_qrels_scope_mentions(big: Tables) -> None:
    result = build(big, with_scope("mentions"))
    mentions = big["mentions"]
    for qid, concept in zip(result.queries["query_id"], result.queries["concept"], strict=True):
        expected = set(mentions.loc[mentions["concept"] == concept, "chunk_id"])
        assert set(result.qrels.loc[result.qrels["query_id"] == qid, "chunk_id"]) == expected


def test_a_chunk_naming_the_concept_in_any_surface_form_is_not_an_unnamed_qrel() -> None:
    surfaces = ["Rogers–Ramanujan identities", "Rogers–Ramanujan", "RR identities"]
    texts = {
        "dash and number": "By the Rogers-Ramanujan identity, the two sums agree.",
        "upper case": "ROGERS–RAMANUJAN IDENTITIES are proved in [cite].",
        "an alias": "The RR identity follows from Bailey's lemma.",
        "the short alias": "Rogers–Ramanujan type product formulas.",
        "inside a longer name": "The generalized Rogers–Ramanujan identities hold.",
        "about it, unnamed": "Bailey's lemma and the q-series $\\sum q^{n^2}/(q;q)_n$.",
        "a word, not the name": "Rogersville and Ramanujan's tau function are unrelated.",
    }
    naming = chunks_naming("rogers ramanujan identity", surfaces, texts)
    assert naming == set(texts) - {"about it, unnamed", "a word, not the name"}

    # In the stage: of a two-paper concept's five chunks, the two naming it are no qrels;
    # a concept named in every chunk of its papers gets no query, and the counts say so.
    chunk_texts = [
        ("2401.00001v1#c0000", "2401.00001", "We prove the Rogers-Ramanujan identities."),
        ("2401.00001v1#c0001", "2401.00001", "Bailey's lemma gives $\\sum q^{n^2}$ again."),
        ("2401.00001v1#c0002", "2401.00001", "References and remarks on q-series."),
        ("2401.00002v1#c0000", "2401.00002", "A Rogers–Ramanujan identity, once more."),
        ("2401.00002v1#c0001", "2401.00002", "The two products of Schur are equal."),
        ("2401.00003v1#c0000", "2401.00003", "Durfee squares of partitions."),
        ("2401.00004v1#c0000", "2401.00004", "The Durfee square, once more."),
    ]
    concept, always_named = "rogers ramanujan identity", "durfee square"
    tables: Tables = {
        "papers": pd.DataFrame({"paper_id": [f"2401.0000{index}" for index in range(1, 5)]}),
        "chunks": pd.DataFrame(chunk_texts, columns=["chunk_id", "paper_id", "text"]).assign(
            chunk_index=lambda frame: frame["chunk_id"].str[-4:].astype(int)
        ),
        "statements": pd.DataFrame(columns=STATEMENT_COLUMNS),
        "concepts": pd.DataFrame(
            {
                "name": [always_named, concept],
                "display_name": ["Durfee square", "Rogers–Ramanujan identities"],
                "type": ["object", "theorem"],
                "description": ["", ""],
                "aliases": [[], []],
                "papers": [["2401.00003", "2401.00004"], ["2401.00001", "2401.00002"]],
                "statements": [[], []],
            }
        ),
        "edges": pd.DataFrame(columns=["source", "target", "relation", "papers"]),
        "mentions": pd.DataFrame(columns=["concept", "chunk_id", "paper_id", "evidence"]),
    }
    everything_held_out = PairsParams(
        **{**PARAMS.__dict__, "held_out_fraction": 1.0, "unseen_paper_fraction": 0.0}
    )
    result = build(tables, everything_held_out)
    assert result.queries["concept"].tolist() == [concept]
    assert qrels_of(result, concept) == {
        "2401.00001v1#c0001",
        "2401.00001v1#c0002",
        "2401.00002v1#c0001",
    }
    assert result.counts["qrels"] == {"total": 3, "seen": 3, "unseen": 0}
    assert result.counts["held_out_concepts"] == 2
    assert result.counts["held_out_without_relevant"] == 1
    assert result.counts["held_out_below_min_degree"] == 0
    papers_scope = build(
        tables, PairsParams(**{**everything_held_out.__dict__, "qrels_scope": "papers"})
    )
    assert len(papers_scope.queries) == 2 and len(papers_scope.qrels) == 7


# -- the stage ------------------------------------------------------------------------


def write_inputs(root: Path, tables: Tables) -> Paths:
    paths = Paths(root)
    for name in ("papers", "chunks", "statements"):
        io.write_parquet(paths.processed / f"{name}.parquet", tables[name])
    for name in ("concepts", "edges", "mentions"):
        io.write_parquet(paths.graph / f"{name}.parquet", tables[name])
    return paths


def test_run_pairs_writes_tables_and_counts_that_add_up(tmp_path: Path, big: Tables) -> None:
    paths = write_inputs(tmp_path, big)
    report = run_pairs(PARAMS, paths)
    pairs = io.read_parquet(paths.training / "pairs.parquet")
    queries = io.read_parquet(paths.eval / "queries.parquet")
    qrels = io.read_parquet(paths.eval / "qrels.parquet")
    assert list(pairs.columns) == PAIRS_SCHEMA.names
    assert list(queries.columns) == ["query_id", "concept", "text", "set", "exclude"]
    assert list(qrels.columns) == ["query_id", "chunk_id", "grade", "unseen"]
    data = json.loads((paths.metrics / "data.json").read_text())
    assert data["papers"] == 300 and data["chunks"] == 1200 and data["statements"] == 600
    assert data["concepts"] == 120 and data["edges"] == 119
    counts = data["pairs"]
    assert counts["total"] == len(pairs) == report.pairs
    assert counts["by_kind"] == {kind: int((pairs["kind"] == kind).sum()) for kind in PAIR_KINDS}
    assert counts["by_split"] == {
        split: int((pairs["split"] == split).sum()) for split in ("train", "validation")
    }
    for kind, by_split in counts["by_kind_and_split"].items():
        assert sum(by_split.values()) == counts["by_kind"][kind]
    assert (
        counts["candidates"] == counts["total"] + counts["dropped_held_out"] + counts["duplicates"]
    )
    assert (
        data["edges"]
        == data["edges_used"]
        + data["edges_dropped_held_out"]
        + data["edges_dropped_unknown_concept"]
    )
    assert data["queries"] == len(queries) == report.queries
    assert data["qrels"]["total"] == len(qrels) == data["qrels"]["seen"] + data["qrels"]["unseen"]
    assert data["qrels"]["unseen"] == int(qrels["unseen"].sum()) > 0
    assert data["unseen_papers"] == report.unseen_papers > 0
    assert data["held_out_concepts"] == report.held_out_concepts
    assert data["held_out_concepts"] == (
        data["queries"] + data["held_out_below_min_degree"] + data["held_out_without_relevant"]
    )


def test_run_pairs_is_byte_for_byte_deterministic(tmp_path: Path, big: Tables) -> None:
    first, second = write_inputs(tmp_path / "a", big), write_inputs(tmp_path / "b", big)
    run_pairs(PARAMS, first)
    run_pairs(PARAMS, second)
    for path in ("training/pairs.parquet", "eval/queries.parquet", "eval/qrels.parquet"):
        assert (first.root / "data" / path).read_bytes() == (
            second.root / "data" / path
        ).read_bytes()
    assert (first.metrics / "data.json").read_text() == (second.metrics / "data.json").read_text()


def test_main(tmp_path: Path) -> None:
    params = tmp_path / "params.yaml"
    params.write_text("pairs:\n  held_out_fraction: 0.25\n")
    arguments = ["pairs", "--params", str(params), "--root", str(tmp_path)]
    result = CliRunner().invoke(cli.app, arguments)
    assert result.exit_code == 1
    assert "run the prepare stage first" in result.stderr
    write_inputs(tmp_path, generated(20, 8))
    result = CliRunner().invoke(cli.app, arguments)
    assert result.exit_code == 0
    assert "pairs:" in result.stdout
    assert (tmp_path / "data" / "training" / "pairs.parquet").is_file()
    params.write_text("pairs:\n  held_out_fractoin: 0.25\n")
    result = CliRunner().invoke(cli.app, arguments)
    assert result.exit_code == 2  # a configuration error
    assert "unknown key(s) ['held_out_fractoin']" in result.stderr
    result = CliRunner().invoke(cli.app, ["pairs", "--help"])
    assert result.exit_code == 0
    assert "data/training/pairs.parquet" in result.stdout


def test_missing_graph_is_a_clear_error(tmp_path: Path) -> None:
    paths = write_inputs(tmp_path, generated(10, 5))
    (paths.graph / "mentions.parquet").unlink()
    with pytest.raises(FileNotFoundError, match="run the graph stage first"):
        run_pairs(PARAMS, paths)
