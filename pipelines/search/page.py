"""The search page: a form, then the hits with their formulas typeset.

What a hit shows is decided here, once, by :func:`hit_view` (pure): its heading (the
statement it is, "Lemma (snake lemma)", linked to the statement; else its paper's title,
linked to the paper), where it comes from (paper, section, ids, score), the statements its
passage holds and its text (the answer's ``snippet`` when it has one). The Jinja2
templates under ``templates/`` only lay that out, with autoescaping on: every text is
escaped, formulas included (``$\\varphi_{i_j}$`` stays the characters it is). In the
browser ``static/search.js`` hands each hit to KaTeX's auto-render (vendored under
``static/katex/``, served by the service itself), which replaces the delimited formulas by
typeset ones. KaTeX builds its output as DOM nodes and sets their styles through the CSSOM,
so the page runs under :data:`PAGE_POLICY`: scripts, style sheets and fonts from the service
only, no inline script or style, nothing from anywhere else. A formula KaTeX cannot read
(an unknown macro) is shown as its source, in red; one KaTeX fails on otherwise (a
RangeError, from macros nested thousands deep) is shown as its source, as code: each
formula is typeset on its own, so the rest of the page is typeset all the same. Nothing
KaTeX reads can run (``trust`` stays off: no ``\\href``, no ``\\htmlClass``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from pipelines.mathtext.headings import kind_title, titled
from pipelines.retrieval.lexical import RANKINGS
from pipelines.search.query import MAX_K

DEFAULT_K = 10
#: Where the service serves ``pipelines/search/static/`` (:mod:`pipelines.search.assets`).
STATIC_PREFIX = "/static/"
#: The page's scripts, in the order they run (each ``defer``: after the page is parsed).
SCRIPTS = ("katex/katex.min.js", "katex/contrib/auto-render.min.js", "search.js")
STYLESHEETS = ("katex/katex.min.css", "search.css")
#: The search page's Content-Security-Policy: its own scripts, styles and fonts, nothing
#: inline, nothing from elsewhere; forms post only to the service.
PAGE_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; font-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
#: Everything else the service answers (JSON, the assets) loads nothing at all.
NOTHING_POLICY = "default-src 'none'; form-action 'self'; frame-ancestors 'none'"
#: The ``kind`` of a hit that is no statement's: plain prose.
PROSE = "text"
#: The page's templates, shipped inside the package (hatch packages the whole folder).
TEMPLATES_DIR = Path(__file__).parent / "templates"


@dataclass(frozen=True)
class StatementLine:
    """A statement a passage holds, as the page names it: "Lemma (Nakayama)", or the kind
    of an unnamed one ("Definition") with its LaTeX label beside it."""

    text: str
    label: str


@dataclass(frozen=True)
class HitView:
    """One hit as the page shows it; the templates add markup only."""

    heading: str
    #: Where the heading links: the statement itself, else the paper; ``None``: nowhere.
    heading_link: str | None
    #: "lemma", "proof", "text", ...; "" when the answer does not say.
    kind: str
    #: The paper's title on the line under a statement's heading ("" when the heading is
    #: the title already), linked to ``paper_link``.
    paper: str
    paper_link: str | None
    section: str
    #: A line saying what the statement is about (the Stacks Project's), "" when none.
    slogan: str
    paper_id: str
    chunk_id: str
    score: float
    #: The statements the passage holds, when the heading is the paper's title.
    statements: tuple[StatementLine, ...]
    #: The passage as shown: the answer's snippet (cut where no formula is), else its text.
    body: str


def hit_view(hit: Mapping[str, Any]) -> HitView:
    """What the page shows of one hit of :meth:`SearchEngine.answer`'s ``hits``.

    A hit whose answer heads it (``heading``; else ``kind`` and ``name`` make one) is
    shown under that heading, linked to its ``link`` (the statement's own page), with its
    paper's title below; the statements its passage holds are then in the JSON only. A hit
    without (an engine that does not say) is headed by its paper's title, linked to the
    paper, with the statements its passage holds below ("Lemma (Nakayama); Definition")."""
    title = str(hit.get("title") or hit["paper_id"])
    paper_url = hit.get("url") or None
    kind, section = str(hit.get("kind") or ""), str(hit.get("section") or "")
    # Prose outside any section is headed by its paper, not by the engine's "Text".
    prose_only = kind == PROSE and not section
    heading = "" if prose_only else str(hit.get("heading") or "") or _named(hit)
    statements: tuple[StatementLine, ...] = ()
    if heading:
        link, paper = hit.get("link") or None, title
    else:
        heading, link, paper = title, paper_url, ""
        statements = tuple(statement_line(ref) for ref in hit.get("statements") or ())
    return HitView(
        heading=heading,
        heading_link=link,
        kind=kind,
        paper=paper,
        paper_link=paper_url,
        section="" if section == heading else section,  # prose is headed by its section
        slogan=str(hit.get("slogan") or ""),
        paper_id=str(hit["paper_id"]),
        chunk_id=str(hit["chunk_id"]),
        score=float(hit["score"]),
        statements=statements,
        body=str(hit.get("snippet") or hit.get("text") or ""),
    )


def statement_line(statement: Mapping[str, Any]) -> StatementLine:
    """ "Lemma (Yoneda lemma)", or the kind and the label of an unnamed statement."""
    named = _named(statement)
    if named:
        return StatementLine(named, "")
    return StatementLine(kind_title(str(statement["kind"])), str(statement.get("label") or ""))


def _named(fields: Mapping[str, Any]) -> str:
    """ "Lemma (Yoneda lemma)" from ``kind`` and ``name``; "" without a name."""
    kind, name = str(fields.get("kind") or ""), str(fields.get("name") or "")
    return titled(kind, name) if name and kind else ""


@cache
def templates() -> jinja2.Environment:
    """The page's templates; autoescaping on for all of them, and a name a template uses
    that its context lacks is an error, not an empty string."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_page(
    model: Mapping[str, Any],
    query: str = "",
    k: int = DEFAULT_K,
    answer: Mapping[str, Any] | None = None,
    error: str | None = None,
    ranking: str | None = None,
) -> str:
    """The search page: a form, then the hits (or the error) of ``answer``; all escaped.
    ``ranking`` is the one the form offers first (``None``: the service's default)."""
    alias = f" @{model['alias']}" if model.get("alias") else ""
    return (
        templates()
        .get_template("search.html")
        .render(
            model=f"{model['name']} v{model['version']}{alias}",
            query=query,
            k=k,
            max_k=MAX_K,
            rankings=RANKINGS,
            ranking=ranking,
            error=error,
            answer=answer,
            hits=[hit_view(hit) for hit in answer["hits"]] if answer is not None else [],
            static=STATIC_PREFIX,
            scripts=SCRIPTS,
            stylesheets=STYLESHEETS,
        )
    )


def render_hit(hit: Mapping[str, Any]) -> str:
    """One hit's list item, as :func:`render_page` writes it."""
    return templates().get_template("hit.html").render(hit=hit_view(hit))


def render_reference(openapi: Mapping[str, Any]) -> str:
    """``/docs``: the service's OpenAPI document as a page (no script: Swagger UI would load
    its code from a CDN, which this service reaches for nothing)."""
    return (
        templates()
        .get_template("reference.html")
        .render(api=openapi, static=STATIC_PREFIX, stylesheets=("search.css",))
    )
