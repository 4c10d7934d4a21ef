"""What a training run starts from: the validated pairs, split (and with mined negatives
when ``train.mined_negatives`` is on), and the base model on this rank's device.

The steps of :func:`pipelines.train.stage.run_train` before the trainer is built; the pure
pieces they use are in :mod:`pipelines.train.setup`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pandas as pd

from pipelines.common import io
from pipelines.common.config import TrainParams
from pipelines.common.paths import Paths
from pipelines.common.tables import TABLES
from pipelines.retrieval.models import ModelLoadError, data_hash, load_base_model
from pipelines.train.distributed import World, join, main_first
from pipelines.train.negatives import MinedNegatives, mine_training_negatives
from pipelines.train.setup import (
    Precision,
    TrainError,
    capped_sample,
    choose_precision,
    distinct_texts,
    resolve_device,
    resolve_matryoshka_dims,
    split_pairs,
)

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


@dataclass(frozen=True)
class TrainingData:
    """The validated pairs table and its two splits, the columns the trainer reads."""

    path: Path
    pairs: pd.DataFrame  # the whole table, as read
    train: pd.DataFrame
    validation: pd.DataFrame  # at most train.max_validation_pairs
    hash: str  # of the file: what the checkpoints and the candidate were trained on


@dataclass(frozen=True)
class LoadedBase:
    """The base model on this rank's device, and what it was loaded with."""

    model: SentenceTransformer
    device: Literal["cpu", "cuda"]
    precision: Precision
    dimension: int
    dims: tuple[int, ...]  # the Matryoshka dims the loss trains


def read_training_data(params: TrainParams, paths: Paths) -> TrainingData:
    """The validated pairs, split; an error naming the fix when they cannot fill a batch."""
    pairs_path = TABLES["pairs"].validated_path(paths)
    if not pairs_path.is_file():
        raise TrainError(
            f"{pairs_path} not found; the train stage reads only validated data: run "
            "dvc repro validate (or make repro) first"
        )
    pairs = io.read_parquet(pairs_path)
    train_pairs, validation_pairs = split_pairs(pairs, pairs_path)
    validation_pairs = capped_sample(validation_pairs, params.max_validation_pairs, params.seed)
    if distinct_texts(train_pairs) < params.batch_size:
        raise TrainError(
            f"the training split of {pairs_path} has {len(train_pairs)} pairs but only "
            f"{distinct_texts(train_pairs)} distinct texts per column, too few to fill one "
            f"no-duplicates batch of train.batch_size={params.batch_size}; lower "
            "train.batch_size or add data"
        )
    return TrainingData(pairs_path, pairs, train_pairs, validation_pairs, data_hash(pairs_path))


def load_base(params: TrainParams, world: World) -> LoadedBase:
    """Join the other ranks on the device chosen, then load the base model there."""
    device = resolve_device(params.device)
    precision = choose_precision(device)
    join(world, device)
    model = seeded_base_model(params, f"cuda:{world.local_rank}" if device == "cuda" else device)
    dimension = model.get_embedding_dimension()
    if dimension is None:
        raise ModelLoadError(f"base model {params.base_model!r} does not report its dimension")
    dims = resolve_matryoshka_dims(params.matryoshka_dims, dimension)
    return LoadedBase(model, device, precision, dimension, dims)


def seeded_base_model(params: TrainParams, device: str) -> SentenceTransformer:
    """``train.base_model`` as training starts from it, on ``device``: the same weights on
    every load, those the base model lacks initialised from ``train.seed``."""
    from transformers import set_seed

    set_seed(params.seed)  # before loading: a base model missing some weights initialises them
    return load_base_model(
        params.base_model,
        pooling=params.pooling,
        max_seq_length=params.max_seq_length,
        device=device,
    )


def with_mined_negatives(
    data: TrainingData,
    model: SentenceTransformer,
    params: TrainParams,
    paths: Paths,
    world: World,
) -> tuple[TrainingData, MinedNegatives | None]:
    """With ``train.mined_negatives``, the training split with the negatives ``model`` (the
    untrained base) ranks highest among the non-relevant passages; else ``data`` as it is."""
    if not params.mined_negatives:
        return data, None
    with main_first(world):  # rank 0 mines and caches; the others read its cache
        mining = mine_training_negatives(
            model, data.pairs, params=params, cache_dir=paths.negatives_cache, pairs_hash=data.hash
        )
    train_pairs, _ = split_pairs(mining.pairs, data.path)
    return dataclasses.replace(data, train=train_pairs), mining
