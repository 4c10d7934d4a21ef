"""The demo's figures come from its records, one source for the README and the docs
(``docs/hooks/record_figures.py``): the README's committed block is what the records give
now, the docs page asks the generator for its copy, the figures are written with the
project's one rule for numbers, and the README links to the docs rather than repeating
them."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from repo import REPO

from pipelines.registry.metric_records import EvalRecord, EvalSetBlock, PromotionRecord

HOOKS = REPO / "docs" / "hooks"


def _hook_module(name: str) -> ModuleType:
    """A module of ``docs/hooks/`` (they are loaded by mkdocs, not installed)."""
    spec = importlib.util.spec_from_file_location(f"docs_hooks_{name}", HOOKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


figures = _hook_module("record_figures")


def _block(scores: dict[str, float], p_value: float | None, queries: int = 10) -> EvalSetBlock:
    return EvalSetBlock(
        n_queries=queries,
        words_in_relevant=0.5,
        scores={row: {"mrr@10": value} for row, value in scores.items()},
        delta={"base": {"mrr@10": scores["candidate"] - scores["base"]}},
        p_value={"base": p_value},
    )


def _evaluation(sets: dict[str, EvalSetBlock]) -> EvalRecord:
    return EvalRecord(
        corpus_size=100, n_queries=10, ks=[10], dims=[8], primary_dim=8, models={}, scores={},
        sets=sets,
    )  # fmt: skip


def test_the_readme_figures_are_what_the_records_give() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert figures.block_names(readme) == ["demo-figures"], "the README has no figure block"
    expected = figures.fill_blocks(readme, figures.renderer(figures.read_records()))
    assert readme == expected, (
        "README.md's figures differ from the records in metrics/: rewrite them with "
        f"`{figures.WRITE_COMMAND}`"
    )


def test_the_readme_starts_with_its_title_description_and_setup_commands() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "# mathembed"
    assert lines[2].startswith("A batch MLOps system that keeps an embedding model")
    assert lines[4] == "```sh"
    assert lines[5].startswith("make demo ") and lines[6].startswith("make test ")
    assert lines[7] == "```"


def _paragraphs(markdown: str) -> set[str]:
    return {" ".join(part.split()) for part in re.split(r"\n\s*\n", markdown) if part.strip()}


def test_the_readme_links_to_the_docs_rather_than_repeating_them() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    index = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    # The title and the one-sentence description open both; nothing else is said twice.
    head = readme.split("```sh", 1)[0]
    body = readme.removeprefix(head)
    repeated = [
        paragraph for paragraph in _paragraphs(body) & _paragraphs(index) if len(paragraph) > 60
    ]
    assert not repeated, f"README.md repeats docs/index.md: {repeated}"
    assert "docs/index.md" in readme


def test_the_docs_take_their_figures_from_the_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    index = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    assert "<!-- generated: demo-figures -->" in index
    monkeypatch.syspath_prepend(str(HOOKS))  # mkdocs loads the hooks with their folder there
    docs = _hook_module("mathembed_docs")
    expanded = docs.expand("<!-- generated: demo-figures -->")
    assert expanded == figures.demo_figures(figures.read_records())
    # No score of the table is typed by hand on the page as well.
    for block in figures.read_records().evaluation.sets.values():
        candidate = block.scores["candidate"]["mrr@10"]
        assert f"{candidate:.3f}" not in index and f"{candidate:.4f}" not in index


def test_the_table_uses_the_projects_rounding_and_bolds_the_best() -> None:
    evaluation = _evaluation(
        {
            "described": _block({"candidate": 0.2, "base": 0.3, "bm25": 0.1}, 0.01234),
            "named": _block({"candidate": 0.74444, "base": 0.60942, "bm25": 0.5}, 0.00004),
        }
    )
    table = figures.results_table(evaluation)
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows[0].startswith("| set | queries | candidate | base model | BM25 |")
    # named first (pipelines.common.tables.QUERY_SETS order), four decimals, signed gain,
    # p to two significant digits with the floor.
    assert rows[1] == "| named | 10 | **0.7444** | 0.6094 | 0.5000 | +0.1350 | < 0.0001 |"
    assert rows[2] == "| described | 10 | 0.2000 | **0.3000** | 0.1000 | -0.1000 | 0.012 |"
    assert table.startswith("MRR@10 on each held-out set:")


def test_a_set_without_a_score_or_a_test_says_so() -> None:
    block = EvalSetBlock(
        n_queries=0, words_in_relevant=0.0, scores={}, delta={}, p_value={"base": None}
    )
    table = figures.results_table(_evaluation({"masked": block}))
    assert "| masked | 0 | n/a | n/a | n/a | n/a | n/a |" in table


def test_the_corpus_and_decision_sentences() -> None:
    records = figures.DemoRecords(
        evaluation=_evaluation({}),
        promotion=PromotionRecord.from_json(
            {
                "decision": "not promoted",
                "decided_on": "described",
                "compared_against": "champion",
                "sets": {"described": {"queries": 5, "candidate": {}, "base": {}, "p_value": 0.5}},
            }
        ),
        prepare={"papers_in": 3, "chunks": 12000, "statements": 40},
        graph={"concepts": 7},
        data={"descriptions": {"found": {"citing_sentences": 1234}}},
        train={"steps": 5, "batch_size": 2, "n_pairs": {"train": 30}, "wall_seconds": 9.6,
               "device": "cpu (2 threads)"},
    )  # fmt: skip
    assert figures.corpus_sentence(records) == (
        "3 papers give 12,000 passages, 40 statements, 7 concepts and 1,234 citing sentences; "
        "training took 5 steps of 2 pairs (of 30 training pairs) in 10 s on cpu (2 threads)."
    )
    assert figures.decision_sentence(records.promotion) == (
        "Not promoted on the described set against the champion (p = 0.5)."
    )
    assert figures.decision_sentence(None) == "No promotion decision recorded yet."


def test_fill_blocks_rewrites_only_between_the_markers() -> None:
    text = "keep\n<!-- figures:a -->\nold\n<!-- /figures:a -->\nkeep too\n"
    filled = figures.fill_blocks(text, lambda name: f"new {name}\n")
    assert filled == "keep\n<!-- figures:a -->\nnew a\n<!-- /figures:a -->\nkeep too\n"
    assert figures.fill_blocks(filled, lambda name: f"new {name}\n") == filled
    with pytest.raises(ValueError, match="unknown figure block 'a'"):
        figures.fill_blocks(text, figures.renderer(figures.read_records()))


def test_write_rewrites_a_drifted_readme(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(
        "# x\n\n<!-- figures:demo-figures -->\nstale\n<!-- /figures:demo-figures -->\n"
    )
    monkeypatch.setattr(figures, "README", readme)
    assert figures.main(["--write"]) == 0
    assert "stale" not in readme.read_text()
    assert "MRR@10 on each held-out set:" in readme.read_text()
