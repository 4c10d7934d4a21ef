"""A service started as a child process, read as it runs: the line it prints once ready."""

from __future__ import annotations

import re
import select
import subprocess
import time

import pytest


def ready_address(process: subprocess.Popen[str], address: re.Pattern[str], timeout: float) -> str:
    """The first group of the first stdout line ``address`` matches: the URL the service
    printed once it was ready to answer. When the process ends or ``timeout`` seconds pass
    first, it is killed and the test fails with what it printed."""
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    seen = ""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], 1.0)
        if ready:
            line = process.stdout.readline()
            if not line:  # the process ended before it served
                break
            seen += line
            if match := address.search(line):
                return match[1]
    process.kill()
    stderr = process.stderr.read() if process.stderr else ""
    pytest.fail(f"{' '.join(map(str, process.args))} did not start:\n{seen}\n{stderr[-3000:]}")
