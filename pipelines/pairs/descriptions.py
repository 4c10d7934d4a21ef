"""Descriptions written by people — slogans and citing sentences — as training pairs and as
the ``described`` evaluation set.

A statement is *held out* by a stable hash of its paper and label (:func:`statement_key`,
salted with :data:`STATEMENT_SALT`, at ``held_out_statement_fraction``, like a concept), so it stays
held out as the corpus grows; so is every statement of a held-out concept. The
slogan of a held-out statement and the sentences citing it become ``described`` queries
(relevant: the passage where the statement starts; not ranked: the passage the citing
sentence sits in, which holds the query's own words); every other statement's slogan and
citing sentences become training pairs (``slogan``, ``citing``) whose positive is the
passage where the statement starts — the unit retrieval ranks, heading included (trained on
the bare statement text, the model learned to rank "Lemma." passages below prose for
sentence queries: the described set lost 0.07 to 0.10 MRR@10 against its base). A sentence
citing a held-out statement is never a training anchor.

A description is used only when it reads as one (:func:`description_problem`): not empty,
not all math, no longer than ``max_description_chars``, with enough words of its own. Each
one left out is counted with its reason in ``metrics/data.json`` so nothing is dropped
silently. Pure functions.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pandas as pd

from pipelines.common.config import PairsParams
from pipelines.mathtext.concept_phrases import GENERIC_WORDS
from pipelines.mathtext.names import word_set
from pipelines.mathtext.passages import CITE_PLACEHOLDER, REF_PLACEHOLDER, PassageFinder
from pipelines.mathtext.refs import LabelIndex

DESCRIBED_SET = "described"
#: The statements a citing sentence may be a described query for: results. A sentence
#: citing a definition uses the term it defines rather than describing it.
RESULT_KINDS = frozenset({"theorem", "lemma", "proposition", "corollary"})
# Held-out statements are drawn apart from held-out concepts (another salt), by the same rule.
STATEMENT_SALT = "statement"

# -- cleaning a citing sentence ---------------------------------------------------------

_KINDS = (
    r"Lemma|Proposition|Theorem|Corollary|Definition|Remark|Example|Section|Subsection"
    r"|Chapter|Equation|Situation|Exercise|Conjecture|Claim|Step|Part|Item|Tag|Algorithm"
    r"|Construction|Observation|Notation|Assumption|Hypothesis|Condition|Formula|Table"
    r"|Figure|Appendix|Case|Fact|Diagram|Axiom"
)
_REF = re.escape(REF_PLACEHOLDER)
# A multi-part work's "see More on Algebra, Lemma [ref]": the part's title goes too.
_PART_TITLE = r"(?:[A-Z][A-Za-z\-]*(?:\s+(?:on\s+|of\s+|and\s+)?[A-Z][A-Za-z\-]*)*,\s*)"
# What introduces a reference as an aside: it leaves with the reference ("It follows from
# Lemma [ref] that ..." -> "It follows that ...", "Using [ref], we get" -> "We get").
_INTRODUCER = (
    r"[Ss]ee(?:\s+also)?|[Bb]y|cf\.?|[Ff]rom|[Uu]sing|[Aa]pplying|[Vv]ia|[Tt]hanks\s+to"
    r"|[Ii]n\s+view\s+of|[Ff]ollowing"
)
# "Lemma [ref]", "Lemmas [ref], [ref] and [ref]", "Properties [ref] -- [ref]".
_REFERENCES = (
    rf"(?:{_PART_TITLE}?(?:the\s+)?(?:(?:{_KINDS})s?|Corollaries|Properties)\s*)?{_REF}"
    rf"(?:\s*(?:,|and|or|,\s*and|--|\u2013|-)\s*(?:(?:{_KINDS})s?\s*)?{_REF})*"
)
# ... with what introduces them: "by Lemma [ref]", "see [ref]".
_REF_PHRASE = re.compile(rf"(?:\b(?:{_INTRODUCER})\s+)?{_REFERENCES}")
# "By [ref] and the pigeonhole principle, ...", "follows from Lemma [ref] and the fact
# that", "see [ref] and the discussion": here the introducer also introduces what follows
# "and", so it stays ("By the pigeonhole principle, ..."); removed with the reference it
# left "And the pigeonhole principle". Elsewhere "and" may join predicates ("is flat by
# [ref] and hence open"), and the introducer goes with the reference as before.
_KEEPS_ITS_OBJECT = (
    r"^\s*(?:By|Using|From|Applying|Via|Thanks\s+to|In\s+view\s+of|Following)"
    r"|\bfollow(?:s|ed|ing)?(?:\s+(?:immediately|directly|easily|readily))?\s+from"
    r"|\b(?:[Ss]ee(?:\s+also)?|cf\.)"
)
_REF_AND = re.compile(rf"({_KEEPS_ITS_OBJECT})\s+{_REFERENCES}\s+and\s+(?=[a-z$\\])")
_CITE_PHRASE = re.compile(
    rf"(?:\b(?:[Ss]ee(?:\s+also)?|cf\.?)\s+)?{re.escape(CITE_PLACEHOLDER)}"
    rf"(?:\s*,\s*{re.escape(CITE_PLACEHOLDER)})*"
)
_EMPTY_BRACKETS = re.compile(r"[(\[]\s*(?:[,;]\s*|and\s+|see\s+|also\s+)*[)\]]")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([,.;:!?)])")
_DOUBLED_PUNCTUATION = re.compile(r"([,;:])\s*([,;:.])")
_LEADING_JUNK = re.compile(r"^[\s,;:.)\-\u2013]+")
_MATH = re.compile(r"\$[^$]*\$")
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]+")
MIN_WORDS = 6  # words outside math a description needs
MIN_OWN_WORDS = 4  # ... of which neither generic ("result", "lemma") nor a function word
_FUNCTION_WORDS = word_set(
    """about above after again also among another because been before being below between
    both but can could does done each either every from further given have having hence here
    however into its itself just let may might more most must now once only other our over
    same shall should show shows shown since some such than that the their them then there
    therefore these they this those thus too under until upon use used uses using very was
    way were what when where whether which while who will with within without would yet
    see get gets got follows follow obtain obtained prove proved proves proof apply applied
    write thing things"""
)
MAX_MATH_SHARE = 0.6  # of its characters inside $…$
# Where a removed reference left a hole ("follows from and the fact", "defined in is",
# "shown in to characterize"): the sentence still trains, but as a query it reads as a
# fragment.
_HOLE = re.compile(
    r"\b(?:in|from|of|by|to|with|using|via|see|under|on)"
    r"(?:\s*(?:[.,;:)]|$)|\s+(?:and|is|are|to)\b)"  # "shown in to characterize"
)
# A reference phrase the sentence reads without: an aside ("by Lemma [ref]", "see [ref]",
# "from [ref]") or one inside brackets. Any other is a part of speech ("the hypotheses of
# [ref] hold", "Lemma [ref] shows that", "as in [ref]"), and removing it leaves a hole.
_ASIDE = re.compile(rf"(?:{_INTRODUCER})\s")
_PLACEHOLDERS = re.compile(rf"{_REF}|{re.escape(CITE_PLACEHOLDER)}")


# "Theorem [ref] shows that X": what follows is the authors' own words for the result.
_REF_SAYS = re.compile(
    rf"(?:\b(?:{_KINDS})s?\s+)?{_REF}\s+(?:(?:also|then|now)\s+)?"
    r"(?:shows?|states?|says?|asserts?|implies|guarantees?|tells\s+us|proves?|yields?)"
    r"\s+(?:that\s+)?"
)


def described_part(sentence: str) -> str:
    """What of ``sentence`` describes what it cites: after "Lemma [ref] shows that", the
    rest; else the whole."""
    match = _REF_SAYS.search(sentence)
    return sentence[match.end() :] if match else sentence


def reference_left_a_hole(sentence: str) -> bool:
    """Whether cleaning ``sentence`` (:func:`clean_citing_sentence`) leaves a fragment: a
    reference phrase that was a part of the sentence, or a preposition left dangling."""
    sentence = described_part(sentence)
    for match in _REF_PHRASE.finditer(sentence):
        if _ASIDE.match(match.group()):
            continue
        before = _PLACEHOLDERS.sub("", sentence[: match.start()])
        if before.count("(") + before.count("[") > before.count(")") + before.count("]"):
            continue
        return True
    return bool(_HOLE.search(clean_citing_sentence(sentence)))


def clean_citing_sentence(sentence: str) -> str:
    """The sentence without its reference and citation phrases and the brackets they leave:
    "Hence $B$ is finite over $A$ (Algebra, Lemma [ref])." -> "Hence $B$ is finite over $A$.";
    "Theorem [ref] shows that every $X$ is $Y$." -> "Every $X$ is $Y$." (:func:`described_part`);
    "By [ref] and the pigeonhole principle, ..." -> "By the pigeonhole principle, ...".
    """
    text = _REF_AND.sub(r"\1 ", described_part(sentence))
    text = _REF_PHRASE.sub("", text)
    text = _CITE_PHRASE.sub("", text)
    previous = None
    while previous != text:  # "(see (Lemma [ref]))" empties in two rounds
        previous = text
        text = _EMPTY_BRACKETS.sub("", text)
    text = _SPACE_BEFORE_PUNCTUATION.sub(r"\1", text)
    text = _DOUBLED_PUNCTUATION.sub(r"\2", text)
    text = _LEADING_JUNK.sub("", " ".join(text.split()))
    return text[:1].upper() + text[1:] if text else ""


def description_problem(text: str, max_chars: int) -> str | None:
    """Why ``text`` is no usable description (a counted reason), or None when it is one."""
    if not text.strip():
        return "empty"
    if len(text) > max_chars:
        return "too_long"
    math_chars = sum(len(match.group()) for match in _MATH.finditer(text))
    if math_chars > MAX_MATH_SHARE * len(text):
        return "mostly_math"
    words = _WORD.findall(_MATH.sub(" ", text))
    own = [
        word
        for word in words
        if len(word) > 2
        and word.lower() not in GENERIC_WORDS
        and word.lower() not in _FUNCTION_WORDS
    ]
    if len(words) < MIN_WORDS or len(own) < MIN_OWN_WORDS:
        return "too_few_words"
    return None


# -- held-out statements ----------------------------------------------------------------


def statement_key(paper_id: str, label: str, statement_id: str) -> str:
    """What a statement is held out by: its paper and label (stable across versions), or its
    id when it has no label."""
    return f"{paper_id}:{label}" if label else statement_id


def _query_id(text: str, target: str) -> str:
    digest = hashlib.sha256(f"{DESCRIBED_SET}:{target}:{text}".encode()).hexdigest()
    return "q" + digest[:12]


# -- the pairs and the set --------------------------------------------------------------


@dataclass(frozen=True)
class StatementInfo:
    """What descriptions need of the statements and their passages (built by the stage)."""

    text: Mapping[str, str]  # statement_id -> text
    kind: Mapping[str, str]  # statement_id -> its kind (theorem, lemma, definition …)
    paper: Mapping[str, str]  # statement_id -> paper_id
    first_passage: Mapping[str, str]  # statement_id -> the passage where it starts
    held_out: frozenset[str]  # statement ids held out (by hash, or as a held-out concept's)
    finders: Mapping[str, PassageFinder]  # paper_id -> its passages
    unseen_papers: frozenset[str]
    paper_of_chunk: Mapping[str, str]
    text_of_chunk: Mapping[str, str]
    reserved_passages: frozenset[str]  # passages that are never a positive (held out)
    labels: LabelIndex  # what a citing sentence's \ref resolves to (the paper structure's)

    def trainable_passage(self, statement_id: str) -> tuple[str, str] | None:
        """The passage where a statement starts, as ``(chunk_id, text)``: what a description
        of it is trained to find (the unit the evaluation ranks, heading and all), unless it
        is held out or the statement sits in no passage."""
        chunk_id = self.first_passage.get(statement_id, "")
        if not chunk_id or chunk_id in self.reserved_passages:
            return None
        return chunk_id, self.text_of_chunk[chunk_id]


@dataclass
class Descriptions:
    """Training candidates ``(anchor, positive, kind, concept, positive_id)``, the described
    queries and qrels, and what was left out, by reason."""

    pairs: list[tuple[str, str, str, str, str]] = field(default_factory=list)
    queries: list[tuple[str, str, str, str, list[str]]] = field(default_factory=list)
    qrels: list[tuple[str, str, int, bool]] = field(default_factory=list)
    left_out: Counter[str] = field(default_factory=Counter)
    found: Counter[str] = field(default_factory=Counter)


def build_descriptions(
    statements: pd.DataFrame,
    papers: pd.DataFrame,
    info: StatementInfo,
    params: PairsParams,
    rank: Callable[[str], bytes],
) -> Descriptions:
    """Slogan and citing-sentence pairs (training side) and the described set (held out).

    ``rank`` orders candidates by a stable hash (the stage's seeded digest). Tables built in
    code without the ``slogan`` or ``citing_*`` columns have no descriptions (the stage's
    reader requires them on disk).
    """
    out = Descriptions()
    # target statement -> candidate queries (rank, text, exclude)
    described: dict[str, list[tuple[bytes, str, list[str]]]] = defaultdict(list)
    citing_pairs: list[tuple[str, str, str, str, str]] = []

    slogans = statements["slogan"] if "slogan" in statements else [""] * len(statements)
    for statement_id, slogan in zip(statements["statement_id"], slogans, strict=True):
        if not slogan:
            continue
        out.found["slogans"] += 1
        problem = description_problem(slogan, params.max_description_chars)
        if problem is not None:
            out.left_out[f"slogan_{problem}"] += 1
            continue
        if statement_id in info.held_out:
            described[statement_id].append((rank(f"slogan:{statement_id}"), slogan, []))
        elif not params.slogan_pairs:
            out.left_out["slogan_pairs_off"] += 1
        elif info.paper[statement_id] in info.unseen_papers:
            out.left_out["slogan_unseen_paper"] += 1
        elif (passage := info.trainable_passage(statement_id)) is None:
            out.left_out["slogan_passage_not_trainable"] += 1
        else:
            out.pairs.append((slogan, passage[1], "slogan", statement_id, passage[0]))

    citing = (
        zip(papers["paper_id"], papers["citing_sentences"], papers["citing_labels"], strict=True)
        if {"citing_sentences", "citing_labels"} <= set(papers.columns)
        else iter(())
    )
    for paper_id, sentences, cited_labels in citing:
        for sentence, joined in zip(list(sentences), list(cited_labels), strict=True):
            out.found["citing_sentences"] += 1
            targets = list(
                dict.fromkeys(
                    target
                    for label in joined.split(",")
                    if (target := info.labels.resolve(paper_id, label)) is not None
                )
            )
            if not targets:
                out.left_out["citing_cites_no_statement"] += 1
                continue
            if len(targets) > params.max_cited_statements:
                out.left_out["citing_cites_too_many"] += 1
                continue
            text = clean_citing_sentence(sentence)
            problem = description_problem(text, params.max_description_chars)
            if problem is not None:
                out.left_out[f"citing_{problem}"] += 1
                continue
            held = [target for target in targets if target in info.held_out]
            if held:  # described queries only: never a training anchor
                source = (
                    info.finders[paper_id].holding(sentence) if paper_id in info.finders else ()
                )
                if not source:
                    out.left_out["citing_source_passage_not_found"] += 1
                    continue
                if reference_left_a_hole(sentence):
                    out.left_out["citing_reference_left_a_hole"] += 1
                    held = []  # no query, and (held out) no pair either
                for target in held:
                    if info.kind.get(target) not in RESULT_KINDS:
                        out.left_out["citing_describes_no_result"] += 1
                        continue
                    order = rank(f"citing:{target}:{text}")
                    described[target].append((order, text, list(source)))
                continue
            for target in targets:
                if info.paper[target] in info.unseen_papers:
                    out.left_out["citing_unseen_paper"] += 1
                    continue
                if (passage := info.trainable_passage(target)) is None:
                    out.left_out["citing_passage_not_trainable"] += 1
                    continue
                citing_pairs.append((text, passage[1], "citing", target, passage[0]))

    # A text that describes a held-out statement anywhere is no training anchor anywhere.
    held_texts = {text for candidates in described.values() for _o, text, _e in candidates}
    kept_pairs = [pair for pair in citing_pairs if pair[0] not in held_texts]
    out.left_out["citing_text_also_describes_held_out"] += len(citing_pairs) - len(kept_pairs)
    citing_pairs = kept_pairs
    out.pairs = [pair for pair in out.pairs if pair[0] not in held_texts]
    citing_pairs.sort(key=lambda pair: rank(f"citing-pair:{pair[3]}:{pair[0]}"))
    if len(citing_pairs) > params.max_citing_pairs:
        out.left_out["citing_over_max_citing_pairs"] += len(citing_pairs) - params.max_citing_pairs
    out.pairs += citing_pairs[: params.max_citing_pairs]
    _described_set(described, info, params, out)
    return out


def _described_set(
    described: Mapping[str, list[tuple[bytes, str, list[str]]]],
    info: StatementInfo,
    params: PairsParams,
    out: Descriptions,
) -> None:
    """At most ``described_per_statement`` queries per held-out statement (slogans first,
    then a stable draw of its citing sentences)."""
    seen_texts: set[str] = set()
    for target in sorted(described):
        relevant = info.first_passage.get(target, "")
        if not relevant:
            out.left_out["described_statement_not_in_a_passage"] += len(described[target])
            continue
        candidates = sorted(
            described[target], key=lambda item: (bool(item[2]), item[0])
        )  # slogans (nothing excluded) first
        kept = 0
        for _order, text, exclude in candidates:
            if kept >= params.described_per_statement:
                out.left_out["described_over_per_statement"] += 1
                continue
            if relevant in exclude:
                out.left_out["described_cites_from_its_own_passage"] += 1
                continue
            if text in seen_texts:
                out.left_out["described_duplicate_text"] += 1
                continue
            seen_texts.add(text)
            kept += 1
            query = _query_id(text, target)
            out.queries.append((query, target, text, DESCRIBED_SET, sorted(exclude)))
            unseen = info.paper_of_chunk[relevant] in info.unseen_papers
            out.qrels.append((query, relevant, 2, unseen))


def described_counts(descriptions: Descriptions) -> dict[str, object]:
    """The counts for ``metrics/data.json``: found, used, left out by reason."""
    by_kind = Counter(kind for _a, _p, kind, _c, _i in descriptions.pairs)
    return {
        "found": dict(sorted(descriptions.found.items())),
        "pairs": {kind: by_kind[kind] for kind in ("slogan", "citing")},
        "described_queries": len(descriptions.queries),
        "left_out": dict(sorted(descriptions.left_out.items())),
    }
