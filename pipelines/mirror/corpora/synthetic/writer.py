"""Prose: the :class:`Writer` that turns concepts into LaTeX sentences, definitions and
statements, and the small text helpers it uses."""

from __future__ import annotations

import random
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from pipelines.mirror.corpora.synthetic.ontology import Concept, latex_text
from pipelines.mirror.corpora.synthetic.vocabulary import CONCEPT_REFERENCES, SHELVES

_ENV_FOR_TYPE = {"theorem": "theorem", "identity": "theorem", "conjecture": "conjecture"}
_VOWEL_SOUND_LETTERS = set("aeiouAEIOUFHLMNRSX")


def upper_first(text: str) -> str:
    if not text or text.startswith("$") or text[:2] in ("q-", "n-"):
        return text
    return text[0].upper() + text[1:]


def lower_first(text: str) -> str:
    """Lower the first letter of a description ("Counts ..." → "counts ..."), not of "RSK"."""
    head = text.split(" ", 1)[0]
    if head in {"A", "An", "The"} or (len(head) > 1 and head[0].isupper() and head[1].islower()):
        return text[0].lower() + text[1:]
    return text


def indefinite(word: str) -> str:
    first = word.lstrip("$\\")[:1]
    if not first:
        return "a"
    acronym = len(word) > 1 and word[:2].isupper()
    if first in "aeiouAEIOU" or (acronym and first in _VOWEL_SOUND_LETTERS):
        return "an"
    return "a"


def first_clause(description: str) -> tuple[str, str]:
    """Split a description at its first ``"; "`` into the defining clause and the rest."""
    head, _separator, rest = description.partition("; ")
    head = head.rstrip(".")
    return head, (upper_first(rest) if rest else "")


def is_plural_verb(description: str) -> bool:
    return not description.split(" ", 1)[0].endswith("s")


@dataclass
class Style:
    """Per-paper writing habits, drawn once so a paper is consistent with itself."""

    dollar_q: bool  # writes "$q$-series" rather than "q-series"
    amsart: bool
    macros: dict[str, str]  # concept name → macro name defined in the preamble
    q_macro: bool  # defines \qp for q-Pochhammer symbols


class Writer:
    """Builds the LaTeX of one paper version from a plan; all choices come from ``rng``."""

    def __init__(
        self, rng: random.Random, concepts: Sequence[Concept], style: Style, seed_text: str
    ) -> None:
        self.rng = rng
        self.concepts = list(concepts)
        self.focus = concepts[0]
        self.style = style
        self.seed_text = seed_text
        self.plain = False  # metadata mode: no macros, no \cite (arXiv abstracts have none)
        self.used_labels: set[str] = set()
        self.equations: dict[str, str] = {}  # concept name → \label of its equation
        self.statements: dict[str, str] = {}  # concept name → \label of its environment
        self.references = self._references()

    # ---- surface forms

    def tex(self, text: str) -> str:
        text = latex_text(text)
        if self.style.dollar_q:
            text = text.replace("q-", "$q$-").replace("$$q$-", "$q$-")
        return text

    def name(self, item: Concept) -> str:
        macro = self.style.macros.get(item.name)
        if macro and not self.plain and self.rng.random() < 0.5:
            return f"\\{macro}{{}}"
        return self.tex(item.name)

    def article(self, item: Concept, plain: str) -> str:
        """The article before ``plain`` (the name or an alias of ``item``) as a subject."""
        if plain.split(" ", 1)[0].endswith("'s"):
            return ""  # "Bailey's lemma", "Ramanujan's mock theta functions"
        base = item.article if plain == item.name else (item.article or "the")
        return indefinite(plain) if base in ("a", "an") else base

    def phrase(self, item: Concept, plain: str, word: str | None = None) -> str:
        """``plain`` (or its typeset form ``word``) with the right article in front."""
        return f"{self.article(item, plain)} {word or self.tex(plain)}".strip()

    def mention(self, item: Concept) -> str:
        """A noun phrase for ``item``: its name, an alias or its notation, at random."""
        modes = ["name", "name", "alias"]
        if item.aliases:
            modes += ["alias"]
        if item.notation:
            modes += ["notation", "notation"]
        mode = self.rng.choice(modes)
        if mode == "alias" and item.aliases:
            return self.phrase(item, self.rng.choice(item.aliases))
        if mode == "notation":
            symbol = self.rng.choice(item.notation)
            if self.rng.random() < 0.5:
                return f"${symbol}$"
            return f"{self.phrase(item, self.rng.choice(item.aliases or (item.name,)))} ${symbol}$"
        if item.plural and self.rng.random() < 0.4:
            return self.tex(item.plural)
        return self.phrase(item, item.name, self.name(item))

    def nameless(self, item: Concept) -> str:
        """A mention that avoids the display name: alias, notation or description."""
        if item.notation and self.rng.random() < 0.4:
            return f"${self.rng.choice(item.notation)}$"
        if item.aliases and self.rng.random() < 0.7:
            return self.phrase(item, self.rng.choice(item.aliases))
        return self.described(item)

    def described(self, item: Concept) -> str:
        """``item`` referred to by its description only, as a noun phrase."""
        head, _rest = first_clause(item.description)
        if item.is_noun_phrase:
            return self.tex(lower_first(head))
        noun = {"identity": "identity", "conjecture": "conjecture"}.get(item.type, "result")
        if is_plural_verb(item.description):
            noun = {"identity": "identities"}.get(noun, noun + "s")
        return f"the {noun} which {self.tex(lower_first(head))}"

    def gloss(self, item: Concept, *, by_name: bool = True) -> str:
        """A sentence explaining ``item`` with its description."""
        head, rest = first_clause(item.description)
        if by_name or not item.aliases:
            plain, word = item.name, self.name(item)
        else:
            plain = self.rng.choice(item.aliases)
            word = self.tex(plain)
        if item.is_noun_phrase:
            # A countable thing is glossed generically ("a Young diagram is ...").
            article = indefinite(plain) if item.plural else self.article(item, plain)
            subject = f"{article} {word}".strip()
            opener = self.rng.choice(("Recall that", "We recall that", "Here", "As usual,"))
            sentence = f"{opener} {subject} is {self.tex(lower_first(head))}."
        else:
            subject = self.phrase(item, plain, word)
            sentence = f"{upper_first(subject)} {self.tex(lower_first(head))}."
        if rest and self.rng.random() < 0.7:
            sentence += f" {self.tex(rest)}"
        return upper_first(sentence)

    def space_cite(self) -> str:
        citation = self.cite()
        return f" {citation}" if citation else ""

    def label(self, base: str) -> str:
        """A fresh ``\\label`` name: ``base``, or ``base-2``, ... if it is taken."""
        candidate, number = base, 1
        while candidate in self.used_labels:
            number += 1
            candidate = f"{base}-{number}"
        self.used_labels.add(candidate)
        return candidate

    def cite(self) -> str:
        if self.plain:
            return ""
        keys = self.references
        key = self.rng.choice(keys)
        if self.rng.random() < 0.25:
            where = self.rng.choice(("Theorem", "Chapter", "Section", "Proposition"))
            return f"\\cite[{where}~{self.rng.randint(1, 9)}.{self.rng.randint(1, 12)}]{{{key}}}"
        if len(keys) > 1 and self.rng.random() < 0.3:
            other = self.rng.choice([k for k in keys if k != key])
            return f"\\cite{{{key},{other}}}"
        return f"\\cite{{{key}}}"

    def _references(self) -> tuple[str, ...]:
        keys: dict[str, None] = {}
        for item in self.concepts:
            for key in CONCEPT_REFERENCES.get(item.name, ()):
                keys[key] = None
        for item in self.concepts[:2]:
            shelf = SHELVES[item.category]
            keys[shelf[hash_index(self.seed_text + item.name, len(shelf))]] = None
        return tuple(keys)

    # ---- blocks

    def relation_sentence(self, source: Concept, target: Concept) -> str:
        """A sentence stating how two concepts of the paper are related, if they are."""
        kind = next((r.kind for r in source.relations if r.target == target.name), None)
        if kind is None:
            kind = next((r.kind for r in target.relations if r.target == source.name), None)
            source, target = target, source
        a, b = self.mention(source), self.mention(target)
        if kind == "generalizes":
            return self.rng.choice(
                (
                    f"{upper_first(a)} generalizes {b}.",
                    f"In particular, {b} is a special case of {a}.",
                    f"One recovers {b} as a special case of {a}.",
                )
            )
        if kind == "is_instance_of":
            return self.rng.choice(
                (
                    f"{upper_first(a)} is an example of {self.tex(target.plural or target.name)}.",
                    f"Note that {a} is a special case of {b}.",
                )
            )
        if kind == "uses":
            return self.rng.choice(
                (
                    f"The study of {a} relies on {b}.",
                    f"{upper_first(a)} is built from {b}.",
                    f"Our treatment of {a} uses {b} throughout.",
                )
            )
        if kind == "implies":
            return f"{upper_first(a)} implies {b} as a limiting case."
        return self.rng.choice(
            (
                f"There is a close connection between {a} and {b}.",
                f"{upper_first(a)} is closely related to {b}{self.space_cite()}.",
                f"Both {a} and {b} appear naturally in this context.",
            )
        )

    def definition(self, item: Concept) -> str:
        head, rest = first_clause(item.description)
        label = self.label(f"def:{slug(item.name)}")
        self.statements[item.name] = label
        article = indefinite(item.name) if item.plural else item.article
        term = f"\\emph{{{self.tex(item.name)}}}"
        called = f"{article} {term}".strip()
        body = self.tex(lower_first(head))
        title = f"[{upper_first(self.tex(item.name))}]" if self.rng.random() < 0.3 else ""
        lines = [f"\\begin{{definition}}{title}\\label{{{label}}}"]
        phrase = self.rng.random()
        if phrase < 0.5:
            lines.append(f"We call {body} {called}.")
        elif phrase < 0.8:
            lines.append(f"{upper_first(called)} is {body}.")
        else:
            lines.append(f"Following {self.cite()}, we say that {body} is {called}.")
        if item.aliases and self.rng.random() < 0.6:
            lines.append(f"It is also known as {self.phrase(item, item.aliases[0])}.")
        if item.notation:
            lines.append(f"We write ${item.notation[0]}$ for it.")
        lines.append("\\end{definition}")
        block = "\n".join(lines)
        extras = []
        if rest:
            extras.append(self.tex(rest))
        if item.formula:
            extras.append(self.display(item, "For instance,"))
        if extras:
            block += "\n\n" + " ".join(extras)
        return block

    def display(self, item: Concept, lead: str) -> str:
        """``lead`` followed by the concept's formula, as an equation or ``\\[...\\]``."""
        formula = self.math(item.formula)
        if self.rng.random() < 0.6:
            label = self.label(f"eq:{slug(item.name)}")
            self.equations.setdefault(item.name, label)
            return f"{lead}\n\\begin{{equation}}\\label{{{label}}}\n  {formula}\n\\end{{equation}}"
        return f"{lead}\n\\[\n  {formula}\n\\]"

    def math(self, formula: str) -> str:
        if self.style.q_macro:
            formula = use_q_macro(formula)
        return formula

    def statement(self, item: Concept, *, recalled: bool) -> str:
        env = _ENV_FOR_TYPE.get(item.type, "proposition")
        label = self.label(f"{'conj' if env == 'conjecture' else 'thm'}:{slug(item.name)}")
        self.statements[item.name] = label
        short = upper_first(self.tex(short_name(self.rng.choice((item.name, *item.aliases[:1])))))
        citation = self.cite() if recalled and env != "conjecture" else ""
        opening = f"\\begin{{{env}}}[{short}{', ' + citation if citation else ''}]"
        lines = [f"{opening}\\label{{{label}}}"]
        if item.formula:
            condition = self.rng.choice(
                ("For $\\abs{q} < 1$ we have", "For all $n \\in \\N$,", "We have", "One has")
            )
            if "q" not in item.formula and "abs" in condition:
                condition = "We have"
            equation = self.label(f"eq:{slug(item.name)}")
            self.equations.setdefault(item.name, equation)
            lines.append(f"{condition}\n\\begin{{equation}}\\label{{{equation}}}")
            lines.append(f"  {self.math(item.formula)}")
            lines.append("\\end{equation}")
        else:
            head, _rest = first_clause(item.description)
            subject = upper_first(f"{item.article} {self.tex(item.name)}".strip())
            lines.append(f"{subject} {self.tex(lower_first(head))}.")
        lines.append(f"\\end{{{env}}}")
        return "\n".join(lines)

    def technique_paragraph(self, item: Concept) -> str:
        head, rest = first_clause(item.description)
        opener = self.rng.choice(
            (
                f"Our main tool is {self.mention(item)}.",
                f"The argument is based on {self.mention(item)}.",
                f"We shall use {self.nameless(item)} repeatedly.",
            )
        )
        parts = [opener, self.gloss(item, by_name=self.rng.random() < 0.5)]
        if item.formula and self.rng.random() < 0.5:
            parts.append(self.display(item, "In its simplest form it reads"))
        return " ".join(parts)


def short_name(name: str) -> str:
    """How a statement is titled: "Seifert–van Kampen theorem" → "Seifert–van Kampen"."""
    for suffix in (" theorem", " identities", " identity"):
        stem = name.removesuffix(suffix)
        if stem != name and ("–" in stem or " " not in stem):
            return stem
    return name


def slug(name: str) -> str:
    keep = "".join(ch if ch.isalnum() else "-" for ch in name.lower())
    return "-".join(part for part in keep.split("-") if part)[:32]


def hash_index(text: str, size: int) -> int:
    """A stable index in ``range(size)`` for ``text`` (``hash()`` is salted per process)."""
    return zlib.crc32(text.encode("utf-8")) % size


_CONTROL_WORD = re.compile(r"\\[A-Za-z]+")


def use_q_macro(formula: str) -> str:
    """Rewrite ``(a;q)_{n}`` and ``(a;q)_n`` as ``\\qp{a}{n}`` where it is unambiguous."""
    out = []
    index = 0
    while True:
        found = formula.find(";q)_", index)
        if found < 0:
            out.append(formula[index:])
            return "".join(out)
        open_paren = formula.rfind("(", index, found)
        argument = formula[open_paren + 1 : found] if open_paren >= 0 else ""
        rest = formula[found + 4 :]
        control_word = _CONTROL_WORD.match(rest)
        if rest.startswith("{"):
            close = rest.find("}")
            subscript, consumed = rest[1:close], close + 1
        elif control_word:  # (a;q)_\infty: the subscript is the whole control word
            subscript, consumed = control_word.group(0), control_word.end()
        else:
            subscript, consumed = rest[:1], 1
        if open_paren < 0 or not argument or "(" in argument or "{" in subscript:
            out.append(formula[index : found + 4])
            index = found + 4
            continue
        out.append(formula[index:open_paren])
        out.append(f"\\qp{{{argument}}}{{{subscript}}}")
        index = found + 4 + consumed
