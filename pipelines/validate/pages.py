"""The Data Docs made readable offline, and the report's static front page.

GX pages load Bootstrap, jQuery, bootstrap-table, Font Awesome and Vega from CDNs, and no
installed Python package ships those files. After GX builds the site, every page is
rewritten to be self-contained (:func:`make_site_offline`, an ``html.parser`` rewriter
that copies what it keeps as written): remote scripts and stylesheets are dropped (the
inline scripts only drive those libraries, so they go too), the remote logo points at
GX's copy under ``static/images``, and a small local stylesheet
(``templates/offline.css``, :data:`OFFLINE_CSS`, installed as GX's
``data_docs_custom_styles.css`` so GX inlines it in every page) stands in for Bootstrap
and the icon font. GX's own ``index.html`` is an empty table filled in by
bootstrap-table's JavaScript, so it is replaced by a static summary page
(:func:`render_index`, from ``templates/*.html``): every suite, its pass count, every
expectation with its observed value, and links to GX's validation and suite pages. A
failure the corpus explains (:mod:`pipelines.validate.expected`) is shown apart, muted and
with its reason; any other failure is marked unexpected.

The pages show passages of papers, which are anyone's text, so no page may run anything:
GX's cells get the values already escaped (:mod:`pipelines.validate.gx_context`), and the
rewriter is the second line: besides every ``<script>`` it drops every ``on…`` handler,
every ``javascript:``/``vbscript:``/``data:`` URL, the elements that embed another document
(``iframe``, ``object``, ...) and any ``<meta http-equiv>``, and puts
:data:`CONTENT_SECURITY_POLICY` first in ``<head>``, as the search page sends it.
"""

from __future__ import annotations

import datetime as dt
import functools
import html
import os
import re
import string
from collections.abc import Mapping, Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.common import io

if TYPE_CHECKING:
    from pipelines.validate.summaries import ExpectationRow, SuiteSection, SuiteSummary


TEMPLATES = Path(__file__).parent / "templates"


@functools.cache
def _template_text(name: str) -> str:
    return (TEMPLATES / name).read_text(encoding="utf-8")


def _fill(template: str, /, **values: object) -> str:
    """``templates/<template>`` with its ``$placeholders`` filled (every one must be given)."""
    return string.Template(_template_text(template)).substitute(values)


#: A stand-in for the parts of Bootstrap 4 and Font Awesome that GX's pages rely on, small
#: enough to read. GX inlines it in every page; the index page inlines it too.
OFFLINE_CSS = _template_text("offline.css")

# -- offline pages ----------------------------------------------------------------------

# Anchors (<a href="https://...">) stay: they are links, not loaded resources.
_REMOTE = re.compile(r"^\s*(?:https?:)?//", re.IGNORECASE)
#: What a report page may load: its own images, styles and fonts (next to it on disk),
#: nothing else; no script at all, so a handler or URL the rewriter missed still cannot run.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; img-src 'self'; style-src 'self' 'unsafe-inline'; font-src 'self'; "
    "base-uri 'none'; form-action 'none'"
)
CSP_META = f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">'
# Elements that load or embed another document, or rewrite where links lead: dropped with
# their attributes (their content, if any, is copied and rewritten like the rest).
_DROPPED_ELEMENTS = frozenset(
    {"iframe", "frame", "frameset", "object", "embed", "applet", "base", "portal"}
)
# URL schemes that run or smuggle content. Browsers ignore ASCII whitespace and control
# characters inside a scheme ("java\tscript:"), so they are removed before comparing.
_ACTIVE_SCHEMES = ("javascript:", "vbscript:", "data:")
_IGNORED_IN_URLS = re.compile(r"[\x00-\x20\x7f]+")
# CSS is not HTML: the standard library has no CSS parser and none is installed, and the
# only construct that loads anything in GX's styles is ``url(...)``, so a pattern for it
# (in <style> elements, style="" attributes and .css files) is all a parser would give.
_REMOTE_CSS_URL = re.compile(r"url\(\s*[\"']?(?:https?:)?//[^)]*\)", re.IGNORECASE)


def offline_stylesheet(css: str) -> str:
    """``css`` with every remote ``url(...)`` replaced by ``none``."""
    return _REMOTE_CSS_URL.sub("none", css)


def offline_page(page_html: str, static_images: str, local_images: Sequence[str]) -> str:
    """``page_html`` with every script, remote stylesheet, CSS url() and remote image removed,
    every event handler and active URL dropped (:func:`is_active_attribute`), and
    :data:`CSP_META` first in ``<head>``.

    ``static_images`` is the page's relative path to the site's ``static/images``
    folder; a remote image whose file name is in ``local_images`` points there instead
    (GX's logo), any other remote image is dropped. Everything else is copied as written.
    """
    rewriter = _OfflineRewriter(static_images, frozenset(local_images))
    rewriter.feed(page_html)
    rewriter.close()
    return "".join(rewriter.out)


class _OfflineRewriter(HTMLParser):
    """Copies a page tag by tag (start tags as written), leaving out what loads from afar.

    The inline scripts go with the remote ones: they only drive the CDN libraries.
    """

    def __init__(self, static_images: str, local_images: frozenset[str]) -> None:
        super().__init__(convert_charrefs=False)  # entities are copied, not decoded
        self.static_images = static_images
        self.local_images = local_images
        self.out: list[str] = []
        self.in_script = False
        self.in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._start(tag, attrs, closed=False)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._start(tag, attrs, closed=True)

    def _start(self, tag: str, attrs: list[tuple[str, str | None]], closed: bool) -> None:
        if tag == "script":
            self.in_script = not closed
            return
        self.in_style = tag == "style" and not closed
        rewritten = self._rewrite(tag, attrs)
        if rewritten is not None:
            if rewritten == attrs:
                self.out.append(self.get_starttag_text() or "")
            else:
                self.out.append(_start_tag(tag, rewritten, closed))
        if tag == "head":
            # First in <head>: a policy applies only to what the page holds after it.
            self.out.append(CSP_META)

    def _rewrite(
        self, tag: str, attrs: list[tuple[str, str | None]]
    ) -> list[tuple[str, str | None]] | None:
        """The tag's attributes made local, or None to drop the tag."""
        values = dict(attrs)
        if tag in _DROPPED_ELEMENTS or (tag == "meta" and "http-equiv" in values):
            return None  # a page's own http-equiv (a refresh, another policy) goes too
        if tag == "link" and _REMOTE.match(values.get("href") or ""):
            return None
        rewritten = [
            (name, offline_stylesheet(value) if name == "style" and value else value)
            for name, value in attrs
            if not is_active_attribute(name, value)
        ]
        source = values.get("src") or ""
        if tag == "img" and _REMOTE.match(source):
            file_name = source.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
            if file_name not in self.local_images:
                return None
            local = f"{self.static_images}/{file_name}"
            rewritten = [(name, local if name == "src" else value) for name, value in rewritten]
        return rewritten

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self.in_script = False
            return
        if tag == "style":
            self.in_style = False
        if not self.in_script and tag not in _DROPPED_ELEMENTS:
            self.out.append(f"</{tag}>")

    def handle_data(self, data: str) -> None:
        if self.in_script:
            return
        self.out.append(offline_stylesheet(data) if self.in_style else data)

    def handle_entityref(self, name: str) -> None:
        self._copy(f"&{name};")

    def handle_charref(self, name: str) -> None:
        self._copy(f"&#{name};")

    def handle_comment(self, data: str) -> None:
        self._copy(f"<!--{data}-->")

    def handle_decl(self, decl: str) -> None:
        self._copy(f"<!{decl}>")

    def handle_pi(self, data: str) -> None:
        self._copy(f"<?{data}>")

    def unknown_decl(self, data: str) -> None:
        self._copy(f"<![{data}]>")

    def _copy(self, text: str) -> None:
        if not self.in_script:
            self.out.append(text)


def is_active_attribute(name: str, value: str | None) -> bool:
    """Whether an attribute can run something: an event handler (``onerror``, ``onload``,
    ...) or a URL with an active scheme (:data:`_ACTIVE_SCHEMES`), in any attribute, since
    ``href``, ``src``, ``action``, ``formaction``, ``xlink:href`` and SVG's ``to``/``values``
    all take one. ``value`` is as :class:`HTMLParser` gives it: entities already decoded."""
    if name.startswith("on"):
        return True
    if not value:
        return False
    normalised = _IGNORED_IN_URLS.sub("", value).lower()
    return normalised.startswith(_ACTIVE_SCHEMES) or "javascript:" in normalised


def _start_tag(tag: str, attrs: list[tuple[str, str | None]], closed: bool) -> str:
    written = "".join(
        f" {name}" if value is None else f' {name}="{html.escape(value, quote=True)}"'
        for name, value in attrs
    )
    return f"<{tag}{written}{'/' if closed else ''}>"


def make_site_offline(site_dir: Path) -> list[Path]:
    """Rewrite every HTML page and stylesheet of the site with :func:`offline_page`.

    Returns the files that changed. Idempotent: a rewritten page is left as it is.
    """
    images_dir = site_dir / "static" / "images"
    local_images = sorted(path.name for path in images_dir.iterdir()) if images_dir.is_dir() else []
    changed: list[Path] = []
    for path in sorted([*site_dir.rglob("*.html"), *site_dir.rglob("*.css")]):
        original = path.read_text(encoding="utf-8")
        static_images = Path(os.path.relpath(images_dir, path.parent)).as_posix()
        if path.suffix == ".css":
            rewritten = offline_stylesheet(original)
        else:
            rewritten = offline_page(original, static_images, local_images)
        if rewritten != original:
            io.write_text(path, rewritten)
            changed.append(path)
    return changed


# -- the index page ---------------------------------------------------------------------


def render_index(
    sections: Sequence[SuiteSection], run_time: dt.datetime, eval_set: Mapping[str, Any]
) -> str:
    """The report's front page: static HTML, no scripts, no remote resources.

    ``eval_set`` holds the evaluation set's figures
    (:func:`pipelines.validate.eval_shape.figures`), shown as one line under the verdict.
    """
    passed = sum(section.summary.success for section in sections)
    expected = sum(len(section.summary.expected_failures) for section in sections)
    unexpected = sum(len(section.summary.unexpected_failures) for section in sections)
    failures = ""
    if expected or unexpected:
        failures = (
            f" {_count(expected, 'expectation', 'expectations')} failed as expected for this "
            f"corpus (reasons below); {unexpected:,} failed unexpectedly."
        )
    # A suite that failed only as the corpus explains is "expected"; any other, "failed".
    overall = "passed" if passed == len(sections) else "failed" if unexpected else "expected"
    return _fill(
        "index.html",
        csp=CSP_META,
        css=OFFLINE_CSS,
        when=_e(run_time.strftime("%Y-%m-%d %H:%M:%S UTC")),
        eval_set=_e(eval_set_line(eval_set)),
        overall=overall,
        failures=_e(failures),
        passed=passed,
        total=len(sections),
        summary_rows="".join(_summary_row(section) for section in sections),
        suite_sections="".join(_suite_section(section) for section in sections),
    )


def eval_set_line(figures: Mapping[str, Any]) -> str:
    """The evaluation set's shape in one sentence."""
    per_query = figures["relevant_per_query"]
    return (
        f"Evaluation set: {_count(figures['queries'], 'query', 'queries')} over "
        f"{figures['passages']:,} "
        f"passages; relevant passages per query: median {per_query['median']:g}, max "
        f"{per_query['max']:,} ({figures['max_relevant_share']:.2%} of the corpus); "
        f"{figures['queries_with_defining']:,} queries have a defining passage; relevant "
        f"passages in seen papers {figures['relevant_seen']:,}, in unseen papers "
        f"{figures['relevant_unseen']:,}."
    )


def _count(number: int, one: str, many: str) -> str:
    return f"{number:,} {one if number == 1 else many}"


def _status(summary: SuiteSummary) -> str:
    if summary.success:
        return "passed"
    return "failed as expected for this corpus" if summary.only_expected_failures else "FAILED"


def _row_class(success: bool, expected: bool = False) -> str:
    if success:
        return ""
    return ' class="expected"' if expected else ' class="failed"'


def _summary_row(section: SuiteSection) -> str:
    summary = section.summary
    items = [
        f'<li><span class="unexpected">unexpected:</span> {_e(item)}</li>'
        for item in summary.unexpected_failures
    ] + [f'<li class="reason">{_e(item)}</li>' for item in summary.expected_failures]
    failed = "<ul>" + "".join(items) + "</ul>" if items else "none"
    links = []
    if section.validation_page:
        links.append(f'<a href="{_e(section.validation_page)}">validation result</a>')
    if section.suite_page:
        links.append(f'<a href="{_e(section.suite_page)}">suite definition</a>')
    return _fill(
        "summary_row.html",
        row_class=_row_class(summary.success, summary.only_expected_failures),
        name=_e(section.name),
        status=_status(summary),
        successful=summary.successful,
        evaluated=summary.evaluated,
        failed=failed,
        links=" · ".join(links),
    )


def _suite_section(section: SuiteSection) -> str:
    summary = section.summary
    return _fill(
        "suite_section.html",
        name=_e(section.name),
        status=_status(summary),
        successful=summary.successful,
        evaluated=summary.evaluated,
        rows="".join(_expectation_row(row) for row in section.rows),
    )


def _expectation_row(row: ExpectationRow) -> str:
    if row.expected_because:
        reason = f'<div class="reason">Expected for this corpus: {_e(row.expected_because)}</div>'
    elif row.unexpected:
        reason = '<div class="unexpected">Unexpected: no known reason of this corpus</div>'
    else:
        reason = ""
    return _fill(
        "expectation_row.html",
        row_class=_row_class(row.success, bool(row.expected_because)),
        mark="✔" if row.success else "✘",
        expectation=_e(row.expectation),
        notes=_e(row.notes),
        reason=reason,
        expected=_e(row.expected),
        observed=_e(row.observed),
    )


def _e(text: str) -> str:
    return html.escape(text, quote=True)
