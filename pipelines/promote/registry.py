"""Champion/challenger promotion in the MLflow Model Registry: the I/O shell around decide.

:func:`promote_candidate` (``mathembed promote``; the nightly flow calls it too):

1. reads ``models/candidate/`` and its ``mathembed.json``, and refuses a candidate whose
   data did not pass validation (``metrics/data_quality.json``) — before touching MLflow;
2. takes the promotion lock (``mlruns/promote.lock``), so two promotions never interleave;
3. connects to MLflow: ``sqlite:///<root>/mlruns/mlflow.db`` with artifacts under
   ``<root>/mlruns/artifacts`` by default, or the server named by ``MLFLOW_TRACKING_URI``;
4. returns the recorded outcome if a version with the candidate's fingerprint is already
   registered and was decided on the current evaluation data (the hash of the validated
   chunks, queries and qrels): promoting the same candidate twice registers it once.
   When the evaluation data has changed since, that version is decided again on the new
   data — compared with the current ``@champion`` (or the base model with none), its tags
   and aliases updated, the superseded decision kept in its ``decision_history`` tag; no
   second version. The champion itself re-presented is not compared with itself: it stays
   champion and the record gets its scores against the base model on the new data
   (:func:`pipelines.decision.decide_for_champion`). A version withdrawn by
   :func:`rollback` is scored and recorded but gets no alias back automatically;
5. scores the candidate, the base model and the ``@champion`` on the same validated
   queries in this run, with the evaluate stage's code (:mod:`pipelines.evaluate`);
   embeddings come from the shared cache keyed by model fingerprint and texts, so a
   champion already scored on this data (it was, as a candidate) is not even loaded;
6. decides with :func:`pipelines.decision.decide` and the ``promote`` section of
   ``params.yaml``;
7. logs one MLflow run (flattened params, train and eval metrics, tags: git commit, the
   data hashes in ``dvc.lock``, dataset counts; artifacts: eval report, data-quality
   report, model card; the model in the ``sentence_transformers`` flavour with explicit
   pip requirements), registers it as a version of ``math-embed`` carrying the decision
   tags, then moves the aliases: promoted → ``champion`` (the old champion becomes
   ``previous``); otherwise → ``challenger``;
8. writes ``metrics/promotion.json``.

A crash anywhere leaves the registry consistent and a rerun finishes the job: the version
is tagged ``settled`` only after its aliases moved, and an unsettled version (or a
finished run with a logged model but no version) is picked up again instead of being
registered twice. A re-decision first sets ``settled`` to ``false`` and writes the
``eval_data_hash`` tag after the other decision tags, so a crash in the middle of one is
also finished by the rerun. If MLflow cannot be reached, nothing is written and
:class:`RegistryError` says so; the candidate stays on disk, untouched, for a rerun.

:func:`status` lists the three aliases with their metrics; :func:`rollback` moves
``champion`` back to ``previous``.
"""

from __future__ import annotations

import dataclasses
import fcntl
import getpass
import importlib.metadata
import json
import math
import os
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import requests
import yaml

from pipelines.common import io
from pipelines.common.config import Params, PromoteParams
from pipelines.common.paths import Paths
from pipelines.promote.decision import Decision, Scores, Side, decide, decide_for_champion

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.entities import Metric
    from mlflow.entities.model_registry import ModelVersion

    from pipelines.common.embeddings import EmbeddingCache, TextEncoder
    from pipelines.evaluate.stage import EvalSet, ModelSource

CHAMPION = "champion"
CHALLENGER = "challenger"
PREVIOUS = "previous"
ALIASES = (CHAMPION, CHALLENGER, PREVIOUS)
MODEL_METADATA = "mathembed.json"
RERUN_HINT = "rerun `mathembed promote` (it is safe to repeat)"

# Version tags. Tag keys may not contain "@", so metric names are spelled with "_at_"
# (``mrr@10`` -> ``candidate.mrr_at_10``); the ``metrics`` tag keeps the real names.
TAG_FINGERPRINT = "fingerprint"
TAG_DECISION = "decision"
TAG_SETTLED = "settled"
#: The evaluation data a decision was made on; written last when a decision is rewritten.
TAG_EVAL_DATA = "eval_data_hash"
#: JSON list of the decisions a re-decision superseded, oldest first.
TAG_HISTORY = "decision_history"
#: How many superseded decisions the history keeps (a tag value holds 100,000 characters).
HISTORY_LIMIT = 20
#: The per-side metric tags of a decision (``candidate.mrr_at_10``, ``delta.ndcg_at_10``...).
METRIC_TAG_PREFIXES = ("candidate.", "champion.", "base.", "delta.")
#: Set on the version :func:`rollback` demoted: it never gets an alias back by itself.
TAG_ROLLED_BACK = "rolled_back_at"
PROMOTED = "promoted"
REJECTED = "rejected"

# The packages a loaded model needs, pinned to what produced it (MLflow would otherwise
# infer them by importing the model in a subprocess: slow, and not always right).
MODEL_REQUIREMENTS = ("sentence-transformers", "transformers", "torch", "numpy", "tokenizers")


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


# --------------------------------------------------------------------------- locations


def store_dir(paths: Paths) -> Path:
    """``<root>/mlruns``: the local MLflow store, and the promotion lock either way."""
    return paths.root / "mlruns"


def tracking_uri(paths: Paths) -> str:
    """``MLFLOW_TRACKING_URI`` when set, else the SQLite store under ``<root>/mlruns``."""
    configured = os.environ.get("MLFLOW_TRACKING_URI", "").strip()
    if configured:
        return configured
    return f"sqlite:///{(store_dir(paths) / 'mlflow.db').resolve()}"


def _uses_default_store() -> bool:
    return not os.environ.get("MLFLOW_TRACKING_URI", "").strip()


def candidate_dir_of(paths: Paths) -> Path:
    return paths.root / "models" / "candidate"


def promotion_file(paths: Paths) -> Path:
    return paths.metrics / "promotion.json"


def data_quality_file(paths: Paths) -> Path:
    return paths.metrics / "data_quality.json"


# --------------------------------------------------------------------------- the lock


@contextmanager
def promotion_lock(paths: Paths, timeout_seconds: float) -> Iterator[None]:
    """Hold ``<root>/mlruns/promote.lock`` exclusively (``flock``), waiting up to the timeout.

    The lock is released by the kernel if the process dies, so a crashed promotion never
    leaves a stale lock behind. It serialises promotions that share this root (the
    nightly flow and a person at the terminal); a shared MLflow server used from several
    machines needs them to share this folder too.
    """
    lock_path = store_dir(paths) / "promote.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout_seconds
    with lock_path.open("a+", encoding="utf-8") as handle:
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    handle.seek(0)
                    holder = handle.read().strip() or "unknown"
                    raise PromotionLockedError(
                        f"another promotion holds {lock_path} ({holder}); gave up after "
                        f"{timeout_seconds:g} s (params.yaml promote.lock_timeout_seconds). "
                        f"Wait for it to finish, then {RERUN_HINT}"
                    ) from None
                time.sleep(0.05)  # polling the lock, not synchronising a test
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()} since {_now()}\n")
            handle.flush()
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


# --------------------------------------------------------------------------- the candidate


@dataclass(frozen=True)
class Candidate:
    """A trained model folder and what train recorded about it in ``mathembed.json``."""

    directory: Path
    fingerprint: str
    metadata: dict[str, Any]

    @property
    def data_hash(self) -> str | None:
        value = self.metadata.get("data_hash")
        return str(value) if value else None

    @property
    def base_model(self) -> str:
        return str(self.metadata.get("base_model", "unknown"))


def load_candidate(candidate_dir: Path) -> Candidate:
    """Read ``candidate_dir``; the files must still hash to the recorded fingerprint."""
    from pipelines.common.models import model_fingerprint

    if not (candidate_dir / "modules.json").is_file():
        raise PromotionRefusedError(
            f"no candidate model in {candidate_dir} (no modules.json); train one first "
            "(`dvc repro` runs train and evaluate), then run `mathembed promote`"
        )
    metadata_path = candidate_dir / MODEL_METADATA
    if not metadata_path.is_file():
        raise PromotionRefusedError(
            f"{metadata_path} not found: this folder was not written by the train stage; "
            "retrain it with `dvc repro train`"
        )
    metadata = io.read_json(metadata_path)
    if not isinstance(metadata, dict) or not isinstance(metadata.get("fingerprint"), str):
        raise PromotionRefusedError(
            f"{metadata_path} has no 'fingerprint'; retrain it with `dvc repro train`"
        )
    actual = model_fingerprint(candidate_dir)
    if actual != metadata["fingerprint"]:
        raise PromotionRefusedError(
            f"{candidate_dir} was changed after training: its files hash to {actual[:12]}…, "
            f"{MODEL_METADATA} records {metadata['fingerprint'][:12]}…; retrain it with "
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
    from pipelines.common.models import data_hash

    path = data_quality_file(paths)
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
            f"{candidate.directory / MODEL_METADATA} does not record the data it was trained "
            "on (data_hash), so it cannot be matched with a validation; retrain it with "
            "`dvc repro train`"
        )
    pairs = paths.validated / "pairs.parquet"
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


# --------------------------------------------------------------------------- MLflow access


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
        if not (store_dir(paths) / "mlflow.db").is_file() and not create:
            return None
        store_dir(paths).mkdir(parents=True, exist_ok=True)
        artifact_root = (store_dir(paths) / "artifacts").resolve()
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
def _fluent_uri(uri: str) -> Iterator[None]:
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
def _registry_errors(uri: str, candidate_dir: Path | None) -> Iterator[None]:
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


# --------------------------------------------------------------------------- scoring


@dataclass(frozen=True)
class ScoredModels:
    """The three sides of a decision, scored on one evaluation set in one run."""

    candidate: Scores
    base: Scores
    champion: Scores | None
    eval_data_hash: str
    dims: dict[str, int]


def score_for_promotion(
    params: Params,
    paths: Paths,
    candidate: Candidate,
    champion: ModelSource | None,
) -> ScoredModels:
    """Score candidate, base and champion on the validated queries, at each one's full dim.

    Uses the evaluate stage's eval set, scoring and embedding cache, so the numbers are
    the ones ``metrics/eval.json`` reports for the same data.
    """
    from pipelines.common.embeddings import EmbeddingCache
    from pipelines.evaluate import stage as evaluate

    eval_set = evaluate.load_eval_set(paths)
    base_spec = evaluate.base_spec_from_metadata(candidate.metadata)
    if base_spec is None:
        raise PromotionRefusedError(
            f"{candidate.directory / MODEL_METADATA} does not name its base model "
            "(base_model, params.pooling, params.max_seq_length); retrain it with `dvc repro`"
        )
    cache = EmbeddingCache(evaluate.embedding_cache_dir(paths)) if params.evaluate.cache else None
    sources = {
        "candidate": evaluate.local_model_source(evaluate.CANDIDATE, candidate.directory),
        "base": evaluate.base_model_source(base_spec),
    }
    if champion is not None:
        sources["champion"] = champion
    scores: dict[str, Scores] = {}
    dims: dict[str, int] = {}
    for side, source in sources.items():
        scores[side], dims[side] = _score_source(
            source, eval_set, params, cache=cache, batch_size=params.evaluate.batch_size
        )
    return ScoredModels(
        scores["candidate"], scores["base"], scores.get("champion"), eval_data_hash(paths), dims
    )


def eval_data_hash(paths: Paths) -> str:
    """The hash of the validated evaluation data: passages, queries and relevance judgments."""
    from pipelines.common.models import data_hash

    try:
        return data_hash(
            *(paths.validated / f"{table}.parquet" for table in ("chunks", "queries", "qrels"))
        )
    except FileNotFoundError as error:
        raise PromotionRefusedError(
            f"{error}: promotion decides on the validated evaluation data (chunks, queries, "
            "qrels in data/validated/); run `dvc repro`, then `mathembed promote`"
        ) from error


def _score_source(
    source: ModelSource,
    eval_set: EvalSet,
    params: Params,
    *,
    cache: EmbeddingCache | None,
    batch_size: int,
) -> tuple[Scores, int]:
    """One model's per-query scores on ``eval_set`` at its full dimension."""
    from pipelines.common.models import ModelLoadError
    from pipelines.evaluate import stage as evaluate

    try:
        queries, corpus = evaluate.embed_eval_set(
            source, eval_set, cache=cache, batch_size=batch_size
        )
    except ValueError as error:  # already names the model
        raise PromotionRefusedError(str(error)) from error
    except ModelLoadError as error:
        raise PromotionRefusedError(f"{source.name} model: {error}") from error
    full_dim = int(corpus.shape[1])
    scored = evaluate.score_model(
        queries, corpus, [eval_set.subset("all")], ks=params.evaluate.ks, dims=[full_dim]
    )["all"]
    scores = Scores(
        tuple(eval_set.query_ids), dict(scored.means[full_dim]), dict(scored.per_query[full_dim])
    )
    return scores, full_dim


def champion_source(registry: Registry, version: ModelVersion) -> ModelSource:
    """The registered champion as something evaluate's scoring can embed with, lazily."""
    from pipelines.evaluate.stage import ModelSource

    def load() -> TextEncoder:
        return load_registered_model(registry, version)

    return ModelSource(
        CHAMPION,
        version_fingerprint(registry, version),
        load,
        {"source": f"models:/{registry.model_name}/{version.version}"},
    )


def version_fingerprint(registry: Registry, version: ModelVersion) -> str:
    """The version's model fingerprint (its tag), or a key unique to this registry entry."""
    tagged = version.tags.get(TAG_FINGERPRINT)
    return tagged or f"mlflow-{registry.model_name}-v{version.version}-{version.run_id}"


def load_registered_model(registry: Registry, version: ModelVersion) -> TextEncoder:
    """``mlflow.sentence_transformers.load_model`` of one registered version."""
    import mlflow.sentence_transformers

    with _fluent_uri(registry.uri):
        model: TextEncoder = mlflow.sentence_transformers.load_model(
            f"models:/{registry.model_name}/{version.version}"
        )
    return model


# --------------------------------------------------------------------------- promotion


@dataclass(frozen=True)
class PromotionResult:
    """What :func:`promote_candidate` did; ``as_json`` is ``metrics/promotion.json``.

    ``already_registered``: the version was found decided on this evaluation data and its
    recorded decision is returned. ``redecided``: the version was registered before, on
    other evaluation data, and this call decided it again (no new version).
    """

    registered_model: str
    version: str
    fingerprint: str
    run_id: str
    decision: Decision
    compared_version: str | None
    aliases: dict[str, str | None]
    already_registered: bool
    tracking_uri: str
    decided_at: str
    redecided: bool = False

    @property
    def promoted(self) -> bool:
        return self.decision.promote

    def as_json(self) -> dict[str, Any]:
        return {
            "registered_model": self.registered_model,
            "version": self.version,
            "fingerprint": self.fingerprint,
            "run_id": self.run_id,
            "promoted": self.decision.promote,
            "reason": self.decision.reason,
            "compared_against": self.decision.compared_against,
            "compared_version": self.compared_version,
            "p_value": self.decision.p_value,
            "deltas": self.decision.deltas,
            "candidate": self.decision.candidate,
            self.decision.compared_against: self.decision.other,
            "aliases": self.aliases,
            "already_registered": self.already_registered,
            "redecided": self.redecided,
            "tracking_uri": self.tracking_uri,
            "decided_at": self.decided_at,
        }


def promote_candidate(
    params: Params, paths: Paths, *, candidate_dir: Path | None = None
) -> PromotionResult:
    """Register the candidate and move the aliases by the promotion rule (module docstring).

    Raises :class:`PromotionRefusedError` (not eligible), :class:`PromotionLockedError`
    (another promotion is running), :class:`RegistryError` (MLflow unreachable or
    failing; nothing promoted, safe to rerun) and ``pipelines.decision.QueryMismatchError``.
    """
    candidate = load_candidate(candidate_dir or candidate_dir_of(paths))
    data_quality = require_validated(paths, candidate)
    with promotion_lock(paths, params.promote.lock_timeout_seconds):
        registry = connect(paths, params.promote, create=True)
        assert registry is not None
        with _registry_errors(registry.uri, candidate.directory), _fluent_uri(registry.uri):
            result = _promote_locked(params, paths, candidate, registry, data_quality)
        io.write_json(promotion_file(paths), result.as_json())
    return result


def _promote_locked(
    params: Params,
    paths: Paths,
    candidate: Candidate,
    registry: Registry,
    data_quality: Mapping[str, Any],
) -> PromotionResult:
    current_eval_data = eval_data_hash(paths)
    existing = registry.version_by_fingerprint(candidate.fingerprint)
    # A "settled" tag at all means the version was decided and acted on once; "false" is
    # a re-decision under way (a fresh version has no such tag until it is settled).
    redecided = existing is not None and TAG_SETTLED in existing.tags
    decided_on_this_data = (
        existing is not None and existing.tags.get(TAG_EVAL_DATA) == current_eval_data
    )
    if existing is not None and existing.tags.get(TAG_SETTLED) == "true" and decided_on_this_data:
        return _recorded_result(registry, existing, already_registered=True)
    champion = registry.version_by_alias(CHAMPION)
    is_champion = (
        existing is not None
        and champion is not None
        and str(champion.version) == str(existing.version)
    )
    if existing is not None and is_champion and decided_on_this_data:
        # A rerun after a crash between moving `champion` and settling: only settle. (The
        # eval-data tag is written last, so the decision tags for this data are complete.)
        registry.client.set_model_version_tag(
            registry.model_name, existing.version, TAG_SETTLED, "true"
        )
        return _recorded_result(
            registry, registry.version(existing.version), False, redecided=redecided
        )

    # The champion re-presented on new data is scored against the base only.
    compared = None if is_champion else champion
    scored = score_for_promotion(
        params,
        paths,
        candidate,
        champion_source(registry, compared) if compared is not None else None,
    )
    if is_champion:
        decision = decide_for_champion(scored.candidate, scored.base, params.promote)
    else:
        decision = decide(scored.candidate, scored.champion, scored.base, params.promote)
    withdrawn = existing is not None and TAG_ROLLED_BACK in existing.tags
    if withdrawn:
        assert existing is not None
        decision = _held_back(decision, existing.tags)
    decided_at = _now()
    tags = _decision_tags(
        decision, scored, candidate, compared, params.promote, decided_at, paths.root
    )

    if existing is None:
        run_id, model_uri = _find_logged_run(registry, params.promote, candidate.fingerprint)
        if run_id is None:
            run_id, model_uri = _log_run(
                params, paths, candidate, registry, decision, scored, data_quality, champion
            )
        _ensure_registered_model(registry)
        version = str(
            registry.client.create_model_version(
                registry.model_name,
                model_uri,
                run_id=run_id,
                tags=tags,
                model_id=_logged_model_id(model_uri),
            ).version
        )
    else:  # registered before: decided on other data, or by an attempt that crashed
        version, run_id = str(existing.version), existing.run_id or ""
        _rewrite_decision(registry, existing, tags)

    if not is_champion and not withdrawn:
        _move_aliases(registry, str(version), decision, champion)
    registry.client.set_model_version_tag(registry.model_name, str(version), TAG_SETTLED, "true")
    return PromotionResult(
        registered_model=registry.model_name,
        version=str(version),
        fingerprint=candidate.fingerprint,
        run_id=run_id,
        decision=decision,
        compared_version=str(compared.version) if compared is not None else None,
        aliases=registry.aliases(),
        already_registered=False,
        tracking_uri=registry.uri,
        decided_at=decided_at,
        redecided=redecided,
    )


def _held_back(decision: Decision, tags: Mapping[str, str]) -> Decision:
    """A version withdrawn by rollback: scored and recorded, never re-promoted by itself.

    Otherwise each change of the evaluation data could hand ``champion`` back to a model
    a person took out of service.
    """
    return dataclasses.replace(
        decision,
        promote=False,
        reason=(
            f"withdrawn by rollback at {tags.get(TAG_ROLLED_BACK)} by "
            f"{tags.get('rolled_back_by', 'unknown')} ({tags.get('rolled_back_reason', '')}): "
            f"no alias is given back automatically; on this evaluation data: {decision.reason}"
        ),
    )


def _rewrite_decision(registry: Registry, existing: ModelVersion, tags: Mapping[str, str]) -> None:
    """Replace a registered version's decision tags, crash-safely.

    Order: the superseded decision goes into the history, ``settled`` becomes ``false``
    (a rerun then decides again instead of returning a half-written record), the new
    decision tags follow with ``eval_data_hash`` last (so "decided on this data" means
    every tag is written), and the caller settles once the aliases have moved.
    """
    client, name, version = registry.client, registry.model_name, str(existing.version)
    if existing.tags.get(TAG_SETTLED) == "true":
        history = superseded_history(existing.tags)
        if history != existing.tags.get(TAG_HISTORY):
            client.set_model_version_tag(name, version, TAG_HISTORY, history)
        client.set_model_version_tag(name, version, TAG_SETTLED, "false")
    for key, value in tags.items():
        if key != TAG_EVAL_DATA:
            client.set_model_version_tag(name, version, key, value)
    # Per-side metrics of the superseded decision (say, `champion.*` when it is now
    # compared with the base) would read as part of the new one.
    for key in existing.tags:
        if key.startswith(METRIC_TAG_PREFIXES) and key not in tags:
            client.delete_model_version_tag(name, version, key)
    client.set_model_version_tag(name, version, TAG_EVAL_DATA, tags[TAG_EVAL_DATA])


def superseded_history(tags: Mapping[str, str]) -> str:
    """The ``decision_history`` tag with the version's current decision appended (JSON).

    Appending is idempotent (a rerun after a crash does not record the same decision
    twice), and only the last :data:`HISTORY_LIMIT` decisions are kept.
    """
    try:
        history = json.loads(tags.get(TAG_HISTORY) or "[]")
    except json.JSONDecodeError:
        history = []
    if not isinstance(history, list):
        history = []
    entry = {
        key: tags.get(key, "")
        for key in (
            TAG_DECISION,
            "compared_against",
            "compared_version",
            TAG_EVAL_DATA,
            "decided_at",
            "reason",
        )
    }
    if not history or history[-1] != entry:
        history.append(entry)
    return json.dumps(history[-HISTORY_LIMIT:])


def _move_aliases(
    registry: Registry, version: str, decision: Decision, champion: ModelVersion | None
) -> None:
    """Promoted: old champion → ``previous``, this version → ``champion``; else → ``challenger``.

    ``previous`` moves first, so a crash in between leaves both aliases on the old
    champion (still a valid registry) and the rerun completes the move. A version that
    is promoted while it holds ``challenger`` (re-decided on new data) loses that alias.
    """
    client, name = registry.client, registry.model_name
    if decision.promote:
        if champion is not None:
            client.set_registered_model_alias(name, PREVIOUS, str(champion.version))
        client.set_registered_model_alias(name, CHAMPION, version)
        # A challenger re-decided on new data and now promoted is no longer a challenger.
        challenger = registry.version_by_alias(CHALLENGER)
        if challenger is not None and str(challenger.version) == version:
            client.delete_registered_model_alias(name, CHALLENGER)
    else:
        client.set_registered_model_alias(name, CHALLENGER, version)


def _ensure_registered_model(registry: Registry) -> None:
    from mlflow.exceptions import MlflowException

    try:
        registry.client.get_registered_model(registry.model_name)
    except MlflowException as error:
        if error.error_code != "RESOURCE_DOES_NOT_EXIST":
            raise
        registry.client.create_registered_model(
            registry.model_name,
            description="mathembed: sentence embeddings for mathematical concept retrieval",
        )


def metric_tag(metric: str) -> str:
    """A metric name as MLflow accepts it in a key: ``mrr@10`` -> ``mrr_at_10``."""
    return metric.replace("@", "_at_")


def _decision_tags(
    decision: Decision,
    scored: ScoredModels,
    candidate: Candidate,
    champion: ModelVersion | None,
    promote: PromoteParams,
    decided_at: str,
    root: Path,
) -> dict[str, str]:
    side = decision.compared_against
    tags = {
        TAG_FINGERPRINT: candidate.fingerprint,
        TAG_DECISION: PROMOTED if decision.promote else REJECTED,
        "reason": decision.reason,
        "compared_against": side,
        "compared_version": str(champion.version) if champion is not None else "",
        "p_value": "" if decision.p_value is None else repr(decision.p_value),
        "test_method": promote.test_method,
        "metrics": ",".join(decision.deltas),
        "data_version": candidate.data_hash or "unknown",
        TAG_EVAL_DATA: scored.eval_data_hash,
        "base_model": candidate.base_model,
        "decided_at": decided_at,
        "git_commit": _git_commit(root),
    }
    for metric in decision.deltas:
        key = metric_tag(metric)
        tags[f"candidate.{key}"] = repr(decision.candidate[metric])
        tags[f"{side}.{key}"] = repr(decision.other[metric])
        tags[f"delta.{key}"] = repr(decision.deltas[metric])
        if side != "base" and metric in scored.base.means:
            tags[f"base.{key}"] = repr(float(scored.base.means[metric]))
    return tags


def _recorded_result(
    registry: Registry, version: ModelVersion, already_registered: bool, *, redecided: bool = False
) -> PromotionResult:
    """The outcome a settled version records in its tags (idempotent re-promotion)."""
    tags = version.tags
    metrics = [metric for metric in tags.get("metrics", "").split(",") if metric]
    side: Side = "champion" if tags.get("compared_against") == "champion" else "base"

    def values(prefix: str) -> dict[str, float]:
        return {
            metric: float(tags[f"{prefix}.{metric_tag(metric)}"])
            for metric in metrics
            if f"{prefix}.{metric_tag(metric)}" in tags
        }

    p_value = tags.get("p_value", "")
    decision = Decision(
        promote=tags.get(TAG_DECISION) == PROMOTED,
        reason=tags.get("reason", ""),
        p_value=float(p_value) if p_value else None,
        compared_against=side,
        deltas=values("delta"),
        candidate=values("candidate"),
        other=values(side),
    )
    return PromotionResult(
        registered_model=registry.model_name,
        version=str(version.version),
        fingerprint=tags.get(TAG_FINGERPRINT, ""),
        run_id=version.run_id or "",
        decision=decision,
        compared_version=tags.get("compared_version") or None,
        aliases=registry.aliases(),
        already_registered=already_registered,
        tracking_uri=registry.uri,
        decided_at=tags.get("decided_at", ""),
        redecided=redecided,
    )


# --------------------------------------------------------------------------- the run


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


def _find_logged_run(
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


def _logged_model_id(model_uri: str) -> str | None:
    """``models:/m-<id>`` (what ``log_model`` returns in MLflow 3) -> ``m-<id>``.

    A tracking server refuses to register such a source without the id.
    """
    name = model_uri.removeprefix("models:/")
    return name if name != model_uri and "/" not in name else None


def _log_run(
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
    train_metrics = _read_json_or_empty(paths.metrics / "train.json")
    run_tags = {
        TAG_FINGERPRINT: candidate.fingerprint,
        "git_commit": _git_commit(paths.root),
        "base_model": candidate.base_model,
        "data_version": candidate.data_hash or "unknown",
        "eval_data_hash": scored.eval_data_hash,
        **{f"dvc.{path}": md5 for path, md5 in dvc_lock_hashes(paths.root).items()},
        **{
            f"counts.{key}": str(value)
            for key, value in _flatten(_read_json_or_empty(paths.metrics / "data.json")).items()
        },
    }
    metrics = {
        **_numeric(_flatten(train_metrics), "train."),
        **_numeric(_flatten(_read_json_or_empty(paths.metrics / "eval.json")), "eval."),
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
            {
                key: _param_value(value)
                for key, value in _flatten(dataclasses.asdict(params)).items()
            }
        )
        mlflow.log_metrics({key: value for key, value in metrics.items() if math.isfinite(value)})
        registry.client.log_batch(run.info.run_id, metrics=_curve_metrics(train_metrics))
        mlflow.log_dict(dict(candidate.metadata), "mathembed.json")
        mlflow.log_dict(dict(data_quality), "data_quality.json")
        for folder, artifact_path in (
            (paths.root / "reports" / "eval", "eval_report"),
            (paths.root / "reports" / "data_quality", "data_quality_report"),
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


# --------------------------------------------------------------------------- status, rollback


@dataclass(frozen=True)
class AliasStatus:
    """One alias: its version (``None`` when unset), metrics recorded at decision time."""

    alias: str
    version: str | None
    metrics: dict[str, float]
    tags: dict[str, str]


def status(paths: Paths, promote: PromoteParams | None = None) -> list[AliasStatus]:
    """``champion``, ``challenger`` and ``previous`` with their versions and metrics.

    The metrics are each version's own (``candidate.*`` tags): what it scored when it was
    decided on. An empty registry gives three entries with ``version=None``.
    """
    promote = promote or PromoteParams()
    registry = connect(paths, promote, create=False)
    if registry is None:
        return [AliasStatus(alias, None, {}, {}) for alias in ALIASES]
    entries = []
    with _registry_errors(registry.uri, None):
        for alias in ALIASES:
            found = registry.version_by_alias(alias)
            if found is None:
                entries.append(AliasStatus(alias, None, {}, {}))
                continue
            entries.append(
                AliasStatus(alias, str(found.version), _own_metrics(found), dict(found.tags))
            )
    return entries


def _own_metrics(version: ModelVersion) -> dict[str, float]:
    metrics = [metric for metric in version.tags.get("metrics", "").split(",") if metric]
    return {
        metric: float(version.tags[f"candidate.{metric_tag(metric)}"])
        for metric in metrics
        if f"candidate.{metric_tag(metric)}" in version.tags
    }


@dataclass(frozen=True)
class RollbackResult:
    restored: str
    demoted: str
    actor: str
    reason: str
    at: str


def rollback(
    paths: Paths,
    promote: PromoteParams | None = None,
    *,
    reason: str = "manual rollback",
    actor: str | None = None,
) -> RollbackResult:
    """Move ``champion`` back to the ``previous`` version.

    The demoted version loses ``champion`` and gets no other alias: it was withdrawn for
    a reason, so it is not offered as ``challenger`` (which keeps naming the last
    candidate that lost fairly). ``previous`` is cleared, because the restored champion's
    own predecessor is not known; a second rollback therefore fails instead of undoing
    the first. Both versions get tags saying who rolled back, when and why. Takes the
    promotion lock, so a rollback never interleaves with a promotion.
    """
    promote = promote or PromoteParams()
    actor = actor or _actor()
    with promotion_lock(paths, promote.lock_timeout_seconds):
        registry = connect(paths, promote, create=False)
        if registry is None:
            raise PromotionError(
                f"no MLflow store at {store_dir(paths)}: nothing has been promoted yet"
            )
        with _registry_errors(registry.uri, None):
            champion = registry.version_by_alias(CHAMPION)
            previous = registry.version_by_alias(PREVIOUS)
            if champion is None or previous is None:
                missing = "champion" if champion is None else "previous"
                raise PromotionError(
                    f"cannot roll back {registry.model_name}: it has no @{missing} version "
                    f"(see `mathembed status`)"
                )
            at = _now()
            client, name = registry.client, registry.model_name
            client.set_registered_model_alias(name, CHAMPION, str(previous.version))
            client.delete_registered_model_alias(name, PREVIOUS)
            for version, prefix in (
                (str(champion.version), "rolled_back"),
                (str(previous.version), "restored"),
            ):
                client.set_model_version_tag(name, version, f"{prefix}_at", at)
                client.set_model_version_tag(name, version, f"{prefix}_by", actor)
                client.set_model_version_tag(name, version, f"{prefix}_reason", reason)
    return RollbackResult(str(previous.version), str(champion.version), actor, reason, at)


def _actor() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (e.g. a container)
        return f"uid {os.getuid()}"


# --------------------------------------------------------------------------- helpers


def dvc_lock_hashes(root: Path) -> dict[str, str]:
    """``path -> md5`` of every stage output under ``data/`` recorded in ``dvc.lock``."""
    lock = root / "dvc.lock"
    if not lock.is_file():
        return {}
    content = yaml.safe_load(lock.read_text(encoding="utf-8")) or {}
    hashes: dict[str, str] = {}
    for stage in (content.get("stages") or {}).values():
        for out in stage.get("outs") or []:
            path, md5 = str(out.get("path", "")), out.get("md5")
            if path.startswith("data/") and md5:
                hashes[path] = str(md5)
    return dict(sorted(hashes.items()))


def _git_commit(folder: Path) -> str:
    try:
        completed = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=folder,
            capture_output=True,
            text=True,
            check=False,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return completed.stdout.strip() if completed.returncode == 0 else "unknown"


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


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


__all__ = [
    "ALIASES",
    "AliasStatus",
    "Candidate",
    "NoChampionError",
    "PromotionError",
    "PromotionLockedError",
    "PromotionRefusedError",
    "PromotionResult",
    "RegistryError",
    "RollbackResult",
    "load_candidate",
    "promote_candidate",
    "promotion_lock",
    "require_validated",
    "rollback",
    "status",
    "tracking_uri",
]
