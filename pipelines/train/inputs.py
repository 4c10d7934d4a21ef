"""What a training run starts from: the validated pairs, split (and with mined negatives
when ``train.mined_negatives`` is on), and the base model on this rank's device.

The steps of :func:`pipelines.train.stage.run_train` before the trainer is built; the pure
pieces they use are in :mod:`pipelines.train.setup`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pandas as pd

from pipelines.common import io
from pipelines.common.config import TrainParams
from pipelines.common.paths import Paths
from pipelines.common.tables import TABLES
from pipelines.common.windows import plain_windows
from pipelines.retrieval.models import ModelLoadError, data_hash
from pipelines.train.distributed import World, join, main_first, share
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
from pipelines.train.validation import (
    PASSAGES,
    WINDOWS,
    ValidationSet,
    validation_set,
    window_validation_set,
)
from pipelines.train.warm_start import Start, WarmSplit, positive_papers, warm_split

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
    start: Start  # the base model itself, or the champion a warm start loaded in its place


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
    check_fills_batch(train_pairs, params, f"the training split of {pairs_path}")
    return TrainingData(pairs_path, pairs, train_pairs, validation_pairs, data_hash(pairs_path))


def validation_tasks(
    data: TrainingData, params: TrainParams, paths: Paths
) -> dict[str, ValidationSet]:
    """The validation anchors' IR task among passages (distractors from the training
    passages) and, with ``train.validation_windows`` and validation pairs, among the plain
    windows of the validated passages' papers; a :class:`TrainError` naming the fix when
    those are missing."""
    tasks = {
        PASSAGES: validation_set(
            data.validation, data.train, max_corpus=params.max_validation_corpus, seed=params.seed
        )
    }
    if not params.validation_windows or data.validation.empty:
        return tasks
    chunks_path = TABLES["chunks"].validated_path(paths)
    if not chunks_path.is_file():
        raise TrainError(
            f"{chunks_path} not found; train.validation_windows asks the validation queries "
            "over the papers' text, which the validate stage writes: run dvc repro validate, "
            "or set train.validation_windows: false"
        )
    chunks = pd.read_parquet(chunks_path, columns=["chunk_id", "paper_id", "chunk_index", "text"])
    passage_of = dict(zip(data.pairs["positive"], data.pairs["positive_id"], strict=True))
    tasks[WINDOWS] = window_validation_set(
        data.validation,
        passage_of,
        plain_windows(chunks),
        max_corpus=params.max_validation_corpus,
        seed=params.seed,
    )
    return tasks


def check_fills_batch(train_pairs: pd.DataFrame, params: TrainParams, what: str) -> None:
    """A :class:`TrainError` naming the fix when ``train_pairs`` cannot fill one batch."""
    if distinct_texts(train_pairs) < params.batch_size:
        raise TrainError(
            f"{what} has {len(train_pairs)} pairs but only "
            f"{distinct_texts(train_pairs)} distinct texts per column, too few to fill one "
            f"no-duplicates batch of train.batch_size={params.batch_size}; lower "
            "train.batch_size or add data"
        )


def load_base(params: TrainParams, world: World, resolve_start: Callable[[], Start]) -> LoadedBase:
    """Join the other ranks on the device chosen, then load where training starts there
    (rank 0 alone resolves it, reading the registry and copying a champion once; the other
    ranks load what it shares)."""
    device = resolve_device(params.device)
    precision = choose_precision(device)
    join(world, device)
    start = share(resolve_start() if world.is_main else None)
    assert start is not None
    model = start.load(params, f"cuda:{world.local_rank}" if device == "cuda" else device)
    dimension = model.get_embedding_dimension()
    if dimension is None:
        raise ModelLoadError(f"base model {params.base_model!r} does not report its dimension")
    dims = resolve_matryoshka_dims(params.matryoshka_dims, dimension)
    return LoadedBase(model, device, precision, dimension, dims, start)


def with_mined_negatives(
    data: TrainingData,
    base: LoadedBase,
    params: TrainParams,
    paths: Paths,
    world: World,
) -> tuple[TrainingData, MinedNegatives | None]:
    """With ``train.mined_negatives``, the training split with the negatives the model
    training starts from (untrained yet) ranks highest among the non-relevant passages;
    else ``data`` as it is."""
    if not params.mined_negatives:
        return data, None
    with main_first(world):  # rank 0 mines and caches; the others read its cache
        mining = mine_training_negatives(
            base.model,
            data.pairs,
            params=params,
            cache_dir=paths.negatives_cache,
            pairs_hash=data.hash,
            miner_fingerprint=base.start.fingerprint,
        )
    train_pairs, _ = split_pairs(mining.pairs, data.path)
    return dataclasses.replace(data, train=train_pairs), mining


def with_warm_split(
    data: TrainingData, start: Start, params: TrainParams
) -> tuple[TrainingData, WarmSplit | None]:
    """For a warm start, the training split cut to the new pairs and a replay sample of
    the old (:func:`pipelines.train.warm_start.warm_split`); else ``data`` as it is."""
    if not start.is_warm:
        return data, None
    split = warm_split(data.train, positive_papers(data.pairs), start.known_papers, params)
    check_fills_batch(split.pairs, params, f"a warm start's training pairs ({split.note})")
    return dataclasses.replace(data, train=split.pairs), split
