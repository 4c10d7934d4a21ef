"""What prepare keeps of a paper's structure: a definition's marked terms, the labels a
statement and its proof cite, and the proof itself."""

from __future__ import annotations

from pipelines.prepare.cleaner import clean_latex

DOCUMENT = r"""
\documentclass{amsart}
\newtheorem{lemma}{Lemma}
\theoremstyle{definition}
\newtheorem{definition}[lemma]{Definition}
\begin{document}
\section{Schemes}
\begin{definition}
\label{definition-affine-scheme}
An {\it affine scheme} is a locally ringed space isomorphic to $\mathop{Spec}(R)$.
A \emph{morphism of affine schemes} is a morphism of locally ringed spaces.
This is \textbf{not} the same as a \textit{local ring of $X$ at $x$}.
\end{definition}

\begin{lemma}
\label{lemma-open}
Every open subset of an affine scheme (Definition \ref{definition-affine-scheme}) is a
{\it union} of affine schemes.
\end{lemma}

\begin{proof}
Use Lemma \ref{lemma-other} and \cref{definition-affine-scheme,schemes-lemma-far}.
\end{proof}

\begin{proof}
A second proof, of nothing in particular.
\end{proof}
\end{document}
"""


def statements() -> dict[str, object]:
    found = clean_latex(DOCUMENT).statements
    return {statement.label: statement for statement in found}


def test_a_definition_keeps_every_emphasised_term_in_order() -> None:
    definition = statements()["definition-affine-scheme"]
    assert definition.terms == (  # type: ignore[attr-defined]
        "affine scheme",
        "morphism of affine schemes",
        "not",
        "local ring of $X$ at $x$",
    )


def test_emphasis_outside_a_definition_is_no_term() -> None:
    lemma = statements()["lemma-open"]
    assert lemma.terms == ()  # type: ignore[attr-defined]
    assert "union of affine schemes" in lemma.text  # type: ignore[attr-defined]


def test_refs_of_a_statement_and_its_proof_in_order_once_each() -> None:
    lemma = statements()["lemma-open"]
    assert lemma.refs == (  # type: ignore[attr-defined]
        "definition-affine-scheme",
        "lemma-other",
        "schemes-lemma-far",
    )
    assert "[ref]" in lemma.text  # type: ignore[attr-defined]


def test_the_first_proof_after_a_statement_is_its_proof() -> None:
    by_label = statements()
    assert by_label["lemma-open"].proof.startswith("Use Lemma [ref]")  # type: ignore[attr-defined]
    assert by_label["definition-affine-scheme"].proof == ""  # type: ignore[attr-defined]
    assert all("second proof" not in s.proof for s in by_label.values())  # type: ignore[attr-defined]


def test_unbalanced_emphasis_and_a_ref_without_argument_do_not_raise() -> None:
    broken = (
        "\\begin{document}\\begin{definition}A {\\it broken term is here.\n\n"
        "Then \\ref and \\emph x.\\end{definition}\\end{document}"
    )
    cleaned = clean_latex(broken)
    assert cleaned.fatal is None
    assert len(cleaned.statements) == 1
