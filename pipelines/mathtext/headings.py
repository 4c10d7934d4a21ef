"""What a hit is, in words a reader takes in at a glance: "Lemma (snake lemma)", "From the
proof of Lemma (snake lemma)", or the section title of plain prose.

A statement's name is the one its author wrote in brackets (``\\begin{lemma}[Yoneda
lemma]``, the statements table's ``name``). Most statements have none (26 of the demo's
2,504), but nearly all have a label, and authors choose labels as names: Stacks writes
``lemma-snake`` for the snake lemma, ``theorem-B`` for Cartan's theorem B. So an unnamed
statement is named from its label (:func:`name_from_label`); such a name is marked as
derived, because it is the author's mnemonic, not a title.

Pure functions only; no I/O.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

import pandas as pd

from pipelines.mathtext.names import word_set
from pipelines.mathtext.statements import StatementRef

#: The kind of a passage that is only the proof of a statement, and of plain prose.
PROOF = "proof"
TEXT = "text"

#: Label prefixes that say a statement's kind, not its subject: Stacks writes
#: ``lemma-snake``, blueprints write ``lem:one-sided``, ``thm:main``, ``def:entropy``.
KIND_PREFIXES = word_set(
    """lemma lem theorem thm proposition prop corollary cor definition def defn remark
    rem example ex exercise situation conjecture conj claim fact notation hypothesis
    assumption"""
)
#: The kinds whose one-word names take the kind after them ("snake lemma").
NAMED_RESULTS = word_set("lemma theorem proposition corollary conjecture claim")
#: Words that start a hyphenated compound: ``quasi-coherent``, ``pseudo-coherent``.
COMPOUND_PREFIXES = word_set("quasi pseudo semi non anti multi sub")
#: Last words that only tell two labels apart (``lemma-foo-bis``, ``lemma-foo-2``).
DISAMBIGUATORS = re.compile(r"(bis|ter|again|alt|variant|[0-9]+)", re.IGNORECASE)
#: Endings of adjectives: a one-word label that is one ("flat", "artinian") names no
#: lemma ("the artinian lemma"), so the kind is not added to it.
ADJECTIVE_ENDINGS = tuple(sorted(word_set("able ible ive al ian ic ous ed ful less")))
ADJECTIVES = word_set(
    """flat pure perfect simple free normal proper smooth open closed finite local
    reduced dense exact affine compact complete"""
)
LABEL_SEPARATORS = re.compile(r"[-_:\s]+")
#: A label that is only a few letters and a number (``eq3588``, ``thm1``, ``T12a``): a
#: counter, not words a reader could call the result by.
NUMBERED = re.compile(r"[A-Za-z]{1,4}[0-9]+[a-z]?")
# A Lean declaration (``NumberField.AdeleRing.cocompact``): a label, not words.
LEAN_NAME = re.compile(r"^[A-Za-z_][\w']*(\.[\w']+)+$")


@dataclass(frozen=True)
class Name:
    """A statement's name and where it came from: ``derived`` when made from its label."""

    text: str
    derived: bool = False


@functools.lru_cache(maxsize=1 << 16)  # a corpus asks for the same labels again and again
def name_from_label(label: str, kind: str = "") -> str:
    """A name made of ``label``'s words, or "" when they make none.

    The kind prefix goes (``lemma-``, ``thm:``); separators (``-``, ``_``, ``:``) become
    spaces; a last word that only tells labels apart goes (``-bis``, ``-2``); a hyphen is
    kept where mathematics writes one: after one letter or digit (``K-flat``,
    ``2-category``), after ``quasi``/``pseudo``/..., and between two capitalised names
    (``Artin-Schreier``). When the label says its kind and one word is left, the name of
    a result takes its kind: ``lemma-snake`` -> "snake lemma", ``theorem-B`` -> "theorem
    B"; not after an adjective or a plural (``lemma-flat`` -> "flat", ``lemma-products``
    -> "products"). The label's letter case is kept. A Lean declaration name
    (``Foo.bar_baz``), a label of digits and a counter (``eq3588``, ``thm1``) make no name."""
    label = label.strip()
    if not label or LEAN_NAME.match(label):
        return ""
    words = [word for word in LABEL_SEPARATORS.split(label) if word]
    prefixed = bool(words) and words[0].lower() in KIND_PREFIXES
    if prefixed:
        words = words[1:]
    while len(words) > 1 and DISAMBIGUATORS.fullmatch(words[-1]):
        words = words[:-1]
    kind = kind.lower()
    # Only a label that says its kind is a name chosen for the result: a bare "key" or
    # "rot" (blueprints) is an abbreviation, not "the key lemma".
    if prefixed and len(words) == 1 and kind in NAMED_RESULTS:
        word = words[0]
        if _is_symbol(word):
            return f"{kind} {word}"  # theorem-B: Cartan's theorem B; lemma-H0
        if _names_a_result(word, kind):
            return f"{word} {kind}"  # lemma-snake: the snake lemma
    if not any(sum(letter.isalpha() for letter in word) >= 2 for word in words):  # or none
        return ""  # "7111", "a-1": nothing a reader could call it
    if not prefixed and len(words) == 1 and NUMBERED.fullmatch(words[0]):
        return ""  # "eq3588", "thm1": a counter (after a kind, as "lemma-g1d", a chosen name)
    return _joined(words)


def statement_name(ref: StatementRef) -> Name:
    """The author's bracketed name, else one made from the label (:func:`name_from_label`)."""
    if ref.name.strip():
        return Name(" ".join(ref.name.split()))
    derived = name_from_label(ref.label, ref.kind)
    return Name(derived, derived=bool(derived))


def kind_title(kind: str) -> str:
    """ "lemma" -> "Lemma"."""
    return kind[:1].upper() + kind[1:]


def titled(kind: str, name: str) -> str:
    """ "Lemma (snake lemma)"; "Lemma" without a name."""
    return kind_title(kind) + (f" ({name})" if name else "")


def statement_heading(ref: StatementRef) -> str:
    """ "Lemma (snake lemma)", or "Lemma" when it has no name; "From the proof of Lemma
    (snake lemma)" when the passage holds only its proof."""
    heading = titled(ref.kind or "statement", statement_name(ref).text)
    return f"From the proof of {heading}" if ref.holds == "proof" else heading


def primary_statement(statements: tuple[StatementRef, ...]) -> StatementRef | None:
    """The statement a passage is shown as: the first that starts in it, else the first
    whose text goes on in it, else the first whose proof it holds; ``None`` for prose."""
    for holds in ("start", "rest", "proof"):
        for ref in statements:
            if ref.holds == holds:
                return ref
    return None


def hit_kind(statement: StatementRef | None) -> str:
    """The statement's kind; "proof" for a passage holding only a proof; "text" for prose."""
    if statement is None:
        return TEXT
    return PROOF if statement.holds == "proof" else statement.kind


def hit_heading(statement: StatementRef | None, section: str) -> str:
    """The statement's heading, or the section title of prose ("Text" without one)."""
    if statement is None:
        return " ".join(section.split()) or kind_title(TEXT)
    return statement_heading(statement)


#: The most characters a header takes of a name, a label and a section title: a real one
#: is far shorter (the demo's longest: 45, 64, 62), and a hostile paper's 10 KB title
#: must not push the passage out of what the model reads.
HEADER_PART_CHARS = 160


def search_header(statement: StatementRef | None, section: str) -> str:
    """What retrieval reads before a passage's text so a statement is found by what it is
    called: the heading of the statement the passage is shown as (:func:`statement_heading`:
    "From the proof of ..." for a passage holding only its proof), the label's words where
    the name does not already hold them, and the section title, each cut to
    :data:`HEADER_PART_CHARS` at a word; "" for prose (no statement).

    ``lemma-snake`` in section "Abelian categories" gives "Lemma (snake lemma). Abelian
    categories.\\n\\n"."""
    if statement is None:
        return ""
    statement = replace(statement, name=_bounded(statement.name), label=_bounded(statement.label))
    parts = [statement_heading(statement)]
    label_words = name_from_label(statement.label)
    named = statement_name(statement).text.lower()
    if label_words and not set(label_words.lower().split()) <= set(named.split()):
        parts.append(label_words)
    if section.strip():
        parts.append(_bounded(section))
    return ". ".join(parts) + ".\n\n"


def _bounded(text: str) -> str:
    flat = " ".join(text.split())
    if len(flat) <= HEADER_PART_CHARS:
        return flat
    cut = flat[:HEADER_PART_CHARS]
    return cut.rsplit(" ", 1)[0] if " " in cut else cut


def search_texts(
    chunks: pd.DataFrame, statements: Mapping[str, tuple[StatementRef, ...]]
) -> list[str]:
    """Per passage (``chunks``' rows, in order), the text evaluate scores and search embeds
    and indexes: :func:`search_header` of the statement it is shown as
    (:func:`primary_statement` of ``statements``, :func:`~pipelines.mathtext.statements.
    statements_by_passage`), then its text. One function for both, so the gate measures
    the text users search."""
    sections = chunks["section"] if "section" in chunks.columns else pd.Series("", chunks.index)
    return [
        search_header(primary_statement(statements.get(chunk_id, ())), section) + text
        for chunk_id, section, text in zip(
            chunks["chunk_id"].astype(str),
            sections.fillna("").astype(str),
            chunks["text"].astype(str),
            strict=True,
        )
    ]


def _joined(words: list[str]) -> str:
    joined = words[0]
    for before, word in zip(words, words[1:], strict=False):
        hyphen = (
            len(before) == 1
            or before.lower() in COMPOUND_PREFIXES
            or _is_capitalised_name(before)
            and _is_capitalised_name(word)
        )
        joined += ("-" if hyphen else " ") + word
    return joined


def _is_capitalised_name(word: str) -> bool:
    return len(word) > 1 and word[0].isupper() and word[1:].islower()


def _is_symbol(word: str) -> bool:
    # "B", "H0", "E8": a letter, maybe with a digit, as results are numbered by
    return (
        len(word) == 1
        and word.isalpha()
        or (len(word) <= 3 and word[0].isupper() and any(char.isdigit() for char in word))
    )


def _names_a_result(word: str, kind: str) -> bool:
    # "snake", "Yoneda", "NAK" do; "flat", "artinian" (adjectives) and "products" (a
    # plural) do not: "the flat lemma" is no lemma's name.
    lower = word.lower()
    if not word.isalpha() or lower == kind or lower in ADJECTIVES:
        return False
    plural = lower.endswith("s") and not lower.endswith(("ss", "us", "is"))
    return not plural and not lower.endswith(ADJECTIVE_ENDINGS)
