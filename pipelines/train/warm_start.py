"""Where a training run starts (``train.init``): the base model, or the registry's @champion.

``base`` retrains every night from ``train.base_model`` on all the pairs. ``champion`` (a
warm start, the default: benchmarks/results/nights.md) starts from the champion's weights,
so nights build on each other at a night's step budget: it trains on the pairs of papers
the champion never trained on (their positive passage's paper is not in its
``mathembed.json`` ``trained_papers``) and a stable draw of ``train.replay_ratio`` old
pairs per new one, so it does not forget them. The epochs and ``max_steps`` then apply to
that smaller set: a night with few new papers trains few steps.

A warm start needs a champion trained from the same ``train.base_model`` (with the same
pooling and sequence length): mixing (:mod:`pipelines.train.mixing`) and the gate's
comparison with the base both assume it, so any other is refused in one line. With no
registry or no champion yet (the first night), or a registry that cannot be reached (as
training's own MLflow run, the night goes on: promotion reports it), the run starts from
the base model and says so. The champion is copied to ``models/start/`` (every rank loads
it from there, and mixing mixes with it), and made again when its files no longer match
the fingerprint the registry tagged.

DVC does not see the registry: a new champion alone does not make ``train`` stale. It
needs no retraining either; the next night with new pairs starts from it. ``train.json``
``init`` records which version a run started from.
"""

from __future__ import annotations

import logging
import math
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import pandas as pd

from pipelines.common import io
from pipelines.common.config import PromoteParams, TrainParams
from pipelines.common.paths import MODEL_METADATA_FILE, Paths
from pipelines.registry.candidate_metadata import (
    CandidateMetadata,
    CandidateMetadataError,
    read_candidate_metadata,
)
from pipelines.retrieval.models import load_base_model, model_fingerprint
from pipelines.train.setup import TrainError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)


def paper_of(passage_id: str) -> str:
    """The paper a passage id (``<paper><version>#<chunk>``) belongs to, with its version:
    a paper's new version is new material."""
    return passage_id.partition("#")[0]


def positive_papers(pairs: pd.DataFrame) -> pd.Series:
    """The paper of each training pair's positive passage, in the training split's order
    (the trainer's frame keeps only the texts); ``""`` where the table names no passage."""
    train = pairs.loc[pairs["split"] == "train"]
    if "positive_id" not in train.columns:
        return pd.Series([""] * len(train), dtype=str)
    return train["positive_id"].fillna("").astype(str).map(paper_of).reset_index(drop=True)


def trained_papers(papers: pd.Series) -> tuple[str, ...]:
    """The papers of :func:`positive_papers`, sorted (what ``mathembed.json`` records, so a
    warm start knows which pairs are new)."""
    return tuple(sorted(set(papers) - {""}))


@dataclass(frozen=True)
class WarmSplit:
    """A warm start's training pairs: the new ones and the old ones replayed."""

    pairs: pd.DataFrame
    new: int
    replayed: int
    old: int  # old pairs there were to replay
    note: str


def warm_split(
    train_pairs: pd.DataFrame,
    papers: pd.Series,
    known_papers: frozenset[str],
    params: TrainParams,
) -> WarmSplit:
    """The pairs whose positive's paper (``papers``, row by row) is not in ``known_papers``,
    and a stable draw of ``replay_ratio`` old pairs per new one (at least a batch, where
    there are that many).

    With no new pair the whole split is trained on: the pairs changed (else DVC would not
    have rerun train) but no paper is new, so every pair is as new as any other.
    """
    is_new = ~papers.isin(known_papers).to_numpy()
    new, old = train_pairs[is_new], train_pairs[~is_new]
    if new.empty:
        return WarmSplit(
            train_pairs,
            0,
            len(old),
            len(old),
            "no pair from a paper the champion did not train on: all the pairs are trained on",
        )
    wanted = max(math.ceil(params.replay_ratio * len(new)), params.batch_size)
    replay = old.sample(n=min(wanted, len(old)), random_state=params.seed)
    return WarmSplit(
        pd.concat([new, replay]),
        len(new),
        len(replay),
        len(old),
        f"{len(new)} new pairs (papers the champion did not train on) and {len(replay)} of "
        f"the {len(old)} old ones replayed (train.replay_ratio {params.replay_ratio:g})",
    )


@dataclass(frozen=True)
class Start:
    """The weights a run starts from: ``train.base_model``, or a champion copied locally."""

    asked: Literal["base", "champion"]
    note: str  # why this start, one line
    model_dir: Path | None = None  # the champion's copy; None: the base model
    version: str | None = None
    fingerprint: str | None = None
    known_papers: frozenset[str] = field(default_factory=frozenset)

    @property
    def is_warm(self) -> bool:
        return self.model_dir is not None

    def load(self, params: TrainParams, device: str) -> SentenceTransformer:
        """The starting weights on ``device``, loaded as the base model is (pooling, length,
        ``train.attention_dropout``; weights the model lacks seeded by ``train.seed``)."""
        from transformers import set_seed

        set_seed(params.seed)
        return load_base_model(
            str(self.model_dir) if self.model_dir is not None else params.base_model,
            pooling=params.pooling,
            max_seq_length=params.max_seq_length,
            device=device,
            attention_dropout=params.attention_dropout,
        )

    def record(self) -> dict[str, Any]:
        """``train.json``'s ``init``: what was asked, what the run started from, and why."""
        return {
            "asked": self.asked,
            "started_from": "champion" if self.is_warm else "base",
            "version": self.version,
            "fingerprint": self.fingerprint,
            "note": self.note,
        }


def base_start(params: TrainParams, note: str = "train.init: base") -> Start:
    return Start(params.init, note)


def resolve_start(params: TrainParams, promote: PromoteParams, paths: Paths) -> Start:
    """Where this run starts: the base model, or the champion copied to ``models/start/``.

    Raises :class:`TrainError` (one line) for a champion that cannot be warm-started from:
    trained from another base model, its record or its files missing.
    """
    if params.init == "base":
        return base_start(params)
    from pipelines.registry.mlflow_registry import (
        CHAMPION,
        PromotionError,
        RegistryError,
        connect,
        load_registered_model,
        version_fingerprint,
    )

    try:
        registry = connect(paths, promote, create=False)
    except RegistryError as error:
        # As training's own MLflow run does: the night goes on; promotion, which needs the
        # registry, reports it and compares with the champion all the same.
        cause = str(error).split(". ")[0]
        logger.warning("train: train.init: champion, but %s: starting from the base model", cause)
        return base_start(
            params, f"train.init: champion, but {cause}: starting from the base model"
        )
    try:
        version = registry.version_by_alias(CHAMPION) if registry is not None else None
        if registry is None or version is None:
            return base_start(
                params,
                f"train.init: champion, but {promote.registered_model} has no @champion "
                "yet: starting from the base model",
            )
        label = f"{promote.registered_model} v{version.version} (@champion)"
        fingerprint = version_fingerprint(registry, version)
        copy = paths.models / "start"
        copied = _holds(copy, fingerprint)
        metadata = (
            read_candidate_metadata(copy) or CandidateMetadata()
            if copied
            else _champion_metadata(registry, version.run_id or "", label)
        )
        refusal = base_mismatch(metadata, params, label)  # train's knobs may have changed
        if refusal:
            raise TrainError(refusal)
        if not copied:
            staging = paths.models / "start.partial"
            shutil.rmtree(staging, ignore_errors=True)
            champion = cast("SentenceTransformer", load_registered_model(registry, version))
            champion.save(str(staging))
            io.write_json(staging / MODEL_METADATA_FILE, metadata.as_json())
            shutil.rmtree(copy, ignore_errors=True)
            staging.rename(copy)
    except PromotionError as error:
        raise TrainError(f"train.init: champion: {error}") from None
    return Start(
        "champion",
        f"train.init: champion: starting from {label}",
        copy,
        str(version.version),
        fingerprint,
        frozenset(metadata.trained_papers),
    )


def base_mismatch(metadata: CandidateMetadata, params: TrainParams, label: str) -> str | None:
    """Why ``label`` cannot be warm-started from under ``params``; ``None`` when it can."""
    recorded = metadata.base_spec
    if recorded is None:
        return (
            f"train.init: champion, but {label} does not record its base model "
            f"({MODEL_METADATA_FILE}): set train.init: base"
        )
    wanted = (params.base_model, params.pooling, params.max_seq_length)
    if (recorded.name_or_path, recorded.pooling, recorded.max_seq_length) != wanted:
        return (
            f"train.init: champion, but {label} was trained from {recorded.name_or_path!r} "
            f"(pooling {recorded.pooling}, max_seq_length {recorded.max_seq_length}), not "
            f"train.base_model {params.base_model!r} (pooling {params.pooling}, "
            f"max_seq_length {params.max_seq_length}): set train.init: base to start over, "
            "or train's base model back to the champion's"
        )
    return None


def _champion_metadata(registry: Any, run_id: str, label: str) -> CandidateMetadata:
    """The ``mathembed.json`` promote logged with the champion's run."""
    import mlflow.artifacts
    from mlflow.exceptions import MlflowException

    from pipelines.registry.mlflow_registry import fluent_uri

    try:
        with fluent_uri(registry.uri):
            value = mlflow.artifacts.load_dict(f"runs:/{run_id}/{MODEL_METADATA_FILE}")
        return CandidateMetadata.from_json(value, f"{label}'s {MODEL_METADATA_FILE}")
    except (MlflowException, OSError, ValueError) as error:
        if isinstance(error, CandidateMetadataError):
            raise TrainError(f"train.init: champion: {error}") from None
        raise TrainError(
            f"train.init: champion, but {label}'s {MODEL_METADATA_FILE} cannot be read "
            f"({' '.join(str(error).split())[:200]}): set train.init: base"
        ) from None


def _holds(copy: Path, fingerprint: str) -> bool:
    """Whether ``copy`` holds the champion whole: its files' fingerprint is the one the
    registry tagged (stable across re-saves), so a damaged or stale copy is made again."""
    try:
        return model_fingerprint(copy) == fingerprint
    except (OSError, ValueError):
        return False
