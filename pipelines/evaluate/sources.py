"""The models evaluation scores: the candidate, its base model and any saved model folder,
each as a :class:`ModelSource` (a fingerprint to key the embedding cache, and a loader
that runs only on a cache miss).

The base model is the one the candidate recorded in its ``mathembed.json``
(:attr:`pipelines.registry.candidate_metadata.CandidateMetadata.base_spec`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines.registry.candidate_metadata import BaseModelSpec
from pipelines.retrieval import models
from pipelines.retrieval.embeddings import TextEncoder

CANDIDATE = "candidate"
BASE = "base"


@dataclass(frozen=True)
class ModelSource:
    """A model to score: its identity (cache key) and how to load it, on a cache miss only."""

    name: str
    fingerprint: str
    load: Callable[[], TextEncoder]
    info: dict[str, Any] = field(default_factory=dict)


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
