"""Is this body a paper's LaTeX, or a server's error page served with HTTP 200?

arXiv (or a proxy, a CDN, a captive portal in front of it) sometimes answers an e-print
request with a page about the request instead of the paper: HTML, JSON, a line of plain
text. Judged by the first bytes alone, such a page slips through whenever it does not
open with ``<html`` — a byte-order mark, ``<head>``, white space, JSON — and is stored for
good as a LaTeX paper. :func:`error_page_kind` reads the content instead: JSON that
parses; HTML document tags anywhere in the first few KB of a body that is no LaTeX
document; and a body without a single TeX control word (``\\section``, ``\\begin``), which
no LaTeX source lacks. What it finds is a failure of the request, not of the paper, so
the caller quarantines it as retryable. Pure: bytes in, a kind or ``None`` out.
"""

from __future__ import annotations

import codecs
import json
import re

# How much of the body is read for HTML tags: an error page names itself early.
SNIFF_BYTES = 8192
# The tags of an HTML document (not inline tags like <b> or <a>, which TeX sources quote).
_HTML_TAG = re.compile(rb"<\s*/?\s*(?:!doctype\s+html|html|head|body|title|meta)\b", re.I)
_LATEX_DOCUMENT = re.compile(rb"\\document(?:class|style)\b|\\begin\s*\{document\}")
# A TeX control word: a backslash and letters. An error page in plain text has none.
_CONTROL_WORD = re.compile(rb"\\[A-Za-z]+")
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def error_page_kind(data: bytes) -> str | None:
    """What ``data`` is when it is not a LaTeX source — ``"an HTML page"``, ``"a JSON
    document"`` or ``"plain text with no LaTeX in it"`` — else ``None`` (pure)."""
    text = _as_utf8(data)
    stripped = text.strip()
    if stripped[:1] in (b"{", b"[") and _parses_as_json(stripped):
        return "a JSON document"
    if _HTML_TAG.search(text[:SNIFF_BYTES]) and not _LATEX_DOCUMENT.search(text):
        return "an HTML page"
    if not _CONTROL_WORD.search(text):
        return "plain text with no LaTeX in it"
    return None


def _as_utf8(data: bytes) -> bytes:
    """``data`` as UTF-8 bytes without a byte-order mark: a UTF-16 page is re-encoded,
    anything else is kept as sent (the patterns are ASCII, so any ASCII-based encoding
    matches as it is)."""
    if data.startswith(_UTF16_BOMS):
        return data.decode("utf-16", errors="replace").encode("utf-8")
    return data.removeprefix(codecs.BOM_UTF8)


def _parses_as_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:  # JSONDecodeError and UnicodeDecodeError both
        return False
    return True
