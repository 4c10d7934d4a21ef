"""The real services of a deployment, on this machine, without Docker (``make services``).

Starts, on 127.0.0.1 only: moto's S3 server (the DVC remote ``s3`` and MLflow's artifact
store), an MLflow tracking server (SQLite backend, artifacts on that S3, proxied) and a
Prefect server (SQLite) with the work pools ``infra/prefect.yaml`` deploys to (so
``prefect deploy --prefect-file infra/prefect.yaml --all`` works against it). State, logs
and pid files live in one folder (``.services/``); ``env.sh`` there exports what a shell
needs to use them::

    make services && source .services/env.sh && mathembed nightly
    make services-down

Tests use :func:`running` (a context manager that always stops what it started).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import requests

HOST = "127.0.0.1"
DVC_BUCKET = "mathembed-dvc"  # .dvc/config: remote "s3" = s3://mathembed-dvc/store
MLFLOW_BUCKET = "mathembed-mlflow"
#: moto accepts any credentials; these name the test account, they are no secret.
S3_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}
START_TIMEOUT_SECONDS = 90.0
#: Every service, in the order they start (MLflow's artifacts live on S3).
SERVICE_NAMES = ("s3", "mlflow", "prefect")


class ServiceError(RuntimeError):
    """A service did not start (the message says which, and where its log is)."""


@dataclass(frozen=True)
class Ports:
    s3: int = 9000  # the port .dvc/config's s3 remote names
    mlflow: int = 5000
    prefect: int = 4200


@dataclass(frozen=True)
class Services:
    """Where the started services listen, and the environment that points clients at them."""

    folder: Path
    ports: Ports
    #: The Prefect work pools ready on the server (created or already there).
    work_pools: tuple[str, ...] = ()
    #: The server processes, when this process started them (to reap them on stop).
    processes: tuple[subprocess.Popen[bytes], ...] = field(default=(), compare=False, repr=False)

    @property
    def s3_url(self) -> str:
        return f"http://{HOST}:{self.ports.s3}"

    @property
    def mlflow_url(self) -> str:
        return f"http://{HOST}:{self.ports.mlflow}"

    @property
    def prefect_api_url(self) -> str:
        return f"http://{HOST}:{self.ports.prefect}/api"

    def client_environment(self) -> dict[str, str]:
        return {
            **S3_CREDENTIALS,
            "MLFLOW_TRACKING_URI": self.mlflow_url,
            "MLFLOW_S3_ENDPOINT_URL": self.s3_url,
            "PREFECT_API_URL": self.prefect_api_url,
        }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def _commands(services: Services) -> dict[str, list[str]]:
    folder = services.folder.resolve()
    python = sys.executable
    bin_dir = Path(python).parent
    return {
        "s3": [python, "-m", "moto.server", "-H", HOST, "-p", str(services.ports.s3)],
        "mlflow": [
            str(bin_dir / "mlflow"),
            "server",
            "--host",
            HOST,
            "--port",
            str(services.ports.mlflow),
            "--workers",
            "1",
            "--backend-store-uri",
            f"sqlite:///{folder / 'mlflow.db'}",
            "--artifacts-destination",
            f"s3://{MLFLOW_BUCKET}/artifacts",
            "--serve-artifacts",
        ],
        "prefect": [
            str(bin_dir / "prefect"),
            "server",
            "start",
            "--host",
            HOST,
            "--port",
            str(services.ports.prefect),
        ],
    }


def _health_url(name: str, services: Services) -> str:
    return {
        "s3": f"{services.s3_url}/moto-api/",
        "mlflow": f"{services.mlflow_url}/health",
        "prefect": f"{services.prefect_api_url}/health",
    }[name]


def _server_environment(services: Services) -> dict[str, str]:
    environment = dict(os.environ)
    environment.update(S3_CREDENTIALS)
    environment["MLFLOW_S3_ENDPOINT_URL"] = services.s3_url
    environment["PREFECT_HOME"] = str((services.folder / "prefect").resolve())
    environment["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    # The servers must not talk to each other through a client setting of the caller's.
    for name in ("PREFECT_API_URL", "MLFLOW_TRACKING_URI"):
        environment.pop(name, None)
    return environment


def start(folder: Path, ports: Ports = Ports(), only: tuple[str, ...] = SERVICE_NAMES) -> Services:
    """Start the servers (each in its own process group) and wait until they answer.

    ``only`` starts a subset (a test that needs Prefect alone); MLflow needs S3. Once
    Prefect answers, the work pools of ``infra/prefect.yaml`` are created on it.
    """
    unknown = set(only) - set(SERVICE_NAMES)
    if unknown or ("mlflow" in only and "s3" not in only):
        raise ValueError(f"cannot start {only}: choose among {SERVICE_NAMES}; mlflow needs s3")
    services = Services(folder, ports)
    folder.mkdir(parents=True, exist_ok=True)
    for name in only:
        if _pid_alive(_read_pid(folder, name)):
            raise ServiceError(f"{name} already runs (pid file {folder / f'{name}.pid'})")
    environment = _server_environment(services)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for name, command in _commands(services).items():
            if name not in only:
                continue
            with (folder / f"{name}.log").open("ab") as log:
                process = subprocess.Popen(
                    command,
                    cwd=folder,
                    env=environment,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            processes.append(process)
            (folder / f"{name}.pid").write_text(str(process.pid))
            if name == "s3":
                _wait_healthy(name, services)
                _create_buckets(services)
        for name in ("mlflow", "prefect"):
            if name in only:
                _wait_healthy(name, services)
        if "prefect" in only:
            services = replace(services, work_pools=_create_work_pools(services))
    except BaseException:
        stop(folder)
        _reap(processes)
        raise
    (folder / "env.sh").write_text(
        "".join(f"export {key}={value}\n" for key, value in services.client_environment().items())
    )
    return replace(services, processes=tuple(processes))


def stop(folder: Path) -> list[str]:
    """Stop what :func:`start` started in ``folder``; returns the names it stopped."""
    stopped = []
    for name in ("prefect", "mlflow", "s3"):
        pid = _read_pid(folder, name)
        if _pid_alive(pid):
            assert pid is not None
            _terminate_group(pid)
            stopped.append(name)
        (folder / f"{name}.pid").unlink(missing_ok=True)
    return stopped


@contextmanager
def running(
    folder: Path, ports: Ports | None = None, only: tuple[str, ...] = SERVICE_NAMES
) -> Iterator[Services]:
    """The servers on free ports for the duration of a block (tests)."""
    services = start(folder, ports or Ports(free_port(), free_port(), free_port()), only)
    try:
        yield services
    finally:
        stop(folder)
        _reap(services.processes)


def _reap(processes: list[subprocess.Popen[bytes]] | tuple[subprocess.Popen[bytes], ...]) -> None:
    for process in processes:
        process.wait(timeout=30)


def _create_buckets(services: Services) -> None:
    import boto3

    s3 = boto3.client(
        "s3",
        endpoint_url=services.s3_url,
        aws_access_key_id=S3_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=S3_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        region_name=S3_CREDENTIALS["AWS_DEFAULT_REGION"],
    )
    existing = {bucket["Name"] for bucket in s3.list_buckets().get("Buckets", [])}
    for bucket in (DVC_BUCKET, MLFLOW_BUCKET):
        if bucket not in existing:
            s3.create_bucket(Bucket=bucket)


def _create_work_pools(services: Services) -> tuple[str, ...]:
    """The pools the deployments name: ``prefect deploy`` refuses a pool that is missing."""
    from flows.pools import PREFECT_FILE, ensure_work_pools, read_deployment_pools

    if not PREFECT_FILE.is_file():  # an installed wheel has no infra/: nothing to deploy
        return ()
    pools = ensure_work_pools(read_deployment_pools(PREFECT_FILE), services.prefect_api_url)
    return tuple(pool.name for pool in pools)


def _wait_healthy(name: str, services: Services) -> None:
    url = _health_url(name, services)
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if not _pid_alive(_read_pid(services.folder, name)):
            break
        try:
            if requests.get(url, timeout=2).ok:
                return
        except requests.RequestException:
            pass
        time.sleep(0.25)
    log = services.folder / f"{name}.log"
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:]) if log.exists() else ""
    raise ServiceError(f"{name} did not answer at {url}; its log is {log}:\n{tail}")


def _read_pid(folder: Path, name: str) -> int | None:
    try:
        return int((folder / f"{name}.pid").read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def _pid_alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped by its parent) counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][:1] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def _terminate_group(pid: int, grace_seconds: float = 10.0) -> None:
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace_seconds
    while time.monotonic() < deadline and _pid_alive(pid):
        time.sleep(0.1)
    if _pid_alive(pid):
        os.killpg(pid, signal.SIGKILL)
