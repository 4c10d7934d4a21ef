"""Lean blueprint markup is not mathematics (issue 20): ``\\uses``, ``\\lean``, ``\\leanok``,
``\\mathlibok``, ``\\notready``, ``\\discussion``, ``\\proves`` and expdb's pointers into its
Python code vanish with their arguments, whether or not the paper defines them, and the
statements around them are still found.

The snippets are real, cut from the blueprints in ``shared/corpora/blueprints`` (Apache-2.0;
teorth/pfr, ImperialCollegeLondon/FLT, teorth/expdb); the last test prepares real chapters.
"""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import pytest
from repo import REPO

from pipelines.common.config import SampleParams
from pipelines.ingest.arxiv.archive import ArchiveLimits, Source, extract_source
from pipelines.mirror.corpora.blueprints import build_blueprint_mirror
from pipelines.prepare.cleaner import clean_latex, prepare_document
from pipelines.prepare.latex.vocabulary import BLUEPRINT_MARKUP

SHARED_BLUEPRINTS = REPO / SampleParams().blueprints_dir

PFR = r"""
\begin{definition}[Entropy]\label{entropy-def}\lean{ProbabilityTheory.entropy}\leanok
If $X$ is an $S$-valued random variable, the entropy $H[X]$ of $X$ is defined
$$ H[X] := \sum_{s \in S} P[X=s] \log \frac{1}{P[X=s]}.$$
\end{definition}

\begin{lemma}[Ruzsa triangle inequality]\label{ruzsa-triangle}
\lean{rdist_triangle}\leanok
If $X,Y,Z$ are $G$-valued random variables, then $d[X;Z] \leq d[X;Y] + d[Y;Z]$.
\end{lemma}

\begin{proof}\uses{ruz-dist-def, submodularity}\leanok
By the submodularity of entropy, the claim follows.
\end{proof}
"""

FLT = r"""
\begin{definition}\label{local_Weil_group}\uses{maximal_unramified_extension_of_p-adic_field}
\notready The topological group described above is called the \emph{Weil group} of $K$.
\end{definition}

\begin{theorem}\label{FrobeniusElement}
  \lean{IsDedekindDomain.HeightOneSpectrum.exists_frobenius}
  \mathlibok
  \discussion{451}
  There is an element $\sigma$ of the decomposition group inducing Frobenius.
\end{theorem}
\begin{proof}
  \proves{hardly_ramified_reducible}
  \uses{hardly_ramified_lifts,
    hardly_ramified_spreads_out,hardly_ramified_3adic_reducible}
  Assume for a contradiction that $\overline{\rho}$ is irreducible.
\end{proof}
"""

EXPDB = r"""
\begin{proposition}[Van der Corput $A$-process]\label{vdc-a}
If $(k,\ell)$ is an exponent pair, then so is $A(k,\ell)$.
\end{proposition}

\literature
\code{A_transform_hypothesis}

\begin{definition}[Growth rate of zeta]\label{zeta-grow-def}
For $\sigma \in \R$, let $\mu(\sigma)$ denote the growth exponent of zeta.
\end{definition}

\python{bound_mu}
\nopython
"""

# What print.tex defines (both forms the projects use) and expdb's macros/common.tex.
PRINT_DEFINITIONS = r"""
\newcommand{\lean}[1]{}
\newcommand{\leanok}{}
\newcommand{\mathlibok}{}
\newcommand{\notready}{}
\newcommand{\discussion}[1]{}
\newcommand{\proves}[1]{}
\ExplSyntaxOn
\NewDocumentCommand{\uses}{m}
 {\clist_map_inline:nn{#1}{\vphantom{\ref{##1}}}%
  \ignorespaces}
\ExplSyntaxOff
\newcommand\code[1]{{\ttfamily{\lstinline|#1|}}\\ }
\newcommand\python[1]{\emph{Implemented at \href{https://github.com/teorth/expdb/blob/main/%
blueprint/src/python/#1.py}{\ttfamily{\lstinline|#1|.py}} as:}\\ }
\newcommand\literature{\emph{Recorded in \href{https://github.com/teorth/expdb/blob/main/%
blueprint/src/python/literature.py}{\ttfamily{literature.py}} as:}\\ }
\newcommand\nopython{\emph{Not yet implemented in Python.}}
"""

# Nothing of these may reach a passage, a statement or a proof.
MARKUP_WORDS = (
    *("uses", "leanok", "mathlibok", "notready", "discussion", "proves", "Lean"),
    *("ProbabilityTheory", "rdist_triangle", "ruz-dist-def", "IsDedekindDomain"),
    *("exists_frobenius", "maximal_unramified", "hardly_ramified", "451"),
    *("Recorded in", "literature.py", "A_transform_hypothesis", "bound_mu", "Implemented"),
    *("Not yet implemented",),
)


def document(body: str, preamble: str = "") -> str:
    return f"\\documentclass{{report}}\n{preamble}\n\\begin{{document}}\n{body}\n\\end{{document}}"


@pytest.mark.parametrize("preamble", ["", PRINT_DEFINITIONS], ids=["web-like", "print.tex"])
def test_blueprint_markup_vanishes_with_its_arguments(preamble: str) -> None:
    cleaned = clean_latex(document(PFR + FLT + EXPDB, preamble))
    texts = [cleaned.text, *(s.text for s in cleaned.statements)]
    texts += [s.proof for s in cleaned.statements] + [s.name for s in cleaned.statements]
    for text in texts:
        for word in MARKUP_WORDS:
            assert word not in text, (word, text)
    # The mathematics around the markup is all there, statements found as before.
    assert "called the Weil group of $K$" in cleaned.text
    assert "decomposition group inducing Frobenius" in cleaned.text
    assert "If $(k,\\ell)$ is an exponent pair" in cleaned.text
    found = {(s.kind, s.label) for s in cleaned.statements}
    assert {("definition", "entropy-def"), ("lemma", "ruzsa-triangle")} <= found
    assert {("definition", "local_Weil_group"), ("theorem", "FrobeniusElement")} <= found
    assert {("proposition", "vdc-a"), ("definition", "zeta-grow-def")} <= found
    proofs = {s.label: s.proof for s in cleaned.statements}
    assert proofs["ruzsa-triangle"] == "By the submodularity of entropy, the claim follows."
    assert proofs["FrobeniusElement"].startswith("Assume for a contradiction")
    terms = {s.label: s.terms for s in cleaned.statements}
    assert terms["local_Weil_group"] == ("Weil group",)


def test_the_markup_table_names_every_macro_of_the_corpus_readme() -> None:
    # The README's table of blueprint macros (shared/corpora/blueprints/README.md).
    for name in ("uses", "lean", "leanok", "mathlibok", "notready", "discussion", "proves"):
        assert name in BLUEPRINT_MARKUP
    assert BLUEPRINT_MARKUP["unintegrated"] == 0 and BLUEPRINT_MARKUP["uses"] == 1


@pytest.mark.skipif(
    not SHARED_BLUEPRINTS.is_dir(), reason="../shared/corpora/blueprints is not beside the checkout"
)
def test_no_lean_name_or_dependency_reaches_the_passages_of_real_chapters(
    tmp_path: Path,
) -> None:
    mirror = tmp_path / "mirror"
    manifest = build_blueprint_mirror(
        mirror, SHARED_BLUEPRINTS, start=date(2024, 1, 1), end=date(2024, 3, 31)
    )
    limits = ArchiveLimits(max_files=500, max_file_bytes=10_000_000, max_total_bytes=50_000_000)
    markup = re.compile(r"\\(lean|uses|proves|code|python)\s*\{([^{}]*)\}")
    checked = leaked = 0
    for record in manifest.versions:
        source = extract_source((mirror / record.eprint).read_bytes(), limits)
        assert isinstance(source, Source)
        prepared = prepare_document(
            source.text, chunk_chars=1500, overlap_chars=200, min_chunk_chars=50
        )
        passages = "\n".join(chunk.text for chunk in prepared.chunks)
        chapter = (SHARED_BLUEPRINTS / record.project / record.chapter).read_text("utf-8")
        # An argument is a leak when it is in a passage but not in the chapter's own text
        # (a label such as "tau" may be a word of the mathematics too).
        without_markup = markup.sub(" ", chapter)
        for match in markup.finditer(chapter):
            for name in (part.strip() for part in match[2].split(",")):
                if len(name) > 3 and name not in without_markup:
                    checked += 1
                    leaked += name in passages
        for word in ("\\leanok", "leanok", "mathlibok", "notready", "Recorded in"):
            assert word not in passages, (record.paper_id, word)
    assert checked > 1000  # the markup of all 82 chapters was really looked for
    assert leaked == 0
