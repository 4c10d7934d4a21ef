"""The models evaluation scores: the candidate, its base model and any saved model folder,
each as a :class:`ModelSource` (a fingerprint to key the embedding cache, and a loader
that runs only on a cache miss).

The base model is the one the candidate recorded in its ``mathembed.json`` (``base_model``
with ``params.pooling`` and ``params.max_seq_length``).
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines.common import io, models
from pipelines.common.embeddings import TextEncoder
from pipelines.common.paths import MODEL_METADATA_FILE

CANDIDATE = "candidate"
BASE = "base"


@dataclass(frozen=True)
class BaseModelSpec:
    """The base model as the train stage loads it (``train.base_model`` and its knobs)."""

    name_or_path: str
    pooling: models.Pooling
    max_seq_length: int


@dataclass(frozen=True)
class ModelSource:
    """A model to score: its identity (cache key) and how to load it, on a cache miss only."""

    name: str
    fingerprint: str
    load: Callable[[], TextEncoder]
    info: dict[str, Any] = field(default_factory=dict)


def read_model_metadata(model_dir: Path) -> dict[str, Any]:
    """``mathembed.json`` of a model folder written by train (``{}`` when absent)."""
    path = model_dir / MODEL_METADATA_FILE
    if not path.is_file():
        return {}
    metadata = io.read_json(path)
    if not isinstance(metadata, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(metadata).__name__}")
    return metadata


def matryoshka_dims_of(metadata: Mapping[str, Any]) -> list[int]:
    """The Matryoshka dims train recorded (top level, or inside ``params``), else ``[]``."""
    dims = metadata.get("matryoshka_dims")
    if dims is None and isinstance(metadata.get("params"), Mapping):
        dims = metadata["params"].get("matryoshka_dims")
    if not dims:
        return []
    if not isinstance(dims, list) or not all(isinstance(d, int) and d > 0 for d in dims):
        raise ValueError(
            f"{MODEL_METADATA_FILE}: matryoshka_dims must be positive ints, got {dims!r}"
        )
    return dims


def check_model_dir(model_dir: Path, name: str) -> None:
    """Refuse a folder that is not a saved sentence-transformers model, saying what to do."""
    if not (model_dir / "modules.json").is_file():
        fix = (
            "train it first: `dvc repro train` (or `mathembed train`)"
            if name == CANDIDATE
            else "pass a folder saved with SentenceTransformer.save()"
        )
        state = "not found" if not model_dir.exists() else "is not a sentence-transformers model"
        raise FileNotFoundError(f"{name} model {model_dir} {state} (no modules.json); {fix}")


def local_model_source(name: str, model_dir: Path) -> ModelSource:
    """A model saved with ``SentenceTransformer.save`` (the candidate, a champion)."""
    check_model_dir(model_dir, name)

    def load() -> TextEncoder:
        from sentence_transformers import SentenceTransformer

        model: TextEncoder = SentenceTransformer(str(model_dir), local_files_only=True)
        return model

    fingerprint = models.model_fingerprint(model_dir)
    return ModelSource(
        name, fingerprint, load, {"source": str(model_dir), "fingerprint": fingerprint}
    )


def base_model_source(spec: BaseModelSpec) -> ModelSource:
    """The base model, loaded with the pooling and sequence length train used."""
    fingerprint = models.base_model_fingerprint(
        spec.name_or_path, pooling=spec.pooling, max_seq_length=spec.max_seq_length
    )

    def load() -> TextEncoder:
        model: TextEncoder = models.load_base_model(
            spec.name_or_path, pooling=spec.pooling, max_seq_length=spec.max_seq_length
        )
        return model

    info = {
        "source": spec.name_or_path,
        "pooling": spec.pooling,
        "max_seq_length": spec.max_seq_length,
        "fingerprint": fingerprint,
    }
    return ModelSource(BASE, fingerprint, load, info)


def base_spec_from_metadata(metadata: Mapping[str, Any]) -> BaseModelSpec | None:
    """The base model the candidate recorded in ``mathembed.json``, when complete."""
    params = metadata.get("params")
    base = metadata.get("base_model")
    if not isinstance(base, str) or not isinstance(params, Mapping):
        return None
    pooling, max_seq_length = params.get("pooling"), params.get("max_seq_length")
    if pooling is None or not isinstance(max_seq_length, int):
        return None
    if pooling not in typing.get_args(models.Pooling):
        raise ValueError(
            f"{MODEL_METADATA_FILE}: params.pooling {pooling!r} is not one of "
            f"{list(typing.get_args(models.Pooling))}; retrain the candidate"
        )
    return BaseModelSpec(base, pooling, max_seq_length)
