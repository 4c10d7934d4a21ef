"""The registered model's ``README.md`` beyond the card: its examples and its limitations.

sentence-transformers fills the card's widget and usage examples with the shortest training
pairs, and those include the ``masked_name`` pairs, whose passages read "We say the action
is it if…". :func:`pick_examples` takes them from the evaluation set instead: a described
query and a named one, each with a passage that answers it, straight from the corpus (a
named query's passage must contain its name, so it cannot be a masked text).

The library's card also leaves "Out-of-Scope Use", "Bias, Risks and Limitations" and
"Recommendations" as empty comments; :func:`limitation_sections` writes them from what this
run knows (:class:`RunFacts`: the corpus, the training pairs, the training steps and the
sets evaluated), and :func:`finish_readme` puts both into the README text.
:func:`read_run_facts` is the shell that reads them from the project's files.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import yaml

from pipelines.common.paths import Paths
from pipelines.common.tables import QUERY_SETS, TABLES
from pipelines.mathtext.masking import names_in

#: The order examples are taken in: people's own words first, then a concept's name.
EXAMPLE_SETS = ("described", "named")
#: The most examples the widget shows; each lists every example's passage.
MAX_EXAMPLES = 3
#: A passage longer than this is cut (at a word) in an example.
MAX_EXAMPLE_CHARS = 400
#: The project's measurement, outside the pipeline, of what this evaluation cannot see.
TRANSFER_RISK = (
    "Measured outside the pipeline, models fine-tuned by this project have scored below "
    "their base model on papers, formats and descriptions they were not tuned on (issue 27: "
    "real arXiv papers, research theorems described by mathematicians)."
)


@dataclass(frozen=True)
class Example:
    """A query of the evaluation set and a passage that answers it."""

    query: str
    query_set: str
    passage: str


@dataclass(frozen=True)
class RunFacts:
    """What a run knows about the data and training behind a model."""

    base_model: str
    examples: Sequence[Example] = ()
    papers: int | None = None
    categories: Sequence[str] = ()
    passages: int | None = None
    pairs_by_kind: Mapping[str, int] = field(default_factory=dict)
    steps: int | None = None
    epochs: float | None = None
    device: str | None = None
    queries_by_set: Mapping[str, int] = field(default_factory=dict)


# --------------------------------------------------------------------------- examples


def pick_examples(
    queries: pd.DataFrame, qrels: pd.DataFrame, chunks: pd.DataFrame
) -> list[Example]:
    """Up to :data:`MAX_EXAMPLES` clean examples: per set of :data:`EXAMPLE_SETS` in turn,
    the query whose best-graded passage is shortest (a named query's passage must name it);
    never a masked text."""
    text_of = dict(zip(chunks["chunk_id"], chunks["text"], strict=True))
    best = qrels.sort_values("grade", ascending=False, kind="stable")
    candidates: dict[str, list[Example]] = {query_set: [] for query_set in EXAMPLE_SETS}
    if "set" not in queries:  # the tables from before the sets: every query is named
        queries = queries.assign(set="named")
    for query in queries.itertuples(index=False):
        query_set = str(query.set)
        if query_set not in candidates:  # masked is no stored set: never a masked text
            continue
        for chunk_id in best.loc[best["query_id"] == query.query_id, "chunk_id"]:
            passage = text_of.get(chunk_id)
            if passage and (query_set != "named" or names_in(passage, str(query.text))):
                candidates[query_set].append(Example(str(query.text), query_set, passage))
                break
    for found in candidates.values():
        found.sort(key=lambda example: (len(example.passage), example.query))
    picked: list[Example] = []
    while len(picked) < MAX_EXAMPLES and any(candidates.values()):
        for query_set in EXAMPLE_SETS:
            if candidates[query_set] and len(picked) < MAX_EXAMPLES:
                picked.append(candidates[query_set].pop(0))
    return picked


def _shown(text: str) -> str:
    text = " ".join(text.split())
    if len(text) <= MAX_EXAMPLE_CHARS:
        return text
    return text[:MAX_EXAMPLE_CHARS].rsplit(" ", 1)[0] + " …"


def widget(examples: Sequence[Example]) -> list[dict[str, Any]]:
    """The Hub widget's entries: each query against every example's passage, its own first."""
    passages = [_shown(example.passage) for example in examples]
    return [
        {
            "source_sentence": example.query,
            "sentences": [passages[index], *passages[:index], *passages[index + 1 :]],
        }
        for index, example in enumerate(examples)
    ]


def _with_widget(readme: str, examples: Sequence[Example]) -> str:
    """The front matter's ``widget:`` block replaced (or added) with ``examples``'."""
    match = re.match(r"---\n(.*?\n)---\n", readme, flags=re.S)
    if match is None or not examples:
        return readme
    front = re.sub(r"^widget:\n(?:[ \-].*\n)*", "", match.group(1), flags=re.M)
    block = yaml.safe_dump(
        {"widget": widget(examples)}, sort_keys=False, allow_unicode=True, width=10_000
    )
    return f"---\n{front}{block}---\n" + readme[match.end() :]


def _listed(texts: Sequence[str]) -> str:
    return "\n".join(f"    {json.dumps(text, ensure_ascii=False)}," for text in texts)


def _with_usage(readme: str, examples: Sequence[Example]) -> str:
    """The usage snippet's texts: the first example's query, then example passages, as
    many as the snippet had (its printed shapes stay true). Both of the library's forms: a
    ``queries``/``documents`` pair (a retrieval model's) or one ``sentences`` list."""
    if not examples:
        return readme
    passages = [_shown(example.passage) for example in examples]
    pair = re.search(r"(queries = \[\n)(.*?)(\n\]\ndocuments = \[\n)(.*?)(\n\])", readme, re.S)
    if pair is not None:
        n_documents = len(pair.group(4).splitlines())
        if len(passages) < n_documents:
            return readme
        listed = (
            pair.group(1)
            + _listed([examples[0].query])
            + pair.group(3)
            + _listed(passages[:n_documents])
            + pair.group(5)
        )
        return readme[: pair.start()] + listed + readme[pair.end() :]
    single = re.search(r"(sentences = \[\n)(.*?)(\n\])", readme, re.S)
    if single is None:
        return readme
    texts = [examples[0].query, *passages][: len(single.group(2).splitlines())]
    if len(texts) < len(single.group(2).splitlines()):
        return readme
    listed = single.group(1) + _listed(texts) + single.group(3)
    return readme[: single.start()] + listed + readme[single.end() :]


# --------------------------------------------------------------------------- limitations


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _corpus(facts: RunFacts) -> str:
    parts = []
    if facts.papers is not None:
        parts.append(_count(facts.papers, "paper"))
    if facts.passages is not None:
        parts.append(_count(facts.passages, "passage"))
    corpus = " and ".join(parts) or "an unrecorded corpus"
    if len(facts.categories) == 1:
        return f"{corpus}, all in one arXiv category ({facts.categories[0]})"
    if facts.categories:
        return (
            f"{corpus} in {len(facts.categories)} arXiv categories ({', '.join(facts.categories)})"
        )
    return corpus


def _training(facts: RunFacts) -> str:
    pairs = sum(facts.pairs_by_kind.values())
    kinds = ", ".join(
        f"{kind} {n:,}"
        for kind, n in sorted(facts.pairs_by_kind.items(), key=lambda item: -item[1])
        if n
    )
    steps = f"{facts.steps:,} steps" if facts.steps is not None else "an unrecorded number of steps"
    epochs = f" ({facts.epochs:.2f} passes over the pairs)" if facts.epochs is not None else ""
    device = f" on {facts.device}" if facts.device else ""
    masked = facts.pairs_by_kind.get("masked_name", 0)
    masked_note = (
        f" {_count(masked, 'pair')} ({masked / pairs:.0%}) are a name against its defining "
        'passage with the name replaced by "it": the model learns to read such text.'
        if pairs and masked
        else ""
    )
    kinds = kinds or "no kinds recorded"
    return (
        f"Trained {steps}{epochs}{device} on {_count(pairs, 'pair')} ({kinds}) drawn from that "
        f"corpus alone.{masked_note}"
    )


def _evaluation(facts: RunFacts) -> str:
    sets = ", ".join(f"{name} {n:,}" for name, n in facts.queries_by_set.items())
    seen = f" ({sets} queries)" if sets else ""
    if "transfer" in facts.queries_by_set:
        return f"Evaluated on the project's sets{seen}, a transfer set among them."
    return (
        f"Evaluated only on held-out concepts and statements of the same corpus{seen}: no set "
        f"from papers or text outside it. {TRANSFER_RISK}"
    )


def limitation_sections(facts: RunFacts) -> dict[str, str]:
    """The card's "Out-of-Scope Use", "Bias, Risks and Limitations" and "Recommendations"
    sections (heading -> markdown), from ``facts``."""
    return {
        "Out-of-Scope Use": (
            "Retrieval of passages of English mathematics papers (LaTeX source) by a concept's "
            "name or a description of a result. Not evaluated as a general-purpose sentence "
            "encoder, on other languages, or on mathematics outside "
            f"{_corpus(facts)}."
        ),
        "Bias, Risks and Limitations": "\n".join(
            f"- {line}"
            for line in (
                f"Corpus: {_corpus(facts)}.",
                _training(facts),
                _evaluation(facts),
            )
        ),
        "Recommendations": (
            f"Before using it on other papers, score it against its base model "
            f"(`{facts.base_model}`) on queries from those papers; where it does not beat the "
            "base there, use the base. `mathembed promote` compares the two on every "
            "evaluation set each night."
        ),
    }


def _with_limitations(readme: str, sections: Mapping[str, str]) -> str:
    """sentence-transformers' commented-out placeholders replaced by ``sections``."""
    for heading, body in sections.items():
        pattern = re.compile(rf"<!--\n(#+) {re.escape(heading)}\n.*?-->", re.S)
        match = pattern.search(readme)
        if match is not None:
            written = f"{match.group(1)} {heading}\n\n{body}"
            readme = readme[: match.start()] + written + readme[match.end() :]
    return readme


def finish_readme(readme: str, facts: RunFacts) -> str:
    """``readme`` with clean examples and the limitation sections written."""
    readme = _with_widget(readme, facts.examples)
    readme = _with_usage(readme, facts.examples)
    return _with_limitations(readme, limitation_sections(facts))


# --------------------------------------------------------------------------- the shell


def _read_json(path: Any) -> dict[str, Any]:
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _read_table(paths: Paths, name: str, columns: list[str]) -> pd.DataFrame | None:
    """``columns`` of a validated table, those it has (a table from before a column was
    added reads without it); None without the file."""
    import pyarrow.parquet as pq  # type: ignore[import-untyped]  # pyarrow ships no types

    path = TABLES[name].validated_path(paths)
    if not path.is_file():
        return None
    present = [column for column in columns if column in pq.read_schema(path).names]
    return pd.read_parquet(path, columns=present)


def _set_order(name: str) -> tuple[int, str]:
    return (QUERY_SETS.index(name) if name in QUERY_SETS else len(QUERY_SETS), name)


def read_run_facts(paths: Paths, base_model: str) -> RunFacts:
    """:class:`RunFacts` from ``metrics/data.json``, ``metrics/train.json`` and the
    validated tables; what is missing is left out, not guessed."""
    data = _read_json(paths.metric_file("data"))
    train = _read_json(paths.metric_file("train"))
    queries = _read_table(paths, "queries", ["query_id", "text", "set"])
    qrels = _read_table(paths, "qrels", ["query_id", "chunk_id", "grade"])
    chunks = _read_table(paths, "chunks", ["chunk_id", "text"])
    papers = _read_table(paths, "papers", ["primary_category"])
    examples = (
        pick_examples(queries, qrels, chunks)
        if queries is not None and qrels is not None and chunks is not None
        else []
    )
    evaluated = _read_json(paths.metric_file("eval")).get("sets", {})
    return RunFacts(
        base_model=base_model,
        examples=examples,
        papers=len(papers) if papers is not None else data.get("papers"),
        categories=sorted(set(papers["primary_category"]))
        if papers is not None and "primary_category" in papers
        else (),
        passages=len(chunks) if chunks is not None else data.get("chunks"),
        pairs_by_kind=dict(data.get("pairs", {}).get("by_kind", {})),
        steps=train.get("steps"),
        epochs=train.get("epochs"),
        device=train.get("device"),
        queries_by_set={
            name: int(evaluated[name]["n_queries"])
            for name in sorted(evaluated, key=_set_order)
            if isinstance(evaluated[name], dict) and evaluated[name].get("n_queries")
        },
    )
