"""The default extractor: rules over cleaned text, offline and deterministic.

:class:`RulesExtractor` reads one paper (:class:`~pipelines.graph.extractor.PaperDocument`)
as cleaned text (``$…$`` math, no LaTeX formatting) and finds:

* defined terms: the name of a definition statement (``\\begin{definition}[Durfee
  square]``), and in any text "we call X a *T*", "X is called *T*", "a *Y* is said to be
  *X*" (-> "X Y", e.g. "self-conjugate partition"), "we say that a *Y* is *X* if", "we
  define the *T* of ...", "A *T* is a ..." at the start of a sentence, "Definition (T)";
* aliases: "the *T*, also known as *A*" / "the *T* (also called *A*)", and in a
  definition "It is also known as *A*";
* named statements: ``\\begin{theorem}[Rogers–Ramanujan identities]`` -> a concept typed
  from its head noun (identity, theorem, conjecture, technique) or from the statement
  kind; a bare proper name gets the kind appended ("Euler" -> "Euler's theorem", by
  :func:`~pipelines.mathtext.concept_phrases.statement_concept_name`);
* keywords: a "Keywords:" / "Key words and phrases:" line in the abstract or a chunk.

arXiv categories are not turned into concepts: "math.CO" names a field, not a concept a
passage can be retrieved for, and every paper has one, so it would only add noise pairs.

The short descriptions of concepts (:func:`description_from`) are made here too. The
corpus-level rules, which need every paper's concepts first (relations stated between
mentions), are in :mod:`pipelines.graph.scan`.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass

from pipelines.common.tables import STATEMENT_KINDS, ConceptType
from pipelines.graph.extractor import (
    ConceptCandidate,
    Extraction,
    PaperDocument,
    Statement,
)
from pipelines.graph.terms import defined_term
from pipelines.mathtext.concept_phrases import (
    INLINE_MATH,
    clean_statement_name,
    clean_term,
    statement_concept_name,
    type_from_head,
)
from pipelines.mathtext.names import match_form, surface_forms, words_of
from pipelines.mathtext.passages import PassageFinder

# -- terms ----------------------------------------------------------------------------

# Words that never belong to a term: a term ends before them ("a Bailey pair relative
# to $a$" -> "Bailey pair").
_STOP_WORDS = (
    r"a|an|the|if|iff|when|whenever|of|is|are|be|was|were|and|or|we|it|its|that|this|these|"
    r"those|which|such|with|for|to|in|on|by|as|at|from|over|under|into|onto|between|modulo|"
    r"provided|where|whose|then|let|any|every|each|all|called|said|known|also|not|has|have|"
    r"relative|associated|corresponding|attached|defined|given|satisfying|having|containing|"
    r"respect|follows?|implies|imply|generali[sz]es?|generali[sz]ation|so|than|via|"
    r"applied|used|together|combined|due|obtained|proved|shown|established|introduced|"
    r"generated|considered|studied|described|up"
)
# One word of a term: a plain word (inner hyphens/dashes/apostrophes allowed) or a short
# piece of math, possibly hyphenated onto a word ("$q$-binomial").
_WORD = (
    rf"(?!(?i:{_STOP_WORDS})\b)"
    r"(?:\$[^$\n]{1,24}\$(?:[-\u2013][A-Za-z]+)*"
    r"|[A-Za-z][A-Za-z'\u2019]*(?:[-\u2013][A-Za-z0-9$\\][A-Za-z0-9'\u2019$\\{}]*)*)"
)
_TERM = rf"{_WORD}(?: {_WORD}){{0,4}}"
# What may follow a term: punctuation, math, the end, or a word that starts a clause or
# a complement. Not an article: in "we call such a sequence the Lucas sequence" the term
# must not stop at "sequence".
_TERM_END = (
    r"(?=\s*(?:[,.;:)]|\$|$|\b(?i:if|iff|when|whenever|provided|of|for|in|on|with|whose|"
    r"where|and|or|that|which|such|to|by|as|at|from|over|under|modulo|after|since|because|"
    r"relative|associated|corresponding|satisfying|having|containing|is|are|was|were|"
    r"applied|used|together|combined|due|obtained|proved|shown|established|introduced|"
    r"generated|considered|studied|described|up)\b))"
)
# After "we call <subject> a <term>", the term must end the clause, and it is the last
# such phrase of the sentence: the subject is often a noun phrase with articles of its
# own ("we call a $q$-series of the kind introduced by Ramanujan a mock theta function").
_CLAUSE_END = r"(?=\s*(?:[,.;:)]|\$|$|\b(?:if|iff|when|whenever|provided|whose|of)\b))"
_ARTICLE = r"(?:[Tt]he|[Aa]n?)"

_WE_CALL = re.compile(
    rf"\b[Ww]e (?:shall |will )?call (?P<subject>[^.;]{{1,400}}) (?:an?|the) "
    rf"(?P<term>{_TERM}){_CLAUSE_END}"
)
_IS_CALLED = re.compile(
    rf"\b(?:is|are) (?:then |also )?called (?:an? |the )?(?P<term>{_TERM}){_TERM_END}"
)
_SAID_TO_BE = re.compile(
    rf"\b{_ARTICLE} (?P<kind>{_TERM})(?: {INLINE_MATH})? (?:is|are) said to be "
    rf"(?:(?P<article>an?) )?(?P<term>{_TERM}){_TERM_END}"
)
_WE_SAY = re.compile(
    rf"\b[Ww]e say that {_ARTICLE} (?P<kind>{_TERM})(?: {INLINE_MATH})? is "
    rf"(?:(?P<article>an?) )?(?P<term>{_TERM})(?= if\b| when\b| whenever\b| provided\b)"
)
_WE_DEFINE = re.compile(
    rf"\b[Ww]e define (?:an? |the )?(?P<term>{_TERM})"
    rf"(?= of\b| to be\b| as\b| by\b| for\b|\s*\$)"
)
# "A Dyck path of semilength $n$ is a ...": the classic opening of a definition. In a
# definition statement "The ..." counts too; in running text only the indefinite form,
# because "The proof is ..." is not a definition.
_OPENING_DEFINITION = re.compile(
    rf"(?:^|(?<=[.:!?])\s+){_ARTICLE} (?P<term>{_TERM})(?: {INLINE_MATH})?"
    rf"(?: of [^.]{{0,80}}?)? (?:is|are) (?:an?|the|defined|any)\b"
)
_OPENING_TEXT = re.compile(
    rf"(?:^|(?<=[.!?])\s+)An? (?P<term>{_TERM})(?: {INLINE_MATH})?"
    rf"(?: of [^.]{{0,60}}?)? is (?:an?|the|defined)\b"
)
_DEFINITION_HEADER = re.compile(r"\bDefinition(?: \d+(?:\.\d+)*)? \((?P<term>[^()$]{3,60})\)")
_SENTENCE_START = r"(?:^|(?<=[.:;!?])\s+)"
_ALSO_KNOWN = re.compile(
    rf"(?:{_SENTENCE_START}|\b{_ARTICLE} )(?P<term>{_TERM}),? \(?(?:also|otherwise) "
    rf"(?:known as|called) (?:the |an? )?(?P<alias>{_TERM})"
)
_PRONOUN_ALIAS = re.compile(
    rf"\b(?:It|This|They|These)(?: notion| object)? (?:is|are) (?:also |often |sometimes )?"
    rf"(?:known as|called|referred to as) (?:the |an? )?(?P<alias>{_TERM}){_TERM_END}"
)
# Both ends of a stated relation are concepts worth knowing even when nothing defines
# them ("The $q$-binomial coefficient generalizes the binomial coefficient").
_RELATION_PHRASE = re.compile(
    rf"(?:^|(?<=[.:;!?])\s+|\b{_ARTICLE} )(?P<term>{_TERM})(?: {INLINE_MATH})? "
    r"(?:generali[sz]es|(?:is|are) (?:an? |the )?(?:common |natural )?generali[sz]ations? of"
    r"|(?:is|are) (?:an? |the )?(?:special|particular) cases? of|follows? from|implies|imply) "
    rf"(?:the |an? )?(?P<other>{_TERM}){_TERM_END}"
)
_KEYWORDS = re.compile(
    r"\b(?:Key ?words(?: and phrases)?|Keywords)\s*[:.]\s*(?P<list>[^\n]{1,400}?)(?:\.\s|\.?$|\n)",
    re.IGNORECASE,
)


# -- descriptions ---------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z$\\(])")
_DEFINITIONAL = re.compile(
    r"\b(?:is|are)\s+(?:an?|the|called|defined|said|known)\b|\bdenotes?\b|\brefers? to\b"
    r"|\b[Ww]e (?:call|say|define)\b|\bdefined (?:as|by|to be)\b|\bcounts?\b"
)
MAX_DESCRIPTION_CHARS = 500


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of cleaned text; never split inside ``$…$`` math."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        if text.count("$", start, match.start()) % 2 == 0:
            spans.append((start, match.start()))
            start = match.end()
    spans.append((start, len(text)))
    return spans


def split_sentences(text: str) -> list[str]:
    """The sentences of cleaned text (see :func:`sentence_spans`), stripped, none empty."""
    sentences = (text[start:end].strip() for start, end in sentence_spans(text))
    return [sentence for sentence in sentences if sentence]


def _shorten(text: str, limit: int = MAX_DESCRIPTION_CHARS) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    cut = cut if cut > 0 else limit
    while text.count("$", 0, cut) % 2 and cut > 0:  # never end inside math
        cut = text.rfind(" ", 0, cut)
    return text[: max(cut, 0)].rstrip(" ,;:") if cut > 0 else ""


def mentions_name(sentence: str, display_name: str) -> bool:
    padded = f" {match_form(sentence)} "
    return any(f" {form} " in padded for form in surface_forms(display_name))


def is_definitional(sentence: str) -> bool:
    return _DEFINITIONAL.search(sentence) is not None


def description_from(text: str, display_name: str) -> str:
    """A short description of a concept from the text that defines or states it.

    The first sentence naming the concept with a definitional verb; else the first with
    a definitional verb; else the first sentence. A very short pick ("Let $n \\geq 1$.")
    is extended by the next sentence.
    """
    sentences = split_sentences(text)
    if not sentences:
        return ""
    chosen = next(
        (
            index
            for index, sentence in enumerate(sentences)
            if is_definitional(sentence) and mentions_name(sentence, display_name)
        ),
        None,
    )
    if chosen is None:
        chosen = next((i for i, s in enumerate(sentences) if is_definitional(s)), 0)
    description = sentences[chosen]
    if len(description) < 60 and chosen + 1 < len(sentences):
        description = f"{description} {sentences[chosen + 1]}"
    return _shorten(description)


# -- the rule-based extractor ---------------------------------------------------------


@dataclass(frozen=True)
class _Term:
    raw: str
    aliases: tuple[str, ...]
    sentence: str  # where it was found: the sentence that may describe it
    # Found as the end of a relation, not defined: an object, and no description here.
    by_relation: bool = False


# Cheap signs that a sentence may hold a pattern. The patterns run only on sentences with
# a sign: a pattern with a term before its trigger word is slow on a whole chunk (it is
# tried at every position), and fast on one sentence.
# (No \\b or ^ in it: a pattern that starts with a literal is scanned for much faster.)
_HINTS = re.compile(
    r"call|said to be|say that|define|Definition|also (?:known|called)|generali[sz]"
    r"|cases? of|follows? from|impl(?:y|ies)|[.!?]\s+An? "
)


def _hinted_sentences(text: str) -> list[str]:
    hits = [hit.end() - 1 for hit in _HINTS.finditer(text)]
    if text.startswith(("A ", "An ")):
        hits.append(0)
    if not hits:
        return []
    spans = sentence_spans(text)
    starts = [start for start, _end in spans]
    chosen = sorted({bisect.bisect_right(starts, hit) - 1 for hit in hits} - {-1})
    return [text[spans[index][0] : spans[index][1]] for index in chosen]


def _terms(text: str) -> Iterable[_Term]:
    """Terms ``text`` defines (or names as ends of a relation), with any aliases given."""
    for sentence in _hinted_sentences(text):
        yield from _sentence_terms(sentence)


def _sentence_terms(sentence: str) -> Iterable[_Term]:
    if "call" in sentence:
        for pattern in (_WE_CALL, _IS_CALLED):
            for match in pattern.finditer(sentence):
                yield _Term(match["term"], (), sentence)
    if "said to be" in sentence or "say that" in sentence:
        for pattern in (_SAID_TO_BE, _WE_SAY):
            for match in pattern.finditer(sentence):
                # Without an article the term is an adjective: "self-conjugate" partition.
                raw = match["term"] if match["article"] else f"{match['term']} {match['kind']}"
                yield _Term(raw, (), sentence)
    if "define" in sentence:
        for match in _WE_DEFINE.finditer(sentence):
            yield _Term(match["term"], (), sentence)
    if "Definition" in sentence:
        for match in _DEFINITION_HEADER.finditer(sentence):
            yield _Term(match["term"], (), sentence)
    if " also " in sentence:
        for match in _ALSO_KNOWN.finditer(sentence):
            yield _Term(match["term"], (match["alias"],), sentence)
    if sentence.startswith(("A ", "An ")):
        for match in _OPENING_TEXT.finditer(sentence):
            yield _Term(match["term"], (), sentence)
    if _RELATION_HINT.search(sentence):
        for match in _RELATION_PHRASE.finditer(sentence):
            yield _Term(match["term"], (), sentence, by_relation=True)
            yield _Term(match["other"], (), sentence, by_relation=True)


_RELATION_HINT = re.compile(r"generali[sz]|cases? of|follows? from|impl(?:y|ies)")


def _definition_terms(text: str) -> Iterable[_Term]:
    """Terms a definition statement's opening sentence defines."""
    for match in _OPENING_DEFINITION.finditer(text):
        yield _Term(match["term"], (), text)


def _keywords(text: str) -> Iterable[str]:
    if "ey" not in text:  # "Keywords" / "Key words", cheaply
        return
    for match in _KEYWORDS.finditer(text):
        yield from re.split(r"[,;]", match["list"])


# Bump when the rules change what they find without this file changing (a data file, a
# dependency): the graph stage's per-paper cache is keyed by it (and by this code).
RULES_VERSION = 2  # 2: a definition's marked terms; discourse words refused


class RulesExtractor:
    """The default extractor: regular expressions over cleaned text; offline, deterministic.

    ``version`` marks it as cacheable: the same paper always gives the same extraction.
    """

    name = "rules"
    version = RULES_VERSION

    def extract(self, paper: PaperDocument) -> Extraction:
        found: list[ConceptCandidate] = []
        passages = PassageFinder((chunk.chunk_id, chunk.text) for chunk in paper.chunks)
        for statement in paper.statements:
            if statement.kind in STATEMENT_KINDS:
                found += _statement_concepts(statement, passages)

        texts = [(chunk.chunk_id, chunk.text) for chunk in paper.chunks]
        if paper.abstract and all(chunk.text != paper.abstract for chunk in paper.chunks):
            # A paper with source has its abstract outside the chunks; read it too.
            texts.insert(0, ("", paper.abstract))
        for chunk_id, text in texts:
            for found_term in _terms(text):
                term = clean_term(found_term.raw)
                if term is None:
                    continue
                defined = not found_term.by_relation
                found.append(
                    ConceptCandidate(
                        display_name=term,
                        type=type_from_head(term, "definition" if defined else "object"),
                        evidence="text",
                        description=_describe_by(found_term.sentence) if defined else "",
                        aliases=_clean_aliases(found_term.aliases),
                        chunk_id=chunk_id,
                    )
                )
            for raw in _keywords(text):
                term = clean_term(raw)
                if term is not None:
                    found.append(
                        ConceptCandidate(
                            display_name=term,
                            type=type_from_head(term, "other"),
                            evidence="keyword",
                            chunk_id=chunk_id,
                        )
                    )
        return Extraction(paper_id=paper.paper_id, concepts=tuple(found))


def _statement_concepts(statement: Statement, passages: PassageFinder) -> list[ConceptCandidate]:
    """The concepts a definition defines, or the one a named theorem-like statement states."""
    chunk_id = passages.find(statement.text)
    if statement.kind == "definition":
        candidates = []
        for term, aliases in _defined_terms(statement):
            candidates.append(
                ConceptCandidate(
                    display_name=term,
                    type=type_from_head(term, "definition"),
                    evidence="definition",
                    description=description_from(statement.text, term),
                    aliases=aliases,
                    defining_text=statement.text,
                    chunk_id=chunk_id,
                    statement_id=statement.statement_id,
                )
            )
        return candidates
    display = statement_concept_name(statement.kind, statement.name)
    if display is None:
        return []
    default: ConceptType = "conjecture" if statement.kind == "conjecture" else "theorem"
    bare = clean_statement_name(statement.name)
    # "Rogers–Ramanujan" for "Rogers–Ramanujan theorem"; a lone surname ("Euler") would
    # match far too much text to be an alias.
    aliases = (bare,) if bare and bare != display and len(words_of(bare)) > 1 else ()
    return [
        ConceptCandidate(
            display_name=display,
            type=type_from_head(display, default),
            evidence="statement",
            description=_shorten(statement.text),
            aliases=aliases,
            chunk_id=chunk_id,
            statement_id=statement.statement_id,
        )
    ]


def _defined_terms(statement: Statement) -> list[tuple[str, tuple[str, ...]]]:
    """The terms a definition defines, with their aliases.

    Its name, then the terms its author emphasised; only a definition without emphasised
    terms is read with the sentence patterns (the author's markup is the better witness).
    """
    # "It is also known as ..." in a definition names the term being defined.
    pronoun_aliases = tuple(m["alias"] for m in _PRONOUN_ALIAS.finditer(statement.text))
    found: list[tuple[str, tuple[str, ...]]] = []
    name = statement_concept_name("definition", statement.name) if statement.name else None
    if name is not None:
        found.append((name, _clean_aliases(pronoun_aliases)))
    marked = [term for term in (defined_term(raw) for raw in statement.terms) if term]
    if marked:
        return found + [(term, ()) for term in dict.fromkeys(marked)]
    for found_term in (*_definition_terms(statement.text), *_terms(statement.text)):
        term = clean_term(found_term.raw)
        if term is not None:
            found.append((term, _clean_aliases((*found_term.aliases, *pronoun_aliases))))
    return found


def _clean_aliases(raw_aliases: Iterable[str]) -> tuple[str, ...]:
    return tuple(alias for alias in (clean_term(raw) for raw in raw_aliases) if alias)


def _describe_by(sentence: str) -> str:
    return _shorten(sentence) if is_definitional(sentence) else ""
