"""The MLflow run that records a candidate: flattened params, the headline metrics (and
train's loss curve when train did not log its own run), a few provenance tags (git
commit, data and eval-data hashes) with the ``dvc.lock`` hashes and dataset counts as
files under ``provenance/``, the decision as tags and as the run's description, the
inputs as datasets, the eval and data-quality reports, the full metrics table, a model
card, and the model itself in the ``sentence_transformers`` flavour with
explicit pip requirements and a float32 signature.

When train logged its run live (``models/candidate/mlflow_run.json``) in the same store,
promotion logs into that run, so one run shows the training curves and the decision.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse
from urllib.request import url2pathname

from pipelines.common import io
from pipelines.common.config import Params, PromoteParams
from pipelines.common.paths import MODEL_METADATA_FILE, TRAINING_RUN_FILE, Paths
from pipelines.promote.candidate import Candidate
from pipelines.promote.card import model_readme
from pipelines.promote.decision import Decision
from pipelines.promote.headline import run_metrics
from pipelines.promote.provenance import dvc_lock_hashes, git_commit
from pipelines.promote.readme import finish_readme, read_run_facts
from pipelines.promote.run_inputs import embedding_signature, log_datasets
from pipelines.promote.scoring import ScoredModels
from pipelines.promote.tags import TAG_EVAL_DATA
from pipelines.registry.metric_records import SetFigures
from pipelines.registry.mlflow_registry import TAG_FINGERPRINT, Registry, promotion_experiment
from pipelines.registry.reporting import NOT_PROMOTED, PROMOTED, mlflow_name

if TYPE_CHECKING:
    from mlflow.entities import Metric

# The packages a loaded model needs, pinned to what produced it (MLflow would otherwise
# infer them by importing the model in a subprocess: slow, and not always right).
MODEL_REQUIREMENTS = ("sentence-transformers", "transformers", "torch", "numpy", "tokenizers")
#: The evaluate stage's per-dimension/per-k table (``reports/eval/``).
EVAL_TABLE_FILE = "metrics.csv"
#: A night's outcome and reason as run tags (see :mod:`pipelines.promote.nights`).
OUTCOME_TAG = "mathembed.outcome"
REASON_TAG = "mathembed.reason"
#: MLflow shows this run tag as the run's description.
NOTE_TAG = "mlflow.note.content"


def find_logged_run(
    registry: Registry, promote: PromoteParams, fingerprint: str, training_run: str | None = None
) -> tuple[str | None, str]:
    """A finished run of this candidate whose model was logged but never registered
    (``training_run``, train's own run, is looked at first: it may be in another experiment)."""
    experiment_id = promotion_experiment(registry, promote, create=False)
    runs = []
    if training_run is not None:
        runs.append(registry.client.get_run(training_run))
    if experiment_id is not None:
        runs += registry.client.search_runs(
            [experiment_id],
            f"tags.{TAG_FINGERPRINT} = '{fingerprint}' and attributes.status = 'FINISHED'",
            max_results=10,
        )
    for run in runs:
        if run.info.status != "FINISHED" or run.data.tags.get(TAG_FINGERPRINT) != fingerprint:
            continue
        model_uri = run.data.tags.get("model_uri")
        if model_uri:
            return run.info.run_id, model_uri
    return None, ""


def fail_orphaned_runs(
    registry: Registry, promote: PromoteParams, fingerprint: str, keep: str | None = None
) -> list[str]:
    """Mark this candidate's RUNNING runs FAILED and delete their artifacts; their ids.

    Called under the promotion lock, so such a run belongs to a promotion whose process
    died (a SIGKILL during ``log_model`` leaves one, with the model's ~90 MB of files in
    the run's and the logged model's artifact folders). ``keep`` (train's own run, which
    the promotion resumes) is never failed: its training record is not the promotion's
    to delete; the rerun logs into it again.
    """
    from mlflow.entities import LoggedModelStatus, RunStatus

    experiment_id = promotion_experiment(registry, promote, create=False)
    if experiment_id is None:
        return []
    client = registry.client
    runs = client.search_runs(
        [experiment_id],
        f"tags.{TAG_FINGERPRINT} = '{fingerprint}' and attributes.status = 'RUNNING'",
        max_results=100,
    )
    failed = []
    for run in runs:
        run_id = run.info.run_id
        if run_id == keep:
            continue
        models = client.search_logged_models(
            experiment_ids=[experiment_id], filter_string=f"source_run_id = '{run_id}'"
        )
        kept = [
            location
            for location in [model.artifact_location for model in models] + [run.info.artifact_uri]
            if not _delete_artifacts(location)
        ]
        if kept:  # said on the run, so nobody takes them for a finished run's files
            client.set_tag(run_id, "orphaned_artifacts_left", " ".join(kept)[:5000])
        for model in models:
            client.finalize_logged_model(model.model_id, LoggedModelStatus.FAILED)
        # Terminated last: a crash before this leaves it RUNNING, so the next run retries.
        client.set_terminated(run_id, RunStatus.to_string(RunStatus.FAILED))
        failed.append(run_id)
    return failed


def _delete_artifacts(location: str) -> bool:
    """Delete everything under an artifact location; ``False`` where the store cannot."""
    from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

    try:
        get_artifact_repository(location).delete_artifacts()
    except NotImplementedError:  # e.g. a read-only or append-only artifact store
        return False
    return True


def logged_model_id(model_uri: str) -> str | None:
    """``models:/m-<id>`` (what ``log_model`` returns in MLflow 3) -> ``m-<id>``.

    A tracking server refuses to register such a source without the id.
    """
    name = model_uri.removeprefix("models:/")
    return name if name != model_uri and "/" not in name else None


def training_run_id(registry: Registry, candidate: Candidate) -> str | None:
    """The run train logged live (``mlflow_run.json`` in the model folder), when it is in
    this tracking store; promotion then logs into it instead of starting another run."""
    from mlflow.exceptions import MlflowException

    record = _read_json_or_empty(candidate.directory / TRAINING_RUN_FILE)
    run_id = record.get("run_id")
    if not isinstance(run_id, str) or not run_id:
        return None
    try:
        registry.client.get_run(run_id)
    except MlflowException:  # logged to another store (or deleted since): a run of our own
        return None
    return run_id


def log_run(
    params: Params,
    paths: Paths,
    candidate: Candidate,
    registry: Registry,
    decision: Decision,
    figures: Sequence[SetFigures],
    scored: ScoredModels,
    data_quality: Mapping[str, Any],
    card: str,
    *,
    resume_run_id: str | None = None,
) -> tuple[str, str]:
    """Log the candidate's run (into train's run when ``resume_run_id``); its id and model URI.

    The metrics are the headline only (:mod:`pipelines.promote.headline`); the full table
    is an artifact. The inputs are datasets with their DVC hashes; the decision is the
    ``mathembed.outcome``/``mathembed.reason`` tags; the model carries ``card`` in its
    README and a float32 signature.
    """
    import mlflow
    import mlflow.sentence_transformers
    from sentence_transformers import SentenceTransformer

    experiment_id = promotion_experiment(registry, params.promote, create=True)
    assert experiment_id is not None
    hashes = dvc_lock_hashes(paths)
    run_tags = {
        TAG_FINGERPRINT: candidate.fingerprint,
        "git_commit": git_commit(paths.root),
        "base_model": candidate.base_model,
        "data_version": candidate.data_hash or "unknown",
        TAG_EVAL_DATA: scored.eval_data_hash,
        **outcome_tags(NOT_PROMOTED if not decision.promote else PROMOTED, decision.reason),
    }
    metrics = run_metrics(figures)
    model = SentenceTransformer(str(candidate.directory), device="cpu", local_files_only=True)
    # sentence-transformers writes this text as the saved model's README.md (it reuses a
    # card it loaded unless the model was trained in this process).
    readme = candidate.directory / "README.md"
    # Clean examples and written limitations in place of the library's (pipelines.promote.readme).
    model._model_card_text = finish_readme(  # type: ignore[assignment]  # typed as None
        model_readme(readme.read_text(encoding="utf-8") if readme.is_file() else None, card),
        read_run_facts(paths, candidate.base_model),
    )
    if resume_run_id is not None:
        run_context = mlflow.start_run(run_id=resume_run_id)
    else:
        run_context = mlflow.start_run(
            experiment_id=experiment_id,
            run_name=f"candidate-{candidate.fingerprint[:12]}",
        )
    with run_context as run:
        run_id = run.info.run_id
        mlflow.set_tags({**run_tags, NOTE_TAG: card})
        already = registry.client.get_run(run_id).data.params
        mlflow.log_params(
            {
                key: value
                for key, value in (
                    (key, _param_value(value))
                    for key, value in logged_params(params, candidate).items()
                )
                if key not in already  # train's run logged it: a param cannot change
            }
        )
        mlflow.log_metrics(metrics)
        if resume_run_id is None:  # train's own run has its curves already, logged live
            train_metrics = _read_json_or_empty(paths.metric_file("train"))
            registry.client.log_batch(run_id, metrics=_curve_metrics(train_metrics))
        log_datasets(paths, hashes)
        # Provenance a person looks up rather than reads: files, not dozens of tags.
        mlflow.log_dict(hashes, "provenance/dvc_lock_hashes.json")
        mlflow.log_dict(_read_json_or_empty(paths.metric_file("data")), "provenance/data.json")
        mlflow.log_dict(candidate.metadata.as_json(), MODEL_METADATA_FILE)
        mlflow.log_dict(dict(data_quality), "data_quality.json")
        for folder, artifact_path in (
            (paths.eval_reports, "eval_report"),
            (paths.data_quality_reports, "data_quality_report"),
        ):
            if folder.is_dir():
                mlflow.log_artifacts(str(folder), artifact_path)
        _log_eval_table(paths)
        mlflow.log_text(card, "model_card.md")
        logged = mlflow.sentence_transformers.log_model(
            model,
            name="model",
            pip_requirements=pip_requirements(),
            signature=embedding_signature(model.get_embedding_dimension()),
        )
        _restore_plain_modes(mlflow.get_logged_model(logged.model_id).artifact_location)
        # Marks the run as complete for a rerun after a crash before registration.
        mlflow.set_tag("model_uri", logged.model_uri)
    return run_id, logged.model_uri


def _restore_plain_modes(artifact_location: str | None) -> None:
    """The logged copy's weights readable as the umask says, when the store is a local
    folder (safetensors writes them 0600 and the copy keeps it; remote stores keep no mode)."""
    location = urlparse(artifact_location or "")
    if location.scheme == "file" and location.path:
        io.restore_plain_modes(Path(url2pathname(location.path)))


def outcome_tags(outcome: str, reason: str) -> dict[str, str]:
    """A night's outcome as run tags: what the runs list and ``mlflow runs`` filter on."""
    return {OUTCOME_TAG: outcome, REASON_TAG: short_reason(reason)}


def short_reason(reason: str, limit: int = 250) -> str:
    """The reason on one line, cut at ``limit`` characters (the full one is in the card)."""
    line = " ".join(reason.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _log_eval_table(paths: Paths) -> None:
    """The evaluate stage's per-dimension/per-k table as an MLflow table (the UI shows it as
    one), or ``eval.json`` as a file when the stage wrote no table."""
    import mlflow
    import pandas as pd

    table = paths.eval_reports / EVAL_TABLE_FILE
    if table.is_file():
        frame = pd.read_csv(table)
        # MLflow's table logging selects "object" columns: pandas 3's "str" columns would
        # warn that this selection is deprecated; object columns are what it expects.
        text = frame.select_dtypes(include=["str"]).columns
        mlflow.log_table(
            frame.astype(dict.fromkeys(text, object)), artifact_file="eval/metrics_table.json"
        )
    elif paths.metric_file("eval").is_file():
        mlflow.log_artifact(str(paths.metric_file("eval")), "eval")


def logged_params(params: Params, candidate: Candidate) -> dict[str, Any]:
    """The run's params: what the model was trained with, what the promotion decided with.

    ``train.*`` come from the candidate's own record (``mathembed.json``), never from the
    ``--params`` file, which may differ from the one the model was trained with;
    ``evaluate.*`` and ``promote.*`` are this promotion's scoring and rule.
    """
    decided_with = {
        "evaluate": dataclasses.asdict(params.evaluate),
        "promote": dataclasses.asdict(params.promote),
    }
    return {
        **_flatten(candidate.metadata.train_params, "train."),
        **_flatten(decided_with),
    }


def pip_requirements() -> list[str]:
    """The model's runtime packages pinned to the installed versions."""
    return [f"{name}=={importlib.metadata.version(name)}" for name in MODEL_REQUIREMENTS]


def _read_json_or_empty(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    value = io.read_json(path)
    return value if isinstance(value, dict) else {}


def _flatten(value: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings as ``{"a.b.c": leaf}``."""
    flat: dict[str, Any] = {}
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, Mapping):
            flat.update(_flatten(item, f"{name}."))
        else:
            flat[name] = item
    return flat


def _curve_metrics(train_metrics: Mapping[str, Any]) -> list[Metric]:
    """train.json's curves (lists of ``{"step": .., "loss": ..}``) as metric histories."""
    from mlflow.entities import Metric

    timestamp = int(time.time() * 1000)
    history = []
    for name, points in train_metrics.items():
        if not isinstance(points, list):
            continue
        for point in points:
            if not isinstance(point, Mapping) or not isinstance(point.get("step"), int):
                continue
            for field, value in point.items():
                if field in ("step", "epoch") or isinstance(value, bool):
                    continue
                if isinstance(value, int | float) and math.isfinite(value):
                    key = _curve_metric_name(name, field)
                    history.append(Metric(key, float(value), timestamp, point["step"]))
    return history


def _curve_metric_name(curve: str, field: str) -> str:
    """The name train's live logging gives the same series (``train.loss``,
    ``train.validation_loss``), so a resumed or a new run reads alike."""
    if curve == "validation_loss_curve" and field == "loss":
        return "train.validation_loss"
    if curve == "loss_curve":
        return f"train.{mlflow_name(field)}"
    return f"train.{curve}.{mlflow_name(field)}"


def _param_value(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, list | tuple) else str(value)
    return text[:6000]  # MLflow's limit for a param value
