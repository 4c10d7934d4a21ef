"""The extractor interface and the default, rule-based, offline extractor.

An :class:`Extractor` reads one paper (:class:`PaperDocument`) and proposes concepts and
relations between them (:class:`Extraction`). :class:`RulesExtractor`, the default, reads
cleaned text (``$…$`` math, no LaTeX formatting) and finds:

* defined terms: the name of a definition statement (``\\begin{definition}[Durfee
  square]``), and in any text "we call X a *T*", "X is called *T*", "a *Y* is said to be
  *X*" (-> "X Y", e.g. "self-conjugate partition"), "we say that a *Y* is *X* if", "we
  define the *T* of ...", "A *T* is a ..." at the start of a sentence, "Definition (T)";
* aliases: "the *T*, also known as *A*" / "the *T* (also called *A*)", and in a
  definition "It is also known as *A*";
* named statements: ``\\begin{theorem}[Rogers–Ramanujan identities]`` -> a concept typed
  from its head noun (identity, theorem, conjecture, technique) or from the statement
  kind; a bare proper name gets the kind appended ("Euler" -> "Euler's theorem");
* keywords: a "Keywords:" / "Key words and phrases:" line in the abstract or a chunk.

arXiv categories are not turned into concepts: "math.CO" names a field, not a concept a
passage can be retrieved for, and every paper has one, so it would only add noise pairs.

The corpus-level rules live here too, because they need every paper's concepts first:
relation patterns ("X generalizes Y", "Y is a special case of X", "X is a Y", "X implies
Y", "Y follows from X") read from text in :func:`match_form`, between concept mentions that
:class:`~pipelines.common.names.SurfaceMatcher` found. :mod:`pipelines.graph` adds the
definitional-dependency (``uses``) and co-occurrence (``related_to``) edges.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, get_args

from pipelines.common.names import (
    BARRIER,
    Mention,
    head_index,
    match_form,
    normalise_name,
    surface_forms,
    word_set,
    words_of,
)

ConceptType = Literal[
    "object", "theorem", "definition", "technique", "identity", "conjecture", "other"
]
Relation = Literal["generalizes", "uses", "is_instance_of", "implies", "related_to"]
Evidence = Literal["definition", "statement", "keyword", "text"]
CONCEPT_TYPES: tuple[str, ...] = get_args(ConceptType)
RELATIONS: tuple[str, ...] = get_args(Relation)
EVIDENCE_ORDER: tuple[str, ...] = get_args(Evidence)  # strongest first


# -- the interface --------------------------------------------------------------------


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    text: str


@dataclass(frozen=True)
class Statement:
    statement_id: str
    kind: str
    name: str
    text: str


@dataclass(frozen=True)
class PaperDocument:
    """One paper as the extractors see it: metadata, chunks and statements in order."""

    paper_id: str
    title: str
    abstract: str
    categories: tuple[str, ...] = ()
    chunks: tuple[Chunk, ...] = ()
    statements: tuple[Statement, ...] = ()


@dataclass(frozen=True)
class ConceptCandidate:
    """A concept as one paper names it; :mod:`pipelines.graph` merges them by key."""

    display_name: str
    type: ConceptType
    evidence: Evidence
    description: str = ""
    aliases: tuple[str, ...] = ()
    # Text that defines the concept: the other concepts it mentions become `uses` edges.
    defining_text: str = ""
    # The chunk the concept was found in, when known: it gets a mention with `evidence`
    # even when the name itself is not written there (a definition's name is in its
    # header, which cleaning removed).
    chunk_id: str = ""

    @property
    def key(self) -> str:
        return normalise_name(self.display_name)


@dataclass(frozen=True)
class RelationCandidate:
    """A relation between two concepts, by name as written; resolved to keys later."""

    source: str
    target: str
    relation: Relation


@dataclass(frozen=True)
class Extraction:
    paper_id: str
    concepts: tuple[ConceptCandidate, ...] = ()
    relations: tuple[RelationCandidate, ...] = ()
    # Why the paper contributed nothing, when an extractor had to give up on it.
    skipped_reason: str = ""


class Extractor(Protocol):
    """Proposes concepts and relations for one paper at a time."""

    name: str

    def extract(self, paper: PaperDocument) -> Extraction: ...


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
_MATH = r"\$[^$\n]{1,60}\$"
_ARTICLE = r"(?:[Tt]he|[Aa]n?)"

_WE_CALL = re.compile(
    rf"\b[Ww]e (?:shall |will )?call (?P<subject>[^.;]{{1,400}}) (?:an?|the) "
    rf"(?P<term>{_TERM}){_CLAUSE_END}"
)
_IS_CALLED = re.compile(
    rf"\b(?:is|are) (?:then |also )?called (?:an? |the )?(?P<term>{_TERM}){_TERM_END}"
)
_SAID_TO_BE = re.compile(
    rf"\b{_ARTICLE} (?P<kind>{_TERM})(?: {_MATH})? (?:is|are) said to be "
    rf"(?:(?P<article>an?) )?(?P<term>{_TERM}){_TERM_END}"
)
_WE_SAY = re.compile(
    rf"\b[Ww]e say that {_ARTICLE} (?P<kind>{_TERM})(?: {_MATH})? is "
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
    rf"(?:^|(?<=[.:!?])\s+){_ARTICLE} (?P<term>{_TERM})(?: {_MATH})?"
    rf"(?: of [^.]{{0,80}}?)? (?:is|are) (?:an?|the|defined|any)\b"
)
_OPENING_TEXT = re.compile(
    rf"(?:^|(?<=[.!?])\s+)An? (?P<term>{_TERM})(?: {_MATH})?"
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
    rf"(?:^|(?<=[.:;!?])\s+|\b{_ARTICLE} )(?P<term>{_TERM})(?: {_MATH})? "
    r"(?:generali[sz]es|(?:is|are) (?:an? |the )?(?:common |natural )?generali[sz]ations? of"
    r"|(?:is|are) (?:an? |the )?(?:special|particular) cases? of|follows? from|implies|imply) "
    rf"(?:the |an? )?(?P<other>{_TERM}){_TERM_END}"
)
_KEYWORDS = re.compile(
    r"\b(?:Key ?words(?: and phrases)?|Keywords)\s*[:.]\s*(?P<list>[^\n]{1,400}?)(?:\.\s|\.?$|\n)",
    re.IGNORECASE,
)

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
STATEMENT_KINDS = frozenset(
    {"theorem", "lemma", "proposition", "corollary", "definition", "conjecture"}
)


@functools.lru_cache(maxsize=1 << 16)
def clean_term(raw: str) -> str | None:
    """A candidate term trimmed of articles and stray math, or None when it is no concept."""
    term = " ".join(raw.replace("\n", " ").split()).strip(" ,.;:()[]{}'\"")
    term = re.sub(r"^(?:the|an?)\s+", "", term, flags=re.IGNORECASE)
    # Standalone math around the words goes ("$\\lambda$ a strict partition"); math
    # hyphenated onto a word stays ("$q$-binomial coefficient").
    term = re.sub(rf"^(?:{_MATH}\s+)+|(?:\s+{_MATH})+$", "", term).strip()
    if not term or len(term) > 80 or "$$" in term:
        return None
    words = words_of(term)
    if not 1 <= len(words) <= 6:
        return None
    if not any(len(word) >= 3 for word in words_of(re.sub(_MATH, " ", term))):
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
    return clean_term(name)


@functools.lru_cache(maxsize=1 << 16)
def statement_concept_name(kind: str, name: str) -> str | None:
    """The concept a named statement states, as a display name, or None.

    "Rogers–Ramanujan identities" stays as it is (its head noun says what it is); a bare
    name gets the statement kind: "Euler" -> "Euler's theorem", "Rogers–Ramanujan" (a
    lemma) -> "Rogers–Ramanujan lemma". Definitions name the defined term itself.
    """
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


def _chunk_containing(chunks: Sequence[Chunk], text: str) -> str:
    """The first chunk containing the start of ``text`` (a statement), or ""."""
    # Short, so that a paragraph break (a blank line in the chunk, a space in the
    # statement's text) rarely falls inside it.
    probe = " ".join(text.split())[:50]
    if len(probe) < 20:
        return ""
    for chunk in chunks:
        if probe in chunk.text:
            return chunk.chunk_id
    return ""


# Bump when the rules change what they find without this file changing (a data file, a
# dependency): the graph stage's per-paper cache is keyed by it (and by this code).
RULES_VERSION = 1


class RulesExtractor:
    """The default extractor: regular expressions over cleaned text; offline, deterministic.

    ``version`` marks it as cacheable: the same paper always gives the same extraction.
    """

    name = "rules"
    version = RULES_VERSION

    def extract(self, paper: PaperDocument) -> Extraction:
        found: list[ConceptCandidate] = []
        for statement in paper.statements:
            if statement.kind in STATEMENT_KINDS:
                found += _statement_concepts(statement, paper.chunks)

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


def _statement_concepts(statement: Statement, chunks: Sequence[Chunk]) -> list[ConceptCandidate]:
    """The concepts a definition defines, or the one a named theorem-like statement states."""
    chunk_id = _chunk_containing(chunks, statement.text)
    if statement.kind == "definition":
        terms = [_Term(statement.name, (), statement.text)] if statement.name else []
        terms += [*_definition_terms(statement.text), *_terms(statement.text)]
        # "It is also known as ..." in a definition names the term being defined.
        pronoun_aliases = tuple(m["alias"] for m in _PRONOUN_ALIAS.finditer(statement.text))
        candidates = []
        for found_term in terms:
            if found_term.raw == statement.name:
                term = clean_statement_name(found_term.raw)
            else:
                term = clean_term(found_term.raw)
            if term is None:
                continue
            candidates.append(
                ConceptCandidate(
                    display_name=term,
                    type=type_from_head(term, "definition"),
                    evidence="definition",
                    description=description_from(statement.text, term),
                    aliases=_clean_aliases((*found_term.aliases, *pronoun_aliases)),
                    defining_text=statement.text,
                    chunk_id=chunk_id,
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
        )
    ]


def _clean_aliases(raw_aliases: Iterable[str]) -> tuple[str, ...]:
    return tuple(alias for alias in (clean_term(raw) for raw in raw_aliases) if alias)


def _describe_by(sentence: str) -> str:
    return _shorten(sentence) if is_definitional(sentence) else ""


# -- relation patterns (corpus level) -------------------------------------------------

# In match form: lower-case words, single spaces, "|" at sentence ends.
# Searched for in the words between two consecutive mentions (match form: lower-case
# words, single spaces, "|" at sentence ends).
_RELATION_TRIGGERS = re.compile(
    r"(?<![a-z0-9])(?:"
    r"(?P<generalizes_backward>(?:is|are) (?:a |an |the )?(?:special|particular) cases? of"
    r"|(?:is|are) (?:a |an )?speciali[sz]ations? of|(?:is|are) (?:a |an )?restrictions? of)"
    r"|(?P<generalizes_forward>(?:is|are) (?:a |an |the )?(?:common |natural )?"
    r"generali[sz]ations? of|(?:is|are) (?:an? )?extensions? of|generali[sz]es|generali[sz]e"
    r"|speciali[sz]es to|reduces to)"
    r"|(?P<implies_backward>follows? (?:directly |immediately |easily )?from"
    r"|(?:is|are) implied by)"
    r"|(?P<implies_forward>implies|imply)"
    r"|(?P<instance>(?:is|are) (?:an? )?(?:examples?|instances?|kinds?|types?) of)"
    r"|(?P<instance_adjacent>is an?|are)"
    r")(?![a-z0-9])"
)
_NEGATIONS = frozenset({"not", "never", "no", "cannot", "neither", "nor"})
_MAX_GAP_WORDS = 2
# The longest trigger plus two words each side, generously.
_MAX_GAP_CHARS = 90


def _gap_ok(gap: str, max_words: int) -> bool:
    words = gap.split()
    return len(words) <= max_words and BARRIER not in words and not _NEGATIONS & set(words)


def find_relations(text: str, mentions: Sequence[Mention]) -> list[tuple[str, str, Relation]]:
    """Relations stated in ``text`` (match form) between the concepts in ``mentions``.

    A pattern counts when it stands between two consecutive mentions with at most two
    other words on either side, no sentence end and no negation in between ("X does not
    imply Y" is no edge). "X is a Y" is stricter (nothing else in between at all),
    because "is a" is everywhere. Returns ``(source, target, relation)`` with the
    relation's direction applied.
    """
    relations: list[tuple[str, str, Relation]] = []
    for left, right in itertools.pairwise(mentions):
        if left.key == right.key or right.start - left.end > _MAX_GAP_CHARS:
            continue
        gap = text[left.end : right.start]
        trigger = _RELATION_TRIGGERS.search(gap)
        if trigger is None:
            continue
        kind = trigger.lastgroup
        max_gap = 0 if kind == "instance_adjacent" else _MAX_GAP_WORDS
        if not (
            _gap_ok(gap[: trigger.start()], max_gap) and _gap_ok(gap[trigger.end() :], max_gap)
        ):
            continue
        if kind == "generalizes_forward":
            relations.append((left.key, right.key, "generalizes"))
        elif kind == "generalizes_backward":
            relations.append((right.key, left.key, "generalizes"))
        elif kind == "implies_forward":
            relations.append((left.key, right.key, "implies"))
        elif kind == "implies_backward":
            relations.append((right.key, left.key, "implies"))
        else:
            relations.append((left.key, right.key, "is_instance_of"))
    return relations
