"""The search page typesets formulas, offline, under a strict Content-Security-Policy.

A real service (``make_server`` on a free port of 127.0.0.1, in a thread, over a real
registry's champion) searches a corpus with two extra passages: one full of formulas
(inline ``$…$`` and ``\\(…\\)``, display ``$$…$$`` and ``\\[…\\]``) that opens a named lemma,
and one hostile (a ``<script>``, an ``<img onerror>`` between dollars, an unknown macro);
and four passages of another paper where two formulas KaTeX cannot typeset sit between
good ones (one that makes KaTeX itself fail, not a ParseError; finding 5's ``\\edef`` chain).
Headless Chromium, with every host name but 127.0.0.1 unresolvable, reads the page; the
assertions are on the DOM after KaTeX ran and on the console (where Chromium reports what
the policy refused). A screenshot is written to ``/tmp/search_page_math.png`` for a person.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from string import ascii_lowercase
from typing import Any

import pandas as pd
import pytest
from browser import render
from promotion_worlds import Models, make_world

from pipelines.common.io import read_parquet, write_parquet
from pipelines.common.paths import Paths
from pipelines.search.assets import STATIC_DIR
from pipelines.search.engine import open_engine
from pipelines.search.page import PAGE_POLICY
from pipelines.search.server import make_server

SCREENSHOT = Path("/tmp/search_page_math.png")
PAPER = "2401.00011"
FORMULAS = (
    "Let $L$ be a lattice and $\\varphi_{i_ji}(s_j)$ its transition maps. Then the lattice "
    "sum is $$\\sum_{n \\ge 1} \\frac{1}{n^2} = \\frac{\\pi^2}{6}$$ and \\(x^2 + \\sqrt{y}\\) "
    "bounds \\[ \\int_0^1 f(x)\\,dx \\] on the lattice."
)
HOSTILE = (
    "A lattice <script>document.title = 'owned'</script> with "
    "$<img src=x onerror=alert(1)>$ and an unknown macro $\\frobnicate{x} + 1$ on a lattice."
)
#: The opening of FORMULAS: the lemma the passage holds.
LEMMA_TEXT = FORMULAS.split(". ")[0] + "."

#: The paper whose passages (each with "sheaf") hold formulas KaTeX cannot typeset.
SHEAF_PAPER = "2401.00012"
#: A formula KaTeX itself fails on (a RangeError, not a ParseError) that fits a passage the
#: page shows whole: three macros nest braces 20 x 10 x 10 deep per ``\c``, ``\c`` three deep,
#: 6,000 levels from 333 expansions (under maxExpand), past the browser's stack.
NESTED = (
    r"\def\a#1{" + "{" * 20 + "#1" + "}" * 20 + "}"
    r"\def\b#1{" + r"\a{" * 10 + "#1" + "}" * 10 + "}"
    r"\def\c#1{" + r"\b{" * 10 + "#1" + "}" * 10 + "}"
    r"\c{\c{\c{x}}}"
)
#: Finding 5's formula: 22 ``\edef``s, each doubling the last. KaTeX before 0.16.10 overflowed
#: the stack on it; later ones count what ``\edef`` expands against maxExpand: a ParseError.
EDEF_CHAIN = (
    r"\edef\a{x}"
    + "".join(rf"\edef\{new}{{\{old}\{old}}}" for old, new in pairwise(ascii_lowercase[:22]))
    + r"\v"
)
#: Best first for the query "sheaf": the two failing formulas between good hits.
SHEAF_PASSAGES = {
    f"{SHEAF_PAPER}v1#c0000": "A sheaf $\\mathcal{F}$ is a sheaf of sets; every sheaf "
    "$\\mathcal{F}$ has sections $\\Gamma(U, \\mathcal{F})$.",
    f"{SHEAF_PAPER}v1#c0001": f"A sheaf with $a^2$ then ${NESTED}$ and $b_3$ after.",
    f"{SHEAF_PAPER}v1#c0002": f"A sheaf, a sheaf: an abstract as given ${EDEF_CHAIN}$.",
    f"{SHEAF_PAPER}v1#c0003": "Its structure sheaf $\\mathcal{O}_X$ and the cohomology "
    "\\(H^1(X, \\mathcal{O}_X)\\) of a scheme $X$ over a field $k$, with its many open "
    "covers, their intersections and the restriction maps between them.",
}


def add_math_passages(paths: Paths) -> None:
    """Two passages of a new paper, its title and its two statements, beside the world's;
    and the four :data:`SHEAF_PASSAGES` of another with its title."""
    chunks = read_parquet(paths.validated / "chunks.parquet")
    texts = {f"{PAPER}v1#c0000": FORMULAS, f"{PAPER}v1#c0001": HOSTILE, **SHEAF_PASSAGES}
    extra = pd.DataFrame(
        {
            "chunk_id": list(texts),
            "paper_id": [chunk_id.split("v")[0] for chunk_id in texts],
            "version": 1,
            "chunk_index": [int(chunk_id[-4:]) for chunk_id in texts],
            "section": "",
            "text": list(texts.values()),
        }
    )
    write_parquet(paths.validated / "chunks.parquet", pd.concat([chunks, extra]))
    papers = read_parquet(paths.validated / "papers.parquet")
    titles = pd.DataFrame(
        {
            "paper_id": [PAPER, SHEAF_PAPER],
            "title": ["Transition maps on a $\\mathbb{Z}$-lattice", "Sheaves on $\\mathbb{P}^1$"],
            "url": "",  # no link, like the world's papers
        }
    )
    write_parquet(paths.validated / "papers.parquet", pd.concat([papers, titles]))
    statements = pd.DataFrame(
        {
            "statement_id": [f"{PAPER}v1#s000", f"{PAPER}v1#s001"],
            "paper_id": [PAPER, PAPER],
            "version": [1, 1],
            "kind": ["lemma", "definition"],
            "name": ["Nakayama", ""],
            "label": ["lemma-nakayama", "definition-<i>x</i>"],
            "text": [LEMMA_TEXT, HOSTILE],
        }
    )
    write_parquet(paths.validated / "statements.parquet", statements)


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Any
    body: bytes


@dataclass(frozen=True)
class Service:
    base_url: str

    def get(self, path: str, headers: dict[str, str] | None = None) -> Answer:
        request = urllib.request.Request(self.base_url + path, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return Answer(response.status, response.headers, response.read())
        except urllib.error.HTTPError as error:
            return Answer(error.code, error.headers, error.read())


@pytest.fixture(scope="module")
def service(
    tmp_path_factory: pytest.TempPathFactory, bow_models: Models, empty_mlflow_db: Path
) -> Iterator[Service]:
    with pytest.MonkeyPatch.context() as env:
        env.delenv("MLFLOW_TRACKING_URI", raising=False)
        env.delenv("MLFLOW_REGISTRY_URI", raising=False)
        world = make_world(
            tmp_path_factory.mktemp("search-math") / "project", bow_models.base, empty_mlflow_db
        )
        world.promote(world.install_candidate(bow_models.knows_7))
        add_math_passages(world.paths)  # after promotion: only what search reads grows
        # Hybrid: BM25 ranks the extra passages high for "lattice" and "sheaf".
        engine = open_engine(world.paths, world.params.promote, ranking="hybrid")
        server = make_server(engine, "127.0.0.1", 0)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield Service(f"http://127.0.0.1:{server.server_port}")
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)


def page_path(query: str = "lattice", k: int = 4) -> str:
    return "/?" + urllib.parse.urlencode({"q": query, "k": k})


def hits_in(dom: str) -> dict[str, str]:
    """Each hit's markup in the DOM, by its passage's id, in the page's order."""
    hits = re.findall(r'<li class="hit">(.*?)</li>', dom, flags=re.DOTALL)
    return {re.findall(r"<small>\S+ · (\S+) ·", hit)[0]: hit for hit in hits}


def test_formulas_are_typeset_not_printed_and_nothing_hostile_runs(
    service: Service, tmp_path: Path
) -> None:
    console: list[str] = []
    dom = render(
        service.base_url + page_path(),
        tmp_path / "profile",
        SCREENSHOT,
        window="1100,1200",
        localhost=True,
        console=console,
    )
    # Both extra passages were found (BM25 ranks them high for "lattice").
    assert f"{PAPER}v1#c0000" in dom and f"{PAPER}v1#c0001" in dom
    # KaTeX typeset every formula: each keeps its source only as MathML's annotation.
    annotations = re.findall(r'<annotation encoding="application/x-tex">(.*?)</annotation>', dom)
    assert "\\varphi_{i_ji}(s_j)" in annotations
    assert "\\sum_{n \\ge 1} \\frac{1}{n^2} = \\frac{\\pi^2}{6}" in annotations
    assert "x^2 + \\sqrt{y}" in annotations and " \\int_0^1 f(x)\\,dx " in annotations
    assert "\\mathbb{Z}" in annotations  # the paper's title too
    assert dom.count('<span class="katex-display">') == 2  # $$…$$ and \[…\]
    assert dom.count('<span class="katex">') >= 9
    for raw in ("$\\varphi", "$$", "\\(x^2", "\\[ \\int", "$L$"):
        assert raw not in dom, f"{raw!r} is printed, not typeset"
    # The unknown macro is shown (in red), the rest of its formula and the page typeset.
    assert "&lt;img src=x onerror=alert(1)&gt;" in annotations
    assert "\\frobnicate{x} + 1" in annotations
    # Nothing from a passage became markup or ran.
    assert "<img" not in dom and "owned" not in re.findall(r"<title>(.*?)</title>", dom)[0]
    scripts = re.findall(r"<script[^>]*>", dom)
    assert scripts == [
        '<script defer="" src="/static/katex/katex.min.js">',
        '<script defer="" src="/static/katex/contrib/auto-render.min.js">',
        '<script defer="" src="/static/search.js">',
    ]
    assert "&lt;script&gt;document.title = 'owned'&lt;/script&gt;" in dom
    # The statement each hit belongs to, escaped like the rest: its heading when the engine
    # names it, else the line of statements under the paper's title.
    assert re.search(r'<p class="(heading|statement)"[^>]*>(<a [^>]*>)?Lemma \(Nakayama\)', dom)
    assert "Definition" in dom and "&lt;i&gt;x&lt;/i&gt;" in dom and "<i>x" not in dom
    # The policy refused nothing: KaTeX needed no inline script or style, no remote font.
    assert not [line for line in console if "Content Security Policy" in line], console
    assert SCREENSHOT.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert SCREENSHOT.stat().st_size > 20_000  # a rendered page, not a blank one


def test_a_formula_katex_fails_on_stays_source_in_its_hit_and_the_others_are_typeset(
    service: Service, tmp_path: Path
) -> None:
    console: list[str] = []
    dom = render(
        service.base_url + page_path("sheaf"),
        tmp_path / "profile",
        localhost=True,
        console=console,
    )
    hits = hits_in(dom)
    # The two formulas KaTeX cannot typeset are in hits between good ones.
    good_before, nested, edef, good_after = SHEAF_PASSAGES
    assert list(hits) == [good_before, nested, edef, good_after]
    # Every other formula is typeset, in every hit: none is left as its source.
    for chunk_id, formulas in ((good_before, 3), (nested, 2), (edef, 0), (good_after, 4)):
        markup = hits[chunk_id]
        assert markup.count('<span class="katex">') == 1 + formulas, chunk_id  # 1: the title
        for raw in ("$", "\\(", "\\mathcal", "a^2"):
            assert raw not in re.sub(r"<(annotation|code)\b.*?</\1>", "", markup), (chunk_id, raw)
    # The formula KaTeX failed on is its source, as code, in its own hit alone.
    assert re.findall(r'<code class="math-source" title="([^"]*)">(.*?)</code>', dom) == [
        (
            "KaTeX could not typeset this formula: RangeError: Maximum call stack size exceeded",
            NESTED,  # nothing in it for the DOM to escape
        )
    ]
    # Finding 5's \edef chain: KaTeX reports it (in red), the page goes on.
    assert re.findall(r'<span class="katex-error" title="([^"]*)"[^>]*>(.*?)</span>', dom) == [
        (
            "ParseError: KaTeX parse error: Too many expansions: infinite loop or need to "
            "increase maxExpand setting",
            EDEF_CHAIN,
        )
    ]
    assert any("KaTeX could not typeset a formula" in line for line in console), console
    # The policy refused only the inline colour KaTeX gives its error (search.css gives it).
    refused = [line for line in console if "Content Security Policy" in line]
    assert refused and all("Applying inline style" in line for line in refused), refused


def test_the_page_policy_allows_only_the_services_own_files(service: Service) -> None:
    answer = service.get(page_path())
    assert answer.status == 200
    policy = answer.headers["Content-Security-Policy"]
    assert policy == PAGE_POLICY
    directives = {part.split()[0]: part.split()[1:] for part in policy.split(";") if part.strip()}
    assert directives["default-src"] == ["'none'"]
    for kind in ("script-src", "style-src", "font-src"):
        assert directives[kind] == ["'self'"], kind  # no 'unsafe-inline', no host
    assert "img-src" not in directives and "connect-src" not in directives
    page = answer.body.decode()
    assert "<script>" not in page and " style=" not in page  # nothing inline
    loaded = re.findall(r'<(?:script|link)[^>]* (?:src|href)="([^"]*)"', page)
    assert len(loaded) == 5 and all(url.startswith("/static/") for url in loaded), loaded
    # The JSON answers carry the statement too; they load nothing at all.
    api = service.get("/api/search?q=lattice&k=4")
    assert "default-src 'none'" in api.headers["Content-Security-Policy"]
    assert "script-src" not in api.headers["Content-Security-Policy"]
    hits = {hit["chunk_id"]: hit for hit in json.loads(api.body)["hits"]}
    (statement,) = hits[f"{PAPER}v1#c0000"]["statements"]
    named = {"statement_id": f"{PAPER}v1#s000", "kind": "lemma", "name": "Nakayama"}
    assert statement.items() >= {**named, "label": "lemma-nakayama"}.items()


def test_the_service_serves_katex_itself_with_types_and_cache_headers(service: Service) -> None:
    expected = {
        "/static/katex/katex.min.js": "text/javascript; charset=utf-8",
        "/static/katex/contrib/auto-render.min.js": "text/javascript; charset=utf-8",
        "/static/search.js": "text/javascript; charset=utf-8",
        "/static/katex/katex.min.css": "text/css; charset=utf-8",
        "/static/search.css": "text/css; charset=utf-8",
    }
    css = (STATIC_DIR / "katex" / "katex.min.css").read_text()
    fonts = sorted(set(re.findall(r"url\((fonts/[\w-]+\.woff2)\)", css)))
    assert len(fonts) == 20
    expected |= {f"/static/katex/{font}": "font/woff2" for font in fonts}
    for path, content_type in expected.items():
        answer = service.get(path)
        assert answer.status == 200, path
        assert answer.headers["Content-Type"] == content_type, path
        assert answer.headers["X-Content-Type-Options"] == "nosniff"
        assert answer.headers["Cache-Control"] == "public, max-age=86400"
        assert answer.body == (STATIC_DIR / path.removeprefix("/static/")).read_bytes()
        etag = answer.headers["ETag"]
        again = service.get(path, {"If-None-Match": etag})
        assert again.status == 304 and again.body == b"" and again.headers["ETag"] == etag
    changed = service.get("/static/search.js", {"If-None-Match": '"stale"'})
    assert changed.status == 200


@pytest.mark.parametrize(
    "path",
    [
        "/static/katex/README.md",  # not a type the page loads
        "/static/katex/LICENSE",
        "/static/../server.py",
        "/static/%2e%2e/server.py",
        "/static/katex/../../server.py",
        "/static/",
        "/static/katex/fonts/KaTeX_Main-Regular.ttf",  # not vendored
    ],
)
def test_nothing_else_is_served_from_static(service: Service, path: str) -> None:
    answer = service.get(path)
    assert answer.status == 404 and answer.headers["Content-Type"] == "application/json"
