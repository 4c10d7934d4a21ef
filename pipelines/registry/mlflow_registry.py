"""The MLflow registry that train, promote and search share: which store
(``MLFLOW_TRACKING_URI``, else a SQLite store under ``<root>/mlruns``), a client bound to
the registered model, the experiment runs are logged in, the model versions by alias and
fingerprint, and MLflow's failures turned into messages that say what to do (with any
password in the URI hidden). A local ``mlflow.db`` that is empty, truncated or not SQLite
is reported, never re-initialised: MLflow would silently migrate it into an empty registry.

Also the promotion lock (:func:`promotion_lock`): one promotion or rollback at a time on
a root. MLflow and requests are imported inside the functions: importing this module stays
cheap.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.common.config import PromoteParams
from pipelines.common.locks import held_lock, since_now
from pipelines.common.paths import Paths
from pipelines.common.redact import redact

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.entities.model_registry import ModelVersion

    from pipelines.retrieval.embeddings import TextEncoder

#: How a message about an interrupted or refused promotion ends.
RERUN_HINT = "rerun `mathembed promote` (it is safe to repeat)"


class PromotionError(RuntimeError):
    """Promotion (or status, rollback, search) cannot go on; the message says how to fix it."""


class PromotionRefusedError(PromotionError):
    """The candidate may not be promoted (failed validation, no candidate, stale metadata)."""


class RegistryError(PromotionError):
    """MLflow is unreachable or failed; nothing was promoted and a rerun is safe."""


class PromotionLockedError(PromotionError):
    """Another promotion held the lock for longer than ``promote.lock_timeout_seconds``."""


class NoChampionError(PromotionError):
    """The registry has no ``@champion`` yet."""


class ModelFilesMissingError(PromotionError):
    """A registered version whose model files are gone (deleted, or a store moved)."""


CHAMPION = "champion"
CHALLENGER = "challenger"
PREVIOUS = "previous"
ALIASES = (CHAMPION, CHALLENGER, PREVIOUS)
#: The version tag that names the model's files
#: (:func:`pipelines.retrieval.models.model_fingerprint`).
TAG_FINGERPRINT = "fingerprint"
#: In the MLflow store's folder (``mlruns/``): promotions that share it take turns.
PROMOTION_LOCK_FILE = "promote.lock"
#: The experiment tag that says it holds model training, not GenAI traces (the UI's
#: ``ExperimentKind`` values). MLflow 3.17's UI takes the kind from its sidebar switch
#: instead (a new browser starts on GenAI; ``?workflowType=machine_learning`` in the
#: experiment's URL opens the training view): docs/reports.md says how.
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
MODEL_TRAINING_KIND = "custom_model_development"

#: The first 16 bytes of every SQLite database file.
SQLITE_MAGIC = b"SQLite format 3\x00"
#: A SQLite database header is 100 bytes.
SQLITE_HEADER_SIZE = 100


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
        db = paths.mlflow_store / "mlflow.db"
        if not db.is_file():
            if not create:
                return None
        else:
            # MLflow would silently migrate a damaged or empty file into a new, empty
            # registry: refuse it, whichever command asks.
            _check_sqlite_store(db)
        paths.mlflow_store.mkdir(parents=True, exist_ok=True)
        artifact_root = (paths.mlflow_store / "artifacts").resolve()
    elif uri.startswith(("http://", "https://")):
        _check_server(uri, promote.server_timeout_seconds)
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    return Registry(client, uri, promote.registered_model, artifact_root)


def promotion_experiment(registry: Registry, promote: PromoteParams, *, create: bool) -> str | None:
    """The promotion experiment's id (train's live runs and promote's runs both go there);
    ``create``: made if missing, for a writer, and marked as model training (so MLflow's UI
    opens it on runs, not traces)."""
    client = registry.client
    experiment = client.get_experiment_by_name(promote.experiment)
    if experiment is None:
        if not create:
            return None
        artifact_root = registry.artifact_root
        return str(
            client.create_experiment(
                promote.experiment,
                artifact_location=artifact_root.as_uri() if artifact_root else None,
                tags={EXPERIMENT_KIND_TAG: MODEL_TRAINING_KIND},
            )
        )
    experiment_id = str(experiment.experiment_id)
    if create and experiment.tags.get(EXPERIMENT_KIND_TAG) != MODEL_TRAINING_KIND:
        client.set_experiment_tag(experiment_id, EXPERIMENT_KIND_TAG, MODEL_TRAINING_KIND)
    return experiment_id


def promotion_lock(paths: Paths, timeout_seconds: float) -> AbstractContextManager[None]:
    """Hold ``<root>/mlruns/promote.lock`` (:func:`held_lock`), waiting up to the timeout.

    It serialises promotions and rollbacks that share this root (the nightly flow and a
    person at the terminal); a shared MLflow server used from several machines needs them
    to share this folder too. Raises :class:`PromotionLockedError` when the wait runs out.
    """
    lock_path = paths.mlflow_store / PROMOTION_LOCK_FILE
    return held_lock(
        lock_path,
        f"pid {os.getpid()} since {since_now()}\n",
        lambda holder: PromotionLockedError(
            f"another promotion holds {lock_path} ({holder}); gave up after "
            f"{timeout_seconds:g} s (params.yaml promote.lock_timeout_seconds). "
            f"Wait for it to finish, then {RERUN_HINT}"
        ),
        wait_seconds=timeout_seconds,
        poll_seconds=0.05,
    )


def sqlite_store_problem(header: bytes, size: int) -> str | None:
    """What is wrong with a SQLite file, judged by its first bytes and its size; ``None``: fine.

    A truncated file is one shorter than the page count its header records (when the
    header's size field is valid: its "version-valid-for" equals the change counter).
    """
    if size == 0:
        return "it is empty (0 bytes)"
    if size < SQLITE_HEADER_SIZE or not header.startswith(SQLITE_MAGIC):
        return "it is not a SQLite database"
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    size_is_valid = header[24:28] == header[92:96]
    pages = int.from_bytes(header[28:32], "big")
    if size_is_valid and pages and size < pages * page_size:
        return f"it is truncated ({size} of {pages * page_size} bytes)"
    return None


def _check_sqlite_store(db: Path) -> None:
    """Raise :class:`RegistryError` naming ``db`` and the fix when it is not a usable store."""
    with db.open("rb") as handle:
        header = handle.read(SQLITE_HEADER_SIZE)
    problem = sqlite_store_problem(header, db.stat().st_size) or _sqlite_read_problem(db)
    if problem is not None:
        raise RegistryError(
            f"the MLflow store {db} is corrupt: {problem}. Nothing was changed; restore it "
            f"from a backup, or move it aside (mv {db} {db}.broken) to start an empty registry"
        )


def _sqlite_read_problem(db: Path) -> str | None:
    """Why SQLite cannot list ``db``'s MLflow tables, opened read-only; ``None``: it can."""
    import sqlite3

    try:  # read-only: the check itself must not change the file
        connection = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
        try:
            tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
        finally:
            connection.close()
    except sqlite3.Error as error:
        # A hot journal (a writer crashed mid-transaction) needs a read-write open to be
        # rolled back, which MLflow's own connection does: not corruption.
        if "readonly" in str(error) or "read-only" in str(error):
            return None
        return f"SQLite cannot read it ({error})"
    if "alembic_version" not in tables:
        return "it is a SQLite database without MLflow's tables"
    return None


def _check_server(uri: str, timeout_seconds: float) -> None:
    """Fail fast: MLflow's own client retries a dead server for minutes."""
    import requests

    try:
        response = requests.get(f"{uri.rstrip('/')}/health", timeout=timeout_seconds)
    except requests.RequestException as error:
        raise RegistryError(_unreachable(uri, f"{type(error).__name__}: {error}")) from error
    if response.status_code != 200:
        raise RegistryError(_unreachable(uri, f"/health answered HTTP {response.status_code}"))


def _unreachable(uri: str, problem: str) -> str:
    return redact(
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
    import requests
    from mlflow.exceptions import MlflowException

    try:
        yield
    except (MlflowException, requests.RequestException) as error:
        kept = f"the candidate {candidate_dir} is untouched; " if candidate_dir else ""
        raise RegistryError(
            redact(
                f"MLflow at {uri} failed: {error}. The registry stays consistent (a version "
                f"is marked settled only once its aliases have moved); {kept}fix the "
                f"problem, then {RERUN_HINT}"
            )
        ) from error


def version_fingerprint(registry: Registry, version: ModelVersion) -> str:
    """The version's model fingerprint (its tag), or a key unique to this registry entry."""
    tagged = version.tags.get(TAG_FINGERPRINT)
    return tagged or f"mlflow-{registry.model_name}-v{version.version}-{version.run_id}"


def load_registered_model(registry: Registry, version: ModelVersion) -> TextEncoder:
    """``mlflow.sentence_transformers.load_model`` of one registered version.

    Raises :class:`ModelFilesMissingError` when the version's files are gone: MLflow's own
    error ("No such artifact: ''") names neither the version nor what to do.
    """
    import mlflow.sentence_transformers
    from mlflow.exceptions import MlflowException

    try:
        with fluent_uri(registry.uri):
            model: TextEncoder = mlflow.sentence_transformers.load_model(
                f"models:/{registry.model_name}/{version.version}"
            )
    except (MlflowException, OSError) as error:
        problem = model_files_problem(registry, version)
        if problem is None:
            raise
        raise ModelFilesMissingError(missing_files_message(registry, version, problem)) from error
    return model


def model_files_problem(registry: Registry, version: ModelVersion) -> str | None:
    """What is wrong with a registered version's files; ``None`` when its ``MLmodel`` is
    where the registry says (the file every flavour loads first)."""
    import mlflow.artifacts
    from mlflow.exceptions import MlflowException

    with fluent_uri(registry.uri):
        location = registry.client.get_model_version_download_uri(
            registry.model_name, str(version.version)
        )
        try:
            listed = mlflow.artifacts.list_artifacts(artifact_uri=location)
        except (MlflowException, OSError) as error:
            return f"its files at {redact(location)} cannot be listed ({redact(str(error))})"
    if not any(Path(artifact.path).name == "MLmodel" for artifact in listed):
        return f"its files are gone from {redact(location)}"
    return None


def missing_files_message(registry: Registry, version: ModelVersion, problem: str) -> str:
    """One line: which version, what is missing, and the three ways out."""
    return (
        f"{registry.model_name} v{version.version} is registered but {problem}. Restore "
        "them from a backup of the artifact store, or point @champion at a version whose "
        "files exist (`mathembed rollback`), or train and promote a new candidate "
        "(`mathembed train`, then `mathembed promote`); `mathembed status` shows which "
        "versions lack their files"
    )
