"""Cleaner and chunker: cleaning rules, chunker invariants, statements, malformed input."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from pipelines.prepare.chunker import chunk_spans, chunk_text, math_spans
from pipelines.prepare.cleaner import clean_latex, prepare_document
from pipelines.prepare.latex.converter import clean_inline
from pipelines.prepare.latex.source import strip_comments
from pipelines.prepare.latex.vocabulary import CITE_PLACEHOLDER, REF_PLACEHOLDER
from pipelines.prepare.statements import statement_kind


def body(latex: str, preamble: str = "") -> str:
    """The cleaned text of a document whose body is ``latex``."""
    document = clean_latex(
        f"\\documentclass{{article}}\n{preamble}\n\\begin{{document}}\n{latex}\n\\end{{document}}"
    )
    return document.text


def unescaped_dollars(text: str) -> int:
    return re.sub(r"\\.", "", text, flags=re.S).count("$")


# --------------------------------------------------------------------------- comments


def test_comment_is_removed_with_its_newline_as_tex_does() -> None:
    assert body("one % a remark\ntwo") == "one two"
    assert body("glued%\ntogether") == "gluedtogether"


def test_escaped_percent_is_text_not_a_comment() -> None:
    assert body(r"50\% of all % but not this" + "\nnext") == "50% of all next"


def test_percent_after_a_line_break_command_is_a_comment() -> None:
    # "\\%": an escaped backslash (line break), then a real comment.
    assert strip_comments("a\\\\% gone\nb") == "a\\\\b"
    assert strip_comments("a\\\\\\% kept") == "a\\\\\\% kept"


def test_comment_lines_do_not_split_a_paragraph_but_blank_lines_do() -> None:
    assert body("first\n% note\nsecond\n\nthird") == "first second\n\nthird"


def test_commented_out_definition_is_not_used() -> None:
    assert body(r"$\X$", preamble="% \\newcommand{\\X}{WRONG}") == r"$\X$"


# --------------------------------------------------------------------------- preamble


def test_preamble_and_everything_after_end_document_are_dropped() -> None:
    document = clean_latex(
        "\\documentclass{amsart}\\usepackage{amsmath}\\title{T}\\author{A}\n"
        "\\begin{document}\\maketitle Body text here.\\end{document}\nafterwards junk"
    )
    assert document.text == "Body text here."
    assert document.problems == ()


def test_keywords_and_subject_classes_from_the_preamble_are_kept() -> None:
    text = body("Body.", preamble="\\keywords{partitions, $q$-series}\\subjclass[2020]{05A17}")
    assert "Keywords: partitions, $q$-series" in text
    assert "Mathematics Subject Classification: 05A17" in text


def test_missing_begin_document_reads_the_whole_file_and_says_so() -> None:
    document = clean_latex("\\documentclass{article}\\usepackage{x}\nJust text, no document.")
    assert document.text == "Just text, no document."
    assert any("begin{document}" in problem for problem in document.problems)


def test_missing_end_document_is_reported_not_fatal() -> None:
    document = clean_latex("\\begin{document}Some text.")
    assert document.text == "Some text."
    assert document.fatal is None
    assert any("end{document}" in problem for problem in document.problems)


# --------------------------------------------------------------------------- macros


MACROS = r"""
\newcommand{\R}{\mathbb{R}}
\newcommand{\norm}[1]{\left\| #1 \right\|}
\newcommand{\pair}[2][x]{(#1, #2)}
\newcommand*{\bm}[1]{\mathbf#1}
\def\qq#1#2{q^{#1}_{#2}}
\let\eps\varepsilon
\DeclareMathOperator{\Hom}{Hom}
\newcommand{\inner}{\R^n}
\newenvironment{pf}{\begin{proof}}{\end{proof}}
"""


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (r"$\R$", r"$\mathbb{R}$"),
        (r"$\norm{v}$", r"$\left\| v \right\|$"),
        (r"$\pair{a}$", r"$(x, a)$"),
        (r"$\pair[b]{c}$", r"$(b, c)$"),
        (r"$\bm{x}$", r"$\mathbf x$"),  # no "\mathbfx": the space is kept
        (r"$\qq{n}{k}$", r"$q^{n}_{k}$"),
        (r"$\qq nk$", r"$q^{n}_{k}$"),  # unbraced single-token arguments
        (r"$\eps$", r"$\varepsilon$"),
        (r"$\Hom(A,B)$", r"$\operatorname{Hom}(A,B)$"),
        (r"$\inner$", r"$\mathbb{R}^n$"),  # a macro using a macro
        (r"$\norm{\norm{\R}}$", r"$\left\| \left\| \mathbb{R} \right\| \right\|$"),
        (r"$\R$ and $\R$", r"$\mathbb{R}$ and $\mathbb{R}$"),
        (r"$\Rx$", r"$\Rx$"),  # a longer name is another macro
    ],
)
def test_macros_are_expanded(source: str, expected: str) -> None:
    assert body(source, preamble=MACROS) == expected


def test_macro_defined_in_the_body_is_expanded_and_its_definition_removed() -> None:
    text = body("\\newcommand{\\Z}{\\mathbb{Z}} Let $n \\in \\Z$.")
    assert text == "Let $n \\in \\mathbb{Z}$."


def test_renewcommand_last_definition_wins() -> None:
    preamble = "\\newcommand{\\A}{one}\\renewcommand{\\A}{two}"
    assert body("\\A", preamble=preamble) == "two"


def test_newenvironment_is_expanded() -> None:
    assert body("\\begin{pf}Easy.\\end{pf}", preamble=MACROS) == "Proof. Easy."


def test_recursive_macros_stop_and_are_reported() -> None:
    for preamble in ("\\newcommand{\\loop}{\\loop x}", "\\def\\a{\\b}\\def\\b{\\a}"):
        document = clean_latex(f"{preamble}\\begin{{document}}Text \\loop\\a.\\end{{document}}")
        assert document.text.startswith("Text")
        assert any("recursive" in problem for problem in document.problems)


def test_structural_commands_are_not_redefined() -> None:
    document = clean_latex(
        "\\renewcommand{\\section}[1]{BROKEN}\\begin{document}\\section{Intro}Text.\\end{document}"
    )
    assert [section.title for section in document.sections] == ["Intro"]
    assert "BROKEN" not in document.text


# --------------------------------------------------------------------------- formatting


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (r"\emph{word}", "word"),
        (r"\textbf{bold} and \textit{italic}", "bold and italic"),
        (r"{\bf old style} font", "old style font"),
        (r"\unknownmacro{kept}{also} text", "kept also text"),
        (r"\unknown[option]{kept}", "kept"),
        (r"see~\cite{andrews}", f"see {CITE_PLACEHOLDER}"),
        (r"see \cite[Thm.~2]{a,b}", f"see {CITE_PLACEHOLDER}"),
        (r"by \citep[see][p.~3]{k}", f"by {CITE_PLACEHOLDER}"),
        (
            r"Section~\ref{sec:x} and \eqref{eq:1}",
            f"Section {REF_PLACEHOLDER} and {REF_PLACEHOLDER}",
        ),
        (r"Text\label{lab}.", "Text."),
        (r"\href{http://x.org}{a link}", "a link"),
        (r"\url{http://x.org/a}", "http://x.org/a"),
        (r"word\footnote{a note} next", "word (a note) next"),
        (r"Caf\'e na\"ive \c{c}a \'{E}", "Café naïve ça É"),
        (r"``quoted'' -- and --- dashes", '"quoted" – and — dashes'),
        (r"\vspace{2cm}\noindent Plain \hspace*{1em}text", "Plain text"),
        (r"costs \$5 \& more \# \_", "costs \\$5 & more # _"),
        (r"\verb|a_b$c|", "a_bc"),
    ],
)
def test_formatting_is_dropped_and_text_kept(source: str, expected: str) -> None:
    assert body(source) == expected


def test_math_formatting_is_math_and_stays() -> None:
    assert body(r"$\mathrm{d}x \, \textbf{v}$") == r"$\mathrm{d}x \, \textbf{v}$"


# --------------------------------------------------------------------------- math


@pytest.mark.parametrize(
    "source",
    [
        r"$\frac{a}{b}^2$",
        r"\(\frac{a}{b}^2\)",
        r"\[\frac{a}{b}^2\]",
        r"$$\frac{a}{b}^2$$",
        r"\begin{equation}\frac{a}{b}^2\end{equation}",
        r"\begin{equation*}\frac{a}{b}^2\end{equation*}",
        r"\begin{align}\frac{a}{b}^2\end{align}",
        r"\begin{align*}\frac{a}{b}^2\end{align*}",
        r"\begin{gather}\frac{a}{b}^2\end{gather}",
        r"\begin{gather*}\frac{a}{b}^2\end{gather*}",
        r"\begin{multline}\frac{a}{b}^2\end{multline}",
        r"\begin{multline*}\frac{a}{b}^2\end{multline*}",
        r"\begin{displaymath}\frac{a}{b}^2\end{displaymath}",
        r"\begin{eqnarray*}\frac{a}{b}^2\end{eqnarray*}",
        r"\begin{alignat}{2}\frac{a}{b}^2\end{alignat}",
        r"\ensuremath{\frac{a}{b}^2}",
    ],
)
def test_every_math_delimiter_becomes_dollars_and_the_math_is_kept(source: str) -> None:
    assert body(f"We have {source} here.") == r"We have $\frac{a}{b}^2$ here."


def test_math_loses_labels_tags_and_line_layout_only() -> None:
    source = "\\begin{equation}\\label{eq:1}\n  a +\n  b \\tag{3}\\nonumber\n\\end{equation}"
    assert body(source) == "$a + b$"


def test_align_rows_become_separate_math_without_alignment_marks() -> None:
    source = "\\begin{align*}\na &= b \\\\\n  &= c \\notag \\\\[2pt]\n\\end{align*}"
    assert body(source) == "$a = b$ $= c$"


def test_nested_environments_keep_their_own_rows() -> None:
    source = r"\[ M = \begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix} \]"
    assert body(source) == r"$M = \begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}$"


def test_dollar_inside_text_in_math_is_removed() -> None:
    assert body(r"\[ x \text{ for all $y$} \]") == r"$x \text{ for all y}$"


def test_escaped_dollar_is_never_a_math_delimiter() -> None:
    text = body(r"It costs \$3 and $x$ and \$4.")
    assert math_spans(text) == [(text.index("$x$"), text.index("$x$") + 3)]


# --------------------------------------------------------------------------- sections, environments


def test_sections_split_the_text_and_give_titles() -> None:
    document = clean_latex(
        "\\begin{document}Intro text.\\section{The $q$-series}\\label{s}First.\n"
        "\\subsection{Details}More.\\section*{Acknowledgements}Thanks.\\end{document}"
    )
    assert [(section.title, section.text) for section in document.sections] == [
        ("", "Intro text."),
        ("The $q$-series", "First.\n\nDetails. More."),
        ("Acknowledgements", "Thanks."),
    ]


def test_figures_keep_only_their_captions_and_pictures_vanish() -> None:
    source = (
        "Before.\\begin{figure}[h]\\centering\\includegraphics{a.png}"
        "\\caption[short]{A \\emph{Young} diagram.}\\label{f}\\end{figure}"
        "\\begin{tikzpicture}\\draw (0,0) -- (1,1);\\end{tikzpicture}After."
        "\\begin{thebibliography}{9}\\bibitem{a} Andrews.\\end{thebibliography}"
    )
    assert body(source) == "Before.\n\nA Young diagram.\n\nAfter."


def test_unknown_environments_keep_their_content() -> None:
    assert body("\\begin{mybox}[opt]Inside.\\end{mybox}") == "Inside."
    assert body("\\begin{itemize}\\item one\\item[(b)] two\\end{itemize}") == "one (b) two"


# --------------------------------------------------------------------------- statements


STATEMENTS_DOC = r"""
\documentclass{amsart}
\newtheorem{thm}{Theorem}[section]
\newtheorem{mainlem}[thm]{Main Lemma}
\newtheorem*{conj*}{Conjecture}
\newtheorem{rem}{Remark}
\begin{document}
\begin{thm}[Rogers--Ramanujan]\label{thm:rr}
For $|q|<1$, \[ G(q) = H(q). \]
\end{thm}
\begin{proof} Obvious. \end{proof}
\begin{mainlem}\label{lem:key} Key step \cite{x}. \end{mainlem}
\begin{definition*}[Partition] A \emph{partition} of $n$ is a sum.\end{definition*}
\begin{conj*} All is well. \end{conj*}
\begin{proposition} Plain. \end{proposition}
\begin{corollary} Follows. \end{corollary}
\begin{rem} Not a statement. \end{rem}
\end{document}
"""


def test_statements_are_extracted_with_kind_name_and_label() -> None:
    statements = clean_latex(STATEMENTS_DOC).statements
    assert [(s.kind, s.name, s.label) for s in statements] == [
        ("theorem", "Rogers–Ramanujan", "thm:rr"),
        ("lemma", "", "lem:key"),
        ("definition", "Partition", ""),
        ("conjecture", "", ""),
        ("proposition", "", ""),
        ("corollary", "", ""),
    ]
    assert statements[0].text == "For $|q|<1$, $G(q) = H(q).$"
    assert statements[1].text == f"Key step {CITE_PLACEHOLDER}."
    assert statements[2].text == "A partition of $n$ is a sum."


def test_statements_also_read_as_text_in_the_passages() -> None:
    text = clean_latex(STATEMENTS_DOC).text
    assert "Theorem (Rogers–Ramanujan). For $|q|<1$, $G(q) = H(q).$" in text
    assert "Main Lemma. Key step" in text
    assert "Proof. Obvious." in text
    assert "Remark. Not a statement." in text


@pytest.mark.parametrize(
    ("title", "kind"),
    [
        ("Theorem", "theorem"),
        ("Main Lemma", "lemma"),
        ("Definitions", "definition"),
        ("Remark", None),
        ("Proof", None),
    ],
)
def test_statement_kind_from_a_declared_title(title: str, kind: str | None) -> None:
    assert statement_kind(title) == kind


def test_unclosed_statement_still_yields_its_text() -> None:
    document = clean_latex("\\begin{document}\\begin{theorem}Unfinished claim.")
    assert [s.text for s in document.statements] == ["Unfinished claim."]
    assert any("never closed" in problem for problem in document.problems)


# --------------------------------------------------------------------------- malformed input


MALFORMED = {
    "empty": "",
    "blank": "   \n\n  ",
    "unbalanced open brace": "\\begin{document}\\emph{never closed, more words\n\nNext one.",
    "unbalanced close brace": "\\begin{document}text } more } text",
    "unterminated dollar": "\\begin{document}Let $x = 1 and so on\n\nNew paragraph.",
    "unterminated display": "\\begin{document}Let \\[ x = 1 and so on",
    "unterminated double dollar": "\\begin{document}Let $$ x",
    "unterminated environment": "\\begin{document}\\begin{equation} x = 1",
    "end without begin": "\\begin{document}text \\end{foo} more",
    "crossed environments": "\\begin{document}\\begin{a}\\begin{b}x\\end{a}\\end{b}",
    "broken definitions": "\\newcommand\\newcommand{\\x}[z]{\\def\\begin{document}\\x",
    "lone backslash": "\\begin{document}text \\",
    "section without title": "\\begin{document}\\section",
    "unterminated verb": "\\begin{document}\\verb|abc\nmore",
    "binary": bytes(range(256)).decode("latin-1") * 4,
    "replacement characters": "\ufffd" * 500 + "\\begin{document}x",
    "deep nesting": "\\begin{document}" + "\\section{" * 500 + "x" + "}" * 500,
    "many environments": "\\begin{document}" + "\\begin{theorem}[" * 500,
}


@pytest.mark.parametrize("source", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_input_never_crashes(source: str) -> None:
    document = prepare_document(source, chunk_chars=300, overlap_chars=50, min_chunk_chars=10)
    assert document.fatal is not None or document.chunks
    for chunk in document.chunks:
        assert unescaped_dollars(chunk.text) % 2 == 0


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("", "empty"),
        (bytes(range(256)).decode("latin-1") * 4, "not LaTeX"),
        ("\\documentclass{article}\\usepackage{x}\\begin{document}\\end{document}", "no text"),
        ("\\begin{document}Too short.\\end{document}", "no passage"),
    ],
)
def test_unusable_sources_are_fatal_with_a_reason(source: str, reason: str) -> None:
    document = prepare_document(source, chunk_chars=1500, overlap_chars=200, min_chunk_chars=50)
    assert document.fatal is not None and reason in document.fatal
    assert document.chunks == ()


def test_random_latex_soup_never_breaks_the_math_invariant() -> None:
    pieces = list("\\{}[]$%&~#^_ \n.") + [
        "\\begin{", "\\end{", "theorem}", "equation}", "\\section", "\\newcommand", "\\def",
        "#1", "\\[", "\\]", "\\(", "\\)", "$$", "\\label{", "\\cite", "figure}", "\\item",
        "\\emph{", "[2]", "\\verb|", "\\footnote{", "\\'", "\\c", "word", "Word.",
    ]  # fmt: skip
    generator = random.Random(1)
    for _ in range(400):
        source = "".join(generator.choice(pieces) for _ in range(generator.randint(0, 300)))
        document = prepare_document(
            "\\begin{document}" + source, chunk_chars=120, overlap_chars=30, min_chunk_chars=10
        )
        for chunk in document.chunks:
            assert unescaped_dollars(chunk.text) % 2 == 0, source


def test_clean_inline_gives_one_line() -> None:
    assert clean_inline("On the \\emph{$q$-series}\n\nof   Euler") == "On the $q$-series of Euler"


# --------------------------------------------------------------------------- chunking


def paragraph(sentences: list[str]) -> str:
    return " ".join(sentences)


WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=10)
# At most 45 characters with its dollars, as test_chunk_spans_invariants assumes (each
# backslash becomes `\alpha `, so the raw draw alone could reach 280); longer math is
# HOSTILE_TOKEN's case.
MATH = st.builds(
    lambda inner: f"${inner}$",
    st.text(alphabet="abcxyz+-=^_{}() \\", min_size=1, max_size=40).map(
        lambda s: " ".join(s.replace("\\", "\\alpha ").split())[:43].rstrip(" \\") or "x"
    ),
)
TOKEN = st.one_of(WORD, WORD, WORD, MATH)


@st.composite
def sentences(draw: st.DrawFn, max_tokens: int) -> str:
    tokens = draw(st.lists(TOKEN, min_size=1, max_size=max_tokens))
    first = tokens[0]
    tokens[0] = first[0].upper() + first[1:]
    return " ".join(tokens) + "."


@st.composite
def documents(draw: st.DrawFn, max_tokens: int = 12) -> str:
    paragraphs = draw(
        st.lists(st.lists(sentences(max_tokens), min_size=1, max_size=8), min_size=1, max_size=8)
    )
    return "\n\n".join(" ".join(paragraph) for paragraph in paragraphs)


def inside_math(position: int, spans: list[tuple[int, int]]) -> bool:
    return any(start < position < end for start, end in spans)


def word_starts(text: str, spans: list[tuple[int, int]]) -> list[int]:
    return [m.end() for m in re.finditer(r"\s+", text) if not inside_math(m.start(), spans)]


@settings(max_examples=200, deadline=None)
@given(
    text=documents(),
    chunk_chars=st.integers(min_value=200, max_value=600),
    overlap_fraction=st.floats(min_value=0.3, max_value=0.45),
    min_chunk_chars=st.integers(min_value=1, max_value=60),
)
# The one place the overlap bound gives way: a tail of 48 characters (< 49) is started at
# the latest word start that keeps it, 45 characters of math earlier (overlap 67 > 60).
@example(
    text="A a a a a a a a a a.\n\nA a a a a a a a a a aaaaaa. A a a a a a a a aaaaa aaaaaaa "
    "$========$.\n\nA a a a a a a $============================\\alpha \\alpha =$ "
    "$====\\alpha \\alpha =$ $=======================$.",
    chunk_chars=200,
    overlap_fraction=0.3,
    min_chunk_chars=49,
)
def test_chunk_spans_invariants(
    text: str, chunk_chars: int, overlap_fraction: float, min_chunk_chars: int
) -> None:
    # Tokens are at most ~45 characters, so every 60-character window holds a word break.
    overlap_chars = max(60, int(chunk_chars * overlap_fraction))
    spans = chunk_spans(text, chunk_chars, overlap_chars, min_chunk_chars)
    maths = math_spans(text)
    assert spans, "a non-empty text gets at least one passage"
    assert spans[0][0] == 0 and spans[-1][1] == len(text), "the passages cover the text"
    for start, end in spans:
        assert 0 < end - start <= chunk_chars, "max length"
        assert not inside_math(start, maths) and not inside_math(end, maths), "no cut in math"
        assert unescaped_dollars(text[start:end]) % 2 == 0
        assert text[start:end] == text[start:end].strip()
    for (start, end), (next_start, next_end) in zip(spans, spans[1:], strict=False):
        assert start < next_start and end < next_end, "progress"
        assert next_start < end, "consecutive passages overlap"
        if end - next_start > overlap_chars:
            # Allowed only for a last passage started early to reach min_chunk_chars, and
            # then at the latest word start that does: no overlap is smaller.
            assert next_end == len(text), "overlap at most overlap_chars"
            later = [w for w in word_starts(text, maths) if next_start < w]
            assert all(len(text) - w < min_chunk_chars for w in later), "tail started early"
    if len(text) >= min_chunk_chars:
        assert all(end - start >= min_chunk_chars for start, end in spans), "min length"


HOSTILE_TOKEN = st.one_of(
    WORD,
    WORD,
    WORD,
    st.integers(1, 300).map(lambda n: "$" + "x+y " * n + "$"),  # math up to 1200 chars
    st.integers(50, 400).map(lambda n: "k" * n),  # a run with no break at all
    st.sampled_from([".", "Ab.", "x.$y$"]),
)


@settings(max_examples=300, deadline=None)
@given(
    tokens=st.lists(
        st.tuples(HOSTILE_TOKEN, st.sampled_from([" ", " ", "\n\n", ""])), max_size=120
    ),
    chunk_chars=st.integers(min_value=30, max_value=300),
    overlap_chars=st.integers(min_value=0, max_value=29),
    min_chunk_chars=st.integers(min_value=0, max_value=30),
)
def test_chunk_spans_cover_hostile_text_and_never_cut_math(
    tokens: list[tuple[str, str]], chunk_chars: int, overlap_chars: int, min_chunk_chars: int
) -> None:
    text = "".join(token + separator for token, separator in tokens)
    spans = chunk_spans(text, chunk_chars, overlap_chars, min_chunk_chars)
    maths = math_spans(text)
    covered = bytearray(len(text))
    for start, end in spans:
        covered[start:end] = b"\x01" * (end - start)
        assert not inside_math(start, maths) and not inside_math(end, maths)
        # The only passages over the limit are single math blocks longer than it.
        assert end - start <= chunk_chars or (start, end) in maths
    assert all(covered[i] or char.isspace() for i, char in enumerate(text)), "no text lost"
    for (start, end), (next_start, next_end) in zip(spans, spans[1:], strict=False):
        assert start < next_start and end < next_end


@settings(max_examples=150, deadline=None)
@given(text=documents(max_tokens=8))
def test_no_sentence_is_lost_or_cut(text: str) -> None:
    # Sentences of at most 8 tokens (< 150 characters) fit in half the window and the
    # overlap, so every passage starts and ends at sentence boundaries.
    assume(len(text) >= 20)  # shorter texts give no passage at all
    chunks = chunk_text(text, chunk_chars=700, overlap_chars=300, min_chunk_chars=20)
    every_sentence = [
        sentence
        for block in text.split("\n\n")
        for sentence in re.split(r"(?<=\.) (?=[A-Z$])", block)
    ]
    for sentence in every_sentence:
        assert any(sentence in chunk for chunk in chunks), sentence


def test_chunks_prefer_paragraph_ends_then_sentence_ends() -> None:
    first = "Alpha beta gamma delta. " * 30  # 720 characters
    second = "Epsilon zeta eta theta. " * 30
    chunks = chunk_text(first.strip() + "\n\n" + second.strip(), 1000, 100, 10)
    assert chunks[0] == first.strip(), "ends at the paragraph end, not at 1000 characters"
    long_paragraph = "Alpha beta gamma delta. " * 60
    pieces = chunk_text(long_paragraph.strip(), 500, 100, 10)
    assert all(piece.endswith(".") for piece in pieces), "sentence ends"
    assert all(piece[0].isupper() for piece in pieces), "sentence starts"


def test_real_defaults_on_a_long_paragraph() -> None:
    text = " ".join(f"Sentence number {i} says $x_{{{i}}} = {i}$ here." for i in range(200))
    chunks = chunk_text(text, 1500, 200, 50)
    assert len(chunks) > 5
    assert all(50 <= len(chunk) <= 1500 for chunk in chunks)
    for chunk, following in zip(chunks, chunks[1:], strict=False):
        overlap = following[: following.index(" says")]
        assert overlap in chunk[-200:], "the next passage repeats the previous one's end"


def test_math_longer_than_a_passage_is_kept_whole() -> None:
    huge = "$" + " + ".join(f"a_{{{i}}}" for i in range(300)) + "$"
    text = f"Before the sum we write words. {huge} After the sum more words follow."
    chunks = chunk_text(text, 500, 100, 10)
    assert chunks == [
        "Before the sum we write words.",
        huge,  # the documented exception: one oversized math passage, kept whole
        "After the sum more words follow.",
    ]
    assert all(unescaped_dollars(chunk) % 2 == 0 for chunk in chunks)
    assert all(len(chunk) <= 500 for chunk in chunks if chunk != huge)


def test_text_without_any_break_is_cut_hard() -> None:
    chunks = chunk_text("x" * 1000, 300, 50, 10)
    assert "".join(chunks) == "x" * 1000
    assert all(len(chunk) <= 300 for chunk in chunks)


def test_short_tail_starts_earlier_instead_of_being_dropped() -> None:
    text = "Word " * 61  # 304 characters: a 300-character window leaves a 4-character tail
    spans = chunk_spans(text.strip(), 300, 50, 40)
    assert spans[-1][1] == len(text.strip())
    assert all(end - start >= 40 for start, end in spans)


def test_short_text_gives_no_passage() -> None:
    assert chunk_text("Tiny.", 1500, 200, 50) == []
    assert chunk_text("", 1500, 200, 50) == []


@pytest.mark.parametrize(
    ("chunk", "overlap", "minimum"), [(0, 0, 0), (100, 100, 10), (100, 10, 200)]
)
def test_bad_chunking_knobs_are_refused(chunk: int, overlap: int, minimum: int) -> None:
    with pytest.raises(ValueError, match="params.yaml"):
        chunk_spans("Some text " * 50, chunk, overlap, minimum)


def test_prepare_document_on_a_realistic_paper() -> None:
    paragraphs = "\n\n".join(
        f"Paragraph {i} discusses $\\R^{{{i}}}$ and \\emph{{partitions}} \\cite{{a{i}}}. " * 6
        for i in range(12)
    )
    source = (
        "\\documentclass{amsart}\\newcommand{\\R}{\\mathbb{R}}\\newtheorem{thm}{Theorem}\n"
        "\\begin{document}\\begin{abstract}We study things.\\end{abstract}\n"
        f"\\section{{Introduction}}{paragraphs}\n"
        "\\section{Main result}\\begin{thm}[Big]\\label{t}\n"
        "All $x \\in \\R$ are fine, and so are all the others.\\end{thm}\n"
        "\\end{document}"
    )
    document = prepare_document(source, chunk_chars=1500, overlap_chars=200, min_chunk_chars=50)
    assert document.fatal is None and document.problems == ()
    assert {chunk.section for chunk in document.chunks} == {"Introduction", "Main result"}
    assert all(len(chunk.text) <= 1500 for chunk in document.chunks)
    assert "\\R" not in "".join(chunk.text for chunk in document.chunks)
    assert [(s.kind, s.name, s.label) for s in document.statements] == [("theorem", "Big", "t")]
