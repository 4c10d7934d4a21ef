"""The aliases by hand: :func:`status` shows ``@champion``, ``@challenger`` and
``@previous`` with their metrics; :func:`rollback` moves ``@champion`` back to
``@previous``."""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pipelines.common.config import PromoteParams
from pipelines.common.paths import Paths
from pipelines.promote.provenance import now
from pipelines.promote.tags import recorded_decision
from pipelines.registry.metric_records import UNRECORDED
from pipelines.registry.mlflow_registry import (
    ALIASES,
    CHAMPION,
    PREVIOUS,
    PromotionError,
    connect,
    missing_files_message,
    model_files_problem,
    promotion_lock,
    registry_errors,
)

if TYPE_CHECKING:
    from mlflow.entities.model_registry import ModelVersion


@dataclass(frozen=True)
class AliasStatus:
    """One alias: its version (``None`` when unset), metrics recorded at decision time,
    and what is wrong with the version's model files (``None``: they are there)."""

    alias: str
    version: str | None
    metrics: dict[str, float]
    tags: dict[str, str]
    files_problem: str | None = None
    #: The query set ``metrics`` were measured on (the set that decided).
    query_set: str = UNRECORDED


def status(paths: Paths, promote: PromoteParams | None = None) -> list[AliasStatus]:
    """``champion``, ``challenger`` and ``previous`` with their versions and metrics.

    The metrics are each version's own (``candidate.*`` tags): what it scored when it was
    decided on. An empty registry gives three entries with ``version=None``. Each version's
    files are checked too: a registered version whose files were deleted cannot answer a
    search, so status says so rather than showing it as fine.
    """
    promote = promote or PromoteParams()
    registry = connect(paths, promote, create=False)
    if registry is None:
        return [AliasStatus(alias, None, {}, {}) for alias in ALIASES]
    entries = []
    with registry_errors(registry.uri, None):
        for alias in ALIASES:
            found = registry.version_by_alias(alias)
            if found is None:
                entries.append(AliasStatus(alias, None, {}, {}))
                continue
            problem = model_files_problem(registry, found)
            entries.append(
                AliasStatus(
                    alias,
                    str(found.version),
                    _own_metrics(found),
                    dict(found.tags),
                    missing_files_message(registry, found, problem) if problem else None,
                    recorded_decision(found.tags).query_set,
                )
            )
    return entries


def _own_metrics(version: ModelVersion) -> dict[str, float]:
    return recorded_decision(version.tags).candidate


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
                f"no MLflow store at {paths.mlflow_store}: nothing has been promoted yet"
            )
        with registry_errors(registry.uri, None):
            champion = registry.version_by_alias(CHAMPION)
            previous = registry.version_by_alias(PREVIOUS)
            if champion is None or previous is None:
                missing = "champion" if champion is None else "previous"
                raise PromotionError(
                    f"cannot roll back {registry.model_name}: it has no @{missing} version "
                    f"(see `mathembed status`)"
                )
            at = now()
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
