"""``mathembed serve-search`` as a user runs it, read by a real browser.

The command starts as its own process on a free port (``--port 0``; it prints the address
it bound), headless Chromium (Debian's ``chromium``) opens the search page with a query
in the URL, the assertions are on the DOM it rendered, and a screenshot is written to
``/tmp/search_page.png`` for a person to look at. Ctrl-C (SIGINT) and SIGTERM must stop
the service cleanly, within a second. Every host name but 127.0.0.1 is unresolvable for
the browser: the page needs nothing from elsewhere.

The world is the promotion worlds' (a bag-of-words champion over a few topic passages);
for the page's formulas and headings a paper of three passages full of formulas is added:
a named lemma, its proof, and prose, each paper linked. What each hit's heading and link
must be is read from the service's own JSON answer, so the assertions follow the fields
the engine gives (``heading``, ``kind``, ``name``, ``link`` when it gives them): each
statement's hit must be headed by its kind and name and linked to the statement.
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
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from browser import render
from launched import ready_address
from promotion_worlds import Models, World, link_papers

from pipelines.common.io import read_parquet, write_parquet
from pipelines.search.page import hit_view

SCREENSHOT = Path("/tmp/search_page.png")
MATH_SCREENSHOT = Path("/tmp/search_page_headings.png")
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


@contextmanager
def serving(world: World) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``mathembed serve-search --port 0`` over ``world``: its address, and the process."""
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
            yield ready_address(process, ADDRESS, timeout=120), process
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)


@pytest.fixture
def service(world: World, bow_models: Models) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    world.promote(world.install_candidate(bow_models.knows_7))
    (world.root / "params.yaml").write_text("ingest:\n  source: arxiv\n")
    link_papers(world, {"2401.00007": "https://arxiv.org/abs/2401.00007"})  # as ingest records
    with serving(world) as running:
        yield running


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
    assert "3 hits in" in dom and 'value="lattice"' in dom
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


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_the_service_stops_within_a_second(
    service: tuple[str, subprocess.Popen[str]], stop: signal.Signals
) -> None:
    address, process = service
    with urllib.request.urlopen(address + "health", timeout=10) as response:
        assert response.status == 200
    process.send_signal(stop)
    sent = time.monotonic()
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], 10)
    stopped_after = time.monotonic() - sent
    assert ready and process.stdout.readline().startswith("mathembed search: stopped")
    assert stopped_after < 1.0, f"stopped {stopped_after:.2f} s after {stop.name}"
    assert process.wait(timeout=30) == 0


# -- the page's hits: headings, links, formulas --------------------------------------------

MATH_PAPER = "2401.00031"
SECTION = "Sums over a lattice"
LEMMA = (
    "Lemma. Let $L \\subset \\mathbb{R}^n$ be a lattice and $\\varphi_{i}(s_j)$ its maps. "
    "Then $$\\sum_{v \\in L} e^{-\\pi |v|^2} < \\infty$$ for the lattice $L$."
)
PROOF = "Proof. The lattice sum converges absolutely for $|q| < 1$ on the lattice."
# The prose holds the other delimiters: the proof's passage is folded into its lemma's hit.
PROSE = (
    "A lattice $\\Lambda$ with dual $\\Lambda^*$ pairs to $\\langle x, y \\rangle \\in "
    "\\mathbb{Z}$ for every $x \\in \\Lambda$ and $y \\in \\Lambda^*$. Its lattice sum "
    "\\(\\theta(x) = \\sum_n q^{n^2}\\) is bounded by \\[ \\int_0^1 f(x)\\,dx \\] on the lattice."
)


def add_formula_paper(world: World) -> None:
    """A paper of three passages (a named lemma, its proof, prose) in a section, with its
    statements table; every paper linked, as ingest links arXiv's."""
    paths = world.paths
    chunks = read_parquet(paths.validated / "chunks.parquet")
    texts = [LEMMA, PROOF, PROSE]
    extra = pd.DataFrame(
        {
            "chunk_id": [f"{MATH_PAPER}v1#c{index:04d}" for index in range(len(texts))],
            "paper_id": MATH_PAPER,
            "version": 1,
            "chunk_index": range(len(texts)),
            "section": SECTION,
            "text": texts,
        }
    )
    write_parquet(paths.validated / "chunks.parquet", pd.concat([chunks, extra]))
    papers = read_parquet(paths.validated / "papers.parquet")
    title = pd.DataFrame({"paper_id": [MATH_PAPER], "title": ["Theta series of $\\mathbb{Z}^n$"]})
    write_parquet(paths.validated / "papers.parquet", pd.concat([papers, title]))
    statements = pd.DataFrame(
        {
            "statement_id": [f"{MATH_PAPER}v1#s000"],
            "paper_id": [MATH_PAPER],
            "version": [1],
            "kind": ["lemma"],
            "name": ["lattice sums"],
            "label": ["lemma-lattice-sums"],
            "text": [LEMMA],
            "proof": [PROOF],
        }
    )
    write_parquet(paths.validated / "statements.parquet", statements)
    every_paper = read_parquet(paths.validated / "papers.parquet")["paper_id"]
    link_papers(world, {str(paper): f"https://arxiv.org/abs/{paper}" for paper in every_paper})


@dataclass
class ShownHit:
    heading: str = ""
    link: str | None = None  # the heading's
    body: str = ""
    text: str = ""  # all of it


class ShownHits(HTMLParser):
    """Each hit as a reader sees it once KaTeX ran: its heading's text and link, its
    passage, all its text; the TeX source KaTeX keeps for machines (MathML's annotation)
    is left out."""

    def __init__(self) -> None:
        super().__init__()
        self.hits: list[ShownHit] = []
        self._part = ""
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        fields = dict(attrs)
        if tag == "li" and fields.get("class") == "hit":
            self.hits.append(ShownHit())
        elif not self.hits:
            return
        elif tag == "annotation":
            self._hidden += 1
        elif tag == "p" and fields.get("class") == "heading":
            self._part = "heading"
        elif tag == "blockquote":
            self._part = "body"
        elif tag == "a" and self._part == "heading":
            self.hits[-1].link = fields.get("href")

    def handle_endtag(self, tag: str) -> None:
        if tag == "annotation":
            self._hidden -= 1
        elif tag in ("p", "blockquote"):
            self._part = ""

    def handle_data(self, data: str) -> None:
        if not self.hits or self._hidden:
            return
        hit = self.hits[-1]
        hit.text += data
        if self._part == "heading":
            hit.heading += data
        elif self._part == "body":
            hit.body += data


def test_each_hit_shows_its_heading_a_link_and_typeset_formulas_in_a_browser(
    world: World, bow_models: Models, tmp_path: Path
) -> None:
    world.promote(world.install_candidate(bow_models.knows_7))
    add_formula_paper(world)  # after promotion: only what search reads grows
    with serving(world) as (address, _):
        query = urllib.parse.urlencode({"q": "lattice", "k": 100})
        with urllib.request.urlopen(f"{address}api/search?{query}", timeout=30) as response:
            answer = json.loads(response.read())
        dom = render(
            f"{address}?{query}",
            tmp_path / "profile",
            MATH_SCREENSHOT,
            window="1280,3600",
            localhost=True,
        )
    shown = ShownHits()
    shown.feed(dom)
    assert len(shown.hits) == len(answer["hits"]) >= 3
    math_hits = [hit["chunk_id"] for hit in answer["hits"] if hit["paper_id"] == MATH_PAPER]
    # the lemma (its proof's passage folded into it: one hit per statement) and the prose
    assert sorted(math_hits) == [f"{MATH_PAPER}v1#c0000", f"{MATH_PAPER}v1#c0002"]

    for hit, seen in zip(answer["hits"], shown.hits, strict=True):
        # KaTeX typeset every formula: no delimiter is left in what a reader sees.
        for raw in ("$", "\\(", "\\[", "\\mathbb"):
            assert raw not in seen.text, (hit["chunk_id"], raw, seen.text)
        view = hit_view(hit)  # what the page means to show of the hit's JSON
        assert seen.link and seen.link == view.heading_link, hit["chunk_id"]  # all are linked
        if "$" not in view.heading:  # a title with a formula reads typeset, not as its source
            assert seen.heading == view.heading, hit["chunk_id"]
        if hit.get("kind") and hit.get("name"):  # a statement's: its kind and name, its link
            assert hit["kind"] in seen.heading.lower()  # "Lemma", "From the proof of"
            assert hit["name"] in seen.heading and seen.link == hit["link"]
    # The formulas were typeset (each keeps its source only as MathML's annotation).
    annotations = re.findall(r'<annotation encoding="application/x-tex">(.*?)</annotation>', dom)
    assert "\\sum_{v \\in L} e^{-\\pi |v|^2} &lt; \\infty" in annotations
    assert "\\theta(x) = \\sum_n q^{n^2}" in annotations and "\\mathbb{Z}^n" in annotations
    assert dom.count('<span class="katex-display">') == 2  # $$…$$ and \\[…\\]
    lemma = next(hit for hit in answer["hits"] if hit["chunk_id"] == f"{MATH_PAPER}v1#c0000")
    if "heading" in lemma:  # an engine that names the statement: the lemma is headed by it
        assert lemma["kind"] == "lemma" and "lattice sums" in lemma["heading"]
        assert lemma["section"] == SECTION
    assert MATH_SCREENSHOT.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
