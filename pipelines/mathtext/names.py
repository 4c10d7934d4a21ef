"""Concept names: the normalised key, its surface forms, and the text form they are matched in.

One concept is written many ways: "Rogers–Ramanujan identities", "Rogers-Ramanujan
identity", "rogers ramanujan identities". They all share one key, the ``name`` column of
``concepts.parquet``:

* Unicode is folded to ASCII (NFKD, accents dropped: "Möbius" -> "mobius"); LaTeX accent
  commands and ``$`` delimiters are dropped ("$q$-binomial" -> "q binomial").
* lower case; hyphens, en/em dashes and every other non-alphanumeric character become a
  single space.
* possessives are dropped: "Bailey's lemma" -> "bailey lemma", "Andrews' identity" ->
  "andrews identity". Mathematicians write both "Bailey's lemma" and "the Bailey lemma";
  keeping the possessive would split one concept in two.
* the head noun is made singular: "Catalan numbers" -> "catalan number", "sums of
  squares" -> "sum of squares". The head is the word before the first preposition ("of",
  "in", ...) or else the last word. Only the head changes, because the other words are
  often proper names ending in s ("Lucas sequence", "Jones polynomial") that simple
  English rules would damage; and not even the head when it is a surname dash-joined to
  another ("Gordon–Andrews", a bare statement name).

The same steps, applied to running text by :func:`match_form`, let a compiled
:class:`SurfaceMatcher` find concept mentions with one regular expression per text.

Which phrases name a concept at all, and which concept a named statement states, are in
:mod:`pipelines.mathtext.concept_phrases`.

Pure functions only; no I/O.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


def word_set(words: str) -> frozenset[str]:
    """The whitespace-separated words of ``words`` (keeps long word lists readable)."""
    return frozenset(words.split())


# Words after which the head noun of a noun phrase has ended ("ring of integers").
PREPOSITIONS = word_set("of in on for over with under modulo from to between into at by via")

# Singular == plural, or a singular that merely looks plural.
INVARIANT = word_set(
    """series species means analysis basis calculus locus torus radius modulus genus
    axis hypothesis thesis nexus focus status corpus rhombus lemniscus gauss class
    mathematics physics combinatorics dynamics statistics topology news topos"""
)

IRREGULAR_PLURALS: Mapping[str, str] = {
    "sheaves": "sheaf",
    "presheaves": "presheaf",
    "subsheaves": "subsheaf",
    "topoi": "topos",
    "matrices": "matrix",
    "vertices": "vertex",
    "indices": "index",
    "simplices": "simplex",
    "bases": "basis",
    "axes": "axis",
    "hypotheses": "hypothesis",
    "analyses": "analysis",
    "theses": "thesis",
    "radii": "radius",
    "tori": "torus",
    "loci": "locus",
    "foci": "focus",
    "moduli": "modulus",
    "genera": "genus",
    "lemmata": "lemma",
    "formulae": "formula",
    "polyhedra": "polyhedron",
    "criteria": "criterion",
    "automata": "automaton",
    "maxima": "maximum",
    "minima": "minimum",
    "spectra": "spectrum",
    "tableaux": "tableau",
    "children": "child",
    "halves": "half",
    "leaves": "leaf",
    "selves": "self",
    "shelves": "shelf",
    "phenomena": "phenomenon",
}
# "X identity" and "X" name one concept when X has two words or more ("Jacobi triple
# product identity"). Not "theorem": "prime number" is no "prime number theorem".
SYNONYMOUS_SUFFIXES = (" identity",)
_SINGULAR_TO_PLURAL = {singular: plural for plural, singular in IRREGULAR_PLURALS.items()}

# Dashes, minus signs, typographic apostrophes and no-break spaces, mapped before the
# ASCII fold would drop them. (A few str.replace calls are much faster than str.translate.)
_PUNCTUATION_FOLD = (
    ("\u2010", "-"),
    ("\u2011", "-"),
    ("\u2012", "-"),
    ("\u2013", "-"),
    ("\u2014", "-"),
    ("\u2015", "-"),
    ("\u2212", "-"),
    ("\u2019", "'"),
    ("\u2018", "'"),
    ("\u00a0", " "),
)
# LaTeX accents left in a name or text: \"o, \'{e}, \H{o}, \c{c}. Letter accents need
# braces, so that \cdot or \varphi are not read as accents.
_LATEX_ACCENT = re.compile(
    r"\\[\"'`^~=.](?:\{\s*([A-Za-z])\s*\}|([A-Za-z]))|\\[Hcuvkr]\{\s*([A-Za-z])\s*\}"
)
_POSSESSIVE = re.compile(r"(?<=[A-Za-z0-9])'s\b|(?<=[sS])'(?![A-Za-z])")
# Sentence and clause ends become a barrier token that no surface form contains, so a
# mention (or a relation pattern) never spans two sentences.
_BARRIER = re.compile(r"[.;:!?]+(?=\s|$)")
_NON_WORD = re.compile(r"[^a-z0-9|]+")
_NON_WORD_CASED = re.compile(r"[^A-Za-z0-9]+")
BARRIER = "|"


def _fold_cased(text: str) -> str:
    """ASCII, LaTeX accents and possessives gone; case and punctuation left in place."""
    if not text.isascii():
        for character, replacement in _PUNCTUATION_FOLD:
            if character in text:
                text = text.replace(character, replacement)
        text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    if "\\" in text:
        text = _LATEX_ACCENT.sub(_accented_letter, text)
    if "'" in text:
        text = _POSSESSIVE.sub("", text)
    return text


def _fold(text: str) -> str:
    """:func:`_fold_cased`, in lower case."""
    return _fold_cased(text).lower()


def _accented_letter(match: re.Match[str]) -> str:
    return next(letter for letter in match.groups() if letter)


def words_of(text: str) -> list[str]:
    """The lower-case ASCII words of a name (possessives dropped, math delimiters gone)."""
    return _NON_WORD.sub(" ", _fold(text).replace(BARRIER, " ")).split()


def match_form(text: str) -> str:
    """Running text as single-space-separated words, with ``|`` at sentence ends.

    The form :class:`SurfaceMatcher` searches; no plural is changed here (the matcher
    knows both numbers of every head noun).
    """
    folded = _BARRIER.sub(" | ", _fold(text).replace(BARRIER, " "))
    return _NON_WORD.sub(" ", folded).strip()


def singular(word: str) -> str:
    """The singular of an English noun, by simple rules with the usual exceptions."""
    if word in IRREGULAR_PLURALS:
        return IRREGULAR_PLURALS[word]
    if len(word) <= 3 or word in INVARIANT or not word.isalpha():
        return word
    if word.endswith(("ss", "us", "is", "ics", "ous")):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes", "zzes")):
        return word[:-2]
    if word.endswith("s"):
        return word[:-1]
    return word


def plurals(word: str) -> set[str]:
    """The plurals of a singular English noun: the regular one and any irregular one.

    Both, because mathematicians write "lemmas" and "lemmata", "formulas" and "formulae".
    """
    if len(word) <= 2 or word in INVARIANT or not word.isalpha():
        return {word}
    if word.endswith("y") and word[-2] not in "aeiou":
        regular = word[:-1] + "ies"
    elif word.endswith(("s", "x", "ch", "sh", "z")):
        regular = word + "es"
    else:
        regular = word + "s"
    irregular = _SINGULAR_TO_PLURAL.get(word)
    return {regular, irregular} if irregular else {regular}


def head_index(words: list[str]) -> int:
    """Position of the head noun: the word before the first preposition, else the last."""
    for index, word in enumerate(words):
        if index > 0 and word in PREPOSITIONS:
            return index - 1
    return len(words) - 1


@functools.lru_cache(maxsize=1 << 16)
def normalise_name(text: str) -> str:
    """The concept key of a name: "Rogers–Ramanujan Identities" -> "rogers ramanujan identity"."""
    folded = _fold_cased(text)
    cased = _NON_WORD_CASED.sub(" ", folded).split()
    if not cased:
        return ""
    words = [word.lower() for word in cased]
    head = head_index(words)
    if not _is_joined_surname(folded, cased, head):
        words[head] = singular(words[head])
    return " ".join(words)


def _is_joined_surname(folded: str, cased: list[str], head: int) -> bool:
    """Whether the head is a surname dash-joined to another: "Gordon–Andrews" stays plural.

    ("Rogers–Ramanujan Identities" has a capitalised head too, but not joined by a dash.)
    """
    if head == 0 or not (cased[head][:1].isupper() and cased[head - 1][:1].isupper()):
        return False
    joined = rf"\b{re.escape(cased[head - 1])}\s*-+\s*{re.escape(cased[head])}\b"
    return re.search(joined, folded) is not None


@functools.lru_cache(maxsize=1 << 16)
def surface_forms(name: str) -> frozenset[str]:
    """The match forms a concept with this name can take in text: singular and plural head."""
    words = normalise_name(name).split()
    if not words:
        return frozenset()
    head = head_index(words)
    forms = {" ".join(words)}
    for plural in plurals(words[head]):
        forms.add(" ".join([*words[:head], plural, *words[head + 1 :]]))
    return frozenset(forms)


# -- de-duplication -------------------------------------------------------------------


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, item: str) -> str:
        self.parent.setdefault(item, item)
        root = item
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[item] != root:  # path compression
            self.parent[item], item = root, self.parent[item]
        return root

    def union(self, first: str, second: str) -> None:
        root_first, root_second = self.find(first), self.find(second)
        if root_first != root_second:
            # The smaller key wins, so the result does not depend on the input order.
            keep, drop = sorted((root_first, root_second))
            self.parent[drop] = keep


def merge_keys(names_with_aliases: Iterable[tuple[str, Iterable[str]]]) -> dict[str, str]:
    """Group concept keys that share a name or an alias; map every key to its group's key.

    Each input is ``(key, alias_keys)``, one per sighting of a concept (so a key may come
    many times). Two keys end in the same group when one's alias is the other's key or
    alias, transitively, or when they differ only by a trailing "identity" ("Jacobi triple
    product" and "Jacobi triple product identity"; the bare name must have two words or
    more). The group's key is its most often seen *name* (never a bare
    alias), ties broken by fewer words, then alphabetically, so the result does not
    depend on the input order. Returns a mapping from every name key to its group's key.
    """
    union_find = _UnionFind()
    sightings: dict[str, int] = {}
    for key, aliases in names_with_aliases:
        sightings[key] = sightings.get(key, 0) + 1
        union_find.find(key)
        for alias in aliases:
            if alias:
                union_find.union(key, alias)
    for key in sightings:
        for suffix in SYNONYMOUS_SUFFIXES:
            bare = key.removesuffix(suffix)
            if bare != key and bare in sightings and len(bare.split()) >= 2:
                union_find.union(key, bare)
    groups: dict[str, list[str]] = {}
    for key in sightings:
        groups.setdefault(union_find.find(key), []).append(key)
    chosen: dict[str, str] = {}
    for members in groups.values():
        representative = min(members, key=lambda key: (-sightings[key], len(key.split()), key))
        for key in members:
            chosen[key] = representative
    return chosen


# -- matching -------------------------------------------------------------------------


def _trie_pattern(strings: Iterable[str]) -> str:
    """A regular expression matching exactly ``strings``, factored as a character trie.

    Python's ``re`` tries alternatives in order; a trie with greedy optional tails makes
    the longest surface form win at each position, and keeps the pattern fast with
    thousands of forms (one character test per trie level instead of per form).
    """
    trie: dict[str, Any] = {}
    for string in strings:
        node = trie
        for char in string:
            node = node.setdefault(char, {})
        node[""] = {}

    def build(node: dict[str, Any]) -> str:
        ends_here = "" in node
        branches = [re.escape(char) + build(node[char]) for char in sorted(c for c in node if c)]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if ends_here:
            return f"(?:{body})?"
        return body

    return build(trie)


@dataclass(frozen=True)
class Mention:
    key: str
    start: int
    end: int


class SurfaceMatcher:
    """Finds concept mentions in :func:`match_form` text: whole words, longest match first.

    ``surfaces`` maps a concept key to the names and aliases it is written as. Matches
    do not overlap: in "q binomial coefficient" only the q-binomial coefficient is found,
    not also the binomial coefficient, because a mention is of the most specific concept
    the words name.
    """

    def __init__(self, surfaces: Mapping[str, Iterable[str]]) -> None:
        self.key_of_form: dict[str, str] = {}
        for key in sorted(surfaces):
            for surface in sorted(set(surfaces[key]) | {key}):
                for form in sorted(surface_forms(surface)):
                    # The first key (in sorted order) keeps a form two concepts share.
                    self.key_of_form.setdefault(form, key)
        self._pattern: re.Pattern[str] | None = None
        if self.key_of_form:
            trie = _trie_pattern(self.key_of_form)
            self._pattern = re.compile(rf"(?<![a-z0-9])(?:{trie})(?![a-z0-9])")

    def find(self, text_in_match_form: str) -> list[Mention]:
        if self._pattern is None:
            return []
        key_of_form = self.key_of_form
        return [
            Mention(key_of_form[match.group()], match.start(), match.end())
            for match in self._pattern.finditer(text_in_match_form)
        ]

    def keys_in(self, text_in_match_form: str) -> set[str]:
        if self._pattern is None:
            return set()
        key_of_form = self.key_of_form
        return {key_of_form[form] for form in self._pattern.findall(text_in_match_form)}
