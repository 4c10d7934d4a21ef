"""The MLflow side: which store (``MLFLOW_TRACKING_URI``, else a SQLite store under
``<root>/mlruns``), a client bound to the registered model, and MLflow's failures turned
into :class:`~pipelines.promote.errors.RegistryError` messages that say what to do.

MLflow itself is imported inside the functions: importing this module stays cheap.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import requests

from pipelines.common.config import PromoteParams
from pipelines.common.paths import Paths
from pipelines.promote.errors import RERUN_HINT, RegistryError
from pipelines.promote.tags import TAG_FINGERPRINT

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.entities.model_registry import ModelVersion

    from pipelines.common.embeddings import TextEncoder

CHAMPION = "champion"
CHALLENGER = "challenger"
PREVIOUS = "previous"
ALIASES = (CHAMPION, CHALLENGER, PREVIOUS)


def tracking_uri(paths: Paths) -> str:
    """``MLFLOW_TRACKING_URI`` when set, else the SQLite store under ``<root>/mlruns``."""
    configured = os.environ.get("MLFLOW_TRACKING_URI", "").strip()
    if configured:
        return configured
    return f"sqlite:///{(paths.mlflow_store / 'mlflow.db').resolve()}"


def _uses_default_store() -> bool:
    return not os.environ.get("MLFLOW_TRACKING_URI", "").strip()


@dataclass(frozen=True)
class Registry:
    """An MLflow client bound to one tracking/registry URI and one registered model."""

    client: MlflowClient
    uri: str
    model_name: str
    #: Where new experiments keep artifacts: ``<root>/mlruns/artifacts`` for the default
    #: store; ``None`` lets a server (or a user-chosen store) decide.
    artifact_root: Path | None = None

    def version_by_alias(self, alias: str) -> ModelVersion | None:
        from mlflow.exceptions import MlflowException

        try:
            return self.client.get_model_version_by_alias(self.model_name, alias)
        except MlflowException as error:
            # No registered model: RESOURCE_DOES_NOT_EXIST. No such alias: MLflow 3.17
            # answers INVALID_PARAMETER_VALUE "... alias <name> not found".
            if error.error_code == "RESOURCE_DOES_NOT_EXIST" or (
                error.error_code == "INVALID_PARAMETER_VALUE" and "not found" in str(error)
            ):
                return None
            raise

    def version(self, version: str) -> ModelVersion:
        return self.client.get_model_version(self.model_name, version)

    def version_by_fingerprint(self, fingerprint: str) -> ModelVersion | None:
        found = self.client.search_model_versions(
            f"name = '{self.model_name}' and tag.{TAG_FINGERPRINT} = '{fingerprint}'"
        )
        return min(found, key=lambda version: int(version.version)) if found else None

    def aliases(self) -> dict[str, str | None]:
        return {
            alias: (str(found.version) if (found := self.version_by_alias(alias)) else None)
            for alias in ALIASES
        }


def connect(paths: Paths, promote: PromoteParams, *, create: bool) -> Registry | None:
    """A :class:`Registry`; ``None`` when the default local store does not exist yet and
    ``create`` is false (status, rollback and search do not create an empty store).

    Raises :class:`RegistryError` when a tracking server does not answer its health check.
    """
    from mlflow import MlflowClient

    uri = tracking_uri(paths)
    artifact_root = None
    if _uses_default_store():
        if not (paths.mlflow_store / "mlflow.db").is_file() and not create:
            return None
        paths.mlflow_store.mkdir(parents=True, exist_ok=True)
        artifact_root = (paths.mlflow_store / "artifacts").resolve()
    elif uri.startswith(("http://", "https://")):
        _check_server(uri, promote.server_timeout_seconds)
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    return Registry(client, uri, promote.registered_model, artifact_root)


def _check_server(uri: str, timeout_seconds: float) -> None:
    """Fail fast: MLflow's own client retries a dead server for minutes."""
    try:
        response = requests.get(f"{uri.rstrip('/')}/health", timeout=timeout_seconds)
    except requests.RequestException as error:
        raise RegistryError(_unreachable(uri, f"{type(error).__name__}: {error}")) from error
    if response.status_code != 200:
        raise RegistryError(_unreachable(uri, f"/health answered HTTP {response.status_code}"))


def _unreachable(uri: str, problem: str) -> str:
    return (
        f"the MLflow tracking server at {uri} is unreachable ({problem}). Nothing was "
        "changed: no model promoted, the candidate left as it is on disk. Start the server "
        f"(or unset MLFLOW_TRACKING_URI to use the local store mlruns/), then {RERUN_HINT}"
    )


@contextmanager
def fluent_uri(uri: str) -> Iterator[None]:
    """Point MLflow's fluent API (``start_run``, ``log_model``) at ``uri`` for a block.

    ``mlflow.set_tracking_uri`` also exports ``MLFLOW_TRACKING_URI``; the environment is
    restored afterwards, because it is how the user selects a server.
    """
    import mlflow

    saved = {name: os.environ.get(name) for name in ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI")}
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def registry_errors(uri: str, candidate_dir: Path | None) -> Iterator[None]:
    """Turn MLflow and HTTP failures into a :class:`RegistryError` that says what to do."""
    from mlflow.exceptions import MlflowException

    try:
        yield
    except (MlflowException, requests.RequestException) as error:
        kept = f"the candidate {candidate_dir} is untouched; " if candidate_dir else ""
        raise RegistryError(
            f"MLflow at {uri} failed: {error}. The registry stays consistent (a version is "
            f"marked settled only once its aliases have moved); {kept}fix the problem, "
            f"then {RERUN_HINT}"
        ) from error


def version_fingerprint(registry: Registry, version: ModelVersion) -> str:
    """The version's model fingerprint (its tag), or a key unique to this registry entry."""
    tagged = version.tags.get(TAG_FINGERPRINT)
    return tagged or f"mlflow-{registry.model_name}-v{version.version}-{version.run_id}"


def load_registered_model(registry: Registry, version: ModelVersion) -> TextEncoder:
    """``mlflow.sentence_transformers.load_model`` of one registered version."""
    import mlflow.sentence_transformers

    with fluent_uri(registry.uri):
        model: TextEncoder = mlflow.sentence_transformers.load_model(
            f"models:/{registry.model_name}/{version.version}"
        )
    return model
