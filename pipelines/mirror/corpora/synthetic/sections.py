"""The sections of a paper's body: introduction, preliminaries, main results, remarks and
the addenda of later versions."""

from __future__ import annotations

import random
from collections.abc import Sequence

from pipelines.mirror.corpora.synthetic.ontology import Concept, latex_text
from pipelines.mirror.corpora.synthetic.writer import Writer


def introduction(rng: random.Random, writer: Writer, concepts: Sequence[Concept]) -> str:
    focus, others = concepts[0], concepts[1:]
    paragraphs = []
    first = [
        rng.choice(
            (
                f"The study of {writer.mention(focus)} has a long history {writer.cite()}.",
                f"This paper is about {writer.mention(focus)}.",
                f"Our starting point is {writer.nameless(focus)} {writer.cite()}.",
            )
        ),
        writer.gloss(focus, by_name=rng.random() < 0.6),
        rng.choice(("We refer to", "See", "Standard references are")) + f" {writer.cite()}.",
    ]
    if focus.formula and rng.random() < 0.5:
        first.append(writer.display(focus, "A typical instance is"))
    paragraphs.append(" ".join(first))
    if others:
        second = [writer.relation_sentence(focus, item) for item in others]
        second.append(
            rng.choice(
                (
                    f"In this note we revisit {writer.nameless(focus)} from the point of view "
                    f"of {writer.mention(others[0])}.",
                    f"The purpose of this paper is to make the role of "
                    f"{writer.nameless(others[0])} explicit.",
                    f"Roughly 40\\% of the identities we need are classical; the others "
                    f"involve {writer.mention(others[-1])}.",
                )
            )
        )
        paragraphs.append(" ".join(second))
    paragraphs.append(
        rng.choice(
            (
                "Our main result is Theorem~\\ref{thm:main}. The paper is organized as "
                "follows. In Section~\\ref{sec:prelim} we recall the necessary background, "
                "Section~\\ref{sec:main} states and proves the main results, and "
                "Section~\\ref{sec:remarks} contains further remarks.",
                "Theorem~\\ref{thm:main} below is our main result. Section~\\ref{sec:prelim} "
                "fixes notation, Section~\\ref{sec:main} contains the proofs and "
                "Section~\\ref{sec:remarks} lists open questions.",
                f"After recalling background on {writer.mention(concepts[-1])} in "
                "Section~\\ref{sec:prelim}, we prove Theorem~\\ref{thm:main} in "
                "Section~\\ref{sec:main}; Section~\\ref{sec:remarks} concludes.",
            )
        )
    )
    if rng.random() < 0.5:
        paragraphs.append(
            "% TODO: shorten this paragraph before submission\n"
            f"% An earlier draft claimed that {latex_text(focus.name)} holds without any "
            "assumption; that is false."
        )
    return "\\section{Introduction}\\label{sec:intro}\n\n" + "\n\n".join(paragraphs)


def preliminaries(rng: random.Random, writer: Writer, concepts: Sequence[Concept]) -> str:
    blocks = [
        rng.choice(
            (
                "Throughout, $q$ denotes a complex number with $\\abs{q} < 1$ and $n \\in \\N$.",
                "We use standard notation; $n, k \\in \\Z$ are integers and "
                "$z \\in \\C$ is a complex variable.",
            )
        )
    ]
    for item in concepts:
        if item.is_noun_phrase and item.type in ("object", "definition"):
            blocks.append(writer.definition(item))
        elif item.type == "technique":
            blocks.append(writer.technique_paragraph(item))
        elif item is not concepts[0]:
            lead = rng.choice(("We shall need the following classical result.", "Recall:"))
            blocks.append(f"{lead}\n\n{writer.statement(item, recalled=True)}")
            if rng.random() < 0.6:
                blocks.append(writer.gloss(item, by_name=False))
    title = rng.choice(("Preliminaries", "Background and notation", "Notation and background"))
    return f"\\section{{{title}}}\\label{{sec:prelim}}\n\n" + "\n\n".join(blocks)


def main_results(rng: random.Random, writer: Writer, concepts: Sequence[Concept]) -> str:
    focus, others = concepts[0], concepts[1:]
    partner = others[0] if others else focus
    blocks = []
    if not focus.is_noun_phrase:
        blocks.append(f"We first restate {writer.mention(focus)} in the form we need.")
        blocks.append(writer.statement(focus, recalled=False))
        if focus.type == "conjecture":
            blocks.append(
                f"We do not prove Conjecture~\\ref{{{writer.statements[focus.name]}}}; instead we "
                f"establish a consequence of it for {writer.mention(partner)}."
            )
    bound = rng.randint(1, 5)
    equation = ""
    if partner.formula:
        equation = (
            "\\begin{equation}\\label{eq:main}\n"
            f"  {writer.math(partner.formula)}\n"
            "\\end{equation}\n"
        )
    statement = rng.choice(
        (
            f"Let $n \\geq {bound}$. Then {writer.mention(focus)} admits a refinement in which "
            f"every term is weighted by {writer.mention(partner)}.",
            f"For every $n \\geq {bound}$ the quantities attached to {writer.nameless(focus)} "
            f"are determined by {writer.mention(partner)}.",
            f"Assume $\\abs{{q}} < 1$. Then {writer.mention(focus)} and {writer.mention(partner)} "
            f"satisfy the relation below for all $n \\in \\N$.",
        )
    )
    blocks.append(
        "\\begin{theorem}\\label{thm:main}\n"
        + statement
        + (f" In particular,\n{equation}" if equation else "\n")
        + "\\end{theorem}"
    )
    key_item = others[-1] if others else focus
    lemma = rng.choice(
        (
            f"Let $1 \\leq m \\leq n$. The contribution of {writer.mention(key_item)} to the "
            "right-hand side is a polynomial in $q$ of degree at most $m n$.",
            f"For every $m \\geq {bound}$ the terms coming from {writer.mention(key_item)} "
            "satisfy a recurrence of order at most two in $m$.",
            f"The map sending {writer.nameless(key_item)} to its image under "
            f"{writer.mention(partner)} is injective.",
        )
    )
    reference = (
        f" together with \\eqref{{{writer.equations[key_item.name]}}}"
        if key_item.name in writer.equations
        else ""
    )
    proof = rng.choice(
        (
            f"We argue by induction on $n$, the case $n = {bound}$ being clear. The induction "
            f"step follows from {writer.mention(partner)} applied to $m - 1${reference}.",
            f"Expand both sides as power series in $q$ and compare coefficients, using "
            f"{writer.mention(partner)}{reference}.",
            f"This is a direct consequence of {writer.mention(partner)}{writer.space_cite()}; "
            "we include the short argument for completeness.",
        )
    )
    blocks.append(
        f"\\begin{{lemma}}\\label{{lem:key}}\n{lemma}\n\\end{{lemma}}\n\n"
        f"\\begin{{proof}}\n{proof}\n\\end{{proof}}"
    )
    blocks.append(
        "\\begin{proof}[Proof of Theorem~\\ref{thm:main}]\n"
        + rng.choice(
            (
                f"Combine Lemma~\\ref{{lem:key}} with {writer.nameless(partner)}; the error "
                "terms cancel in pairs. ",
                f"By Lemma~\\ref{{lem:key}} it suffices to compare coefficients, which is "
                f"done with {writer.mention(partner)} {writer.cite()}. ",
            )
        )
        + "Summing over $m$ gives the claim.\n"
        "\\end{proof}"
    )
    corollary_target = others[1] if len(others) > 1 else partner
    blocks.append(
        "\\begin{corollary}\\label{cor:main}\n"
        + rng.choice(
            (
                f"The same conclusion holds for {writer.mention(corollary_target)}.",
                f"In particular, Theorem~\\ref{{thm:main}} applies to "
                f"{writer.nameless(corollary_target)}.",
            )
        )
        + "\n\\end{corollary}"
    )
    return "\\section{Main results}\\label{sec:main}\n\n" + "\n\n".join(blocks)


def remarks(rng: random.Random, writer: Writer, concepts: Sequence[Concept]) -> str:
    focus = concepts[0]
    blocks = [
        rng.choice(
            (
                f"It would be interesting to extend Theorem~\\ref{{thm:main}} to "
                f"{writer.nameless(focus)} in several variables.",
                f"We expect similar results for {writer.mention(focus)} at roots of unity.",
            )
        )
    ]
    if len(concepts) > 1:
        blocks.append(
            "\\begin{remark}\n"
            + writer.gloss(concepts[-1], by_name=rng.random() < 0.4)
            + " This explains why Corollary~\\ref{cor:main} cannot be improved in general.\n"
            "\\end{remark}"
        )
    return "\\section{Further remarks}\\label{sec:remarks}\n\n" + "\n\n".join(blocks)


def revision_section(
    rng: random.Random, writer: Writer, concepts: Sequence[Concept], version: int
) -> str:
    item = rng.choice(list(concepts))
    return (
        f"\\section{{Addendum to version {version}}}\\label{{sec:addendum-{version}}}\n\n"
        f"In the previous version the proof of Lemma~\\ref{{lem:key}} omitted the case $m = n$. "
        f"That case follows from {writer.mention(item)} as well. "
        + writer.gloss(item, by_name=rng.random() < 0.5)
    )
