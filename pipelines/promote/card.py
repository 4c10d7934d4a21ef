"""The model card: the decision first, the scores against the base model and the champion
with the evaluation set described, the base model, the training data with its hash, and
how to load the model. Pure markdown from :class:`CardFacts`.

The same card is the registered version's description, the run's description
(``mlflow.note.content``) and, by :func:`model_readme`, a section of the ``README.md``
inside the logged model (sentence-transformers' own card, written at train time, follows it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pipelines.promote.decision import Decision
from pipelines.registry.metric_records import UNRECORDED, SetFigures
from pipelines.registry.reporting import format_delta, format_p_value, format_score, metric_label

#: What each ``pairs.qrels_scope`` counts as relevant (see pipelines/pairs/evaluation.py).
RELEVANCE_RULES = {
    "defining": "graded: the passage that defines or states the concept (2) and the "
    "passages citing that statement by \\ref (1)",
    "unnamed": "the passages of the concept's papers that never name it (nor an alias)",
    "papers": "every passage of the concept's papers",
    "mentions": "the passages the graph found mentioning the concept",
}
#: Marks the section :func:`model_readme` writes, so a second pass replaces it.
README_BEGIN = "<!-- mathembed:card -->"
README_END = "<!-- /mathembed:card -->"


@dataclass(frozen=True)
class CardFacts:
    """What the card states; the shell gathers it from the decision and the project files."""

    registered_model: str
    fingerprint: str
    decision: Decision
    #: Each set's figures, the deciding set first.
    figures: tuple[SetFigures, ...]
    compared_version: str | None
    relevance_scope: str
    base_model: str
    training_data_hash: str | None
    pairs: int | None = None
    pairs_dvc_md5: str | None = None
    eval_dvc_md5: str | None = None
    corpus_passages: int | None = None
    test_method: str = ""
    significance_metric: str = ""
    git_commit: str = "unknown"
    training_params: Mapping[str, Any] = field(default_factory=dict)


def decision_line(facts: CardFacts, version: str | None = None) -> str:
    """One sentence: what happened and the headline numbers."""
    decision = facts.decision
    name = f"{facts.registered_model} v{version}" if version else facts.registered_model
    against = (
        f"champion v{facts.compared_version}"
        if decision.compared_against == "champion"
        else "the base model"
    )
    first = next(iter(decision.deltas), None)
    where = "" if decision.query_set == UNRECORDED else f" on the {decision.query_set} set"
    numbers = (
        f"{where}: {metric_label(first)} {format_score(decision.candidate[first])} vs "
        f"{format_score(decision.other[first])} "
        f"({format_delta(decision.deltas[first])}{_p(decision)})"
        if first is not None
        else ""
    )
    if decision.promote:
        return f"Promoted {name} to @champion over {against}{numbers}"
    return f"Not promoted: {name} loses to {against}{numbers}"


def model_card(facts: CardFacts, version: str | None = None) -> str:
    """The markdown card (see the module docstring)."""
    decision = facts.decision
    champion = any(found.champion is not None for found in facts.figures)
    header = "| query set | queries | metric | candidate | base model |" + (
        f" champion v{facts.compared_version} |" if champion else ""
    )
    rule = "| --- | --- | --- | --- | --- |" + (" --- |" if champion else "")
    rows = []
    for found in facts.figures:  # every number in a row is on that row's set
        for metric, value in found.candidate.items():
            cells = [
                found.query_set,
                str(found.queries),
                metric_label(metric),
                format_score(value),
                _versus(value, found.base.get(metric)),
            ]
            if champion:
                cells.append(_versus(value, (found.champion or {}).get(metric)))
            rows.append("| " + " | ".join(cells) + " |")
    deciding = facts.figures[0] if facts.figures else None
    queries = (
        f"the {deciding.queries} held-out queries of the {deciding.query_set} set (it "
        "decided), then each other set's"
        if deciding is not None
        else "the held-out queries"
    )
    alias = "champion" if decision.promote else "challenger"
    load_uri = (
        f"models:/{facts.registered_model}/{version}"
        if version
        else f"models:/{facts.registered_model}@{alias}"
    )
    sets = ", ".join(f"{found.query_set} ({found.queries} queries)" for found in facts.figures)
    relevance = RELEVANCE_RULES.get(facts.relevance_scope, facts.relevance_scope)
    corpus = f" over {facts.corpus_passages} passages" if facts.corpus_passages is not None else ""
    pairs = f"{facts.pairs} pairs" if facts.pairs is not None else "pairs"
    significance = (
        f"; paired {facts.test_method} test on per-query {metric_label(facts.significance_metric)}"
        if facts.test_method and decision.p_value is not None
        else ""
    )
    training = ", ".join(f"`{key}={value}`" for key, value in sorted(facts.training_params.items()))
    return f"""**{decision_line(facts, version)}**

{decision.reason}

## Scores

Mean over {queries}{significance}; in brackets: candidate minus that model on the
same set.

{header}
{rule}
{chr(10).join(rows)}

## Evaluation set

- Query sets: {sets}; the queries are about held-out concepts: concepts whose names,
  aliases and descriptions were never training anchors{corpus}.
- Relevant passages (`pairs.qrels_scope = {facts.relevance_scope}`): {relevance}.
- Data: `data/validated/` queries, qrels and chunks (DVC md5 `{facts.eval_dvc_md5 or "n/a"}`).

## Model

- Base model: `{facts.base_model}`, fine-tuned with sentence-transformers by mathembed.
- Training data: {pairs} from `data/validated/pairs.parquet` (DVC md5
  `{facts.pairs_dvc_md5 or "n/a"}`; data hash `{facts.training_data_hash or "unknown"}`).
- Trained with: {training or "(not recorded)"}.
- Fingerprint `{facts.fingerprint}`, git commit `{facts.git_commit}`.

## How to load

```python
import mlflow

model = mlflow.sentence_transformers.load_model("{load_uri}")
embeddings = model.encode(["Riemann zeta function"])  # float32, one row per text
```

Intended for retrieving passages of mathematics papers by concept name or description;
not evaluated as a general-purpose sentence encoder.
"""


def model_readme(original: str | None, card: str) -> str:
    """``README.md`` of the logged model: front matter kept, the card first, then the rest.

    ``original`` is the README train wrote (sentence-transformers' own card); a section
    written by an earlier pass is replaced, not repeated.
    """
    text = original or ""
    text = re.sub(
        rf"\n?{re.escape(README_BEGIN)}.*?{re.escape(README_END)}\n?", "\n", text, flags=re.S
    )
    front_matter = ""
    match = re.match(r"---\n.*?\n---\n", text, flags=re.S)
    if match:
        front_matter, text = match.group(0), text[match.end() :]
    section = f"{README_BEGIN}\n# mathembed\n\n{card.strip()}\n{README_END}\n"
    return f"{front_matter}{section}\n{text.lstrip()}".rstrip() + "\n"


def _versus(candidate: float, other: float | None) -> str:
    return "n/a" if other is None else f"{format_score(other)} ({format_delta(candidate - other)})"


def _p(decision: Decision) -> str:
    return "" if decision.p_value is None else f", {format_p_value(decision.p_value)}"
