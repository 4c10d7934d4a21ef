"""The candidate promotion considers: a model folder written by train, whose data passed
validation. Checked before MLflow is touched."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.common import io
from pipelines.common.paths import MODEL_METADATA_FILE, Paths
from pipelines.common.tables import TABLES
from pipelines.registry.candidate_metadata import (
    CandidateMetadata,
    CandidateMetadataError,
    read_candidate_metadata,
)
from pipelines.registry.mlflow_registry import PromotionRefusedError
from pipelines.retrieval.models import data_hash, model_fingerprint


@dataclass(frozen=True)
class Candidate:
    """A trained model folder and what train recorded about it in ``mathembed.json``."""

    directory: Path
    fingerprint: str
    metadata: CandidateMetadata

    @property
    def data_hash(self) -> str | None:
        return self.metadata.data_hash

    @property
    def base_model(self) -> str:
        return self.metadata.base_model or "unknown"


def load_candidate(candidate_dir: Path) -> Candidate:
    """Read ``candidate_dir``; the files must still hash to the recorded fingerprint."""
    if not (candidate_dir / "modules.json").is_file():
        raise PromotionRefusedError(
            f"no candidate model in {candidate_dir} (no modules.json); train one first "
            "(`dvc repro` runs train and evaluate), then run `mathembed promote`"
        )
    metadata_path = candidate_dir / MODEL_METADATA_FILE
    try:
        metadata = read_candidate_metadata(candidate_dir)
    except CandidateMetadataError as error:
        raise PromotionRefusedError(str(error)) from error
    if metadata is None:
        raise PromotionRefusedError(
            f"{metadata_path} not found: this folder was not written by the train stage; "
            "retrain it with `dvc repro train`"
        )
    if metadata.fingerprint is None:
        raise PromotionRefusedError(
            f"{metadata_path} has no 'fingerprint'; retrain it with `dvc repro train`"
        )
    actual = model_fingerprint(candidate_dir)
    if actual != metadata.fingerprint:
        raise PromotionRefusedError(
            f"{candidate_dir} was changed after training: its files hash to {actual[:12]}…, "
            f"{MODEL_METADATA_FILE} records {metadata.fingerprint[:12]}…; retrain it with "
            "`dvc repro train`"
        )
    return Candidate(candidate_dir, actual, metadata)


def require_validated(paths: Paths, candidate: Candidate) -> dict[str, Any]:
    """The data-quality record, if the candidate was trained on data that passed validation.

    ``metrics/data_quality.json`` must exist and carry ``"passed": true``, and the
    candidate's ``data_hash`` (train's hash of the pairs it read) must be the hash of
    ``data/validated/pairs.parquet`` as it is now — the file that validation run wrote —
    and, when the record names a ``data_hash`` itself, that one too.
    """
    path = paths.metric_file("data_quality")
    if not path.is_file():
        raise PromotionRefusedError(
            f"{path} not found: the candidate's data was never validated, so it cannot be "
            "promoted; run `dvc repro` (validate, train, evaluate), then `mathembed promote`"
        )
    record = io.read_json(path)
    passed = record.get("passed") if isinstance(record, dict) else None
    if not isinstance(record, dict) or passed is not True:
        raise PromotionRefusedError(
            f"{path} says the data did not pass validation (passed = {passed!r}); a candidate "
            "trained on unvalidated data is never promoted. Fix the data (see "
            "reports/data_quality/ and data/quarantine/), rerun `dvc repro`, then promote"
        )
    trained_on = candidate.data_hash
    if trained_on is None:
        raise PromotionRefusedError(
            f"{candidate.directory / MODEL_METADATA_FILE} does not record the data it was trained "
            "on (data_hash), so it cannot be matched with a validation; retrain it with "
            "`dvc repro train`"
        )
    pairs = TABLES["pairs"].validated_path(paths)
    if not pairs.is_file():
        raise PromotionRefusedError(
            f"{pairs} not found: there is no validated training data to match the candidate "
            "with; run `dvc repro`, then promote"
        )
    for validated, source in ((data_hash(pairs), pairs), (record.get("data_hash"), path)):
        if validated is not None and validated != trained_on:
            raise PromotionRefusedError(
                f"the candidate was trained on data {trained_on[:12]}…, but the validated "
                f"data ({source}) is {str(validated)[:12]}…; rerun `dvc repro` so the "
                "candidate is trained and evaluated on the validated data, then promote"
            )
    return record
