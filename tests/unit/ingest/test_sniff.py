"""pipelines.ingest.arxiv.sniff: error pages told from LaTeX by content, not first bytes."""

from __future__ import annotations

import codecs

import pytest

from pipelines.ingest.arxiv.sniff import SNIFF_BYTES, error_page_kind

TEX = b"\\documentclass{amsart}\n\\begin{document}\nLet $G$ be a group.\n\\end{document}\n"


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (b"<!DOCTYPE html><html><body>Not found</body></html>", "an HTML page"),
        (codecs.BOM_UTF8 + b"<html><body>x</body></html>", "an HTML page"),
        (b"  \n<HEAD><TITLE>502 Bad Gateway</TITLE></HEAD>", "an HTML page"),
        ("<html><p>\\alpha</p></html>".encode("utf-16"), "an HTML page"),  # MathJax, no document
        (b'{"error": "Too Many Requests"}', "a JSON document"),
        (b'[{"status": 503}]', "a JSON document"),
        (b"Service temporarily unavailable.\n", "plain text with no LaTeX in it"),
        (b"", "plain text with no LaTeX in it"),
    ],
)
def test_an_error_page_is_named(body: bytes, kind: str) -> None:
    assert error_page_kind(body) == kind


@pytest.mark.parametrize(
    "body",
    [
        TEX,
        codecs.BOM_UTF8 + TEX,
        b"[Preprint] \\section{Introduction} A fragment without a class.",
        TEX.replace(b"Let", b"\\begin{verbatim}<html><head></head>\\end{verbatim} Let"),
        b"%% " + b"x" * SNIFF_BYTES + b"\n<html> quoted far down\n" + TEX,
    ],
)
def test_a_latex_source_is_not_an_error_page(body: bytes) -> None:
    assert error_page_kind(body) is None
