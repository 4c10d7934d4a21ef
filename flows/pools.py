"""The Prefect work pools that ``infra/prefect.yaml``'s deployments run on, created if missing.

``prefect deploy --prefect-file infra/prefect.yaml --all`` stops at a pool that does not
exist; ``mathembed pools`` (and ``mathembed services up``, once its Prefect server answers)
creates each pool the file names, as a ``process`` pool, and leaves existing ones as they
are (a Kubernetes ``gpu`` pool created from ``infra/k8s/gpu-job-template.json`` stays one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

#: The deployments' file in this checkout (pipelines/ sits at the repository root).
PREFECT_FILE = Path(__file__).resolve().parents[1] / "infra" / "prefect.yaml"
#: The type of a pool created here: a worker runs each flow run as a local process.
POOL_TYPE = "process"


class PoolError(RuntimeError):
    """The deployments' file names no pool, or the Prefect API refused to create one."""


@dataclass(frozen=True)
class PoolResult:
    name: str
    created: bool
    type: str


def deployment_pools(prefect_yaml: Mapping[str, Any]) -> list[str]:
    """The work pool names a prefect.yaml's deployments use, in file order (pure)."""
    names: list[str] = []
    for deployment in prefect_yaml.get("deployments") or []:
        pool = (deployment or {}).get("work_pool") or {}
        name = pool.get("name") if isinstance(pool, Mapping) else None
        if name and name not in names:
            names.append(str(name))
    return names


def read_deployment_pools(prefect_file: Path = PREFECT_FILE) -> list[str]:
    try:
        document = yaml.safe_load(prefect_file.read_text(encoding="utf-8")) or {}
    except FileNotFoundError as error:
        raise PoolError(
            f"{prefect_file} does not exist; pass --prefect-file the deployments' file "
            "(infra/prefect.yaml in the repository)"
        ) from error
    names = deployment_pools(document)
    if not names:
        raise PoolError(f"{prefect_file} names no work pool (deployments[].work_pool.name)")
    return names


def ensure_work_pools(names: list[str], api_url: str | None = None) -> list[PoolResult]:
    """Create each pool in ``names`` that the Prefect API (``api_url``, else the current
    setting) does not have yet, as a :data:`POOL_TYPE` pool; idempotent."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectAlreadyExists
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect.workers.process import ProcessWorker

    results = []
    with (
        temporary_settings({PREFECT_API_URL: api_url} if api_url else {}),
        get_client(sync_client=True) as client,
    ):
        for name in names:
            pool = WorkPoolCreate(
                name=name,
                type=POOL_TYPE,
                base_job_template=ProcessWorker.get_default_base_job_template(),
            )
            try:
                client.create_work_pool(pool)
            except ObjectAlreadyExists:
                existing = client.read_work_pool(name)
                results.append(PoolResult(name, created=False, type=existing.type))
            else:
                results.append(PoolResult(name, created=True, type=POOL_TYPE))
    return results


def describe(results: list[PoolResult]) -> str:
    """One line per pool, for the terminal (pure)."""
    return "\n".join(
        f"work pool {result.name!r} ({result.type}): "
        + ("created" if result.created else "already there")
        for result in results
    )
