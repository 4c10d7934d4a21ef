"""What a reader sees of a hit (pipelines.search.query.Hit, links, statements): the
statement, its name, heading, section, slogan and own link, and a snippet; on the snake
lemma as prepare writes homology.tex, linked by the repository's copy of the Stacks tags."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from pipelines.mathtext.statements import statements_by_passage
from pipelines.search.links import (
    STACKS_TAG_PAGE,
    STACKS_TAGS_FILE,
    parse_tags,
    read_tags,
    stacks_chapter,
    stacks_tag,
    statement_link,
)
from pipelines.search.query import Corpus, format_hits, one_per_statement
from pipelines.search.snippets import DIAGRAM

ROOT = Path(__file__).parents[3]
HOMOLOGY = (
    "https://github.com/stacks/stacks-project/blob/4ac4815d5a00dc2eacab7824cf4e4baafe2773ac/"
    "homology.tex"
)
SNAKE = (
    "Let $\\mathcal{A}$ be an abelian category. Let $\\xymatrix{ & x \\ar[r]^f \\ar[d]^\\alpha "
    "& y \\ar[r]^g \\ar[d]^\\beta & z \\ar[r] \\ar[d]^\\gamma & 0 \\\\ 0 \\ar[r] & u \\ar[r]^k "
    "& v \\ar[r]^l & w }$ be a commutative diagram with exact rows.\n\nThe induced sequence "
    "is exact. If $f$ is injective then so is $f'$, and if $l$ is surjective then so is $l'$."
)
SNAKE_PROOF = (
    "As $\\pi$ is an epimorphism and $\\iota$ is a monomorphism by Lemma [ref], uniqueness of "
    "$\\delta$ is clear. Let $p = y \\times_z \\mathop{\\mathrm{Ker}}(\\gamma)$."
)
PROSE = (
    "An abelian category is a category satisfying just enough axioms so the snake lemma "
    "holds. An axiom (that is sometimes forgotten) is that the canonical map is always an "
    "isomorphism."
)


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    chunks = pd.DataFrame(
        {
            "chunk_id": ["h#c0", "h#c1", "h#c2", "h#c3"],
            "paper_id": ["h"] * 4,
            "chunk_index": [0, 1, 2, 3],
            "section": ["Abelian categories"] * 4,
            "text": [PROSE, f"Lemma.\n\n{SNAKE}", f"Proof. {SNAKE_PROOF}", "Unrelated words."],
        }
    )
    statements = pd.DataFrame(
        {
            "statement_id": ["h#s0"],
            "paper_id": ["h"],
            "kind": ["lemma"],
            "name": [""],
            "label": ["lemma-snake"],
            "text": [SNAKE],
            "proof": [SNAKE_PROOF],
            "slogan": ["Kernels and cokernels of a map of exact rows form a long exact sequence."],
        }
    )
    return Corpus(
        chunks,
        {"h": "Homological Algebra"},
        {"h": HOMOLOGY},
        statements_by_passage(chunks, statements),
        read_tags(ROOT),
    )


def test_the_repository_copy_of_the_tags_names_every_result_of_its_chapters() -> None:
    tags = read_tags(ROOT)
    assert tags["homology-lemma-snake"] == "010H"
    assert tags["categories-lemma-yoneda"] == "001P"
    assert len(tags) > 3000 and (ROOT / STACKS_TAGS_FILE).is_file()
    assert read_tags(ROOT / "nowhere") == {}


def test_a_statement_hit_is_the_statement_named_and_linked_to_its_tag(corpus: Corpus) -> None:
    hit = corpus.hit(1, 0.5)
    assert (hit.kind, hit.name, hit.heading) == ("lemma", "snake lemma", "Lemma (snake lemma)")
    assert hit.section == "Abelian categories"
    assert hit.slogan.startswith("Kernels and cokernels")
    assert hit.link == STACKS_TAG_PAGE + "010H"
    shown = hit.snippet(None)
    # from the statement's start ("Lemma." is the heading's), the diagram set aside
    assert shown.text.startswith(f"Let $\\mathcal{{A}}$ be an abelian category. Let {DIAGRAM} ")
    assert shown.blocks[0].kind == "diagram"
    as_json = hit.as_json(1, max_chars=120)
    assert as_json["kind"] == "lemma" and as_json["name_derived"] is True
    assert as_json["heading"] == "Lemma (snake lemma)" and as_json["link"].endswith("/010H")
    assert len(as_json["snippet"]) <= 120 and as_json["blocks"][0]["kind"] == "diagram"
    assert as_json["chunk_id"] == "h#c1" and as_json["url"] == HOMOLOGY  # kept as they were
    assert as_json["statements"][0]["holds"] == "start"


def test_a_proof_passage_is_from_the_proof_of_its_statement(corpus: Corpus) -> None:
    hit = corpus.hit(2, 0.4)
    assert hit.kind == "proof" and hit.name == "snake lemma"
    assert hit.heading == "From the proof of Lemma (snake lemma)"
    assert hit.link == STACKS_TAG_PAGE + "010H"
    assert hit.snippet(None).text.startswith("As $\\pi$ is an epimorphism")


def test_prose_is_text_headed_by_its_section_and_linked_to_its_paper(corpus: Corpus) -> None:
    hit = corpus.hit(0, 0.3)
    assert (hit.kind, hit.name, hit.heading) == ("text", "", "Abelian categories")
    assert hit.link == HOMOLOGY and hit.slogan == ""
    assert hit.snippet(40).text == "An abelian category is a category…"


def test_the_command_line_prints_heading_link_place_and_snippet(corpus: Corpus) -> None:
    printed = format_hits([corpus.hit(1, 0.5), corpus.hit(0, 0.25)], width=100).splitlines()
    assert printed[:5] == [
        " 1. 0.5000  Lemma (snake lemma)",
        f"    {STACKS_TAG_PAGE}010H",
        "    Homological Algebra · Abelian categories · [h#c1]",
        "    Slogan: Kernels and cokernels of a map of exact rows form a long exact sequence.",
        f"    Let $\\mathcal{{A}}$ be an abelian category. Let {DIAGRAM} be a commutative diagram "
        "with exact rows.…",
    ]
    assert printed[5:7] == [" 2. 0.2500  Abelian categories", f"    {HOMOLOGY}"]
    assert printed[7] == "    Homological Algebra · [h#c0]"


def test_links_where_no_tag_is_known() -> None:
    tags = parse_tags(["# a comment", "010H,homology-lemma-snake", "bad line", "", "X,y"])
    assert tags == {"homology-lemma-snake": "010H"}
    assert stacks_chapter(HOMOLOGY) == "homology" and stacks_chapter(None) is None
    assert stacks_chapter("https://arxiv.org/abs/2401.00007") is None
    assert stacks_tag("lemma-snake", "homology", tags) == "010H"
    assert stacks_tag("homology-lemma-snake", None, tags) == "010H"  # a label in full
    assert stacks_tag("lemma-snake", "schemes", tags) is None
    # a Stacks label without a tag: its chapter's source (a line anchor once lines are known)
    assert statement_link("lemma-new", HOMOLOGY, tags) == HOMOLOGY
    assert statement_link("lemma-new", HOMOLOGY, tags, line=1012) == f"{HOMOLOGY}#L1012"
    arxiv = "https://arxiv.org/abs/2401.00007"
    assert statement_link("lem:key bound", arxiv, tags) == f"{arxiv}#lem:key%20bound"
    assert statement_link("", arxiv, tags) == arxiv
    assert statement_link("lemma-snake", None, tags) is None  # no chapter, no paper link


def test_statements_without_names_slogans_or_proofs_still_make_sane_hits() -> None:
    chunks = pd.DataFrame(
        {
            "chunk_id": ["p#c0", "p#c1"],
            "paper_id": ["p", "p"],
            "text": [
                "Lemma. Every price here is $ 5 or more, and the list of prices goes on and on.",
                "and on, until at last it stops right here, for good and all.",
            ],
        }
    )
    statements = pd.DataFrame(
        {
            "statement_id": ["p#s0"],
            "paper_id": ["p"],
            "kind": ["lemma"],
            "name": [None],
            "label": [None],
            "text": [
                "Every price here is $ 5 or more, and the list of prices goes on and on, "
                "and on, until at last it stops right here, for good and all."
            ],
        }
    )
    corpus = Corpus(chunks, {}, {}, statements_by_passage(chunks, statements))
    first, rest = corpus.hit(0, 1.0), corpus.hit(1, 0.5)
    assert (first.kind, first.name, first.heading, first.link) == ("lemma", "", "Lemma", None)
    assert first.snippet(30).text == "Every price here is $ 5 or…"  # a lone $ is a dollar
    assert rest.heading == "Lemma" and rest.snippet(None).text.startswith("… and on, until")
    assert first.section == "" and format_hits([first]).splitlines()[1] == "    p · [p#c0]"


def test_a_statement_is_one_hit_shown_where_it_starts(corpus: Corpus) -> None:
    # Ranked: the proof (h#c2), the prose (h#c0), the lemma (h#c1): the lemma takes its
    # proof's place, once; prose stands alone.
    assert corpus.statement_of(1) == ("h#s0", True) and corpus.statement_of(2) == ("h#s0", False)
    assert corpus.statement_of(0) is None
    assert one_per_statement([2, 0, 1, 3], corpus.statement_of, 10) == [1, 0, 3]
    assert one_per_statement([2, 0, 1, 3], corpus.statement_of, 2) == [1, 0]
    # only the proof ranked: it is shown ("From the proof of ..."), not a passage unranked
    assert one_per_statement([2, 3], corpus.statement_of, 10) == [2, 3]
    assert one_per_statement([], corpus.statement_of, 10) == []
