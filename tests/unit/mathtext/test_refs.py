"""Resolving \\ref labels to statements, within a paper and across the parts of a work."""

from __future__ import annotations

from pipelines.mathtext.refs import LabelIndex, cited_statements, citing_statements

LABELLED = [
    ("a#s000", "a", "definition-scheme"),
    ("a#s001", "a", "lemma-basic"),
    ("b#s000", "b", "lemma-basic"),
    ("b#s001", "b", "definition-flat"),
]


def test_a_label_resolves_in_its_own_paper_first() -> None:
    index = LabelIndex(LABELLED)
    assert index.resolve("a", "lemma-basic") == "a#s001"
    assert index.resolve("b", "lemma-basic") == "b#s000"


def test_a_prefixed_label_resolves_across_papers_when_unambiguous() -> None:
    index = LabelIndex(LABELLED)
    assert index.resolve("b", "schemes-definition-scheme") == "a#s000"
    assert index.resolve("a", "morphisms-definition-flat") == "b#s001"


def test_an_ambiguous_or_unknown_label_cites_nothing() -> None:
    index = LabelIndex([*LABELLED, ("c#s000", "c", "lemma-basic")])
    assert index.resolve("a", "algebra-lemma-basic") is None  # b's and c's
    assert index.resolve("a", "lemma-missing") is None
    assert index.resolve("a", "") is None


def test_cited_and_citing_are_inverse_and_skip_self_citations() -> None:
    cited = cited_statements(
        [
            ("a#s000", "a", "definition-scheme", []),
            ("a#s001", "a", "lemma-basic", ["definition-scheme", "lemma-basic", "nowhere"]),
            ("b#s000", "b", "", ["x-definition-scheme", "x-definition-scheme"]),
        ]
    )
    assert cited == {"a#s001": ["a#s000"], "b#s000": ["a#s000"]}
    assert citing_statements(cited) == {"a#s000": ["a#s001", "b#s000"]}
