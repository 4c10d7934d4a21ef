"""Statements: the theorem-like environments a paper proves, and which kind each one is."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipelines.common.tables import STATEMENT_KINDS


@dataclass(frozen=True)
class Statement:
    """A theorem-like environment: kind (one of STATEMENT_KINDS), name, label, cleaned text.

    ``terms``: in a definition, the terms its author emphasised (the defined terms);
    ``refs``: the labels the statement and its proof cite; ``proof``: the cleaned text of
    the proof that follows it ("" when none does); ``slogan``: a one-line summary its
    authors wrote beside it (the Stacks Project's ``slogan`` environment), "" when none.
    """

    kind: str
    name: str
    label: str
    text: str
    terms: tuple[str, ...] = ()
    refs: tuple[str, ...] = ()
    proof: str = ""
    slogan: str = ""


#: Theorem-like environments known without a ``\newtheorem``: name → display name.
DEFAULT_THEOREMS = {
    "theorem": "Theorem", "thm": "Theorem", "lemma": "Lemma", "lem": "Lemma",
    "proposition": "Proposition", "prop": "Proposition", "corollary": "Corollary",
    "cor": "Corollary", "coro": "Corollary", "definition": "Definition", "defn": "Definition",
    "dfn": "Definition", "defi": "Definition", "conjecture": "Conjecture",
    "conj": "Conjecture", "remark": "Remark", "rem": "Remark", "example": "Example",
    "claim": "Claim", "problem": "Problem", "question": "Question", "note": "Note",
    "notation": "Notation", "observation": "Observation", "fact": "Fact",
    "exercise": "Exercise", "assumption": "Assumption", "hypothesis": "Hypothesis",
}  # fmt: skip


def statement_kind(display_name: str) -> str | None:
    """Which of STATEMENT_KINDS a theorem-like title names ("Main Lemma" → lemma), if any."""
    words: list[str] = re.findall(r"[a-z]+", display_name.lower())
    for word in reversed(words):
        singular = word[:-1] if word.endswith("s") and word[:-1] in STATEMENT_KINDS else word
        if singular in STATEMENT_KINDS:
            return singular
    return None
