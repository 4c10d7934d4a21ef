"""What the fault tests share: a bound on each test's time."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

#: No fault test may hang: past this many seconds, SIGALRM fails it.
TEST_LIMIT_SECONDS = 20


@pytest.fixture
def bounded_in_time() -> Iterator[None]:
    """Fail the test with TimeoutError once it runs past :data:`TEST_LIMIT_SECONDS`."""

    def give_up(signum: int, frame: object) -> None:
        raise TimeoutError(f"the test ran past {TEST_LIMIT_SECONDS} s")

    previous = signal.signal(signal.SIGALRM, give_up)
    signal.alarm(TEST_LIMIT_SECONDS)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
