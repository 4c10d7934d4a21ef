"""The candidate's ``mathembed.json``: what train records about a model folder it wrote, and
how evaluate and promote read it back.

One typed record: train builds it (:meth:`CandidateMetadata.of_training`) and writes
:meth:`~CandidateMetadata.as_json`; evaluate and promote read it with
:func:`read_candidate_metadata`. A file that is not a JSON object, or a field of the wrong
type, is a one-line :class:`CandidateMetadataError` naming the file and the field.

The base model is recorded with the knobs train loaded it with (``params.pooling``,
``params.max_seq_length``, also written at the top level): evaluate and promote load the
same base model to compare the candidate with (:attr:`CandidateMetadata.base_spec`).
"""

from __future__ import annotations

import json
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pipelines.common.paths import MODEL_METADATA_FILE
from pipelines.retrieval.models import Pooling

#: How an error names the type a field must have.
_KIND_NAMES: dict[type, str] = {str: "a string", int: "an integer", float: "a number"}
#: How a message about a bad record ends.
RETRAIN_HINT = "retrain the candidate (`dvc repro train`)"


class CandidateMetadataError(ValueError):
    """``mathembed.json`` cannot be read as train writes it; the message names the field."""


@dataclass(frozen=True)
class BaseModelSpec:
    """The base model as the train stage loads it (``train.base_model`` and its knobs)."""

    name_or_path: str
    pooling: Pooling
    max_seq_length: int


@dataclass(frozen=True)
class CandidateMetadata:
    """What train recorded about a candidate. Every field may be missing from a file written
    by hand or by an older mathembed (``None``, or empty); train writes them all."""

    fingerprint: str | None = None
    base_model: str | None = None
    #: The ``train`` section the model was trained with (``params`` in the file).
    train_params: Mapping[str, Any] = field(default_factory=dict)
    matryoshka_dims: tuple[int, ...] = ()
    embedding_dimension: int | None = None
    data_hash: str | None = None
    trained_at: str | None = None
    #: The share of the fine-tuned weights in the candidate's, the rest the base model's
    #: (``train.mixing_weights``, :mod:`pipelines.train.mixing`); 1.0: not mixed.
    mixing_weight: float | None = None
    #: The papers whose passages were training positives, the champion's included for a
    #: warm start: what the next warm start treats as old (:mod:`pipelines.train.warm_start`).
    trained_papers: tuple[str, ...] = ()

    @classmethod
    def of_training(
        cls,
        train_params: Mapping[str, Any],
        *,
        matryoshka_dims: Sequence[int],
        embedding_dimension: int,
        data_hash: str,
        trained_at: str,
        mixing_weight: float,
        trained_papers: Sequence[str] = (),
    ) -> CandidateMetadata:
        """The record of a model train just trained with ``train_params`` (its section)."""
        return cls(
            base_model=str(train_params["base_model"]),
            train_params=dict(train_params),
            matryoshka_dims=tuple(matryoshka_dims),
            embedding_dimension=embedding_dimension,
            data_hash=data_hash,
            trained_at=trained_at,
            mixing_weight=mixing_weight,
            trained_papers=tuple(trained_papers),
        )

    def with_fingerprint(self, fingerprint: str) -> CandidateMetadata:
        return replace(self, fingerprint=fingerprint)

    @property
    def pooling(self) -> Any:
        return self.train_params.get("pooling")

    @property
    def max_seq_length(self) -> Any:
        return self.train_params.get("max_seq_length")

    @property
    def base_spec(self) -> BaseModelSpec | None:
        """The base model with the knobs train used, when the record names all three."""
        return base_spec_from_metadata({"base_model": self.base_model, "params": self.train_params})

    def as_json(self) -> dict[str, Any]:
        """The file's content (``pooling`` and ``max_seq_length`` also at the top level,
        as the train section has them); ``fingerprint`` only once it is known."""
        record: dict[str, Any] = {
            "base_model": self.base_model,
            "pooling": self.pooling,
            "matryoshka_dims": list(self.matryoshka_dims),
            "embedding_dimension": self.embedding_dimension,
            "max_seq_length": self.max_seq_length,
            "params": dict(self.train_params),
            "data_hash": self.data_hash,
            "trained_at": self.trained_at,
            "mixing_weight": self.mixing_weight,
            "trained_papers": list(self.trained_papers),
        }
        if self.fingerprint:
            record["fingerprint"] = self.fingerprint
        return dict(sorted(record.items()))  # the file's order: it is written with sorted keys

    @classmethod
    def from_json(cls, value: Any, where: str = MODEL_METADATA_FILE) -> CandidateMetadata:
        """Parse a record (``where`` names it in errors); raises :class:`CandidateMetadataError`."""
        if not isinstance(value, dict):
            raise CandidateMetadataError(
                f"{where}: expected a JSON object, got {type(value).__name__}; {RETRAIN_HINT}"
            )
        params = value.get("params", {})
        if not isinstance(params, Mapping):
            raise _bad_field(where, "params", "a mapping (train's section)", params)
        try:
            matryoshka_dims_of(value, where)
            base_spec_from_metadata(value, where)
        except ValueError as error:
            raise CandidateMetadataError(str(error)) from None
        return cls(
            fingerprint=_optional(value, "fingerprint", str, where),
            base_model=_optional(value, "base_model", str, where),
            train_params=dict(params),
            matryoshka_dims=tuple(matryoshka_dims_of(value, where)),
            embedding_dimension=_optional(value, "embedding_dimension", int, where),
            # An empty hash records nothing: promotion refuses it as unrecorded.
            data_hash=_optional(value, "data_hash", str, where) or None,
            trained_at=_optional(value, "trained_at", str, where),
            mixing_weight=_optional(value, "mixing_weight", float, where),
            trained_papers=_strings(value, "trained_papers", where),
        )


def read_candidate_metadata(model_dir: Path) -> CandidateMetadata | None:
    """``mathembed.json`` of a model folder written by train; ``None`` when it has none."""
    path = model_dir / MODEL_METADATA_FILE
    if not path.is_file():
        return None
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CandidateMetadataError(f"{path} is not JSON ({error}); {RETRAIN_HINT}") from None
    return CandidateMetadata.from_json(value, str(path))


def recorded_base_model(model_dir: Path) -> BaseModelSpec | None:
    """The base model ``model_dir``'s record names; ``None`` without a (complete) record."""
    recorded = read_candidate_metadata(model_dir)
    return recorded.base_spec if recorded is not None else None


def matryoshka_dims_of(metadata: Mapping[str, Any], where: str = MODEL_METADATA_FILE) -> list[int]:
    """The Matryoshka dims train recorded (top level, or inside ``params``), else ``[]``."""
    dims = metadata.get("matryoshka_dims")
    if dims is None and isinstance(metadata.get("params"), Mapping):
        dims = metadata["params"].get("matryoshka_dims")
    if not dims:
        return []
    if not isinstance(dims, list) or not all(isinstance(d, int) and d > 0 for d in dims):
        raise ValueError(f"{where}: matryoshka_dims must be positive ints, got {dims!r}")
    return dims


def base_spec_from_metadata(
    metadata: Mapping[str, Any], where: str = MODEL_METADATA_FILE
) -> BaseModelSpec | None:
    """The base model a record names (``base_model``, ``params.pooling``,
    ``params.max_seq_length``), when complete; ``ValueError`` for a pooling train never uses."""
    params = metadata.get("params")
    base = metadata.get("base_model")
    if not isinstance(base, str) or not isinstance(params, Mapping):
        return None
    pooling, max_seq_length = params.get("pooling"), params.get("max_seq_length")
    if pooling is None or not isinstance(max_seq_length, int):
        return None
    if pooling not in typing.get_args(Pooling):
        raise ValueError(
            f"{where}: params.pooling {pooling!r} is not one of "
            f"{list(typing.get_args(Pooling))}; retrain the candidate"
        )
    return BaseModelSpec(base, pooling, max_seq_length)


def _optional(record: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    """``record[key]`` when absent, null or a ``kind`` (never a bool; an int for a float,
    as JSON does not tell them apart); else the error."""
    value = record.get(key)
    kinds = (int, float) if kind is float else (kind,)
    if value is not None and (not isinstance(value, kinds) or isinstance(value, bool)):
        raise _bad_field(where, key, _KIND_NAMES[kind], value)
    return float(value) if kind is float and isinstance(value, int) else value


def _strings(record: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    """``record[key]`` as a tuple of strings; absent or null is empty."""
    value = record.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _bad_field(where, key, "a list of strings", value)
    return tuple(value)


def _bad_field(where: str, key: str, expected: str, value: Any) -> CandidateMetadataError:
    return CandidateMetadataError(
        f"{where}: {key} must be {expected}, got {value!r}; {RETRAIN_HINT}"
    )
