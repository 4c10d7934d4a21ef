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

Which phrases name a concept at all (:func:`clean_term`), and which concept a named
theorem-like statement states (:func:`statement_concept_name`: "Euler" in a theorem ->
"Euler's theorem"), are here too: the graph stage makes concepts of them and the pairs
stage anchors statement pairs on them, and the two must agree.

Pure functions only; no I/O.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only the type: the contract module imports pandas and pyarrow
    from pipelines.common.tables import ConceptType


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


# -- terms and statement names --------------------------------------------------------

# Inline math as prepare leaves it in cleaned text: one short ``$…$`` span.
INLINE_MATH = r"\$[^$\n]{1,60}\$"

# A term made only of these is not a concept anyone searches for.
GENERIC_WORDS = word_set(
    """result main theorem lemma proposition corollary definition conjecture claim remark
    example proof case following above below condition property notation set function map
    number integer element object sequence way method approach paper section problem
    question answer statement formula identity equation relation expression term quantity
    value variable parameter constant fact note observation construction argument step part
    form new first second third last other same general special previous next well known
    simple standard usual certain given key technical basic useful important classical
    natural preliminary auxiliary one two three thing point name assumption hypothesis
    situation idea analogue analog version generalization generalisation consequence
    application extension pair sum product series coefficient induction kind type sort
    factor ratio space positive negative nonnegative non box"""
)

_HEAD_TYPES: dict[str, ConceptType] = {
    **dict.fromkeys(
        word_set("theorem lemma principle inequality criterion law bound estimate rule congruence"),
        "theorem",
    ),
    **dict.fromkeys(word_set("identity formula product expansion transformation"), "identity"),
    **dict.fromkeys(word_set("conjecture hypothesis"), "conjecture"),
    **dict.fromkeys(
        word_set(
            """method technique trick argument algorithm sieve bijection construction insertion
            correspondence involution"""
        ),
        "technique",
    ),
}
_KIND_SUFFIX = {"lemma": "lemma", "conjecture": "conjecture"}


#: Words that make a name a piece of prose, not a concept: a name that starts or ends with
#: one, or has nothing else, is refused ("there", "our assumption", "computation above",
#: "result now", "further claim about square").
DISCOURSE_WORDS = word_set(
    """there here now then thus hence therefore so also above below following previous
    preceding latter former further furthermore moreover our we us you they this that these
    those it its itself such same other another each every some any all many most more less
    much very just only still again indeed clearly obviously exactly immediately namely
    certainly actually simply really already always never often sometimes usually quite
    rather even though although whereas while since because if iff when whenever where
    which who whose what how why not no yes one ones say says said call called let lets
    given consider considered assume assumed suppose supposed see note recall similarly
    conversely finally last next earlier later before after done nice
    computation conclusion assumption claim discussion reasoning argument observation
    remark example exercise proof equality inequality above-mentioned aforementioned
    assertion axiom axioms
    satisfies satisfy satisfying has have having is are be being was were covers cover
    holds hold denote denotes denoted write written priori posteriori"""
)


@functools.lru_cache(maxsize=1 << 16)
def is_discourse(name: str) -> bool:
    """Whether ``name`` is prose rather than a concept: it starts or ends with a discourse
    word, or holds nothing else."""
    words = [word for word in re.split(r"[\s\u2013-]+", name.lower()) if word]
    words = [re.sub(r"'s$|[^a-z0-9']", "", word) for word in words]
    words = [word for word in words if word]
    if not words:
        return True
    return words[0] in DISCOURSE_WORDS or words[-1] in DISCOURSE_WORDS


@functools.lru_cache(maxsize=1 << 16)
def clean_term(raw: str) -> str | None:
    """A candidate term trimmed of articles and stray math, or None when it is no concept."""
    term = _trimmed_term(raw)
    if term is None or is_discourse(term):
        return None  # prose, not a concept: "there", "our assumption", "result now"
    return term


def _trimmed_term(raw: str) -> str | None:
    """:func:`clean_term` but for the discourse rule, which a statement's name meets only
    once its kind is added ("Genus one" -> "Genus one lemma", a name, not prose)."""
    term = " ".join(raw.replace("\n", " ").split()).strip(" ,.;:()[]{}'\"")
    term = re.sub(r"^(?:the|an?)\s+", "", term, flags=re.IGNORECASE)
    # Standalone math around the words goes ("$\\lambda$ a strict partition"); math
    # hyphenated onto a word stays ("$q$-binomial coefficient").
    term = re.sub(rf"^(?:{INLINE_MATH}\s+)+|(?:\s+{INLINE_MATH})+$", "", term).strip()
    if not term or len(term) > 80 or "$$" in term or term.count("$") % 2:
        return None  # empty, a sentence, display math, or math cut in half
    words = words_of(term)
    if not 1 <= len(words) <= 6:
        return None
    if not any(len(word) >= 3 for word in words_of(re.sub(INLINE_MATH, " ", term))):
        return None  # only math ("$H_n(X;\\mathbb{Z})$"), or math and a letter
    if any(word.isdigit() for word in words):
        return None
    if not any(len(word) >= 3 and word.isalpha() for word in words):
        return None
    if all(word in GENERIC_WORDS for word in normalise_name(term).split()):
        return None
    return term


@functools.lru_cache(maxsize=1 << 16)
def type_from_head(display_name: str, default: ConceptType) -> ConceptType:
    """The type a concept's head noun implies ("... identity" -> identity), else ``default``."""
    words = normalise_name(display_name).split()
    if not words:
        return default
    return _HEAD_TYPES.get(words[head_index(words)], default)


_CITATION = re.compile(r"\[(?:cite|ref)\]|\b(?:see|cf)\b\.?", re.IGNORECASE)


@functools.lru_cache(maxsize=1 << 16)
def clean_statement_name(name: str) -> str | None:
    """The concept part of a statement's optional name; None when it is only a reference.

    Prepare writes ``\\cite`` as "[cite]": "Andrews [cite]" -> "Andrews", and a reference
    after the name goes ("Stirling's formula, [cite][Chapter 1.8]"); a name with a number
    left ("Theorem 3.1 of [5]") is numbering, not a concept.
    """
    name = _CITATION.sub(" ", name).split("[", 1)[0]  # "..., [Chapter 1.8]" goes too
    if re.search(r"[\]]|\d", name):
        return None
    return _trimmed_term(name)


@functools.lru_cache(maxsize=1 << 16)
def statement_concept_name(kind: str, name: str) -> str | None:
    """The concept a named statement states, as a display name, or None.

    "Rogers–Ramanujan identities" stays as it is (its head noun says what it is); a bare
    name gets the statement kind: "Euler" -> "Euler's theorem", "Rogers–Ramanujan" (a
    lemma) -> "Rogers–Ramanujan lemma". Definitions name the defined term itself.
    """
    display = _stated_name(kind, name)
    return None if display is None or is_discourse(display) else display


def _stated_name(kind: str, name: str) -> str | None:
    term = clean_statement_name(name)
    if term is None:
        return None
    if kind == "definition":
        return term
    words = normalise_name(term).split()
    if words[head_index(words)] in _HEAD_TYPES:
        return term
    suffix = _KIND_SUFFIX.get(kind, "theorem")
    if len(words) == 1 and term[:1].isupper():
        return f"{term}'s {suffix}"
    return f"{term} {suffix}"


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
