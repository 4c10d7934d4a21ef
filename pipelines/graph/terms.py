"""Which names are concepts: the term an author marked as defined, and the evidence a name
needs before the graph keeps it.

A concept is what a researcher would type into a search box. Two kinds of evidence say a
name is one:

* **strong** — the author said so: a term emphasised inside a definition environment
  (``An {\\it affine scheme} is ...``), the name of a definition or of a named theorem,
  a keyword. One paper is enough.
* **weak** — a sentence merely matched a pattern ("we call X a T", "A T is a ..."). Real
  prose matches such patterns with "there", "now", "our assumption"; so a weak name is
  kept only when several papers use it that way and it is not an everyday English word
  (:func:`corroborated`).

No name made of discourse words is ever a concept, whatever the evidence: every name
passes :func:`~pipelines.mathtext.concept_phrases.clean_term`, which refuses them
(:func:`~pipelines.mathtext.concept_phrases.is_discourse`). Pure functions.
"""

from __future__ import annotations

import functools
import re

from pipelines.mathtext.concept_phrases import INLINE_MATH, clean_term
from pipelines.mathtext.names import normalise_name, word_set

#: Prepositions and articles a marked term may trail ("scheme over $S$" -> "scheme over").
_TRAILING = word_set(
    "of at over to on for in with by from and or the a an associated relative respect along "
    "value values"
)
# "flat (resp. faithfully flat)": two terms in one emphasis; the first is kept.
_RESPECTIVELY = re.compile(r"\s*\(?\s*\bresp\b\.?.*$", re.IGNORECASE)
#: Weak evidence: a single word at least this common in English (wordfreq's Zipf scale:
#: 4 = once per 10^5 words; "choice" 5.1, "latter" 4.6, "exact" 4.5) is an everyday word.
COMMON_WORD_ZIPF = 4.0
#: Weak evidence: the papers that must use a name that way before it is kept.
MIN_WEAK_PAPERS = 2

_STANDALONE_MATH = re.compile(rf"{INLINE_MATH}(?![-\u2013\w])")
_LEADING_MATH = re.compile(rf"^(?:{INLINE_MATH}\s+)+")


def defined_term(raw: str) -> str | None:
    """The concept name in a term an author emphasised in a definition, or None.

    Authors emphasise the term with its context: "local ring of $X$ at $x$", "structure
    sheaf $\\mathcal{O}_{Spec(R)}$ of the spectrum of $R$". The name is what comes before
    the first standalone formula, less trailing prepositions: "local ring", "structure
    sheaf". Math hyphenated onto a word stays ("$R$-module").
    """
    text = _RESPECTIVELY.sub("", " ".join(raw.split()))
    text = _LEADING_MATH.sub("", text)
    cut = _STANDALONE_MATH.search(text)
    if cut is not None:
        text = text[: cut.start()]
    words = text.strip(" ,.;:").split()
    while words and words[-1].lower() in _TRAILING:
        words.pop()
    term = clean_term(" ".join(words))
    if term is None or _is_bare_adverb(term):
        return None
    return term


def _is_bare_adverb(term: str) -> bool:
    """A lone adverb ("weakly", "locally"): what is left of "weakly $\\mathcal{P}$"."""
    if " " in term or not term.endswith("ly") or len(term) < 6:
        return False
    from wordfreq import zipf_frequency

    return zipf_frequency(term[:-2].lower(), "en") >= 3.0  # "weak"+"ly", not "fami"+"ly"


@functools.lru_cache(maxsize=1 << 16)
def is_everyday_word(name: str) -> bool:
    """A one-word name common in everyday English ("choice", "latter"); math words are rare
    there ("surjective" 1.6, "presheaf" 0)."""
    from wordfreq import zipf_frequency  # imported here: it loads its word list on first use

    words = normalise_name(name).split()
    return len(words) == 1 and zipf_frequency(words[0], "en") >= COMMON_WORD_ZIPF


def corroborated(name: str, weak_papers: int) -> bool:
    """Whether a name seen only with weak evidence is still a concept (it passed
    :func:`~pipelines.mathtext.concept_phrases.clean_term`, so it is no discourse phrase)."""
    return weak_papers >= MIN_WEAK_PAPERS and not is_everyday_word(name)
