"""What training reads of the pairs table: triplets when every pair has a negative, and a
seeded, capped validation sample."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from pipelines.train.setup import TrainError, capped_sample, split_pairs


def pairs(negatives: list[str]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "anchor": [f"a{index}" for index in range(len(negatives))],
            "positive": [f"p{index}" for index in range(len(negatives))],
            "negative": negatives,
            "split": ["train"] * (len(negatives) - 1) + ["validation"],
        }
    )


def test_every_pair_with_a_negative_makes_triplets_in_loss_order() -> None:
    train, validation = split_pairs(pairs(["n0", "n1", "n2"]), Path("pairs.parquet"))
    assert list(train.columns) == ["anchor", "positive", "negative"]
    assert list(validation.columns) == ["anchor", "positive", "negative"]


def test_a_pair_without_negative_makes_plain_pairs() -> None:
    train, _validation = split_pairs(pairs(["n0", "", "n2"]), Path("pairs.parquet"))
    assert list(train.columns) == ["anchor", "positive"]
    without_column = pairs(["n0", "n1"]).drop(columns="negative")
    assert list(split_pairs(without_column, Path("p"))[0].columns) == ["anchor", "positive"]


def test_no_training_split_is_an_error_naming_the_file() -> None:
    only_validation = pairs(["n0"])
    with pytest.raises(TrainError, match="pairs.parquet"):
        split_pairs(only_validation, Path("pairs.parquet"))


def test_the_validation_sample_is_capped_and_seeded() -> None:
    frame = pd.DataFrame({"anchor": [str(index) for index in range(1000)]})
    first, again = capped_sample(frame, 256, seed=3), capped_sample(frame, 256, seed=3)
    assert len(first) == 256 and first.equals(again)
    assert not first.equals(capped_sample(frame, 256, seed=4))
    assert capped_sample(frame, 5000, seed=3) is frame
