"""The demo's figures, written from the records of its run (``metrics/*.json``), one source
for the README and the docs.

Every number shown about the demo (how many passages, statements, concepts; how long
training took; each evaluation set's MRR@10 for the candidate, the base model and BM25, the
gain and the paired test's p; what promote decided) is read here from the files the run
wrote, through their typed readers (:mod:`pipelines.registry.metric_records`) where they
have one, and written with the project's one rule for numbers
(:mod:`pipelines.registry.reporting`: scores to four decimals, p-values to two significant
digits). The rendering functions are pure: records in, Markdown out.

- The docs: a page's ``<!-- generated: demo-figures -->`` line is replaced at build time
  (:mod:`mathembed_docs`), so ``make docs`` shows what the records say now.
- The README, which GitHub shows as it is committed: its block between
  ``<!-- figures:demo -->`` and ``<!-- /figures:demo -->`` is written by
  ``.venv/bin/python docs/hooks/record_figures.py --write``, and
  ``tests/unit/test_record_figures.py`` fails when it differs from what the records give.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.common.tables import QUERY_SETS
from pipelines.registry.metric_records import EvalRecord, PromotionRecord
from pipelines.registry.reporting import (
    PROMOTED,
    format_delta,
    format_p_value,
    format_score,
    metric_label,
)

#: The width prose is wrapped at, as the README and the pages are written.
WIDTH = 90
REPO = Path(__file__).resolve().parents[2]
METRICS = REPO / "metrics"
README = REPO / "README.md"
#: The command that rewrites the README's figure blocks (what the drift test tells).
WRITE_COMMAND = ".venv/bin/python docs/hooks/record_figures.py --write"
#: The metric of the results table (the gate's significance metric).
TABLE_METRIC = "mrr@10"
#: The table's rows: the candidate against these, in this order (eval.json's row names).
COMPARED = (("base", "base model"), ("bm25", "BM25"))


# --------------------------------------------------------------------------- the records


@dataclass(frozen=True)
class DemoRecords:
    """What the figures are read from: ``eval.json`` and ``promotion.json`` through their
    typed readers, and the stage counts of ``prepare.json``, ``graph.json``, ``data.json``
    and ``train.json`` (plain counts: the stages write them, no reader types them)."""

    evaluation: EvalRecord
    promotion: PromotionRecord | None
    prepare: Mapping[str, Any]
    graph: Mapping[str, Any]
    data: Mapping[str, Any]
    train: Mapping[str, Any]


def _json(path: Path) -> dict[str, Any]:
    loaded = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(loaded, dict):
        raise ValueError(f"{path}: not a JSON object")
    return loaded


def read_records(metrics: Path = METRICS) -> DemoRecords:
    """The records in ``metrics`` (the only function here that reads files)."""
    promotion = metrics / "promotion.json"
    return DemoRecords(
        evaluation=EvalRecord.from_json(_json(metrics / "eval.json")),
        promotion=PromotionRecord.from_json(_json(promotion)) if promotion.is_file() else None,
        prepare=_json(metrics / "prepare.json"),
        graph=_json(metrics / "graph.json"),
        data=_json(metrics / "data.json"),
        train=_json(metrics / "train.json"),
    )


# --------------------------------------------------------------------------- the figures


def count(value: object) -> str:
    """A count as people read it: ``4,200``."""
    return f"{int(value):,}" if isinstance(value, int | float) else "n/a"


def _seconds(value: object) -> str:
    return f"{float(value):.0f} s" if isinstance(value, int | float) else "n/a"


def _path(data: object, *keys: str) -> object:
    """``data[keys[0]][keys[1]]…``; None where a key is missing."""
    for key in keys:
        data = data.get(key) if isinstance(data, Mapping) else None
    return data


def corpus_sentence(records: DemoRecords) -> str:
    """What the corpus gave and how training went, in one sentence."""
    prepare, graph, data, train = records.prepare, records.graph, records.data, records.train
    pairs = _path(train, "n_pairs", "train")
    return (
        f"{count(prepare.get('papers_in'))} papers give {count(prepare.get('chunks'))} "
        f"passages, {count(prepare.get('statements'))} statements, "
        f"{count(graph.get('concepts'))} concepts and "
        f"{count(_path(data, 'descriptions', 'found', 'citing_sentences'))} citing sentences; "
        f"training took {count(train.get('steps'))} steps of {count(train.get('batch_size'))} "
        f"pairs (of {count(pairs)} training pairs) in {_seconds(train.get('wall_seconds'))} "
        f"on {train.get('device', 'n/a')}."
    )


def results_table(evaluation: EvalRecord, metric: str = TABLE_METRIC) -> str:
    """Each evaluation set's ``metric``: the candidate, the base model and BM25 (the best
    of the row in bold), the candidate's gain over the base and the paired test's p."""
    label = metric_label(metric)
    header = (
        "| set | queries | candidate | "
        + " | ".join(name for _, name in COMPARED)
        + " | candidate − base | p (vs base) |"
    )
    lines = [header, "| --- | ---: | ---: | " + "---: | " * len(COMPARED) + "---: | --- |"]
    for name in _in_order(evaluation):
        block = evaluation.sets[name]
        scores = {
            row: block.scores.get(row, {}).get(metric) for row in ("candidate", *dict(COMPARED))
        }
        best = max((value for value in scores.values() if value is not None), default=None)

        def cell(value: float | None, best: float | None = best) -> str:
            if value is None:
                return "n/a"
            return f"**{format_score(value)}**" if value == best else format_score(value)

        gain = block.delta.get("base", {}).get(metric)
        p_value = format_p_value(block.p_value.get("base")).removeprefix("p = ").removeprefix("p ")
        lines.append(
            f"| {name} | {count(block.n_queries)} | "
            + " | ".join(cell(value) for value in scores.values())
            + f" | {'n/a' if gain is None else format_delta(gain)} | {p_value} |"
        )
    return f"{label} on each held-out set:\n\n" + "\n".join(lines)


def _in_order(evaluation: EvalRecord) -> list[str]:
    """The record's sets, in :data:`QUERY_SETS` order (any other after them)."""
    rank = {name: index for index, name in enumerate(QUERY_SETS)}
    return sorted(evaluation.sets, key=lambda name: rank.get(name, len(rank)))


def string_matching_sentence(evaluation: EvalRecord) -> str:
    """How much string matching alone could find on each set: the share of its queries
    whose text occurs in one of their relevant passages."""
    shares = [
        f"{round(100 * evaluation.sets[name].words_in_relevant)} % of the {name} queries"
        for name in _in_order(evaluation)
    ]
    if not shares:
        return ""
    listed = ", ".join(shares[:-1]) + (" and " if len(shares) > 1 else "") + shares[-1]
    return f"A query's text occurs in one of its relevant passages for {listed}."


def decision_sentence(promotion: PromotionRecord | None) -> str:
    """What ``mathembed promote`` decided, on which set, against which side."""
    if promotion is None:
        return "No promotion decision recorded yet."
    against = "the base model" if promotion.compared_against == "base" else "the champion"
    deciding = promotion.deciding
    p_value = f" ({format_p_value(deciding.p_value)})" if deciding is not None else ""
    verdict = "Promoted" if promotion.decision == PROMOTED else "Not promoted"
    return f"{verdict} on the {promotion.decided_on} set against {against}{p_value}."


def _prose(text: str) -> str:
    return textwrap.fill(text, WIDTH, break_long_words=False, break_on_hyphens=False)


def demo_figures(records: DemoRecords) -> str:
    """The demo's key figures: the corpus and training, the results table, the decision."""
    opening = "From the records of the committed demo run (`metrics/*.json`): "
    closing = " ".join(
        sentence
        for sentence in (
            string_matching_sentence(records.evaluation),
            decision_sentence(records.promotion),
        )
        if sentence
    )
    return (
        f"{_prose(opening + corpus_sentence(records))}\n\n"
        f"{results_table(records.evaluation)}\n\n"
        f"{_prose(closing)}\n"
    )


#: Every figure block by name: the docs' ``<!-- generated: NAME -->`` and the README's
#: ``<!-- figures:NAME -->`` markers name them.
BLOCKS: dict[str, Callable[[DemoRecords], str]] = {"demo-figures": demo_figures}


# --------------------------------------------------------------------------- the README

_BLOCK = re.compile(
    r"(?P<open><!-- figures:(?P<name>[a-z-]+) -->\n)(?P<body>.*?)"
    r"(?P<close><!-- /figures:(?P=name) -->)",
    re.S,
)


def fill_blocks(markdown: str, render: Callable[[str], str]) -> str:
    """``markdown`` with the body of each ``<!-- figures:NAME -->`` …
    ``<!-- /figures:NAME -->`` block replaced by ``render(NAME)``."""
    return _BLOCK.sub(
        lambda match: match["open"] + render(match["name"]) + match["close"], markdown
    )


def block_names(markdown: str) -> list[str]:
    return [match["name"] for match in _BLOCK.finditer(markdown)]


def renderer(records: DemoRecords) -> Callable[[str], str]:
    def render(name: str) -> str:
        if name not in BLOCKS:
            raise ValueError(f"unknown figure block {name!r}; known: {', '.join(BLOCKS)}")
        return BLOCKS[name](records)

    return render


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The README's figure blocks, from metrics/.")
    parser.add_argument("--write", action="store_true", help="rewrite README.md's blocks")
    args = parser.parse_args(argv)
    text = README.read_text(encoding="utf-8")
    filled = fill_blocks(text, renderer(read_records()))
    if args.write:
        if filled != text:
            README.write_text(filled, encoding="utf-8")
        print(f"README.md: {len(block_names(text))} figure block(s) written from metrics/")
        return 0
    sys.stdout.write(filled)
    return 0


if __name__ == "__main__":
    sys.exit(main())
