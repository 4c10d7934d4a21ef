"""What the data stages make of research papers: the Lean blueprints beside the Stacks demo
(issue 20, part 4), written to ``benchmarks/results/blueprints.json``.

For each corpus (``sample.corpus: blueprints`` on the six blueprint projects, and the demo's
16 Stacks chapters for comparison), a scratch project runs ``mathembed sample``, ``ingest``,
``prepare``, ``graph`` and ``pairs`` with the project's params (ingest harvesting every
project's categories, no delay), then the figures are read from the tables: papers,
passages, statements (kinds, labels, proofs), concepts, pairs by kind, the eval queries and
how often a query's words stand in a relevant passage, and a leak check of the blueprint
markup. The blueprints also run on nested subsets of the projects (1, 2, 4 and 6), to show
how pairs and queries grow with the corpus. No training: that is the night's.

Run: ``.venv/bin/python benchmarks/bench_blueprints.py`` (about 3 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.real_corpus import REPO  # noqa: E402 -- after the path is set
from pipelines.common.config import SampleParams  # noqa: E402
from pipelines.common.parts import stages_from  # noqa: E402
from pipelines.mirror.corpora.blueprints import CATEGORIES  # noqa: E402

RESULT = REPO / "benchmarks" / "results" / "blueprints.json"
BLUEPRINTS = REPO / SampleParams().blueprints_dir
STAGES = stages_from("sample", "pairs")
SUBSETS = (  # nested, each adding a different kind of text; then all six (the main run)
    ("teorth-pfr",),
    ("teorth-pfr", "ImperialCollegeLondon-FLT"),
    ("teorth-pfr", "ImperialCollegeLondon-FLT", "teorth-expdb", "fpvandoorn-carleson"),
)
SAMPLES = 8  # examples of each kind shown in the record
MARKUP = re.compile(r"\\(lean|uses|proves)\s*\{([^{}]*)\}")
MARKUP_WORDS = re.compile(r"leanok|mathlibok|notready|Recorded in|\\uses|\\lean")


def run_pipeline(root: Path, corpus: str, corpora_dir: Path | None) -> dict[str, float]:
    """The five stages in a fresh project ``root``; seconds per stage."""
    params = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    params["sample"]["corpus"] = corpus
    if corpora_dir is not None:
        params["sample"]["blueprints_dir"] = str(corpora_dir)
    categories = {category for project in CATEGORIES.values() for category in project}
    params["ingest"]["categories"] = sorted(set(params["ingest"]["categories"]) | categories)
    params["ingest"]["delay_seconds"] = 0.0
    root.mkdir(parents=True)
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    if corpus == "stacks-project":
        (root / "corpora").mkdir()
        (root / "corpora" / "stacks-project").symlink_to(REPO / "corpora" / "stacks-project")
    seconds = {}
    for stage in STAGES:
        command = [sys.executable, "-m", "pipelines", stage, "--root", str(root)]
        command += ["--params", str(root / "params.yaml")]
        started = pd.Timestamp.now()
        subprocess.run(command, cwd=REPO, check=True, capture_output=True, text=True)
        seconds[stage] = round((pd.Timestamp.now() - started).total_seconds(), 1)
    return seconds


def words_in(query: str, passage: str) -> bool:
    return query.lower() in passage.lower()


def describe(root: Path, samples: bool) -> dict[str, Any]:
    """The figures of a project where the five stages have run."""
    papers = pd.read_parquet(root / "data" / "processed" / "papers.parquet")
    chunks = pd.read_parquet(root / "data" / "processed" / "chunks.parquet")
    statements = pd.read_parquet(root / "data" / "processed" / "statements.parquet")
    concepts = pd.read_parquet(root / "data" / "graph" / "concepts.parquet")
    pairs = pd.read_parquet(root / "data" / "training" / "pairs.parquet")
    queries = pd.read_parquet(root / "data" / "eval" / "queries.parquet")
    qrels = pd.read_parquet(root / "data" / "eval" / "qrels.parquet")
    ingest = json.loads((root / "metrics" / "ingest.json").read_text())
    graph = json.loads((root / "metrics" / "graph.json").read_text())
    data = json.loads((root / "metrics" / "data.json").read_text())

    text_of = dict(zip(chunks["chunk_id"], chunks["text"], strict=True))
    query_text = dict(zip(queries["query_id"], queries["text"], strict=True))
    relevant: dict[str, list[str]] = {}
    for query, chunk in zip(qrels["query_id"], qrels["chunk_id"], strict=True):
        relevant.setdefault(query, []).append(chunk)
    verbatim = sum(
        any(words_in(query_text[query], text_of[chunk]) for chunk in chunk_ids)
        for query, chunk_ids in relevant.items()
    )
    per_query = pd.Series([len(chunk_ids) for chunk_ids in relevant.values()])
    concept_papers = concepts["papers"].apply(len)
    top = concepts.assign(n_papers=concept_papers).sort_values(
        ["n_papers", "name"], ascending=[False, True]
    )
    listed = [json.loads(line) for line in (root / "data" / "mirror" / "entries.jsonl").open()]
    figures: dict[str, Any] = {
        "papers": len(papers),
        # A chapter with no prose before its first statement gets its title as abstract.
        "abstract_is_the_title": sum(entry["summary"] == f"{entry['title']}." for entry in listed),
        "ingest": {key: ingest.get(key) for key in ("listed", "tex", "quarantined")},
        "passages": len(chunks),
        "passage_chars_median": int(chunks["text"].str.len().median()),
        "statements": {
            "total": len(statements),
            "by_kind": dict(Counter(statements["kind"]).most_common()),
            "with_label": int((statements["label"] != "").sum()),
            "with_proof": int((statements["proof"] != "").sum()),
            "with_name": int((statements["name"] != "").sum()),
            "citing_another": int(statements["refs"].apply(len).gt(0).sum()),
        },
        "concepts": {
            "total": len(concepts),
            "by_type": graph["concepts_by_type"],
            "in_two_or_more_papers": int((concept_papers >= 2).sum()),
            "top_by_papers": [
                f"{row.display_name} ({row.n_papers})" for row in top.head(25).itertuples()
            ],
        },
        "edges_by_relation": graph["edges_by_relation"],
        "pairs": {
            "total": len(pairs),
            "by_kind": dict(Counter(pairs["kind"]).most_common()),
            "by_split": dict(Counter(pairs["split"]).most_common()),
        },
        "queries": {
            "total": len(queries),
            "held_out_concepts": data["held_out_concepts"],
            "relevant_per_query": {
                "median": float(per_query.median()),
                "max": int(per_query.max()),
            },
            "query_words_in_a_relevant_passage": round(verbatim / max(len(relevant), 1), 3),
        },
        "markup_in_passages": int(chunks["text"].str.contains(MARKUP_WORDS).sum()),
    }
    if samples:
        figures["samples"] = {
            "queries": queries["text"].sample(min(20, len(queries)), random_state=0).tolist(),
            "pairs": {
                str(kind): [
                    {"anchor": str(anchor)[:200], "positive": str(positive)[:300]}
                    for anchor, positive in group.sample(min(SAMPLES, len(group)), random_state=0)[
                        ["anchor", "positive"]
                    ].itertuples(index=False)
                ]
                for kind, group in pairs.groupby("kind")
            },
        }
    return figures


def lean_names_leaked(corpus_dir: Path, root: Path) -> dict[str, int]:
    """``\\lean``/``\\uses``/``\\proves`` arguments found in a passage of their paper but
    nowhere in their chapter's own text (a label such as "tau" may be a word of it)."""
    manifest = json.loads((root / "data" / "mirror" / "manifest.json").read_text())
    chunks = pd.read_parquet(root / "data" / "processed" / "chunks.parquet")
    passages: dict[str, str] = {}
    for paper, text in zip(chunks["paper_id"], chunks["text"], strict=True):
        passages[paper] = f"{passages.get(paper, '')}\n{text}"
    checked = leaked = 0
    for record in manifest["versions"]:
        chapter = (corpus_dir / record["project"] / record["chapter"]).read_text("utf-8")
        without = MARKUP.sub(" ", chapter)
        for match in MARKUP.finditer(chapter):
            for name in (part.strip() for part in match[2].split(",")):
                if len(name) > 3 and name not in without:
                    checked += 1
                    leaked += name in passages.get(record["paper_id"], "")
    return {"arguments_checked": checked, "found_in_passages": leaked}


def per_project(root: Path) -> dict[str, dict[str, int]]:
    manifest = json.loads((root / "data" / "mirror" / "manifest.json").read_text())
    project_of = {record["paper_id"]: record["project"] for record in manifest["versions"]}
    chunks = pd.read_parquet(root / "data" / "processed" / "chunks.parquet")
    statements = pd.read_parquet(root / "data" / "processed" / "statements.parquet")
    table: dict[str, dict[str, int]] = {}
    for project in sorted(set(project_of.values())):
        ids = [paper for paper, owner in project_of.items() if owner == project]
        mine = statements[statements["paper_id"].isin(ids)]
        table[project] = {
            "papers": len(ids),
            "passages": int(chunks["paper_id"].isin(ids).sum()),
            "statements": len(mine),
            "definitions": int((mine["kind"] == "definition").sum()),
            "with_proof": int((mine["proof"] != "").sum()),
        }
    return table


def scale_row(projects: tuple[str, ...], figures: dict[str, Any]) -> dict[str, Any]:
    return {
        "projects": list(projects),
        "papers": figures["papers"],
        "passages": figures["passages"],
        "statements": figures["statements"]["total"],
        "concepts": figures["concepts"]["total"],
        "pairs": figures["pairs"]["total"],
        "pairs_by_kind": figures["pairs"]["by_kind"],
        "queries": figures["queries"]["total"],
    }


def subset_corpus(folder: Path, projects: tuple[str, ...]) -> Path:
    folder.mkdir()
    for project in projects:
        (folder / project).symlink_to(BLUEPRINTS / project)
    (folder / "README.md").symlink_to(BLUEPRINTS / "README.md")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    result: dict[str, Any] = {"commit": commit or None, "params": "the project's, but ingest"}
    result["params"] += " harvests every blueprint category, with no delay"
    with tempfile.TemporaryDirectory(prefix="mathembed-blueprints-") as folder:
        scratch = Path(folder)
        root = scratch / "blueprints"
        result["seconds"] = run_pipeline(root, "blueprints", BLUEPRINTS)
        result["blueprints"] = describe(root, samples=True)
        result["blueprints"]["per_project"] = per_project(root)
        result["blueprints"]["lean_markup_leak"] = lean_names_leaked(BLUEPRINTS, root)
        stacks = scratch / "stacks"
        run_pipeline(stacks, "stacks-project", None)
        result["stacks_demo"] = describe(stacks, samples=False)
        scaling = []
        for index, projects in enumerate(SUBSETS):
            subset = scratch / f"subset{index}"
            run_pipeline(subset, "blueprints", subset_corpus(scratch / f"corpus{index}", projects))
            scaling.append(scale_row(projects, describe(subset, samples=False)))
        scaling.append(scale_row(tuple(sorted(CATEGORIES)), result["blueprints"]))
        result["scaling"] = scaling
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
