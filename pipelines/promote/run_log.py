"""The MLflow run that records a candidate: flattened params, train and eval metrics, the
provenance tags (git commit, ``dvc.lock`` data hashes, dataset counts), the eval and
data-quality reports, a model card, and the model itself in the ``sentence_transformers``
flavour with explicit pip requirements.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.common import io
from pipelines.common.config import Params, PromoteParams
from pipelines.common.paths import MODEL_METADATA_FILE, Paths
from pipelines.promote.candidate import Candidate
from pipelines.promote.decision import Decision
from pipelines.promote.provenance import dvc_lock_hashes, git_commit
from pipelines.promote.scoring import ScoredModels
from pipelines.promote.store import Registry
from pipelines.promote.tags import TAG_EVAL_DATA, TAG_FINGERPRINT, metric_tag

if TYPE_CHECKING:
    from mlflow.entities import Metric
    from mlflow.entities.model_registry import ModelVersion

# The packages a loaded model needs, pinned to what produced it (MLflow would otherwise
# infer them by importing the model in a subprocess: slow, and not always right).
MODEL_REQUIREMENTS = ("sentence-transformers", "transformers", "torch", "numpy", "tokenizers")


def _experiment_id(registry: Registry, promote: PromoteParams, *, create: bool) -> str | None:
    experiment = registry.client.get_experiment_by_name(promote.experiment)
    if experiment is not None:
        return str(experiment.experiment_id)
    if not create:
        return None
    artifact_root = registry.artifact_root
    return str(
        registry.client.create_experiment(
            promote.experiment,
            artifact_location=artifact_root.as_uri() if artifact_root else None,
        )
    )


def find_logged_run(
    registry: Registry, promote: PromoteParams, fingerprint: str
) -> tuple[str | None, str]:
    """A finished run of this candidate whose model was logged but never registered."""
    experiment_id = _experiment_id(registry, promote, create=False)
    if experiment_id is None:
        return None, ""
    runs = registry.client.search_runs(
        [experiment_id],
        f"tags.{TAG_FINGERPRINT} = '{fingerprint}' and attributes.status = 'FINISHED'",
        max_results=10,
    )
    for run in runs:
        model_uri = run.data.tags.get("model_uri")
        if model_uri:
            return run.info.run_id, model_uri
    return None, ""


def fail_orphaned_runs(registry: Registry, promote: PromoteParams, fingerprint: str) -> list[str]:
    """Mark this candidate's RUNNING runs FAILED and delete their artifacts; their ids.

    Called under the promotion lock, so such a run belongs to a promotion whose process
    died (a SIGKILL during ``log_model`` leaves one, with the model's ~90 MB of files in
    the run's and the logged model's artifact folders).
    """
    from mlflow.entities import LoggedModelStatus, RunStatus

    experiment_id = _experiment_id(registry, promote, create=False)
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


def log_run(
    params: Params,
    paths: Paths,
    candidate: Candidate,
    registry: Registry,
    decision: Decision,
    scored: ScoredModels,
    data_quality: Mapping[str, Any],
    champion: ModelVersion | None,
) -> tuple[str, str]:
    """One MLflow run for the candidate: params, metrics, tags, artifacts, the model."""
    import mlflow
    import mlflow.sentence_transformers
    from sentence_transformers import SentenceTransformer

    experiment_id = _experiment_id(registry, params.promote, create=True)
    train_metrics = _read_json_or_empty(paths.metric_file("train"))
    run_tags = {
        TAG_FINGERPRINT: candidate.fingerprint,
        "git_commit": git_commit(paths.root),
        "base_model": candidate.base_model,
        "data_version": candidate.data_hash or "unknown",
        TAG_EVAL_DATA: scored.eval_data_hash,
        **{f"dvc.{path}": md5 for path, md5 in dvc_lock_hashes(paths).items()},
        **{
            f"counts.{key}": str(value)
            for key, value in _flatten(_read_json_or_empty(paths.metric_file("data"))).items()
        },
    }
    metrics = {
        **_numeric(_flatten(train_metrics), "train."),
        **_numeric(_flatten(_read_json_or_empty(paths.metric_file("eval"))), "eval."),
        **{f"promotion.candidate.{metric_tag(m)}": v for m, v in decision.candidate.items()},
        **{
            f"promotion.{decision.compared_against}.{metric_tag(m)}": v
            for m, v in decision.other.items()
        },
    }
    if decision.p_value is not None:
        metrics["promotion.p_value"] = decision.p_value
    model = SentenceTransformer(str(candidate.directory), device="cpu", local_files_only=True)
    with mlflow.start_run(
        experiment_id=experiment_id,
        run_name=f"candidate-{candidate.fingerprint[:12]}",
        tags=run_tags,
    ) as run:
        mlflow.log_params(
            {key: _param_value(value) for key, value in logged_params(params, candidate).items()}
        )
        mlflow.log_metrics({key: value for key, value in metrics.items() if math.isfinite(value)})
        registry.client.log_batch(run.info.run_id, metrics=_curve_metrics(train_metrics))
        mlflow.log_dict(dict(candidate.metadata), MODEL_METADATA_FILE)
        mlflow.log_dict(dict(data_quality), "data_quality.json")
        for folder, artifact_path in (
            (paths.eval_reports, "eval_report"),
            (paths.data_quality_reports, "data_quality_report"),
        ):
            if folder.is_dir():
                mlflow.log_artifacts(str(folder), artifact_path)
        mlflow.log_text(
            model_card(params, candidate, decision, scored, champion, run_tags), "model_card.md"
        )
        logged = mlflow.sentence_transformers.log_model(
            model, name="model", pip_requirements=pip_requirements()
        )
        # Marks the run as complete for a rerun after a crash before registration.
        mlflow.set_tag("model_uri", logged.model_uri)
    return run.info.run_id, logged.model_uri


def logged_params(params: Params, candidate: Candidate) -> dict[str, Any]:
    """The run's params: what the model was trained with, what the promotion decided with.

    ``train.*`` come from the candidate's own record (``mathembed.json``), never from the
    ``--params`` file, which may differ from the one the model was trained with;
    ``evaluate.*`` and ``promote.*`` are this promotion's scoring and rule.
    """
    trained_with = candidate.metadata.get("params")
    decided_with = {
        "evaluate": dataclasses.asdict(params.evaluate),
        "promote": dataclasses.asdict(params.promote),
    }
    return {
        **_flatten(trained_with if isinstance(trained_with, Mapping) else {}, "train."),
        **_flatten(decided_with),
    }


def pip_requirements() -> list[str]:
    """The model's runtime packages pinned to the installed versions."""
    return [f"{name}=={importlib.metadata.version(name)}" for name in MODEL_REQUIREMENTS]


def model_card(
    params: Params,
    candidate: Candidate,
    decision: Decision,
    scored: ScoredModels,
    champion: ModelVersion | None,
    run_tags: Mapping[str, str],
) -> str:
    """A short markdown card: what the model is, what it was trained on, how it scored."""
    side = decision.compared_against
    against = f"champion v{champion.version}" if champion is not None else "the base model"
    rows = "\n".join(
        f"| {metric} | {decision.candidate[metric]:.4f} | {decision.other[metric]:.4f} "
        f"| {decision.deltas[metric]:+.4f} |"
        for metric in decision.deltas
    )
    training = candidate.metadata.get("params", {})
    training_lines = (
        "\n".join(f"- `{key}`: {value}" for key, value in sorted(training.items()))
        if isinstance(training, dict)
        else "- (not recorded)"
    )
    data_lines = "\n".join(
        f"- `{key.removeprefix('dvc.')}`: `{value}`"
        for key, value in sorted(run_tags.items())
        if key.startswith("dvc.")
    )
    p_value = "n/a" if decision.p_value is None else f"{decision.p_value:.4g}"
    return f"""# {params.promote.registered_model} candidate `{candidate.fingerprint[:12]}`

Sentence embeddings for mathematical concept retrieval, fine-tuned from
`{candidate.base_model}` with sentence-transformers by the mathembed pipeline.

## Decision

**{"Promoted to champion" if decision.promote else "Not promoted (challenger)"}** —
compared with {against} on {len(scored.candidate.query_ids)} held-out queries
(paired {params.promote.test_method} test on per-query {params.promote.significance_metric}:
p = {p_value}).

{decision.reason}

| metric | candidate | {side} | delta |
| --- | --- | --- | --- |
{rows}

## Training

- base model: `{candidate.base_model}`
- model fingerprint: `{candidate.fingerprint}`
- training data version: `{candidate.data_hash or "unknown"}`
- git commit: `{run_tags.get("git_commit", "unknown")}`
{training_lines}

## Data (dvc.lock)

{data_lines or "- (no dvc.lock)"}

## Intended use

Retrieval of passages from mathematics papers (arXiv) by concept name or description.
The scores above are on held-out concepts: queries whose names and descriptions were never
training anchors. Not evaluated as a general-purpose sentence encoder.
"""


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


def _numeric(flat: Mapping[str, Any], prefix: str) -> dict[str, float]:
    """The numeric leaves (not booleans), keyed as MLflow accepts metric names."""
    return {
        prefix + metric_tag(key): float(value)
        for key, value in flat.items()
        if isinstance(value, int | float) and not isinstance(value, bool)
    }


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
                    key = f"train.{name}.{metric_tag(field)}"
                    history.append(Metric(key, float(value), timestamp, point["step"]))
    return history


def _param_value(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, list | tuple) else str(value)
    return text[:6000]  # MLflow's limit for a param value
