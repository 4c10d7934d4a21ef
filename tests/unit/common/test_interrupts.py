"""Interrupts held back for a block: delivered when it ends, to the handlers that were there."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from types import FrameType

import pytest

from pipelines.common.interrupts import interrupts_deferred


@pytest.fixture
def sigterm_recorded() -> Iterator[list[int]]:
    """SIGTERM handled by a Python function that records it; the old handler put back."""
    received: list[int] = []

    def record(signum: int, frame: FrameType | None) -> None:
        received.append(signum)

    previous = signal.signal(signal.SIGTERM, record)
    yield received
    signal.signal(signal.SIGTERM, previous)


def test_an_interrupt_in_the_block_is_raised_when_it_ends() -> None:
    reached_the_end = False
    with pytest.raises(KeyboardInterrupt), interrupts_deferred():
        signal.raise_signal(signal.SIGINT)
        reached_the_end = True
    assert reached_the_end
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_held_signal_reaches_its_own_handler_once(sigterm_recorded: list[int]) -> None:
    with interrupts_deferred():
        signal.raise_signal(signal.SIGTERM)
        signal.raise_signal(signal.SIGTERM)
        assert sigterm_recorded == []
    assert sigterm_recorded == [signal.SIGTERM]
    signal.raise_signal(signal.SIGTERM)  # the handler is back in place
    assert sigterm_recorded == [signal.SIGTERM, signal.SIGTERM]


def test_an_interrupt_wins_over_the_blocks_own_error() -> None:
    with pytest.raises(KeyboardInterrupt) as raised, interrupts_deferred():
        signal.raise_signal(signal.SIGINT)
        raise OSError("store unreachable")
    assert isinstance(raised.value.__context__, OSError)


def test_ignored_signals_stay_ignored() -> None:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupts_deferred():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            signal.raise_signal(signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def test_off_the_main_thread_the_block_just_runs() -> None:
    seen: list[object] = []

    def work() -> None:
        with interrupts_deferred():
            seen.append(signal.getsignal(signal.SIGINT))

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert seen == [signal.default_int_handler]
