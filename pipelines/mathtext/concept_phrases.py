"""Which phrases name a concept, and which concept a named statement states.

:func:`clean_term` refuses a phrase no one searches for (generic words, discourse such as
"the following result", citations); :func:`statement_concept_name` turns a theorem-like
statement's name into its concept ("Euler" in a theorem -> "Euler's theorem"). The graph
stage makes concepts of them and the pairs stage anchors statement pairs on them, so both
import them from here and agree. Pure functions only; no I/O.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from pipelines.mathtext.names import head_index, normalise_name, word_set, words_of

if TYPE_CHECKING:  # only the type: the contract module imports pandas and pyarrow
    from pipelines.common.tables import ConceptType

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
