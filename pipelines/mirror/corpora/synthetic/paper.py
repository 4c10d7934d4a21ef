"""Whole papers: the metadata (title, authors, abstract) and the LaTeX source of one paper
version, as a single file or split over sub-files."""

from __future__ import annotations

import random
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from pipelines.mirror.corpora.synthetic.ontology import Concept, concept, latex_text, neighbours
from pipelines.mirror.corpora.synthetic.plan import PaperPlan
from pipelines.mirror.corpora.synthetic.sections import (
    introduction,
    main_results,
    preliminaries,
    remarks,
    revision_section,
)
from pipelines.mirror.corpora.synthetic.vocabulary import (
    BIBLIOGRAPHY,
    FIRST_NAMES,
    LAST_NAMES,
    UNIVERSITIES,
)
from pipelines.mirror.corpora.synthetic.writer import Style, Writer, slug, upper_first


@dataclass(frozen=True)
class Metadata:
    title: str  # LaTeX
    authors: tuple[str, ...]
    abstract: str  # LaTeX
    keywords: tuple[str, ...]
    msc: tuple[str, ...]
    categories: tuple[str, ...]
    comment: str


@dataclass(frozen=True)
class Source:
    """The text of one paper version: the main file and any sub-files (name → text)."""

    main_name: str
    files: dict[str, str]


def _choose_concepts(rng: random.Random, focus: Concept) -> tuple[Concept, ...]:
    related = list(neighbours(focus.name))
    rng.shuffle(related)
    wanted = rng.choice((1, 2, 2, 3))
    chosen = related[:wanted]
    return (focus, *(concept(name) for name in chosen))


def _metadata(
    rng: random.Random, writer: Writer, concepts: Sequence[Concept], *, latin1: bool
) -> Metadata:
    focus, others = concepts[0], concepts[1:]
    n_authors = rng.choice((1, 1, 2, 2, 2, 3, 4))
    authors = []
    for _ in range(n_authors):
        author = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
        if author not in authors:
            authors.append(author)
    if latin1:
        authors[0] = rng.choice(("René Lefèvre", "Hélène Müller", "Søren Ødegård"))

    def title_form(item: Concept) -> str:
        return writer.tex(item.plural) if item.plural else writer.phrase(item, item.name)

    first = title_form(focus)
    second = title_form(others[0]) if others else writer.tex("generating functions")
    title = rng.choice(
        (
            f"On {first}",
            f"{upper_first(first)} and {second}",
            f"A note on {first}",
            f"{upper_first(first)} via {second}",
            f"Remarks on {first} and {second}",
            f"A combinatorial approach to {first}",
            f"Refinements of {first}",
            f"New identities for {first}",
            f"{upper_first(first)} revisited",
            f"Some consequences of {first}",
        )
    )
    title = upper_first(title)

    technique = next((item for item in others if item.type == "technique"), None)
    sentences = [
        rng.choice(
            (
                f"We study {writer.mention(focus)} and {writer.mention(others[0])}."
                if others
                else f"We study {writer.mention(focus)}.",
                writer.gloss(focus, by_name=rng.random() < 0.5),
                f"This paper is concerned with {writer.nameless(focus)}.",
            )
        ),
        rng.choice(
            (
                f"We give a {rng.choice(('new', 'short', 'bijective', 'uniform'))} proof of a "
                f"{rng.choice(('refinement', 'generalization', 'finite version'))} of "
                f"{writer.mention(focus)}.",
                f"Our main result expresses {writer.mention(focus)} in terms of "
                f"{writer.mention(others[-1]) if others else writer.described(focus)}.",
                f"We obtain new {rng.choice(('identities', 'formulas', 'bounds'))} involving "
                f"{writer.nameless(focus)}.",
            )
        ),
    ]
    if technique is not None:
        sentences.append(f"The proof relies on {writer.mention(technique)}.")
    for item in others[1:]:
        sentences.append(
            rng.choice(
                (
                    f"As an application we discuss {writer.mention(item)}.",
                    f"We also explain the role of {writer.nameless(item)}.",
                )
            )
        )
    if rng.random() < 0.5:
        sentences.append(writer.relation_sentence(focus, others[0]) if others else "")
    abstract = " ".join(sentence for sentence in sentences if sentence)

    keywords = tuple(
        dict.fromkeys(writer.tex(rng.choice((item.name, *item.aliases[:1]))) for item in concepts)
    )
    primary = focus.category
    msc = (focus.msc, *dict.fromkeys(item.msc for item in others if item.msc != focus.msc))
    categories = (
        primary,
        *dict.fromkeys(item.category for item in others if item.category != primary),
    )
    pages = rng.randint(8, 42)
    figures = rng.randint(1, 6) if rng.random() < 0.4 else 0
    comment = f"{pages} pages" + (
        f", {figures} figure{'s' if figures > 1 else ''}" if figures else ""
    )
    return Metadata(title, tuple(authors), abstract, keywords, msc, categories, comment)


def _preamble(rng: random.Random, writer: Writer, *, latin1: bool) -> list[str]:
    style = writer.style
    lines = [
        "\\documentclass[11pt]{amsart}"
        if style.amsart
        else "\\documentclass[11pt,a4paper]{article}",
        f"% {rng.choice(('Draft', 'Preprint', 'Submitted version', 'arXiv version'))} "
        f"-- compiled with pdflatex",
        "\\usepackage{amsmath,amssymb,amsthm}",
    ]
    if latin1:
        lines.append("\\usepackage[latin1]{inputenc}")
    elif rng.random() < 0.5:
        lines.append("\\usepackage[utf8]{inputenc}")
    lines.append("\\usepackage[T1]{fontenc}")
    if rng.random() < 0.6:
        lines.append("\\usepackage{hyperref}")
    if rng.random() < 0.3:
        lines.append("% \\usepackage{showkeys} % uncomment to see labels")
    if rng.random() < 0.3:
        lines.append("\\usepackage{tikz} % for the diagrams")
    return lines


def _macro_lines(writer: Writer, *, article_class: bool) -> list[str]:
    lines = [
        "% ---- notation",
        "\\newcommand{\\N}{\\mathbb{N}}",
        "\\newcommand{\\Z}{\\mathbb{Z}}",
        "\\newcommand{\\C}{\\mathbb{C}}",
        "\\newcommand{\\abs}[1]{\\left|#1\\right|}",
    ]
    if writer.style.q_macro:
        lines.append("\\newcommand{\\qp}[2]{(#1;q)_{#2}} % q-Pochhammer symbol")
    for name, macro in writer.style.macros.items():
        lines.append(f"\\newcommand{{\\{macro}}}{{{latex_text(name)}}}")
    if article_class:
        lines.append("\\newcommand{\\keywords}[1]{\\par\\noindent\\textbf{Keywords:} #1}")
        lines.append("\\newcommand{\\subjclass}[2][2020]{\\par\\noindent\\textbf{MSC #1:} #2}")
    lines += [
        "",
        "\\newtheorem{theorem}{Theorem}[section]",
        "\\newtheorem{lemma}[theorem]{Lemma}",
        "\\newtheorem{proposition}[theorem]{Proposition}",
        "\\newtheorem{corollary}[theorem]{Corollary}",
        "\\newtheorem{conjecture}[theorem]{Conjecture}",
        "\\theoremstyle{definition}",
        "\\newtheorem{definition}[theorem]{Definition}",
        "\\theoremstyle{remark}",
        "\\newtheorem{remark}[theorem]{Remark}",
    ]
    return lines


def _front_matter(rng: random.Random, writer: Writer, meta: Metadata) -> list[str]:
    lines = []
    msc = f"Primary {meta.msc[0]}" + (
        f"; Secondary {', '.join(meta.msc[1:])}" if meta.msc[1:] else ""
    )
    if writer.style.amsart:
        lines.append(f"\\title{{{meta.title}}}")
        for author in meta.authors:
            first, last = author.split(" ", 1)
            email = ascii_text(f"{first}.{last}").lower().replace(" ", "")
            lines.append(f"\\author{{{author}}}")
            lines.append(f"\\address{{Department of Mathematics, {rng.choice(UNIVERSITIES)}}}")
            lines.append(f"\\email{{{email}@example.edu}}")
        lines.append(f"\\subjclass[2020]{{{msc}}}")
        lines.append(f"\\keywords{{{', '.join(meta.keywords)}}}")
        lines.append("\\date{}")
        lines.append("")
        lines.append("\\begin{document}")
        lines.append("")
        lines.append("\\begin{abstract}")
        lines.append(meta.abstract)
        lines.append("\\end{abstract}")
        lines.append("")
        lines.append("\\maketitle")
    else:
        lines.append(f"\\title{{{meta.title}}}")
        joined = " \\and ".join(meta.authors)
        lines.append(f"\\author{{{joined}}}")
        lines.append("\\date{}")
        lines.append("")
        lines.append("\\begin{document}")
        lines.append("\\maketitle")
        lines.append("")
        lines.append("\\begin{abstract}")
        lines.append(meta.abstract)
        lines.append("\\end{abstract}")
        lines.append("")
        lines.append(f"\\subjclass[2020]{{{msc}}}")
        lines.append(f"\\keywords{{{', '.join(meta.keywords)}}}")
    return lines


def _bibliography(writer: Writer) -> str:
    lines = [f"\\begin{{thebibliography}}{{{len(writer.references)}}}", ""]
    for key in writer.references:
        lines.append(f"\\bibitem{{{key}}} {BIBLIOGRAPHY[key]}")
        lines.append("")
    lines.append("\\end{thebibliography}")
    return "\n".join(lines)


def write_paper(
    seed: int, plan: PaperPlan, version: int, *, split: bool, latin1: bool
) -> tuple[Metadata, Source, tuple[Concept, ...]]:
    """The metadata and LaTeX source of ``plan`` at ``version`` (v2+ add an addendum)."""
    seed_text = f"{seed}/{plan.paper_id}"
    rng = random.Random(seed_text)
    concepts = _choose_concepts(rng, plan.focus)
    macros = {item.name: item.macro for item in concepts if item.macro and rng.random() < 0.6}
    q_series = any("(a;q)_n" in item.notation or ";q)_" in item.formula for item in concepts)
    style = Style(
        dollar_q=rng.random() < 0.5,
        amsart=rng.random() < 0.75,
        macros=macros,
        q_macro=q_series and rng.random() < 0.7,
    )
    writer = Writer(rng, concepts, style, seed_text)
    writer.plain = True
    meta = _metadata(rng, writer, concepts, latin1=latin1)
    writer.plain = False
    sections = [
        introduction(rng, writer, concepts),
        preliminaries(rng, writer, concepts),
        main_results(rng, writer, concepts),
        remarks(rng, writer, concepts),
    ]
    abstract = meta.abstract
    comment = meta.comment
    if version > 1:
        # Later versions add to the same text, so their own randomness is separate.
        revision_rng = random.Random(f"{seed_text}/v{version}")
        revision_writer = Writer(revision_rng, concepts, style, seed_text)
        revision_writer.used_labels = set(writer.used_labels)
        revision_writer.plain = True
        extra_abstract = (
            f" In this version we also correct the proof of the key lemma and add a "
            f"discussion of {revision_writer.mention(revision_rng.choice(list(concepts)))}."
        )
        revision_writer.plain = False
        for number in range(2, version + 1):
            sections.append(revision_section(revision_rng, revision_writer, concepts, number))
        abstract += extra_abstract
        comment += f"; v{version}: corrected proof of Lemma 3.2, added Section {4 + version - 1}"
    meta = Metadata(
        meta.title, meta.authors, abstract, meta.keywords, meta.msc, meta.categories, comment
    )
    if latin1:
        sections[0] = sections[0].replace(
            "\\section{Introduction}\\label{sec:intro}\n\n",
            "\\section{Introduction}\\label{sec:intro}\n\n"
            "Following Poincaré, we keep the classical notation of Möbius and Schützenberger. ",
        )
    acknowledgements = (
        "\\section*{Acknowledgements}\n"
        f"We thank {rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)} for helpful comments."
    )
    preamble = _preamble(rng, writer, latin1=latin1)
    macro_lines = _macro_lines(writer, article_class=not style.amsart)
    front = _front_matter(rng, writer, meta)
    bibliography = _bibliography(writer)
    if not split:
        text = "\n".join(
            [*preamble, *macro_lines, "", *front, "", "\n\n".join(sections), "",
             acknowledgements, "", bibliography, "", "\\end{document}", ""]
        )  # fmt: skip
        name = rng.choice(("main.tex", "paper.tex", f"{slug(meta.authors[0].split()[-1])}.tex"))
        return meta, Source(name, {name: text}), concepts

    folder = rng.choice(("sections/", "", "tex/"))
    macros_name = rng.choice(("macros.tex", "defs.tex", "preamble.tex"))
    main_name = rng.choice(("main.tex", "paper.tex", "ms.tex"))
    files = {
        macros_name: "\n".join(macro_lines) + "\n",
        f"{folder}introduction.tex": sections[0] + "\n",
        f"{folder}preliminaries.tex": sections[1] + "\n",
        "results.tex": sections[2] + "\n",
        main_name.replace(".tex", ".bbl"): bibliography + "\n",
    }
    body = [
        f"\\input{{{folder}introduction}}",
        f"\\input{{{folder}preliminaries.tex}}",
        "\\include{results}",
        *sections[3:],
        "",
        acknowledgements,
        "",
        "\\bibliographystyle{amsplain}",
        "\\bibliography{refs}",
        "",
        "\\end{document}",
        "",
    ]
    files[main_name] = "\n".join(
        [*preamble, f"\\input{{{macros_name.removesuffix('.tex')}}}", "", *front, "", *body]
    )
    return meta, Source(main_name, files), concepts


def ascii_text(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
