"""The "no close match" signal (pipelines.search.engine): said, in the JSON and above the
printed hits, when the best passage's cosine is below search.miss_threshold, and only then."""

from __future__ import annotations

import numpy as np
import pytest
from test_ranking import FixedQueryEngine, engine
from typer.testing import CliRunner

from pipelines import cli
from pipelines.common.config import SearchParams
from pipelines.search import cli as search_cli
from pipelines.search.engine import miss_note


def far_engine(threshold: float) -> FixedQueryEngine:
    """Its query's best cosine is 0.6 (with "lattice beta", and none closer)."""
    searching = engine(miss_threshold=threshold)
    searching.query_vector = np.asarray([0.6, -0.8, 0.0], dtype=np.float32)
    return searching


def test_a_best_cosine_below_the_threshold_is_no_close_match_and_the_note_says_both() -> None:
    answer = far_engine(0.7).answer("lattice", 3)
    assert answer["no_close_match"] is True
    assert answer["hits"][0]["score"] == pytest.approx(0.6)
    assert answer["note"] == miss_note(0.6, 0.7)
    assert "No close match in this corpus" in answer["note"]
    assert "0.60 is below 0.70" in answer["note"]


@pytest.mark.parametrize("threshold", [0.6, 0.5])
def test_at_or_above_the_threshold_there_is_a_match_and_no_note(threshold: float) -> None:
    answer = far_engine(threshold).answer("lattice", 3, ranking="hybrid")
    assert answer["no_close_match"] is False and answer["note"] == ""
    assert answer["ranking"] == "hybrid"


def test_the_signal_reads_the_models_best_whichever_ranking_orders() -> None:
    # Fusion may put "zeta only" (cosine 0) first; the signal is the best cosine of any
    # passage, the model's first, whatever is shown first.
    searching = far_engine(0.7)
    for ranking in ("dense", "hybrid", "adaptive"):
        results = searching.results("zeta zeta", 5, ranking)
        assert results.best_cosine == pytest.approx(0.6) and results.no_close_match


def test_the_threshold_is_params_yamls_and_a_cosine() -> None:
    assert -1 <= SearchParams().miss_threshold <= 1


def test_mathembed_search_prints_the_note_above_the_hits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(search_cli, "_open", lambda *args: far_engine(0.7))
    result = CliRunner().invoke(cli.app, ["search", "lattice", "-k", "2"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == miss_note(0.6, 0.7) and lines[1].startswith(" 1. ")

    monkeypatch.setattr(search_cli, "_open", lambda *args: far_engine(0.5))
    result = CliRunner().invoke(cli.app, ["search", "lattice", "-k", "2"])
    assert result.exit_code == 0 and result.stdout.startswith(" 1. ")
