"""Citing sentences and slogans: what prepare keeps of the authors' own descriptions."""

from __future__ import annotations

from pipelines.mathtext.sentences import split_sentences
from pipelines.prepare.citations import citing_sentences
from pipelines.prepare.cleaner import clean_latex, prepare_document
from pipelines.prepare.latex.converter import BLOCK_MARK, REF_MARK

DOCUMENT = r"""
\documentclass{amsart}
\newenvironment{slogan}{\comment}{\endcomment}
\begin{document}
\section{Morphisms}
\begin{lemma}
\label{lemma-open}
\begin{slogan}
Flat morphisms of finite presentation are open.
\end{slogan}
Let $f : X \to Y$ be flat and locally of finite presentation. Then $f$ is open.
\end{lemma}
\begin{proof}
This is [EGA, IV 2.4.6]; see also Lemma \ref{lemma-other} and \cite{EGA}.
\end{proof}

In the introduction we recall why finite locally free morphisms are open, e.g. by
Lemmas \ref{lemma-open} and \ref{lemma-other}. A sentence without a reference.
Since $f$ is open (Algebra, Lemma \ref{algebra-lemma-open}) we win.
\end{document}
"""


def test_a_slogan_leaves_the_text_and_stays_with_its_statement() -> None:
    # The preamble defines slogan as a comment, as the Stacks Project does: it is kept.
    cleaned = clean_latex(DOCUMENT)
    (lemma,) = [s for s in cleaned.statements if s.label == "lemma-open"]
    assert lemma.slogan == "Flat morphisms of finite presentation are open."
    assert "Flat morphisms of finite presentation" not in cleaned.text
    assert "Let $f : X \\to Y$ be flat" in lemma.text


def test_citing_sentences_carry_the_labels_they_cite_in_order() -> None:
    cleaned = clean_latex(DOCUMENT)
    found = {citation.sentence: citation.refs for citation in cleaned.citations}
    assert found == {
        "This is [EGA, IV 2.4.6]; see also Lemma [ref] and [cite].": ("lemma-other",),
        "In the introduction we recall why finite locally free morphisms are open, e.g. by "
        "Lemmas [ref] and [ref].": ("lemma-open", "lemma-other"),
        "Since $f$ is open (Algebra, Lemma [ref]) we win.": ("algebra-lemma-open",),
    }


def test_no_mark_reaches_a_passage_or_a_statement() -> None:
    prepared = prepare_document(DOCUMENT, chunk_chars=1500, overlap_chars=200, min_chunk_chars=10)
    texts = [chunk.text for chunk in prepared.chunks]
    texts += [s.text for s in prepared.statements] + [s.proof for s in prepared.statements]
    texts += [c.sentence for c in prepared.citations]
    assert texts and not any(REF_MARK in text or BLOCK_MARK in text for text in texts)
    # A mark written in the source itself is removed before conversion: it cannot forge one.
    forged = prepare_document(
        DOCUMENT.replace("A sentence without", f"A {REF_MARK} sentence without"),
        chunk_chars=1500,
        overlap_chars=200,
        min_chunk_chars=10,
    )
    assert [c.refs for c in forged.citations] == [c.refs for c in prepared.citations]


def test_sentences_split_outside_math_and_abbreviations() -> None:
    paragraph = "Let $x = 1. Y$ hold, e.g. here. Then we are done! Is it? Yes."
    assert split_sentences(paragraph) == [
        "Let $x = 1. Y$ hold, e.g. here.",
        "Then we are done!",
        "Is it?",
        "Yes.",
    ]


def test_a_reference_without_its_label_cites_nothing() -> None:
    marked = f"First {REF_MARK}[ref] here. Second {REF_MARK}[ref] there."
    found = citing_sentences(marked, REF_MARK, [(), ("lemma-b",)])
    assert [(c.sentence, c.refs) for c in found] == [("Second [ref] there.", ("lemma-b",))]
