"""Edges from the structure real papers have: a definition citing another by \\ref uses it,
across papers too (a chapter-prefixed label, or a bare one between the papers of one work),
and each concept knows its statements."""

from __future__ import annotations

from pipelines.common.config import GraphParams
from pipelines.graph.build import build_graph
from pipelines.graph.extractor import Chunk, PaperDocument, Statement
from pipelines.graph.rules import RulesExtractor

AFFINE = "An affine scheme is a locally ringed space isomorphic to the spectrum of a ring."
FLAT = "A flat morphism is a morphism of schemes all of whose local ring maps are flat."  # no name


def paper(
    paper_id: str, text: str, statement: Statement, authors: tuple[str, ...] = ()
) -> PaperDocument:
    return PaperDocument(
        paper_id=paper_id,
        title="",
        abstract="",
        chunks=(Chunk(f"{paper_id}v1#c0000", f"Definition. {text}"),),
        statements=(statement,),
        authors=authors,
    )


def bare_citation(first_authors: tuple[str, ...], second_authors: tuple[str, ...]) -> set:
    """The edges when the flat-morphism chapter cites the affine-scheme one by its bare
    label (a blueprint's chapters, each served as a paper)."""
    documents = [
        paper(
            "blueprint/2608101",
            AFFINE,
            Statement(
                "blueprint/2608101v1#s000",
                "definition",
                "",
                AFFINE,
                terms=("affine scheme",),
                label="def:affine",
            ),
            first_authors,
        ),
        paper(
            "blueprint/2608102",
            FLAT,
            Statement(
                "blueprint/2608102v1#s000",
                "definition",
                "",
                FLAT,
                terms=("flat morphism",),
                label="def:flat",
                refs=("def:affine",),
            ),
            second_authors,
        ),
    ]
    graph, _report = build_graph(documents, RulesExtractor(), GraphParams(), disable_progress=True)
    return set(
        zip(graph.edges["source"], graph.edges["target"], graph.edges["relation"], strict=True)
    )


def test_the_chapters_of_one_work_cite_each_other_by_bare_label() -> None:
    edges = bare_citation(("Ann Author", "Bo Writer"), ("bo writer", "Ann  Author"))
    assert ("flat morphism", "affine scheme", "uses") in edges


def test_a_strangers_paper_with_the_same_label_is_not_cited() -> None:
    assert ("flat morphism", "affine scheme", "uses") not in bare_citation(
        ("Ann Author",), ("Cy Other",)
    )
    assert ("flat morphism", "affine scheme", "uses") not in bare_citation((), ())


def test_a_definition_citing_another_uses_it_across_papers() -> None:
    documents = [
        paper(
            "stacks/2607001",
            AFFINE,
            Statement(
                "stacks/2607001v1#s000",
                "definition",
                "",
                AFFINE,
                terms=("affine scheme",),
                label="definition-affine-scheme",
            ),
        ),
        paper(
            "stacks/2607002",
            FLAT,
            Statement(
                "stacks/2607002v1#s000",
                "definition",
                "",
                FLAT,
                terms=("flat morphism",),
                label="definition-flat",
                refs=("schemes-definition-affine-scheme", "nowhere-at-all"),
            ),
        ),
    ]
    graph, report = build_graph(documents, RulesExtractor(), GraphParams(), disable_progress=True)
    edges = set(
        zip(graph.edges["source"], graph.edges["target"], graph.edges["relation"], strict=True)
    )
    assert ("flat morphism", "affine scheme", "uses") in edges
    assert report.citations == 1  # the unknown label cites nothing
    statements = dict(zip(graph.concepts["name"], graph.concepts["statements"], strict=True))
    assert list(statements["affine scheme"]) == ["stacks/2607001v1#s000"]
    assert list(statements["flat morphism"]) == ["stacks/2607002v1#s000"]
