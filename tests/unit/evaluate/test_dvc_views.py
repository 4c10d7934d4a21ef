"""What DVC shows of the evaluate stage: ``dvc metrics show`` and ``dvc exp show`` (the
headline first, no table of hundreds of values), run by the real DVC on the repository's own
dvc.yaml in a small git + DVC project whose reports come from the stage's own writers
(``dvc plots show``: test_dvc_plots.py).
"""

from __future__ import annotations

import json
import os
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
from pipelines.evaluate.eval_set import EvalSet
from pipelines.evaluate.headline import TABLE_FILE, headline, metrics_table, write_headline
from pipelines.evaluate.reports import write_reports

DIMS = [32, 16]
KS = [1, 5, 10]
FAMILIES = ["mrr", "ndcg", "recall", "precision", "map", "hit"]
N_QUERIES = 6


def run(*args: str, cwd: Path) -> str:
    """A command's stdout; a failure shows its whole output."""
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "GIT_AUTHOR_NAME": "t", "GIT_COMMITTER_NAME": "t"}
    env |= {"GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_EMAIL": "t@example.org"}
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"{' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def dvc(*args: str, cwd: Path) -> str:
    return run(sys.executable, "-m", "dvc", *args, cwd=cwd)


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
    return summary, per_query, eval_set


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
    write_headline(root / "metrics" / "headline.json", headline(summary, per_query, None))
    io.write_json(root / "metrics" / "eval.json", summary)
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


def test_metrics_show_is_the_small_files_only(project: Path) -> None:
    shown = json.loads(dvc("metrics", "show", "--json", cwd=project))
    files = shown[""]["data"]
    assert list(files) == [
        "metrics/headline.json",
        "metrics/promotion.json",
        "metrics/train.json",
        "metrics/ingest.json",
        "metrics/prepare.json",
    ]
    header = dvc("metrics", "show", cwd=project).splitlines()[0]
    assert len(header) < 1000, header
    assert "check_0" not in header and "dim_32" not in header


def test_exp_show_opens_on_the_headline(project: Path) -> None:
    header = dvc("exp", "show", "--csv", cwd=project).splitlines()[0].split(",")
    metrics = header[header.index("parent") + 1 :]
    assert metrics[:3] == ["queries", "candidate_mrr@10", "base_mrr@10"]


def test_no_stage_lists_its_own_metrics() -> None:
    # A stage's `metrics:` would be listed before the top-level ones: the headline
    # would no longer come first in `dvc exp show`.
    dvc_yaml = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))
    assert [name for name, stage in dvc_yaml["stages"].items() if "metrics" in stage] == []
    assert dvc_yaml["metrics"][0] == "metrics/headline.json"
