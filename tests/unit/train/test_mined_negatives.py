"""Hard negatives mined with the base model: the choice (top-ranked, never relevant, not
within the margin of the positive), the cache per model and pairs, and the knob in a run."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from test_train import make_root, toy_pairs, toy_params

from pipelines.common import io
from pipelines.train.negatives import (
    NO_NEGATIVE,
    choose_negatives,
    excluded_passages,
    mine_negatives,
)
from pipelines.train.stage import run_train

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_the_choice_is_the_top_candidate_past_the_guard() -> None:
    scores = np.array(
        [
            [0.90, 0.80, 0.86, 0.70],  # positive 0.9: 0.86 is within 5 % of it, 0.80 is not
            [0.50, 0.10, 0.60, 0.40],  # 2 is excluded (its own positive elsewhere): 3
            [0.20, 0.30, 0.25, 0.19],  # everything scores above 95 % of the positive: none
            [-0.2, -0.5, -0.4, -0.1],  # a negative positive score: the margin still lowers it
        ],
        dtype=np.float32,
    )
    positive_scores = scores[np.arange(4), [0, 0, 3, 0]]
    excluded = [{0}, {0, 2}, {3}, {0}]
    chosen = choose_negatives(scores, positive_scores, excluded, margin=0.05)
    assert chosen.tolist() == [1, 3, NO_NEGATIVE, 2]
    # No margin: the highest non-relevant passage whatever its score.
    assert choose_negatives(scores, positive_scores, excluded, margin=0.0).tolist()[0] == 2


def test_a_concepts_other_positives_and_the_anchor_itself_are_never_negatives() -> None:
    pairs = pd.DataFrame(
        {
            "anchor": ["ring", "ring", "a ring slogan", "field"],
            "concept": ["ring", "ring", "ring", "field"],
            "positive": ["p1", "p2", "p3", "p4"],
        }
    )
    pool = {"p1": 0, "p2": 1, "p3": 2, "p4": 3, "field": 4}
    excluded = excluded_passages(pairs, pool)
    assert excluded[0] == excluded[1] == excluded[2] == {0, 1, 2}
    assert excluded[3] == {3, 4}


class WordCounter:
    """An encoder for tests: a text's vector counts a few words (no model, no weights)."""

    WORDS = ("ring", "field", "group", "prime", "ideal", "module")

    def __init__(self) -> None:
        self.calls = 0

    def encode(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return np.array(
            [[text.split().count(word) + 0.01 for word in self.WORDS] for text in inputs],
            dtype=np.float32,
        )


def word_pairs() -> pd.DataFrame:
    concepts = WordCounter.WORDS
    return pd.DataFrame(
        {
            "anchor": [f"{word}" for word in concepts] + ["ring theory"],
            "concept": list(concepts) + ["ring"],
            "positive": [f"a {word} is defined {word}" for word in concepts] + ["ring ring ring"],
            # A negative that shares the word: mining finds a harder, other concept's passage.
            "negative": [f"the {word} as an example" for word in concepts] + ["ring example"],
        }
    )


def test_mined_negatives_are_never_relevant_and_the_cache_is_hit(tmp_path: Path) -> None:
    pairs = word_pairs()
    encoder = WordCounter()
    arguments: dict[str, Any] = {
        "fingerprint": "base-fingerprint",
        "pairs_hash": "pairs-hash",
        "margin": 0.05,
        "cache_dir": tmp_path,
        "batch_size": 4,
    }
    mined = mine_negatives(encoder, pairs, **arguments)
    assert not mined.cache_hit and mined.cache_file.is_file() and encoder.calls > 0
    assert mined.mined + mined.kept == len(pairs)
    assert mined.mined > 0
    relevant_by_concept = pairs.groupby("concept")["positive"].agg(set)
    for _, row in mined.pairs.iterrows():
        assert row["negative"] not in relevant_by_concept[row["concept"]]
        assert row["negative"] != row["anchor"]
    # Rows, order and other columns as they were; only the negative changed.
    pd.testing.assert_frame_equal(
        mined.pairs.drop(columns="negative"), pairs.drop(columns="negative")
    )

    calls = encoder.calls
    again = mine_negatives(encoder, pairs, **arguments)
    assert again.cache_hit and encoder.calls == calls  # nothing embedded
    pd.testing.assert_frame_equal(again.pairs, mined.pairs)
    # Another base model (or margin) is another entry.
    other = mine_negatives(encoder, pairs, **(arguments | {"fingerprint": "another-base"}))
    assert not other.cache_hit and other.cache_file != mined.cache_file


def test_the_knob_mines_in_a_run_and_a_second_run_reuses_them(
    tiny_bert_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pairs = toy_pairs().assign(negative="", negative_id="")
    paths = make_root(tmp_path, pairs)
    params = toy_params(tiny_bert_dir, max_steps=2, mined_negatives=True)
    report = run_train(params, paths, progress=False)
    summary = report.metrics["mined_negatives"]
    assert summary["cache_hit"] is False and summary["mined"] > 0
    assert summary["mined"] + summary["kept_own"] == report.n_train_pairs
    # The pairs had no negatives: every pair that got one trains as a triplet.
    assert summary["kept_own"] == 0
    assert len(list(paths.negatives_cache.glob("*/*.parquet"))) == 1
    cached = io.read_parquet(next(paths.negatives_cache.glob("*/*.parquet")))
    training = pairs[pairs["split"] == "train"].reset_index(drop=True)
    assert len(cached) == len(training)
    assert not (cached["negative"] == training["positive"]).any()
    readme = (paths.candidate / "README.md").read_text(encoding="utf-8")
    assert "* Columns: <code>anchor</code>, <code>positive</code>, and <code>negative</code>" in (
        readme
    )

    again = run_train(replace(params, max_steps=1), paths, progress=False)
    assert again.metrics["mined_negatives"]["cache_hit"] is True
    off = run_train(replace(params, mined_negatives=False), paths, progress=False)
    assert off.metrics["mined_negatives"] is None
