"""What DVC shows of the evaluate stage: ``dvc metrics show`` and ``dvc exp show`` (one row
or column per query set, every key meaning one thing, readable at 120 columns with the
filters docs/reports.md gives), run by the real DVC on the repository's own dvc.yaml in a
small git + DVC project whose files come from the stage's own writers (``dvc plots show``:
test_dvc_plots.py).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from repo import REPO

from pipelines.common import io
from pipelines.common.tables import QUERY_SETS
from pipelines.evaluate.eval_set import EvalSet
from pipelines.evaluate.headline import TABLE_FILE, metrics_table
from pipelines.evaluate.reports import write_reports
from pipelines.registry.metric_records import EvalRecord, SetHeadline

DIMS = [32, 16]
KS = [1, 5, 10]
FAMILIES = ["mrr", "ndcg", "recall", "precision", "map", "hit"]
N_QUERIES = 6


def run(*args: str, cwd: Path, width: int | None = None) -> str:
    """A command's stdout (on a terminal ``width`` columns wide); a failure shows its whole
    output."""
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "GIT_AUTHOR_NAME": "t", "GIT_COMMITTER_NAME": "t"}
    if width is not None:
        env["COLUMNS"] = str(width)
    env |= {"GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_EMAIL": "t@example.org"}
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"{' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def dvc(*args: str, cwd: Path, width: int | None = None) -> str:
    return run(sys.executable, "-m", "dvc", *args, cwd=cwd, width=width)


def evaluation() -> tuple[dict[str, Any], pd.DataFrame, EvalSet]:
    """An eval.json summary and per-query table of two models over six queries."""
    rng = np.random.default_rng(3)
    query_ids = [f"q{i}" for i in range(N_QUERIES)]
    eval_set = EvalSet(
        corpus_ids=[f"c{i}" for i in range(12)],
        corpus_texts=[f"passage {i}" for i in range(12)],
        query_ids=query_ids,
        query_texts=[f"query about topic {i}" for i in range(N_QUERIES)],
        qrels=[{i: 1} for i in range(N_QUERIES)],
        unseen_docs=[frozenset()] * N_QUERIES,
        queries_without_relevant=[],
    )
    rows = [
        {"query_id": q, "model": model, "dim": dim, "metric": f"{family}@{k}", "value": value}
        for model in ("candidate", "base")
        for dim in DIMS
        for family in FAMILIES
        for k in KS
        for q, value in zip(query_ids, rng.random(N_QUERIES), strict=True)
    ]
    per_query = pd.DataFrame(rows)
    means = per_query.groupby(["model", "dim", "metric"])["value"].mean()
    summary: dict[str, Any] = {
        "corpus_size": 12,
        "n_queries": N_QUERIES,
        "ks": KS,
        "dims": DIMS,
        "primary_dim": DIMS[0],
        "models": {"candidate": {}, "base": {}},
        "subsets": {},
    }
    for (model, dim, metric), value in means.items():
        summary.setdefault(model, {}).setdefault(f"dim_{dim}", {})[metric] = float(value)
    summary["sets"] = {  # each set's scores at the full dimension, as the stage writes them
        query_set: {
            "n_queries": N_QUERIES,
            "words_in_relevant": 0.5,
            "scores": {
                model: {
                    metric: round(float(rng.random()), 4)
                    for metric in ("mrr@10", "ndcg@10", "recall@10")
                }
                for model in ("candidate", "base", "bm25")
            },
            "delta": {},
            "p_value": {"base": 0.0001, "bm25": 0.012},
        }
        for query_set in QUERY_SETS
    }
    return summary, per_query, eval_set


#: The commands docs/reports.md gives for DVC's metrics views (its ```sh block).
DOCUMENTED = [
    line.removeprefix(".venv/bin/dvc ").split("#")[0].strip()
    for line in (REPO / "docs" / "reports.md").read_text(encoding="utf-8").splitlines()
    if line.startswith((".venv/bin/dvc metrics show", ".venv/bin/dvc exp show"))
]
#: The terminal the views must fit.
WIDTH = 120


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git + DVC project: this dvc.yaml, the evaluate stage's reports and headline, and
    big stage metrics files like the real ones, committed (``dvc exp show`` reads commits)."""
    root = tmp_path_factory.mktemp("dvc-views")
    run("git", "init", "-q", cwd=root)
    dvc("init", "-q", cwd=root)
    shutil.copy(REPO / "dvc.yaml", root / "dvc.yaml")
    summary, per_query, eval_set = evaluation()
    write_reports(summary, per_query, eval_set, root / "reports" / "eval", figures=True)
    io.write_text(
        root / "reports" / "eval" / TABLE_FILE, metrics_table(summary).to_csv(index=False)
    )
    record = EvalRecord.from_json(summary)
    for found in record.headlines(["mrr@10", "ndcg@10"], "mrr@10"):
        io.write_json(SetHeadline.path(root / "metrics", found.query_set), found.to_json())
    io.write_json(root / "metrics" / "eval.json", record.to_json())
    # Stage metrics with hundreds of values (as data_quality.json has): outputs, not metrics.
    many = {f"table_{t}": {f"check_{c}": 0 for c in range(60)} for t in range(5)}
    for name in ("data_quality", "graph", "data"):
        io.write_json(root / "metrics" / f"{name}.json", many)
    io.write_json(root / "metrics" / "train.json", {"steps": 100, "final_loss": 0.5})
    io.write_json(root / "metrics" / "ingest.json", {"fetched": 16, "listed": 16})
    io.write_json(root / "metrics" / "prepare.json", {"chunks": 3393, "prepared": 16})
    io.write_json(root / "metrics" / "promotion.json", {"decision": "promoted", "version": "2"})
    run("git", "add", "-A", cwd=root)
    run("git", "commit", "-q", "-m", "evaluated", cwd=root)
    return root


def test_metrics_show_is_one_row_per_set_with_the_same_keys(project: Path) -> None:
    shown = json.loads(dvc("metrics", "show", "--json", cwd=project))
    files = shown[""]["data"]
    assert list(files) == [f"metrics/{name}.json" for name in QUERY_SETS]  # in this order
    keys = {path: list(found["data"]) for path, found in files.items()}
    expected = ["queries", "mrr@10", "ndcg@10", "base_mrr@10", "base_ndcg@10", "p_mrr@10"]
    assert all(sorted(found) == sorted(expected) for found in keys.values()), keys
    # Each row is its set's numbers: the candidate's MRR@10 on masked is masked's.
    masked = json.loads((project / "metrics" / "eval.json").read_text())["sets"]["masked"]
    row = files["metrics/masked.json"]["data"]
    assert row["mrr@10"] == masked["scores"]["candidate"]["mrr@10"]
    assert row["base_mrr@10"] == masked["scores"]["base"]["mrr@10"]
    table = dvc("metrics", "show", cwd=project, width=WIDTH).splitlines()
    assert len(table) == 1 + len(QUERY_SETS)  # a header and one row per set
    assert max(len(line) for line in table) <= WIDTH, table
    for name in ("promotion", "train", "ingest", "prepare", "data_quality", "graph", "data"):
        assert name not in "".join(files)  # outputs, not metrics


def test_every_documented_view_fits_120_columns(project: Path) -> None:
    assert any(command.startswith("metrics show") for command in DOCUMENTED)
    assert sum(command.startswith("exp show") for command in DOCUMENTED) >= 3
    for command in DOCUMENTED:
        args = shlex.split(command)
        if args[:2] == ["exp", "show"]:
            args.append("--no-pager")
        shown = dvc(*args, cwd=project, width=WIDTH).splitlines()
        assert max(len(line) for line in shown) <= WIDTH, (command, shown)
        assert "…" not in "".join(shown), (command, shown)  # no column cut off
        assert "0." in "".join(shown), (command, shown)  # the scores are there


def test_exp_show_names_each_column_by_its_set(project: Path) -> None:
    header = dvc("exp", "show", "--csv", cwd=project).splitlines()[0].split(",")
    metrics = header[header.index("parent") + 1 :]
    assert {column for column in metrics if column.endswith(":mrr@10")} == {
        f"metrics/{name}.json:mrr@10" for name in QUERY_SETS
    }


def test_no_stage_lists_its_own_metrics() -> None:
    # A stage's `metrics:` would add files to the views beside the sets'.
    dvc_yaml = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))
    assert [name for name, stage in dvc_yaml["stages"].items() if "metrics" in stage] == []
    assert dvc_yaml["metrics"] == [f"metrics/{name}.json" for name in QUERY_SETS]
