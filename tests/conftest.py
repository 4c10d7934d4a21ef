"""Shared pytest setup: the offline switches for the whole session, the tiers, the fixtures.

Tiers (folders): ``unit/<stage>/`` — one stage's code, tables built in the test;
``metrics_rs/`` — the Rust extension's Python API; ``integration/`` — real servers and
tools end to end (DVC, the nightly flow, an MLflow server, Chromium); ``faults/`` —
hostile inputs and failures built in the test (bombs, hangs, bad configuration, leaked
secrets, orphaned processes), each bounded in time and memory. Every test under
``integration/`` is marked ``integration``; it and the unit tests that train, score or
register real models are marked ``slow``, so ``pytest -m "not slow"`` is the quick inner
loop and ``make test`` runs everything.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

# Tiny-model fixtures shared by the model tests (no torch import until one is used).
from fixtures_models import one_torch_thread, tiny_bert_dir, tiny_model_dir  # noqa: F401

# The promotion worlds shared by the registry and search tests.
from promotion_worlds import bow_models, empty_mlflow_db, world  # noqa: F401

from pipelines.common import offline

TESTS = Path(__file__).parent

# Unit tests that train, embed with or register real models: tens of seconds each.
SLOW_UNIT_TESTS = (
    "unit/train",
    "unit/evaluate",
    "unit/promote/test_registry.py",
    "unit/search",
    "unit/common/test_models.py",
    "quality",
)


def pytest_configure(config: pytest.Config) -> None:
    # Before collection, so libraries imported by test modules already see
    # HF_HUB_OFFLINE and the telemetry switches; explicit settings are kept.
    offline.apply()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        where = item.path.relative_to(TESTS).as_posix()
        if where.startswith("faults/"):
            item.add_marker(pytest.mark.faults)
        if where.startswith("integration/"):
            item.add_marker(pytest.mark.integration)
            item.add_marker(pytest.mark.slow)
        elif where.startswith(SLOW_UNIT_TESTS):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def s3_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A real S3 endpoint (moto's server) on 127.0.0.1, with boto3 credentials in the env.

    Yields the endpoint URL; the server stops when the test ends.
    """
    from moto.server import ThreadedMotoServer

    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(key, value)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()
