"""The search page: a form, then the hits with their formulas typeset.

The server writes every text escaped, formulas included (``$\\varphi_{i_j}$`` stays the
characters it is); in the browser ``static/search.js`` hands each hit to KaTeX's
auto-render (vendored under ``static/katex/``, served by the service itself), which
replaces the delimited formulas by typeset ones. KaTeX builds its output as DOM nodes and
sets their styles through the CSSOM, so the page runs under :data:`PAGE_POLICY`: scripts,
style sheets and fonts from the service only, no inline script or style, nothing from
anywhere else. A formula KaTeX cannot read (an unknown macro) is shown as its source,
in red; one KaTeX fails on otherwise (a RangeError, from macros nested thousands deep) is
shown as its source, as code: each formula is typeset on its own, so the rest of the page
is typeset all the same. Nothing KaTeX reads can run (``trust`` stays off: no ``\\href``, no
``\\htmlClass``).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

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
    esc = html.escape
    alias = f" @{model['alias']}" if model.get("alias") else ""
    heading = f"{model['name']} v{model['version']}{alias}"
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{esc(query + ' – ' if query else '')}mathembed search</title>",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        *(f'<link rel="stylesheet" href="{STATIC_PREFIX}{sheet}">' for sheet in STYLESHEETS),
        *(f'<script defer src="{STATIC_PREFIX}{script}"></script>' for script in SCRIPTS),
        "</head><body>",
        f"<h1>mathembed search</h1><p>Model: {esc(heading)}</p>",
        '<form action="/" method="get" role="search">',
        f'<input type="search" name="q" value="{esc(query)}" size="60" autofocus '
        'aria-label="query">',
        f'<input type="number" name="k" value="{k}" min="1" max="{MAX_K}" aria-label="passages">',
        '<select name="ranking" aria-label="ranking">',
        *(
            f'<option value="{how}"{" selected" if how == ranking else ""}>{how}</option>'
            for how in RANKINGS
        ),
        "</select>",
        '<button type="submit">Search</button></form>',
    ]
    if error is not None:
        parts.append(f'<p role="alert">{esc(error)}</p>')
    elif answer is not None:
        hits = answer["hits"]
        parts.append(
            f"<p>{len(hits)} passages in {answer['took_ms']:.1f} ms, "
            f"{esc(answer['ranking'])} ranking</p><ol>"
        )
        parts.extend(render_hit(hit) for hit in hits)
        parts.append("</ol>")
    parts.append("</body></html>")
    return "\n".join(parts)


def render_hit(hit: Mapping[str, Any]) -> str:
    """One hit (as :meth:`~pipelines.search.query.Hit.as_json` gives it): its paper, linked
    when it has a link, the statements its passage holds, and the passage; all escaped."""
    esc = html.escape
    title = esc(hit["title"] or hit["paper_id"])
    linked = f'<a href="{esc(hit["url"])}">{title}</a>' if hit["url"] else title
    statements = "; ".join(statement_heading(statement) for statement in hit.get("statements", ()))
    return (
        f'<li class="hit"><p>{linked} <small>{esc(hit["paper_id"])} · '
        f"{esc(hit['chunk_id'])} · score {hit['score']:.3f}</small></p>"
        + (f'<p class="statement">{statements}</p>' if statements else "")
        + f"<blockquote>{esc(hit['text'])}</blockquote></li>"
    )


def statement_heading(statement: Mapping[str, str]) -> str:
    """ "Lemma (Yoneda lemma)", or the kind and the label of an unnamed statement
    ("Definition <small>definition-category</small>"), escaped."""
    kind = statement["kind"][:1].upper() + statement["kind"][1:]
    if statement["name"]:
        return html.escape(f"{kind} ({statement['name']})")
    label = f" <small>{html.escape(statement['label'])}</small>" if statement["label"] else ""
    return html.escape(kind) + label
