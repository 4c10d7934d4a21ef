"""The Data Docs made readable offline, and the report's static front page.

GX pages load Bootstrap, jQuery, bootstrap-table, Font Awesome and Vega from CDNs, and no
installed Python package ships those files. After GX builds the site, every page is
rewritten to be self-contained (:func:`make_site_offline`): remote scripts and stylesheets
are dropped (the inline scripts only drive those libraries, so they go too), the remote
logo points at GX's copy under ``static/images``, and a small local stylesheet
(``templates/offline.css``, :data:`OFFLINE_CSS`, installed as GX's
``data_docs_custom_styles.css`` so GX inlines it in every page) stands in for Bootstrap
and the icon font. GX's own ``index.html`` is an empty table filled in by
bootstrap-table's JavaScript, so it is replaced by a static summary page
(:func:`render_index`, from ``templates/*.html``): every suite, its pass count, every
expectation with its observed value, and links to GX's validation and suite pages.
"""

from __future__ import annotations

import datetime as dt
import functools
import html
import os
import re
import string
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.common import io

if TYPE_CHECKING:
    from pipelines.validate.summaries import ExpectationRow, SuiteSection


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

# Every element GX's templates use to pull code or styles from a CDN, and the remote
# logo. Anchors (<a href="https://...">) stay: they are links, not loaded resources.
_SCRIPT = re.compile(r"<script\b[^>]*>.*?</script\s*>\s*", re.IGNORECASE | re.DOTALL)
_REMOTE_LINK = re.compile(r"<link\b[^>]*\bhref\s*=\s*[\"']?https?://[^>]*>\s*", re.IGNORECASE)
_REMOTE_CSS_URL = re.compile(r"url\(\s*[\"']?https?://[^)]*\)", re.IGNORECASE)
_REMOTE_IMG = re.compile(
    r"<img\b(?P<before>[^>]*?)\bsrc\s*=\s*(?P<quote>[\"'])https?://[^\"']*?"
    r"(?P<file>[^/\"'?]+)(?:\?[^\"']*)?(?P=quote)(?P<after>[^>]*)>",
    re.IGNORECASE,
)


def offline_page(page_html: str, static_images: str, local_images: Sequence[str]) -> str:
    """``page_html`` with every remote script, stylesheet, CSS url() and image removed.

    ``static_images`` is the page's relative path to the site's ``static/images``
    folder; a remote image whose file name is in ``local_images`` points there instead
    (GX's logo), any other remote image is dropped.
    """

    def local_image(match: re.Match[str]) -> str:
        if match["file"] not in local_images:
            return ""
        quote = match["quote"]
        return (
            f"<img{match['before']}src={quote}{static_images}/{match['file']}{quote}"
            f"{match['after']}>"
        )

    page_html = _SCRIPT.sub("", page_html)
    page_html = _REMOTE_LINK.sub("", page_html)
    page_html = _REMOTE_CSS_URL.sub("none", page_html)
    return _REMOTE_IMG.sub(local_image, page_html)


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
    return _fill(
        "index.html",
        css=OFFLINE_CSS,
        when=_e(run_time.strftime("%Y-%m-%d %H:%M:%S UTC")),
        eval_set=_e(eval_set_line(eval_set)),
        overall="passed" if passed == len(sections) else "failed",
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


def _status(success: bool) -> str:
    return "passed" if success else "FAILED"


def _row_class(success: bool) -> str:
    return "" if success else ' class="failed"'


def _summary_row(section: SuiteSection) -> str:
    summary = section.summary
    failed = (
        "<ul>" + "".join(f"<li>{_e(item)}</li>" for item in summary.failed_expectations) + "</ul>"
        if summary.failed_expectations
        else "none"
    )
    links = []
    if section.validation_page:
        links.append(f'<a href="{_e(section.validation_page)}">validation result</a>')
    if section.suite_page:
        links.append(f'<a href="{_e(section.suite_page)}">suite definition</a>')
    return _fill(
        "summary_row.html",
        row_class=_row_class(summary.success),
        name=_e(section.name),
        status=_status(summary.success),
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
        status=_status(summary.success),
        successful=summary.successful,
        evaluated=summary.evaluated,
        rows="".join(_expectation_row(row) for row in section.rows),
    )


def _expectation_row(row: ExpectationRow) -> str:
    return _fill(
        "expectation_row.html",
        row_class=_row_class(row.success),
        mark="✔" if row.success else "✘",
        expectation=_e(row.expectation),
        notes=_e(row.notes),
        expected=_e(row.expected),
        observed=_e(row.observed),
    )


def _e(text: str) -> str:
    return html.escape(text, quote=True)
