"""The graph stage: name normalisation, rule-based extraction, mentions, edges, I/O shell.

The corpus below is cleaned text as ``prepare`` writes it (``$…$`` math, "Definition
(Name). text" headings, "[cite]", a "Keywords:" paragraph), so each rule is tested on
what it will really read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
from typer.testing import CliRunner

from pipelines import cli
from pipelines.common import io
from pipelines.common.config import ConfigError, GraphParams, PairsParams
from pipelines.common.paths import Paths
from pipelines.common.tables import STATEMENTS_SCHEMA
from pipelines.graph.build import build_graph
from pipelines.graph.cache import GraphCache, cache_path, extractor_fingerprint
from pipelines.graph.extractor import Chunk, ConceptCandidate, PaperDocument, Statement
from pipelines.graph.merge import merge_candidates
from pipelines.graph.rules import RulesExtractor, description_from, split_sentences
from pipelines.graph.scan import find_relations
from pipelines.graph.stage import documents_from_tables, make_extractor, run_graph
from pipelines.mathtext.concept_phrases import (
    clean_statement_name,
    clean_term,
    statement_concept_name,
    type_from_head,
)
from pipelines.mathtext.names import (
    SurfaceMatcher,
    match_form,
    merge_keys,
    normalise_name,
    plurals,
    singular,
    surface_forms,
)
from pipelines.pairs.stage import run_pairs
from tooling.imports import closure

CORPUS: dict[str, dict[str, Any]] = {
    "2401.00001": {
        "title": "Durfee squares and the Rogers–Ramanujan identities",
        "abstract": "We give a combinatorial proof of the Rogers–Ramanujan identities using "
        "Durfee squares of integer partitions.",
        "categories": ["math.CO", "math.NT"],
        "source_kind": "tex",
        "chunks": [
            (
                "Introduction",
                "The Rogers–Ramanujan identities are among the most celebrated results in the "
                "theory of integer partitions [cite]. In this paper we give a proof based on "
                "Durfee squares.\n\nKeywords: integer partitions, Durfee square, $q$-series",
            ),
            (
                "Preliminaries",
                "Definition (Integer partition). An integer partition of $n$ is a non-increasing "
                "sequence of positive integers whose sum is $n$.\n\nDefinition (Durfee square). "
                "The Durfee square of an integer partition $\\lambda$ is the largest square that "
                "fits inside the Young diagram of $\\lambda$.\n\nWe call a partition whose parts "
                "are all distinct a strict partition. A partition $\\lambda$ is said to be "
                "self-conjugate if $\\lambda = \\lambda'$.",
            ),
            (
                "Main result",
                "Theorem (Rogers–Ramanujan identities). For $|q|<1$, $\\sum_{n\\ge0} "
                "\\frac{q^{n^2}}{(q;q)_n} = \\prod_{n\\ge0} \\frac{1}{(1-q^{5n+1})(1-q^{5n+4})}$."
                "\n\nLemma (Bailey). If $(\\alpha_n,\\beta_n)$ is a Bailey pair relative to $a$, "
                "then so is $(\\alpha'_n,\\beta'_n)$.\n\nThe Rogers–Ramanujan identities follow "
                "from Bailey's lemma. The $q$-binomial coefficient generalizes the binomial "
                "coefficient.",
            ),
            (
                "Conclusion",
                "Durfee squares give a transparent bijective proof. The Euler pentagonal number "
                "theorem is a special case of the Jacobi triple product.",
            ),
        ],
        "statements": [
            (
                "definition",
                "Integer partition",
                "An integer partition of $n$ is a non-increasing sequence of positive integers "
                "whose sum is $n$.",
            ),
            (
                "definition",
                "Durfee square",
                "The Durfee square of an integer partition $\\lambda$ is the largest square "
                "that fits inside the Young diagram of $\\lambda$.",
            ),
            (
                "theorem",
                "Rogers–Ramanujan identities",
                "For $|q|<1$, $\\sum_{n\\ge0} \\frac{q^{n^2}}{(q;q)_n} = \\prod_{n\\ge0} "
                "\\frac{1}{(1-q^{5n+1})(1-q^{5n+4})}$.",
            ),
            (
                "lemma",
                "Bailey",
                "If $(\\alpha_n,\\beta_n)$ is a Bailey pair relative to $a$, then so is "
                "$(\\alpha'_n,\\beta'_n)$.",
            ),
        ],
    },
    "2401.00002": {
        "title": "Bailey pairs and identities of Rogers–Ramanujan type",
        "abstract": "Using Bailey's lemma we derive new identities of Rogers–Ramanujan type.",
        "categories": ["math.NT"],
        "source_kind": "tex",
        "chunks": [
            (
                "Bailey pairs",
                "Definition (Bailey pair). A pair of sequences $(\\alpha_n,\\beta_n)$ is called a "
                "Bailey pair relative to $a$ if $\\beta_n = \\sum_{r=0}^{n} \\frac{\\alpha_r}"
                "{(q;q)_{n-r}(aq;q)_{n+r}}$ for all $n \\ge 0$.\n\nBailey's lemma, also known as "
                "the Bailey chain, produces new Bailey pairs from old ones.",
            ),
            (
                "Bailey pairs",
                "Lemma (Bailey's lemma). If $(\\alpha_n,\\beta_n)$ is a Bailey pair then so is "
                "the pair obtained by inserting the parameters $\\rho_1, \\rho_2$.\n\n"
                "Corollary. The Rogers–Ramanujan identities hold, and both sides are $q$-series "
                "with non-negative coefficients.",
            ),
            (
                "Remarks",
                "We conclude with remarks on $q$-series and the $q$-binomial coefficients, which "
                "are polynomials in $q$.",
            ),
        ],
        "statements": [
            (
                "definition",
                "Bailey pair",
                "A pair of sequences $(\\alpha_n,\\beta_n)$ is called a Bailey pair relative to "
                "$a$ if $\\beta_n = \\sum_{r=0}^{n} \\frac{\\alpha_r}{(q;q)_{n-r}(aq;q)_{n+r}}$ "
                "for all $n \\ge 0$.",
            ),
            (
                "lemma",
                "Bailey's lemma",
                "If $(\\alpha_n,\\beta_n)$ is a Bailey pair then so is the pair obtained by "
                "inserting the parameters $\\rho_1, \\rho_2$.",
            ),
            (
                "corollary",
                "",
                "The Rogers–Ramanujan identities hold, and both sides are $q$-series with "
                "non-negative coefficients.",
            ),
        ],
    },
    "2401.00003": {
        "title": "Dyck paths and Catalan numbers",
        "abstract": "We count Dyck paths by Catalan numbers.",
        "categories": ["math.CO"],
        "source_kind": "tex",
        "chunks": [
            (
                "",
                "Keywords: Dyck paths, Catalan numbers, lattice paths\n\nDefinition (Dyck path). "
                "A Dyck path of semilength $n$ is a lattice path from $(0,0)$ to $(2n,0)$ with "
                "steps $(1,1)$ and $(1,-1)$ that never goes below the $x$-axis.\n\nTheorem. The "
                "number of Dyck paths of semilength $n$ is the Catalan number $C_n = "
                "\\frac{1}{n+1}\\binom{2n}{n}$, a quotient of a binomial coefficient.",
            ),
            (
                "",
                "Catalan numbers count many families of objects. The $q$-binomial coefficient is "
                "a generalization of the binomial coefficient.",
            ),
        ],
        "statements": [
            (
                "definition",
                "Dyck path",
                "A Dyck path of semilength $n$ is a lattice path from $(0,0)$ to $(2n,0)$ with "
                "steps $(1,1)$ and $(1,-1)$ that never goes below the $x$-axis.",
            ),
            (
                "theorem",
                "",
                "The number of Dyck paths of semilength $n$ is the Catalan number $C_n = "
                "\\frac{1}{n+1}\\binom{2n}{n}$, a quotient of a binomial coefficient.",
            ),
        ],
    },
    "2401.00004": {
        "title": "On the Jacobi triple product",
        "abstract": "A short proof of the Jacobi triple product identity via integer partitions. "
        "The Euler pentagonal number theorem follows from the Jacobi triple product identity.",
        "categories": ["math.CO"],
        "source_kind": "abstract_only",
        "chunks": [],
        "statements": [],
    },
    "math/0501005": {
        "title": "Möbius inversion revisited",
        "abstract": "We revisit Möbius inversion.",
        "categories": ["math.NT"],
        "source_kind": "tex",
        "chunks": [
            (
                "",
                "Definition (Möbius function). The Möbius function $\\mu(n)$ is $(-1)^k$ if $n$ is "
                "a product of $k$ distinct primes and $0$ otherwise.\n\nA Dirichlet character is "
                "a completely multiplicative periodic function on the integers.",
            ),
            (
                "",
                "Theorem (Möbius inversion). If $g(n) = \\sum_{d|n} f(d)$ then $f(n) = "
                "\\sum_{d|n} \\mu(d) g(n/d)$.\n\nThe Mobius function also appears in Dirichlet "
                "characters; Bailey's lemma does not imply the Möbius inversion formula.",
            ),
        ],
        "statements": [
            (
                "definition",
                "Möbius function",
                "The Möbius function $\\mu(n)$ is $(-1)^k$ if $n$ is a product of $k$ distinct "
                "primes and $0$ otherwise.",
            ),
            (
                "theorem",
                "Möbius inversion",
                "If $g(n) = \\sum_{d|n} f(d)$ then $f(n) = \\sum_{d|n} \\mu(d) g(n/d)$.",
            ),
        ],
    },
}

EXPECTED_CONCEPTS = {
    "bailey lemma",
    "bailey pair",
    "binomial coefficient",
    "catalan number",
    "durfee square",
    "dyck path",
    "euler pentagonal number theorem",
    "integer partition",
    "jacobi triple product",
    "lattice path",
    "mobius function",
    "mobius inversion theorem",
    "q binomial coefficient",
    "q series",
    "rogers ramanujan identity",
}
# Found only by a sentence pattern ("we call ... a strict partition", "is said to be
# self-conjugate"), each in one paper: weak evidence without corroboration, so no concept.
UNCORROBORATED = {"dirichlet character", "self conjugate partition", "strict partition"}


def corpus_tables(
    corpus: dict[str, dict[str, Any]] = CORPUS,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``papers``, ``chunks``, ``statements`` frames with the processed-data contract's columns."""
    papers, chunks, statements = [], [], []
    for paper_id, paper in corpus.items():
        passages = paper["chunks"] or [("", paper["abstract"])]  # abstract-only: one chunk
        papers.append(
            {
                "paper_id": paper_id,
                "version": 1,
                "title": paper["title"],
                "abstract": paper["abstract"],
                "authors": ["A. Author"],
                "categories": paper["categories"],
                "primary_category": paper["categories"][0],
                "published": "2024-01-03T10:00:00Z",
                "updated": "2024-01-03T10:00:00Z",
                "source_kind": paper["source_kind"],
                "content_hash": "0" * 64,
                "n_chunks": len(passages),
                "n_statements": len(paper["statements"]),
                "citing_sentences": [],
                "citing_labels": [],
            }
        )
        for index, (section, text) in enumerate(passages):
            chunks.append(
                {
                    "chunk_id": f"{paper_id}v1#c{index:04d}",
                    "paper_id": paper_id,
                    "version": 1,
                    "chunk_index": index,
                    "section": section,
                    "text": text,
                }
            )
        for index, (kind, name, text) in enumerate(paper["statements"]):
            statements.append(
                {
                    "statement_id": f"{paper_id}v1#s{index:03d}",
                    "paper_id": paper_id,
                    "version": 1,
                    "kind": kind,
                    "name": name,
                    "label": "",
                    "text": text,
                    "terms": [],
                    "refs": [],
                    "proof": "",
                    "slogan": "",
                }
            )
    statement_columns = STATEMENTS_SCHEMA.names
    return (
        pd.DataFrame(papers),
        pd.DataFrame(chunks),
        pd.DataFrame(statements, columns=statement_columns),
    )


def write_processed(root: Path, corpus: dict[str, dict[str, Any]] = CORPUS) -> Paths:
    paths = Paths(root)
    papers, chunks, statements = corpus_tables(corpus)
    io.write_parquet(paths.processed / "papers.parquet", papers)
    io.write_parquet(paths.processed / "chunks.parquet", chunks)
    io.write_parquet(paths.processed / "statements.parquet", statements)
    return paths


@pytest.fixture(scope="module")
def corpus_graph() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    documents = documents_from_tables(*corpus_tables())
    graph, _report = build_graph(
        documents, RulesExtractor(), GraphParams(cooccurrence_min_papers=1), disable_progress=True
    )
    return graph.concepts, graph.edges, graph.mentions


def edge_set(edges: pd.DataFrame) -> set[tuple[str, str, str]]:
    return set(zip(edges["source"], edges["target"], edges["relation"], strict=True))


def paper(text: str, statements: tuple[Statement, ...] = ()) -> PaperDocument:
    return PaperDocument(
        "2401.09999", "t", "", (), (Chunk("2401.09999v1#c0000", text),), statements
    )


def found_names(text: str, statements: tuple[Statement, ...] = ()) -> set[str]:
    extraction = RulesExtractor().extract(paper(text, statements))
    return {candidate.key for candidate in extraction.concepts}


# -- normalisation --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "key"),
    [
        ("Rogers–Ramanujan Identities", "rogers ramanujan identity"),
        ("Rogers-Ramanujan identity", "rogers ramanujan identity"),
        ("Rogers--Ramanujan identities", "rogers ramanujan identity"),
        ("  rogers \n ramanujan   identities ", "rogers ramanujan identity"),
        ("Bailey's lemma", "bailey lemma"),
        ("Bailey’s lemma", "bailey lemma"),
        ("the Bailey lemma", "the bailey lemma"),  # articles are clean_term's job
        ("Andrews' identity", "andrews identity"),
        ("$q$-binomial coefficients", "q binomial coefficient"),
        ("Möbius function", "mobius function"),
        ('M\\"obius functions', "mobius function"),
        ("sums of squares", "sum of squares"),
        ("rings of integers", "ring of integers"),
        ("Lucas sequences", "lucas sequence"),
        ("Jones polynomial", "jones polynomial"),
        ("Young tableaux", "young tableau"),
        ("simplicial complexes", "simplicial complex"),
        ("vertices", "vertex"),
        ("matrices", "matrix"),
        ("bases", "basis"),
        ("Gauss sums", "gauss sum"),
        ("Gauss", "gauss"),
        ("conjugacy classes", "conjugacy class"),
        ("Fourier analysis", "fourier analysis"),
        ("q-series", "q series"),
        ("lemmata", "lemma"),
        ("Catalan numbers", "catalan number"),
        ("Gordon–Andrews", "gordon andrews"),
        ("Gordon--Andrews identities", "gordon andrews identity"),
        ("Integer Partitions", "integer partition"),
        ("Erd\\H{o}s–Rényi graphs", "erdos renyi graph"),
        ("Poincar\\'e series", "poincare series"),
        ("", ""),
    ],
)
def test_normalise_name(written: str, key: str) -> None:
    assert normalise_name(written) == key


@pytest.mark.parametrize(
    ("plural", "singular_form"),
    [
        ("identities", "identity"),
        ("partitions", "partition"),
        ("series", "series"),
        ("species", "species"),
        ("boxes", "box"),
        ("matches", "match"),
        ("curves", "curve"),
        ("halves", "half"),
        ("gas", "gas"),
        ("torus", "torus"),
        ("combinatorics", "combinatorics"),
        ("2s", "2s"),
    ],
)
def test_singular(plural: str, singular_form: str) -> None:
    assert singular(plural) == singular_form


def test_plurals_know_both_forms_of_latin_words() -> None:
    assert plurals("lemma") == {"lemmas", "lemmata"}
    assert plurals("identity") == {"identities"}
    assert plurals("series") == {"series"}
    assert surface_forms("Rogers–Ramanujan identity") == {
        "rogers ramanujan identity",
        "rogers ramanujan identities",
    }
    # Only the head noun changes number.
    assert surface_forms("sum of squares") == {"sum of squares", "sums of squares"}


def test_match_form_keeps_words_and_marks_sentence_ends() -> None:
    text = "We prove Bailey's lemma. The $q$-binomial coefficients; Rogers–Ramanujan: done"
    assert match_form(text) == (
        "we prove bailey lemma | the q binomial coefficients | rogers ramanujan | done"
    )
    assert match_form("a value 1.5 and e.g. this") == "a value 1 5 and e g | this"


def test_merge_keys_groups_by_shared_alias_transitively_and_order_free() -> None:
    sightings = [
        ("bailey lemma", ["bailey chain"]),
        ("bailey chain", []),
        ("bailey lemma", []),
        ("bailey chain lemma", ["bailey chain"]),
        ("durfee square", []),
    ]
    merged = merge_keys(sightings)
    assert merged == merge_keys(list(reversed(sightings)))
    # "bailey lemma" is seen twice: the group's key is the most often seen name.
    assert merged["bailey chain"] == merged["bailey chain lemma"] == "bailey lemma"
    assert merged["durfee square"] == "durfee square"


def test_merge_keys_identity_suffix_but_not_theorem_suffix() -> None:
    merged = merge_keys(
        [
            ("jacobi triple product identity", []),
            ("jacobi triple product", []),
            ("jacobi triple product", []),
            ("prime number", []),
            ("prime number theorem", []),
            ("binomial identity", []),
            ("binomial", []),
        ]
    )
    assert merged["jacobi triple product identity"] == "jacobi triple product"
    assert merged["prime number theorem"] == "prime number theorem"
    assert merged["binomial identity"] == "binomial identity"  # one-word bare name: no


# -- mentions -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def matcher() -> SurfaceMatcher:
    return SurfaceMatcher(
        {
            "partition": ["partition"],
            "integer partition": ["integer partition"],
            "binomial coefficient": ["binomial coefficient"],
            "q binomial coefficient": ["$q$-binomial coefficient", "Gaussian binomial coefficient"],
            "bailey lemma": ["Bailey's lemma", "Bailey chain"],
            "dyck path": ["Dyck path"],
            "lucas sequence": ["Lucas sequence"],
            "mobius function": ["Möbius function"],
        }
    )


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        ("Partitions of $n$ and a partition of $m$.", ["partition", "partition"]),
        ("A bipartition is not a partitioning of a tripartition.", []),
        ("partitionable sets are repartitioned", []),
        ("Integer partitions and INTEGER PARTITION", ["integer partition"] * 2),
        ("the $q$-binomial coefficient", ["q binomial coefficient"]),
        ("the q-binomial coefficients", ["q binomial coefficient"]),
        ("Gaussian binomial coefficients", ["q binomial coefficient"]),
        ("the binomial coefficients", ["binomial coefficient"]),
        ("By Bailey’s lemma and the Bailey lemma", ["bailey lemma", "bailey lemma"]),
        ("the Bailey chain", ["bailey lemma"]),
        ("the Bailey. Chain", []),  # never across a sentence end
        ("Dyck paths; Dyck-path", ["dyck path", "dyck path"]),
        ("Lucas proved it for Lucas sequences", ["lucas sequence"]),
        ("The Mobius function and the Möbius function", ["mobius function"] * 2),
        ("integer partitional", []),
    ],
)
def test_mentions_whole_words_plurals_longest_first(
    matcher: SurfaceMatcher, text: str, keys: list[str]
) -> None:
    assert [mention.key for mention in matcher.find(match_form(text))] == keys


def test_empty_matcher_finds_nothing() -> None:
    assert SurfaceMatcher({}).find("anything at all") == []


# -- terms ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("the Durfee square", "Durfee square"),
        ("$q$-binomial coefficient", "$q$-binomial coefficient"),
        ("$\\lambda$ strict partition", "strict partition"),
        ("strict partition $\\mu$", "strict partition"),
        ("main result", None),
        ("the following", None),
        ("Theorem 3", None),
        ("$x$", None),
        ("$H_n(X;\\mathbb{Z})$", None),
        ("$\\mathfrak{S}_n$ x", None),
        ("a b", None),
        ("one two three four five six seven", None),
    ],
)
def test_clean_term(raw: str, clean: str | None) -> None:
    assert clean_term(raw) == clean


def test_clean_statement_name_drops_citations_and_numbering() -> None:
    assert clean_statement_name("Andrews [cite]") == "Andrews"
    assert clean_statement_name("see [cite]") is None
    assert clean_statement_name("Theorem 3.1 of [5]") is None
    assert clean_statement_name("Rogers–Ramanujan") == "Rogers–Ramanujan"


@pytest.mark.parametrize(
    ("kind", "name", "display"),
    [
        ("theorem", "Rogers–Ramanujan identities", "Rogers–Ramanujan identities"),
        ("theorem", "Euler", "Euler's theorem"),
        ("lemma", "Bailey", "Bailey's lemma"),
        ("lemma", "Rogers–Ramanujan", "Rogers–Ramanujan lemma"),
        ("corollary", "Möbius inversion", "Möbius inversion theorem"),
        ("conjecture", "Alder", "Alder's conjecture"),
        ("definition", "Durfee square", "Durfee square"),
        ("theorem", "[cite]", None),
        ("theorem", "", None),
    ],
)
def test_statement_concept_name(kind: str, name: str, display: str | None) -> None:
    assert statement_concept_name(kind, name) == display


@pytest.mark.parametrize(
    ("name", "default", "concept_type"),
    [
        ("Jacobi triple product", "definition", "identity"),
        ("Rogers–Ramanujan identities", "theorem", "identity"),
        ("Bailey's lemma", "definition", "theorem"),
        ("Alder's conjecture", "theorem", "conjecture"),
        ("Garsia–Milne involution", "definition", "technique"),
        ("Durfee square", "definition", "definition"),
        ("lattice paths", "other", "other"),
    ],
)
def test_type_from_head(name: str, default: Any, concept_type: str) -> None:
    assert type_from_head(name, default) == concept_type


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "We call a partition whose parts are all distinct a strict partition.",
            {"strict partition"},
        ),
        ("We call such a sequence the Lucas sequence of $P$ and $Q$.", {"lucas sequence"}),
        (
            "We call a $q$-series of the kind introduced by Ramanujan in his last letter to "
            "Hardy a mock theta function.",
            {"mock theta function"},
        ),
        (
            "We call a function that transforms like a power of $c\\tau + d$ under the "
            "modular group a modular form of weight $k$.",
            {"modular form"},
        ),
        (
            "A partition whose parts are distinct is called a strict partition.",
            {"strict partition"},
        ),
        ("These numbers are called Catalan numbers, after Eugène Catalan.", {"catalan number"}),
        (
            "A Bailey pair relative to $a$ is defined below. A pair is called a Bailey pair "
            "relative to $a$ if it satisfies (1).",
            {"bailey pair"},
        ),
        (
            "A partition $\\lambda$ is said to be self-conjugate if $\\lambda = \\lambda'$.",
            {"self conjugate partition"},
        ),
        (
            "A sequence is said to be a Lucas sequence if it satisfies the recurrence.",
            {"lucas sequence"},
        ),
        (
            "We say that a graph $G$ is $k$-regular if every vertex has degree $k$.",
            {"k regular graph"},
        ),
        (
            "We define the Durfee square of $\\lambda$ to be the largest square inside it.",
            {"durfee square"},
        ),
        (
            "A Dyck path of semilength $n$ is a lattice path that stays above the axis.",
            {"dyck path"},
        ),
        (
            "Definition (Hall–Littlewood polynomial). Let $t$ be a parameter.",
            {"hall littlewood polynomial"},
        ),
        ("The Bailey lemma, also known as the Bailey chain, builds new pairs.", {"bailey lemma"}),
        (
            "Keywords: integer partitions; Durfee square, $q$-series\n\nWe start.",
            {"integer partition", "durfee square", "q series"},
        ),
        (
            "The $q$-binomial coefficient generalizes the binomial coefficient.",
            {"q binomial coefficient", "binomial coefficient"},
        ),
        (
            "The Euler pentagonal number theorem is a special case of the Jacobi triple product.",
            {"euler pentagonal number theorem", "jacobi triple product"},
        ),
        ("The main result is called the key lemma.", set()),
        ("This is the proof. The proof is a computation.", set()),
        ("We recall that the answer is $42$.", set()),
    ],
)
def test_term_patterns(text: str, expected: set[str]) -> None:
    assert found_names(text) == expected


def test_also_known_as_gives_an_alias() -> None:
    extraction = RulesExtractor().extract(
        paper("The Bailey lemma, also known as the Bailey chain, builds new pairs.")
    )
    (candidate,) = extraction.concepts
    assert candidate.aliases == ("Bailey chain",)


def test_it_is_also_known_as_in_a_definition_gives_aliases() -> None:
    statement = Statement(
        "2401.09999v1#s000",
        "definition",
        "Schur function",
        "We call the generating function of semistandard tableaux of shape $\\lambda$ the "
        "Schur function. It is also known as the Schur polynomial.",
    )
    (candidate, *others) = RulesExtractor().extract(paper("Nothing here.", (statement,))).concepts
    assert candidate.key == "schur function"
    assert candidate.aliases == ("Schur polynomial",)
    assert all(other.aliases == ("Schur polynomial",) for other in others)
    # Outside a definition "it" could be anything: no alias.
    assert not any(c.aliases for c in RulesExtractor().extract(paper(statement.text)).concepts)


def test_definition_statement_gives_a_described_located_concept() -> None:
    statement = Statement(
        "2401.09999v1#s000",
        "definition",
        "Durfee square",
        "Let $\\lambda$ be a partition. The Durfee square of $\\lambda$ is the largest square "
        "that fits inside its Young diagram.",
    )
    document = PaperDocument(
        "2401.09999",
        "t",
        "",
        (),
        (
            Chunk("2401.09999v1#c0000", "Introduction without definitions, long enough here."),
            Chunk("2401.09999v1#c0001", "Definition (Durfee square). " + statement.text),
        ),
        (statement,),
    )
    candidates = [
        c for c in RulesExtractor().extract(document).concepts if c.evidence == "definition"
    ]
    assert {c.key for c in candidates} == {"durfee square"}
    candidate = candidates[0]
    assert candidate.type == "definition"
    assert candidate.chunk_id == "2401.09999v1#c0001"
    assert candidate.description.startswith("The Durfee square of $\\lambda$ is the largest")
    assert candidate.defining_text == statement.text


def test_unnamed_theorems_and_other_kinds_give_no_concept() -> None:
    statements = (
        Statement("x#s000", "theorem", "", "Every Dyck path has even length."),
        Statement("x#s001", "remark", "Important remark", "Nothing here."),
        Statement("x#s002", "theorem", "Theorem 2 of [cite]", "Something."),
    )
    assert found_names("No definitions in this chunk at all.", statements) == set()


def test_description_prefers_the_sentence_that_defines_the_term() -> None:
    text = (
        "Let $n \\ge 1$. Throughout, $q$ is fixed. A Dyck path is a lattice path that never "
        "goes below the axis. It has $2n$ steps."
    )
    assert description_from(text, "Dyck path") == (
        "A Dyck path is a lattice path that never goes below the axis."
    )
    assert split_sentences("One $a. B$ two. Three.") == ["One $a. B$ two.", "Three."]


# -- relations ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "relations"),
    [
        (
            "the q-binomial coefficient generalizes the binomial coefficient",
            [("q binomial coefficient", "binomial coefficient", "generalizes")],
        ),
        (
            "the q-binomial coefficient is a generalization of the binomial coefficient",
            [("q binomial coefficient", "binomial coefficient", "generalizes")],
        ),
        (
            "the binomial coefficient is a special case of the q-binomial coefficient",
            [("q binomial coefficient", "binomial coefficient", "generalizes")],
        ),
        (
            "the q-binomial coefficient specializes to the binomial coefficient",
            [("q binomial coefficient", "binomial coefficient", "generalizes")],
        ),
        (
            "Bailey's lemma implies the Rogers-Ramanujan identities",
            [("bailey lemma", "rogers ramanujan identity", "implies")],
        ),
        (
            "the Rogers-Ramanujan identities follow directly from Bailey's lemma",
            [("bailey lemma", "rogers ramanujan identity", "implies")],
        ),
        (
            "every Durfee square is a square partition",
            [("durfee square", "square partition", "is_instance_of")],
        ),
        (
            "the Durfee square is an example of a square partition",
            [("durfee square", "square partition", "is_instance_of")],
        ),
        ("Bailey's lemma does not imply the Rogers-Ramanujan identities", []),
        ("the Durfee square is not a square partition", []),
        ("the Durfee square is a very special and rather unusual square partition", []),
        ("the q-binomial coefficient. Generalizes the binomial coefficient", []),
        ("the binomial coefficient generalizes the binomial coefficients", []),
    ],
)
def test_relation_patterns(text: str, relations: list[tuple[str, str, str]]) -> None:
    matcher = SurfaceMatcher(
        {
            "q binomial coefficient": ["q-binomial coefficient"],
            "binomial coefficient": [],
            "bailey lemma": ["Bailey's lemma"],
            "rogers ramanujan identity": [],
            "durfee square": [],
            "square partition": [],
        }
    )
    form = match_form(text)
    assert find_relations(form, matcher.find(form)) == relations


# -- the graph ------------------------------------------------------------------------


def test_graph_concepts_on_the_corpus(corpus_graph: tuple[pd.DataFrame, ...]) -> None:
    concepts, _edges, _mentions = corpus_graph
    assert set(concepts["name"]) == EXPECTED_CONCEPTS
    assert not set(concepts["name"]) & UNCORROBORATED
    by_name = concepts.set_index("name")
    # "Bailey" (a lemma in one paper) and "Bailey's lemma" (another) are one concept,
    # with the alias another paper gives it; "Jacobi triple product identity" likewise.
    assert by_name.loc["bailey lemma", "display_name"] == "Bailey's lemma"
    assert list(by_name.loc["bailey lemma", "aliases"]) == ["Bailey chain"]
    assert by_name.loc["bailey lemma", "type"] == "theorem"
    assert list(by_name.loc["jacobi triple product", "aliases"]) == [
        "Jacobi triple product identity"
    ]
    assert by_name.loc["rogers ramanujan identity", "type"] == "identity"
    assert by_name.loc["durfee square", "type"] == "definition"
    assert by_name.loc["durfee square", "description"].startswith("The Durfee square of an")
    assert list(by_name.loc["mobius inversion theorem", "aliases"]) == ["Möbius inversion"]
    # papers: where a concept is defined, stated or mentioned (the Möbius paper mentions
    # Bailey's lemma; the abstract-only paper mentions the Jacobi triple product).
    assert list(by_name.loc["bailey lemma", "papers"]) == [
        "2401.00001",
        "2401.00002",
        "math/0501005",
    ]
    assert list(by_name.loc["jacobi triple product", "papers"]) == ["2401.00001", "2401.00004"]


def test_graph_edges_on_the_corpus(corpus_graph: tuple[pd.DataFrame, ...]) -> None:
    _concepts, edges, _mentions = corpus_graph
    found = edge_set(edges)
    assert {
        ("q binomial coefficient", "binomial coefficient", "generalizes"),
        ("jacobi triple product", "euler pentagonal number theorem", "generalizes"),
        ("jacobi triple product", "euler pentagonal number theorem", "implies"),
        ("bailey lemma", "rogers ramanujan identity", "implies"),
        ("durfee square", "integer partition", "uses"),  # definitional dependency
        ("dyck path", "lattice path", "uses"),
        ("catalan number", "dyck path", "related_to"),  # together in a theorem
    } <= found
    # Negated: "Bailey's lemma does not imply the Möbius inversion formula".
    assert not {edge for edge in found if edge[1] == "mobius inversion theorem"}
    papers = edges.set_index(["source", "target", "relation"])["papers"]
    assert list(papers.loc[("q binomial coefficient", "binomial coefficient", "generalizes")]) == [
        "2401.00001",
        "2401.00003",
    ]
    # related_to only where no other edge joins the two concepts.
    linked = {frozenset(edge[:2]) for edge in found if edge[2] != "related_to"}
    assert not any(frozenset(edge[:2]) in linked for edge in found if edge[2] == "related_to")


def test_worker_processes_give_the_same_graph() -> None:
    documents = documents_from_tables(*corpus_tables())
    params = GraphParams(cooccurrence_min_papers=1)
    alone, alone_report = build_graph(documents, RulesExtractor(), params, disable_progress=True)
    pooled, pooled_report = build_graph(
        documents,
        RulesExtractor(),
        params,
        workers=2,
        min_papers_for_pool=0,
        disable_progress=True,
    )
    for table in ("concepts", "edges", "mentions"):
        pd.testing.assert_frame_equal(getattr(alone, table), getattr(pooled, table))
    assert alone_report == pooled_report


def test_cooccurrence_threshold() -> None:
    documents = documents_from_tables(*corpus_tables())
    graph, _report = build_graph(documents, RulesExtractor(), GraphParams(), disable_progress=True)
    related = {edge[:2] for edge in edge_set(graph.edges) if edge[2] == "related_to"}
    # Only Bailey's lemma and Bailey pairs share statements in two papers.
    assert related == {("bailey lemma", "bailey pair")}


def test_graph_mentions_on_the_corpus(corpus_graph: tuple[pd.DataFrame, ...]) -> None:
    concepts, edges, mentions = corpus_graph
    evidence = mentions.set_index(["concept", "chunk_id"])["evidence"]
    assert evidence.loc[("durfee square", "2401.00001v1#c0001")] == "definition"
    assert evidence.loc[("durfee square", "2401.00001v1#c0003")] == "text"
    assert evidence.loc[("rogers ramanujan identity", "2401.00001v1#c0002")] == "statement"
    assert evidence.loc[("catalan number", "2401.00003v1#c0000")] == "keyword"
    assert evidence.loc[("jacobi triple product", "2401.00004v1#c0000")] == "text"
    assert not mentions.duplicated(["concept", "chunk_id"]).any()
    assert set(mentions["concept"]) <= set(concepts["name"])
    assert set(edges["source"]) | set(edges["target"]) <= set(concepts["name"])
    # Every concept's papers contain the papers of its mentions.
    papers = concepts.set_index("name")["papers"].map(set)
    for name, paper_id in zip(mentions["concept"], mentions["paper_id"], strict=True):
        assert paper_id in papers[name]


def test_merge_candidates_prefers_definitions_for_descriptions() -> None:
    sightings = [
        ("2401.00002", ConceptCandidate("Dyck paths", "object", "text", "Dyck paths are nice.")),
        (
            "2401.00009",
            ConceptCandidate("Dyck path", "definition", "definition", "A Dyck path is."),
        ),
        ("2401.00001", ConceptCandidate("Dyck path", "definition", "keyword")),
    ]
    concepts, key_map = merge_candidates(sightings)
    (concept,) = concepts.values()
    assert concept.display_name == "Dyck path"
    assert concept.description == "A Dyck path is."
    assert concept.type == "definition"
    assert concept.papers == {"2401.00001", "2401.00002", "2401.00009"}
    assert key_map["dyck path"] == "dyck path"


# -- the stage ------------------------------------------------------------------------


def test_run_graph_writes_contract_tables_and_counts(tmp_path: Path) -> None:
    paths = write_processed(tmp_path)
    report = run_graph(GraphParams(), paths)
    schema = {
        "concepts": {
            "name": "string",
            "display_name": "string",
            "type": "string",
            "description": "string",
            "aliases": "list<element: string>",
            "papers": "list<element: string>",
            "statements": "list<element: string>",
        },
        "edges": {
            "source": "string",
            "target": "string",
            "relation": "string",
            "papers": "list<element: string>",
        },
        "mentions": {
            "concept": "string",
            "chunk_id": "string",
            "paper_id": "string",
            "evidence": "string",
        },
    }
    for table, columns in schema.items():
        arrow_schema = pq.read_schema(paths.graph / f"{table}.parquet")
        types = {field.name: str(field.type).replace("large_", "") for field in arrow_schema}
        assert types == columns, table
    metrics = json.loads((paths.metrics / "graph.json").read_text())
    assert metrics == report.as_dict()
    assert metrics["papers"] == 5 == metrics["papers_extracted"] + metrics["papers_skipped"]
    assert metrics["chunks"] == 12 and metrics["statements"] == 11
    assert (
        sum(metrics["concepts_by_type"].values()) == metrics["concepts"] == len(EXPECTED_CONCEPTS)
    )
    assert sum(metrics["edges_by_relation"].values()) == metrics["edges"]
    assert sum(metrics["mentions_by_evidence"].values()) == metrics["mentions"]
    concepts = io.read_parquet(paths.graph / "concepts.parquet")
    assert set(concepts["type"]) <= {
        "object",
        "theorem",
        "definition",
        "technique",
        "identity",
        "conjecture",
        "other",
    }
    assert set(io.read_parquet(paths.graph / "edges.parquet")["relation"]) <= {
        "generalizes",
        "uses",
        "is_instance_of",
        "implies",
        "related_to",
    }
    assert set(io.read_parquet(paths.graph / "mentions.parquet")["evidence"]) <= {
        "definition",
        "statement",
        "keyword",
        "text",
    }


def test_run_graph_is_deterministic(tmp_path: Path) -> None:
    first = write_processed(tmp_path / "a")
    second = write_processed(tmp_path / "b")
    run_graph(GraphParams(), first)
    run_graph(GraphParams(), second)
    for table in ("concepts", "edges", "mentions"):
        assert (first.graph / f"{table}.parquet").read_bytes() == (
            second.graph / f"{table}.parquet"
        ).read_bytes()


def test_graph_then_pairs_end_to_end(tmp_path: Path) -> None:
    """The real chain on the corpus: counts in metrics/data.json add up."""
    paths = write_processed(tmp_path)
    run_graph(GraphParams(), paths)
    report = run_pairs(PairsParams(held_out_fraction=0.3, min_degree=1), paths)
    data = json.loads((paths.metrics / "data.json").read_text())
    assert data["papers"] == 5 and data["chunks"] == 12
    assert data["concepts"] == len(EXPECTED_CONCEPTS)
    pairs = data["pairs"]
    assert pairs["total"] == report.pairs == sum(pairs["by_kind"].values())
    assert pairs["total"] == sum(pairs["by_split"].values())
    assert pairs["candidates"] == pairs["total"] + pairs["dropped_held_out"] + pairs["duplicates"]
    assert data["edges"] == (
        data["edges_used"] + data["edges_dropped_held_out"] + data["edges_dropped_unknown_concept"]
    )
    assert data["qrels"]["total"] == data["qrels"]["seen"] + data["qrels"]["unseen"]
    assert (
        data["queries"]
        + data["held_out_below_min_degree"]
        + data["held_out_without_relevant"]
        + data["held_out_too_broad"]
        == data["held_out_concepts"]
        > 0
    )
    assert report.pairs > 0


def test_main_reports_missing_inputs_and_runs(tmp_path: Path) -> None:
    params = tmp_path / "params.yaml"
    params.write_text("graph:\n  cooccurrence_min_papers: 1\n")
    arguments = ["graph", "--params", str(params), "--root", str(tmp_path)]
    result = CliRunner().invoke(cli.app, arguments)
    assert result.exit_code == 1
    assert "run the prepare stage first" in result.stderr
    write_processed(tmp_path)
    result = CliRunner().invoke(cli.app, arguments)
    assert result.exit_code == 0
    assert f"{len(EXPECTED_CONCEPTS)} concepts" in result.stdout
    assert (tmp_path / "data" / "graph" / "concepts.parquet").is_file()
    # A configuration error exits 2 (the shared CLI contract; argparse main returned 1).
    llm_params = tmp_path / "llm.yaml"
    llm_params.write_text("graph:\n  extractor: llm\n")
    result = CliRunner().invoke(
        cli.app, ["graph", "--params", str(llm_params), "--root", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "graph.llm_url or graph.llm_model is empty" in result.stderr


def test_missing_column_is_a_clear_error(tmp_path: Path) -> None:
    paths = write_processed(tmp_path)
    chunks = io.read_parquet(paths.processed / "chunks.parquet").drop(columns=["text"])
    io.write_parquet(paths.processed / "chunks.parquet", chunks)
    with pytest.raises(ValueError, match=r"chunks\.parquet lacks column\(s\) \['text'\]"):
        run_graph(GraphParams(), paths)


def test_llm_extractor_needs_url_and_model(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="llm_url or graph.llm_model is empty"):
        make_extractor(GraphParams(extractor="llm"), Paths(tmp_path))
    assert make_extractor(GraphParams(), Paths(tmp_path)).name == "rules"


def test_a_corpus_without_concepts_writes_empty_typed_tables(tmp_path: Path) -> None:
    corpus = {
        "2401.00007": {
            "title": "A note",
            "abstract": "We compute a number and check it twice.",
            "categories": ["math.CO"],
            "source_kind": "abstract_only",
            "chunks": [],
            "statements": [],
        }
    }
    paths = write_processed(tmp_path, corpus)
    report = run_graph(GraphParams(), paths)
    assert (report.concepts, report.edges, report.mentions) == (0, 0, 0)
    concepts_schema = pq.read_schema(paths.graph / "concepts.parquet")
    assert str(concepts_schema.field("aliases").type) == "list<element: string>"
    assert len(io.read_parquet(paths.graph / "mentions.parquet")) == 0
    pairs_report = run_pairs(PairsParams(), paths)
    assert (pairs_report.pairs, pairs_report.queries, pairs_report.qrels) == (0, 0, 0)
    qrels_schema = pq.read_schema(paths.eval / "qrels.parquet")
    assert [str(field.type) for field in qrels_schema] == ["string", "string", "int64", "bool"]


# -- incremental runs -----------------------------------------------------------------

GRAPH_TABLES = ("concepts", "edges", "mentions")


class CountingExtractor(RulesExtractor):
    """The rules extractor, counting the papers it is asked to extract. (Its class is part
    of the extractor fingerprint: every run of a test uses it, or none reuses.)"""

    def __init__(self) -> None:
        self.calls = 0

    def extract(self, paper: PaperDocument) -> Any:
        self.calls += 1
        return super().extract(paper)


@pytest.fixture
def scan_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paper ids ``scan_document`` is called on (in this process: a test that counts
    runs the graph with ``workers=0``, not in worker processes)."""
    import pipelines.graph.cache as graph_module

    calls: list[str] = []
    real_scan = graph_module.scan_document

    def counting_scan(document: PaperDocument, matcher: SurfaceMatcher) -> Any:
        calls.append(document.paper_id)
        return real_scan(document, matcher)

    monkeypatch.setattr(graph_module, "scan_document", counting_scan)
    return calls


def graph_bytes(paths: Paths) -> dict[str, bytes]:
    return {table: (paths.graph / f"{table}.parquet").read_bytes() for table in GRAPH_TABLES}


def cache_use(paths: Paths) -> dict[str, int]:
    return dict(json.loads((paths.metrics / "graph.json").read_text())["cache_use"])


def test_adding_papers_gives_the_from_scratch_graph(tmp_path: Path) -> None:
    first_three = dict(list(CORPUS.items())[:3])
    incremental = write_processed(tmp_path / "incremental", first_three)
    extractor = CountingExtractor()
    run_graph(GraphParams(), incremental, extractor=extractor, workers=1)
    assert extractor.calls == 3
    write_processed(tmp_path / "incremental")
    extractor = CountingExtractor()
    run_graph(GraphParams(), incremental, extractor=extractor, workers=1)
    from_scratch = write_processed(tmp_path / "scratch")
    run_graph(GraphParams(), from_scratch, extractor=CountingExtractor(), workers=1)

    assert graph_bytes(incremental) == graph_bytes(from_scratch)
    assert extractor.calls == 2
    use = cache_use(incremental)
    assert use["extraction_computed"] == 2 and use["extraction_reused"] == 3
    assert use["scan_computed"] + use["scan_reused"] == 5


@pytest.mark.parametrize("leaving", list(CORPUS))
def test_removing_a_paper_gives_the_from_scratch_graph(tmp_path: Path, leaving: str) -> None:
    incremental = write_processed(tmp_path / "incremental")
    run_graph(GraphParams(), incremental, extractor=CountingExtractor(), workers=0)
    before = json.loads((incremental.metrics / "graph.json").read_text())["concepts"]
    rest = {paper_id: paper for paper_id, paper in CORPUS.items() if paper_id != leaving}
    write_processed(tmp_path / "incremental", rest)
    report = run_graph(GraphParams(), incremental, extractor=CountingExtractor(), workers=0)
    from_scratch = write_processed(tmp_path / "scratch", rest)
    run_graph(GraphParams(), from_scratch, extractor=CountingExtractor(), workers=0)

    assert graph_bytes(incremental) == graph_bytes(from_scratch)
    assert report.cache_use["scan_computed"] + report.cache_use["scan_reused"] == len(rest)
    assert report.concepts <= before


def _path_papers() -> tuple[PaperDocument, PaperDocument, PaperDocument]:
    """Three one-passage papers: one defines the Dyck path (and mentions Motzkin paths), one
    only counts Dyck paths, one defines the Motzkin path."""

    def document(paper_id: str, text: str, statements: tuple[Statement, ...] = ()) -> PaperDocument:
        chunk = Chunk(f"{paper_id}v1#c0000", text)
        return PaperDocument(paper_id, "t", "", (), (chunk,), statements)

    dyck = document(
        "2401.00001",
        "Dyck paths are counted by Catalan numbers; Motzkin paths also allow flat steps.",
        (Statement("2401.00001v1#s000", "definition", "Dyck path", "A Dyck path is a path."),),
    )
    plain = document("2401.00002", "We count Dyck paths of semilength $n$ by their peaks.")
    motzkin = document(
        "2401.00003",
        "Motzkin paths generalize Dyck paths.",
        (Statement("2401.00003v1#s000", "definition", "Motzkin path", "A Motzkin path is."),),
    )
    return dyck, plain, motzkin


def test_added_surface_forms_rescan_only_the_papers_that_contain_them(
    scan_calls: list[str],
) -> None:
    dyck, plain, motzkin = _path_papers()
    cache = GraphCache()
    params = GraphParams(cooccurrence_min_papers=1)
    build_graph([dyck, plain], RulesExtractor(), params, disable_progress=True, cache=cache)
    scan_calls.clear()
    incremental, report = build_graph(
        [dyck, plain, motzkin], RulesExtractor(), params, disable_progress=True, cache=cache
    )
    scanned_again = list(scan_calls)
    scratch, _report = build_graph(
        [dyck, plain, motzkin], RulesExtractor(), params, disable_progress=True
    )

    for table in GRAPH_TABLES:
        pd.testing.assert_frame_equal(getattr(incremental, table), getattr(scratch, table))
    assert "motzkin path" in set(incremental.concepts["name"])
    # The first paper writes "Motzkin paths", a form added by the new paper: scanned again.
    assert scanned_again == ["2401.00001", "2401.00003"]
    assert report.cache_use == {
        "extraction_computed": 1,
        "extraction_reused": 2,
        "scan_computed": 2,
        "scan_reused": 1,
        "scan_probed": 1,
    }


def test_a_departed_concept_rescans_only_the_papers_that_named_it(
    scan_calls: list[str],
) -> None:
    dyck, plain, motzkin = _path_papers()
    cache = GraphCache()
    params = GraphParams(cooccurrence_min_papers=1)
    first, _ = build_graph(
        [dyck, plain, motzkin], RulesExtractor(), params, disable_progress=True, cache=cache
    )
    assert "motzkin path" in set(first.concepts["name"])
    scan_calls.clear()
    # The paper that defined it leaves: the concept goes, and its forms with it.
    incremental, report = build_graph(
        [dyck, plain], RulesExtractor(), params, disable_progress=True, cache=cache
    )
    scanned_again = list(scan_calls)
    scratch, _report = build_graph([dyck, plain], RulesExtractor(), params, disable_progress=True)

    for table in GRAPH_TABLES:
        pd.testing.assert_frame_equal(getattr(incremental, table), getattr(scratch, table))
    assert "motzkin path" not in set(incremental.concepts["name"])
    # The first paper named the Motzkin path: scanned again; the second never did: reused.
    assert scanned_again == ["2401.00001"]
    assert report.cache_use == {
        "extraction_computed": 0,
        "extraction_reused": 2,
        "scan_computed": 1,
        "scan_reused": 1,
        "scan_probed": 1,
    }


def test_an_unchanged_rerun_extracts_and_scans_nothing(
    tmp_path: Path, scan_calls: list[str]
) -> None:
    paths = write_processed(tmp_path)
    run_graph(GraphParams(), paths, extractor=CountingExtractor(), workers=0)
    first = graph_bytes(paths)
    assert len(scan_calls) == 5
    scan_calls.clear()
    extractor = CountingExtractor()
    report = run_graph(GraphParams(), paths, extractor=extractor, workers=0)

    assert extractor.calls == 0 and scan_calls == []
    assert graph_bytes(paths) == first
    assert report.cache_use == {
        "extraction_computed": 0,
        "extraction_reused": 5,
        "scan_computed": 0,
        "scan_reused": 5,
        "scan_probed": 0,
    }


def test_a_changed_paper_is_extracted_again(tmp_path: Path) -> None:
    paths = write_processed(tmp_path)
    run_graph(GraphParams(), paths, extractor=CountingExtractor(), workers=1)
    changed = {paper_id: dict(paper) for paper_id, paper in CORPUS.items()}
    first_id = next(iter(changed))
    changed[first_id]["title"] = "A new title"
    write_processed(tmp_path, changed)
    extractor = CountingExtractor()
    run_graph(GraphParams(), paths, extractor=extractor, workers=1)
    assert extractor.calls == 1
    assert cache_use(paths)["extraction_reused"] == 4


def test_graph_params_and_extractor_version_invalidate_extractions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = write_processed(tmp_path)
    run_graph(GraphParams(), paths, extractor=CountingExtractor(), workers=1)

    extractor = CountingExtractor()
    run_graph(GraphParams(cooccurrence_min_papers=1), paths, extractor=extractor, workers=1)
    assert extractor.calls == 5

    extractor = CountingExtractor()
    run_graph(GraphParams(cooccurrence_min_papers=1), paths, extractor=extractor, workers=1)
    assert extractor.calls == 0

    monkeypatch.setattr(CountingExtractor, "version", RulesExtractor.version + 1)
    extractor = CountingExtractor()
    run_graph(GraphParams(cooccurrence_min_papers=1), paths, extractor=extractor, workers=1)
    assert extractor.calls == 5


def test_a_code_change_invalidates_extractions_and_scans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scan_calls: list[str]
) -> None:
    import pipelines.graph.cache as graph_module

    paths = write_processed(tmp_path)
    run_graph(GraphParams(), paths, extractor=CountingExtractor(), workers=0)
    scan_calls.clear()
    monkeypatch.setattr(graph_module, "code_fingerprint", lambda: "edited")
    extractor = CountingExtractor()
    run_graph(GraphParams(), paths, extractor=extractor, workers=0)
    assert extractor.calls == 5 and len(scan_calls) == 5


def test_extractors_without_a_version_are_not_cached() -> None:
    class Unversioned:
        name = "unversioned"

        def extract(self, paper: PaperDocument) -> Any:
            return RulesExtractor().extract(paper)

    assert extractor_fingerprint(Unversioned(), GraphParams()) is None
    assert extractor_fingerprint(RulesExtractor(), GraphParams()) is not None
    cache = GraphCache()
    documents = documents_from_tables(*corpus_tables())
    build_graph(documents, Unversioned(), GraphParams(), disable_progress=True, cache=cache)
    assert cache.extractions == {} and len(cache.scans) == 5


@pytest.mark.parametrize(
    "damage",
    [
        "not json at all {",
        "[]",
        '{"format": 999}',
        '{"format": 1, "extractor_fingerprint": "x"}',
    ],
)
def test_an_unreadable_cache_is_recomputed(
    tmp_path: Path, damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_processed(tmp_path)
    run_graph(GraphParams(), paths, extractor=CountingExtractor(), workers=1)
    first = graph_bytes(paths)
    io.write_text(cache_path(paths), damage)
    extractor = CountingExtractor()
    run_graph(GraphParams(), paths, extractor=extractor, workers=1)
    assert extractor.calls == 5
    assert graph_bytes(paths) == first
    assert "ignoring the unreadable cache" in capsys.readouterr().err
    # The run rewrote a good cache: the next one reuses everything.
    extractor = CountingExtractor()
    run_graph(GraphParams(), paths, extractor=extractor, workers=1)
    assert extractor.calls == 0


@pytest.mark.parametrize(
    "damage",
    [
        {"concepts": 5},
        {"paper_id": "somebody else"},
        {"concepts": [{"display_name": "x"}]},
        {"relations": [{"source": "a", "target": "b", "relation": "loves"}]},
    ],
)
def test_a_damaged_extraction_entry_is_recomputed(tmp_path: Path, damage: dict[str, Any]) -> None:
    paths = write_processed(tmp_path)
    run_graph(GraphParams(), paths, extractor=CountingExtractor(), workers=1)
    first = graph_bytes(paths)
    cached = json.loads(cache_path(paths).read_text())
    digest = sorted(cached["extractions"])[0]
    cached["extractions"][digest].update(damage)
    io.write_text(cache_path(paths), json.dumps(cached))
    extractor = CountingExtractor()
    run_graph(GraphParams(), paths, extractor=extractor, workers=1)
    assert extractor.calls == 1
    assert graph_bytes(paths) == first


@pytest.mark.parametrize(
    "damage",
    [
        {"mentions": [["only one"]]},
        {"mentions": [[1, 2]]},
        {"statements": []},
        {"relations": [["a", "b", "loves"]]},
        {"paper_id": "somebody else"},
        {"words": [1]},
        {"words": None},
    ],
)
def test_a_damaged_scan_entry_is_recomputed(
    tmp_path: Path, damage: dict[str, Any], scan_calls: list[str]
) -> None:
    paths = write_processed(tmp_path)
    run_graph(GraphParams(), paths, extractor=CountingExtractor(), workers=0)
    first = graph_bytes(paths)
    cached = json.loads(cache_path(paths).read_text())
    # A paper with statements, so that dropping them is damage.
    digest = next(digest for digest, scan in sorted(cached["scans"].items()) if scan["statements"])
    cached["scans"][digest].update(damage)
    io.write_text(cache_path(paths), json.dumps(cached))
    scan_calls.clear()
    run_graph(GraphParams(), paths, extractor=CountingExtractor(), workers=0)
    assert len(scan_calls) == 1
    assert graph_bytes(paths) == first


def test_the_cache_key_holds_every_rule_of_mathematical_text_the_graph_runs() -> None:
    # An edit to a mathtext module the graph imports (where a statement sits among the
    # passages, say) must invalidate cached extractions and scans, as an edit to graph/ does.
    import pipelines.graph.cache as graph_module

    package = Path(graph_module.__file__).parent
    modules, _external = closure(f"pipelines.graph.{path.stem}" for path in package.glob("*.py"))
    imported = {
        f"mathtext/{module.rsplit('.', 1)[1]}.py"
        for module in modules
        if module.startswith("pipelines.mathtext.")
    }
    assert imported <= set(graph_module._SHARED_CODE), imported - set(graph_module._SHARED_CODE)
