"""Headless Chromium (Debian's ``chromium`` package) for the tests that read a page as a
person would: the DOM after scripts ran (``--dump-dom``), a screenshot on the side.

``--host-resolver-rules`` makes every host name unresolvable (127.0.0.1 stays reachable
when a test serves the page itself), so a page that needs the network shows it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"


def chromium() -> str:
    found = shutil.which("chromium") or (CHROMIUM if Path(CHROMIUM).exists() else None)
    if found is None:
        pytest.fail(
            f"headless Chromium is needed but {CHROMIUM} is missing: run "
            "`apt-get install -y chromium` (Debian package; `make browser` does it)"
        )
    return found


def render(
    url: str,
    profile: Path,
    screenshot: Path | None = None,
    *,
    window: str = "1280,2000",
    localhost: bool = False,
    console: list[str] | None = None,
) -> str:
    """The DOM of ``url`` after loading in headless Chromium, offline but for 127.0.0.1
    when ``localhost``; ``console`` gets the page's console messages (a script's logs, the
    Content-Security-Policy's refusals)."""
    resolver = "MAP * ~NOTFOUND" + (", EXCLUDE 127.0.0.1" if localhost else "")
    command = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        f"--user-data-dir={profile}",
        f"--host-resolver-rules={resolver}",
        f"--window-size={window}",
        "--dump-dom",
    ]
    if screenshot is not None:
        command.append(f"--screenshot={screenshot}")
    if console is not None:  # Chromium logs them as "...:INFO:CONSOLE:<line>] <message>"
        command += ["--enable-logging=stderr", "--v=0"]
    command.append(url)
    completed = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stderr[-2000:]
    if console is not None:
        console += [line for line in completed.stderr.splitlines() if ":CONSOLE" in line]
    return completed.stdout
