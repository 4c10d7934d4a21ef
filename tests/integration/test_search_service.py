"""``mathembed serve-search`` as a user runs it, read by a real browser.

The command starts as its own process on a free port (``--port 0``; it prints the address
it bound), headless Chromium (Debian's ``chromium``) opens the search page with a query
in the URL, the assertions are on the DOM it rendered, and a screenshot is written to
``/tmp/search_page.png`` for a person to look at. Ctrl-C (SIGINT) and SIGTERM must stop
the service cleanly. Every host name but 127.0.0.1 is unresolvable for the browser: the page needs
nothing from elsewhere.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
from browser import render
from promotion_worlds import Models, World, link_papers

SCREENSHOT = Path("/tmp/search_page.png")
ADDRESS = re.compile(r"mathembed search: (http://127\.0\.0\.1:\d+/)")


class Hits(HTMLParser):
    """The page's hits as a reader sees them: each list item's text and its links."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[str] = []
        self.links: list[str] = []
        self._in_hit = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "li" and ("class", "hit") in attrs:
            self._in_hit = True
            self.items.append("")
        if tag == "a" and self._in_hit:
            self.links.append(dict(attrs).get("href") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "li":
            self._in_hit = False

    def handle_data(self, data: str) -> None:
        if self._in_hit:
            self.items[-1] += data


def started(process: subprocess.Popen[str], timeout: float = 120) -> str:
    """The address the service printed once it was ready to answer."""
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
            if match := ADDRESS.search(line):
                return match[1]
    process.kill()
    stderr = process.stderr.read() if process.stderr else ""
    pytest.fail(f"serve-search did not start:\n{seen}\n{stderr[-3000:]}")


@pytest.fixture
def service(world: World, bow_models: Models) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    world.promote(world.install_candidate(bow_models.knows_7))
    (world.root / "params.yaml").write_text("ingest:\n  source: arxiv\n")
    link_papers(world, {"2401.00007": "https://arxiv.org/abs/2401.00007"})  # as ingest records
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    command = [sys.executable, "-m", "pipelines", "serve-search", "--port", "0"]
    with subprocess.Popen(
        [*command, "--root", str(world.root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    ) as process:  # closes the pipes at the end
        try:
            yield started(process), process
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)


def test_the_search_page_shows_linked_hits_in_a_browser(
    service: tuple[str, subprocess.Popen[str]], tmp_path: Path
) -> None:
    address, process = service
    dom = render(
        f"{address}?q=lattice&k=3",
        tmp_path / "profile",
        SCREENSHOT,
        window="1280,1400",
        localhost=True,
    )

    hits = Hits()
    hits.feed(dom)
    assert len(hits.items) == 3
    assert all("On the lattice" in item for item in hits.items[:2])
    assert "2401.00007v1#c000" in hits.items[0] and "score" in hits.items[0]
    assert hits.links[:2] == ["https://arxiv.org/abs/2401.00007"] * 2
    assert "3 passages in" in dom and 'value="lattice"' in dom
    assert SCREENSHOT.is_file() and SCREENSHOT.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert SCREENSHOT.stat().st_size > 10_000  # a rendered page, not a blank one

    process.send_signal(signal.SIGINT)  # Ctrl-C
    assert process.wait(timeout=30) == 0
    assert process.stdout is not None and "mathembed search: stopped" in process.stdout.read()


def test_sigterm_stops_the_service_cleanly_too(
    service: tuple[str, subprocess.Popen[str]],
) -> None:
    address, process = service
    with urllib.request.urlopen(address + "health", timeout=10) as response:
        assert json.loads(response.read())["status"] == "ok"
    process.send_signal(signal.SIGTERM)  # how a service manager stops it
    assert process.wait(timeout=30) == 0
    assert process.stdout is not None and "mathembed search: stopped" in process.stdout.read()
