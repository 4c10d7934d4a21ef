"""What ``dvc plots show`` draws of the evaluate stage: images of every set that can decide
a promotion, on a page that needs no network, each of a width a screen shows whatever the
number of queries. Run by the real DVC on the repository's own dvc.yaml in a small git + DVC
project whose reports come from the stage's own writers.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from repo import REPO

from pipelines.common.tables import QUERY_SETS
from pipelines.evaluate.eval_set import EvalSet
from pipelines.evaluate.reports import DPI, MAX_WIDTH_INCHES, write_reports

DIMS = [32, 16]
KS = [1, 5, 10]
FAMILIES = ["mrr", "ndcg", "recall", "precision", "map", "hit"]
FIGURES = ["compare.png", "dims.png", "wins_losses.png"]


def dvc(*args: str, cwd: Path) -> str:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "dvc", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"dvc {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def evaluation(
    n_named: int, n_described: int, models: tuple[str, ...] = ("candidate", "base")
) -> tuple[dict[str, Any], pd.DataFrame, EvalSet]:
    """An eval.json summary, and the per-query table of every set (masked asks the named
    queries again), as the evaluate stage writes them."""
    rng = np.random.default_rng(5)
    named = [f"n{i}" for i in range(n_named)]
    described = [f"d{i}" for i in range(n_described)]
    titles = [f"title:p{i}" for i in range(3)]
    foreign = [f"foreign:q{i}" for i in range(4)]
    eval_set = EvalSet(
        corpus_ids=["c0"],
        corpus_texts=["a passage"],
        query_ids=named + described,
        query_texts=[f"concept {i}" for i in range(n_named)]
        + [f"a statement described in words {i}" for i in range(n_described)],
        qrels=[{0: 1}] * (n_named + n_described),
        unseen_docs=[frozenset()] * (n_named + n_described),
        queries_without_relevant=[],
        query_sets=["named"] * n_named + ["described"] * n_described,
        transfer=EvalSet(  # the named queries again and three titles, over plain windows
            corpus_ids=["p#w0000"],
            corpus_texts=["a window"],
            query_ids=named + titles,
            query_texts=[f"concept {i}" for i in range(n_named)] + ["A title"] * len(titles),
            qrels=[{0: 1}] * (n_named + len(titles)),
            unseen_docs=[frozenset()] * (n_named + len(titles)),
            queries_without_relevant=[],
            query_sets=["transfer_named"] * n_named + ["transfer_papers"] * len(titles),
        ),
        foreign=EvalSet(  # four foreign queries, over the passage and a foreign one
            corpus_ids=["c0", "foreign:c0"],
            corpus_texts=["a passage", "a foreign passage"],
            query_ids=foreign,
            query_texts=["a foreign concept"] * len(foreign),
            qrels=[{1: 1}] * len(foreign),
            unseen_docs=[frozenset()] * len(foreign),
            queries_without_relevant=[],
            query_sets=["transfer_corpus"] * len(foreign),
        ),
    )
    queries_of = {
        "named": named,
        "masked": named,
        "described": described,
        "transfer_papers": titles,
        "transfer_named": named,
        "transfer_corpus": foreign,
    }
    frames = [
        pd.DataFrame(
            {
                "set": query_set,
                "query_id": queries,
                "model": model,
                "dim": dim,
                "metric": f"{family}@{k}",
                "value": rng.random(len(queries)),
            }
        )
        for query_set, queries in queries_of.items()
        for model in models
        for dim in DIMS
        for family in FAMILIES
        for k in KS
    ]
    summary: dict[str, Any] = {
        "corpus_size": 1,
        "n_queries": n_named,
        "ks": KS,
        "dims": DIMS,
        "primary_dim": DIMS[0],
        "models": {model: {} for model in models},
    }
    return summary, pd.concat(frames, ignore_index=True), eval_set


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git + DVC project with this dvc.yaml and the evaluate stage's reports."""
    root = tmp_path_factory.mktemp("dvc-plots")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    dvc("init", "-q", cwd=root)
    shutil.copy(REPO / "dvc.yaml", root / "dvc.yaml")
    write_reports(*evaluation(8, 7), root / "reports" / "eval", figures=True)
    return root


def test_plots_are_the_images_and_the_page_needs_no_network(project: Path) -> None:
    plots = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))["plots"]
    assert plots == [f"reports/eval/{name}" for name in FIGURES]
    page = project / "page"
    dvc("plots", "show", "-o", str(page), cwd=project)
    html = (page / "index.html").read_text(encoding="utf-8")
    # Vega plots load vega from a CDN and are blank offline; images are files beside the page.
    assert "<script" not in html and "cdn." not in html
    sources = re.findall(r'<img src="([^"]+)"', html)
    assert len(sources) == len(FIGURES)
    for source in sources:
        assert not source.startswith("http"), source
        assert (page / source).is_file(), f"{source} is not beside the page"


def test_the_figures_data_has_every_set(project: Path) -> None:
    reports = project / "reports" / "eval"
    for table in ("compare.csv", "dims.csv", "per_query.csv"):
        assert list(dict.fromkeys(pd.read_csv(reports / table)["set"])) == list(QUERY_SETS)
    wins = pd.read_csv(reports / "per_query.csv")
    assert wins.groupby("set").size().to_dict() == {
        "named": 8,
        "masked": 8,
        "described": 7,
        "transfer_papers": 3,
        "transfer_named": 8,
        "transfer_corpus": 4,
    }
    # masked asks the named queries again, against their masked passages
    masked, named = wins[wins["set"] == "masked"], wins[wins["set"] == "named"]
    assert masked["query"].tolist() == named["query"].tolist()
    assert not np.allclose(masked["delta_base_mrr@10"], named["delta_base_mrr@10"])


@pytest.mark.parametrize("n_queries", [3, 2000])
def test_figures_stay_a_screen_wide_at_any_query_count(tmp_path: Path, n_queries: int) -> None:
    import matplotlib.image

    figures = write_reports(
        *evaluation(n_queries, n_queries, ("candidate", "base", "champion")), tmp_path
    )
    assert [path.name for path in figures] == FIGURES
    for path in figures:
        width, height = png_size(path)
        assert width == MAX_WIDTH_INCHES * DPI, f"{path.name} is {width} px wide"
        assert 400 <= height <= 2400, f"{path.name} is {height} px high"
        pixels = (matplotlib.image.imread(path) * 255).astype(np.uint8)
        assert len(np.unique(pixels.view(np.uint32))) > 50, f"{path.name} looks blank"
