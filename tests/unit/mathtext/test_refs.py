"""Resolving \\ref labels to statements, within a paper and across the parts of a work."""

from __future__ import annotations

from pipelines.mathtext.refs import LabelIndex, cited_statements, citing_statements, work_keys

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


# A blueprint's chapters, each served as a paper: ``w1`` and ``w2`` are one work (the same
# authors), ``x`` a stranger that happens to use the same labels.
WORKS = work_keys(
    [
        ("w1", ["Ann Author", "Bo Writer"]),
        ("w2", ["bo  writer", "Ann Author"]),
        ("x", ["Cy Other"]),
        ("anonymous", []),
        ("unknown", None),
    ]
)
IN_WORKS = [
    ("w1#s000", "w1", "lem:ample"),
    ("w2#s000", "w2", "thm:main"),
    ("x#s000", "x", "lem:ample"),
    ("x#s001", "x", "lem:loops"),
]


def test_work_keys_group_papers_by_their_authors_in_any_order_or_case() -> None:
    assert WORKS["w1"] == WORKS["w2"] != WORKS["x"]
    assert "anonymous" not in WORKS and "unknown" not in WORKS  # no authors: no work to share


def test_a_bare_label_resolves_within_the_work_and_never_to_a_stranger() -> None:
    index = LabelIndex(IN_WORKS, WORKS)
    assert index.resolve("w2", "lem:ample") == "w1#s000"  # not x's lem:ample
    assert index.resolve("w1", "thm:main") == "w2#s000"
    assert index.resolve("w1", "lem:loops") is None  # only a stranger has it
    assert index.resolve("x", "thm:main") is None
    assert index.resolve("anonymous", "thm:main") is None
    assert LabelIndex(IN_WORKS).resolve("w2", "lem:ample") is None  # no works known


def test_a_label_twice_in_the_work_cites_nothing() -> None:
    works = {**WORKS, "w3": WORKS["w1"]}
    index = LabelIndex([*IN_WORKS, ("w3#s000", "w3", "lem:ample")], works)
    assert index.resolve("w2", "lem:ample") is None
    assert index.resolve("w3", "lem:ample") == "w3#s000"  # its own paper first


def test_cited_statements_follow_the_work() -> None:
    rows = [(sid, paper, label, ["lem:ample"]) for sid, paper, label in IN_WORKS]
    own = {"x#s001": ["x#s000"]}  # x's own lem:ample
    assert cited_statements(rows, WORKS) == {"w2#s000": ["w1#s000"], **own}
    assert cited_statements(rows) == own
