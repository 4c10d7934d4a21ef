"""Shared pytest setup: the whole test session runs with the offline switches on."""

from __future__ import annotations

import pytest

from pipelines import offline


def pytest_configure(config: pytest.Config) -> None:
    # Before collection, so libraries imported by test modules already see
    # HF_HUB_OFFLINE and the telemetry switches; explicit settings are kept.
    offline.apply()
