"""``prefect deploy --prefect-file infra/prefect.yaml --all`` works against the Prefect server
``make services`` starts (issue 13): the server comes up with the work pools the file
names, ``mathembed pools`` creates one that went missing, and the deployments land on
their pools with the cron of params.yaml. Offline: the deployments pull nothing (their one
pull step is ``set_working_directory``), so nothing is fetched while deploying.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from prefect.client.orchestration import SyncPrefectClient, get_client
from prefect.settings import PREFECT_API_URL, temporary_settings
from repo import REPO

from flows import services
from pipelines.common.config import load_params


@pytest.fixture(scope="module")
def prefect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[services.Services]:
    with services.running(tmp_path_factory.mktemp("services"), only=("prefect",)) as running:
        yield running


@pytest.fixture
def client(prefect_server: services.Services) -> Iterator[SyncPrefectClient]:
    with (
        temporary_settings({PREFECT_API_URL: prefect_server.prefect_api_url}),
        get_client(sync_client=True) as prefect_client,
    ):
        yield prefect_client


def command(args: list[str], server: services.Services, home: Path) -> str:
    """A client command run from the repository root against ``server``, never prompting."""
    environment = {
        **os.environ,
        "PREFECT_API_URL": server.prefect_api_url,
        "PREFECT_HOME": str(home),  # not the user's profiles
        "PREFECT_CLI_PROMPT": "false",
    }
    result = subprocess.run(
        args, cwd=REPO, env=environment, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, f"{args} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_the_services_start_with_the_pools_and_mathembed_pools_adds_a_missing_one(
    prefect_server: services.Services, client: SyncPrefectClient, tmp_path: Path
) -> None:
    assert prefect_server.work_pools == ("cpu", "gpu")
    assert {pool.name: pool.type for pool in client.read_work_pools()} == {
        "cpu": "process",
        "gpu": "process",
    }
    client.delete_work_pool("gpu")
    output = command([sys.executable, "-m", "mathembed", "pools"], prefect_server, tmp_path)
    assert output.splitlines() == [
        "work pool 'cpu' (process): already there",
        "work pool 'gpu' (process): created",
    ]
    assert {pool.name for pool in client.read_work_pools()} == {"cpu", "gpu"}


def test_prefect_deploy_all_creates_both_deployments_on_their_pools(
    prefect_server: services.Services, client: SyncPrefectClient, tmp_path: Path
) -> None:
    prefect = str(Path(sys.executable).parent / "prefect")
    deploy = [prefect, "--no-prompt", "deploy", "--prefect-file", "infra/prefect.yaml", "--all"]
    command(deploy, prefect_server, tmp_path)

    deployments = {deployment.name: deployment for deployment in client.read_deployments()}
    assert set(deployments) == {"nightly-retrain", "train-gpu"}
    nightly, gpu = deployments["nightly-retrain"], deployments["train-gpu"]
    in_app = [{"prefect.deployments.steps.set_working_directory": {"directory": "/app"}}]
    assert (nightly.work_pool_name, nightly.entrypoint) == (
        "cpu",
        "flows/nightly.py:nightly_retrain",
    )
    assert (gpu.work_pool_name, gpu.entrypoint) == ("gpu", "flows/train_gpu.py:train_gpu")
    assert nightly.pull_steps == gpu.pull_steps == in_app
    assert gpu.job_variables == {"gpu_count": 1} and gpu.schedules == []

    flow_params = load_params(REPO / "params.yaml").flow
    (schedule,) = nightly.schedules
    assert schedule.active
    cron = schedule.schedule
    assert getattr(cron, "cron", None) == flow_params.schedule
    assert getattr(cron, "timezone", None) == flow_params.timezone
    assert nightly.global_concurrency_limit is not None
    assert nightly.global_concurrency_limit.limit == 1
