"""The search page's pure parts: what a hit shows and its markup, the statements a passage
holds, and the static files the service may serve. The browser's view is in
``tests/integration/test_search_math.py`` and ``tests/integration/test_search_service.py``."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from pipelines.mathtext.statements import StatementRef, statements_by_passage
from pipelines.search.assets import CONTENT_TYPES, STATIC_DIR, load_assets, not_modified
from pipelines.search.page import (
    SCRIPTS,
    STYLESHEETS,
    HitView,
    StatementLine,
    hit_view,
    render_hit,
    render_page,
    statement_line,
)


def hit(text: str, **fields: object) -> dict[str, object]:
    return {
        "rank": 1,
        "chunk_id": "p1v1#c0000",
        "paper_id": "p1",
        "title": "A <b>title</b>",
        "score": 0.5,
        "text": text,
        "url": None,
        "statements": [],
        **fields,
    }


def test_a_hit_keeps_formulas_as_escaped_text_for_the_browser_to_typeset() -> None:
    markup = render_hit(hit("map $\\varphi_{i_ji}(s_j)$ and $<img src=x onerror=alert(1)>$"))
    assert "$\\varphi_{i_ji}(s_j)$" in markup  # as written: KaTeX reads it in the browser
    assert "$&lt;img src=x onerror=alert(1)&gt;$" in markup and "<img" not in markup
    assert "A &lt;b&gt;title&lt;/b&gt;" in markup
    assert '<p class="statement">' not in markup  # no statement, no empty line


def test_a_hit_names_its_statements_escaped() -> None:
    statements = [
        {"statement_id": "s0", "kind": "lemma", "name": "Nakayama", "label": "lemma-nak"},
        {"statement_id": "s1", "kind": "definition", "name": "", "label": "def-<i>x</i>"},
        {"statement_id": "s2", "kind": "remark", "name": "", "label": ""},
    ]
    markup = render_hit(hit("text", statements=statements))
    assert (
        '<p class="statement">Lemma (Nakayama); '
        "Definition <small>def-&lt;i&gt;x&lt;/i&gt;</small>; Remark</p>"
    ) in markup
    assert statement_line({"kind": "theorem", "name": "<script>", "label": ""}) == (
        StatementLine("Theorem (<script>)", "")
    )
    assert "Theorem (&lt;script&gt;)" in render_hit(
        hit("text", statements=[{"statement_id": "s", "kind": "theorem", "name": "<script>"}])
    )


def test_a_hit_without_statement_fields_is_headed_by_its_paper_linked_to_it() -> None:
    view = hit_view(hit("the passage", url="https://arxiv.org/abs/p1"))
    assert view == HitView(
        heading="A <b>title</b>",
        heading_link="https://arxiv.org/abs/p1",
        kind="",
        paper="",  # the heading is the title already
        paper_link="https://arxiv.org/abs/p1",
        section="",
        slogan="",
        paper_id="p1",
        chunk_id="p1v1#c0000",
        score=0.5,
        statements=(),
        body="the passage",
    )
    assert hit_view(hit("text", title="")).heading == "p1"  # no title: its id
    markup = render_hit(hit("the passage", url="https://arxiv.org/abs/p1"))
    assert '<p class="heading"><a href="https://arxiv.org/abs/p1">A &lt;b&gt;title' in markup
    assert "<small>p1 · p1v1#c0000 · score 0.500</small>" in markup


def test_a_hit_that_names_its_statement_is_headed_by_it_linked_to_the_statement() -> None:
    snake = hit(
        "Lemma. Let $0 \\to A$ be exact. Then the long sequence ...",
        url="https://stacks.math.columbia.edu/download/homology.tex",
        kind="lemma",
        name="snake lemma",
        heading="Lemma (snake lemma)",
        section="Abelian <categories>",
        link="https://stacks.math.columbia.edu/tag/010H",
        snippet="Let $0 \\to A$ be exact. Then …",
        statements=[{"statement_id": "s", "kind": "lemma", "name": "", "label": "lemma-snake"}],
    )
    view = hit_view(snake)
    assert (view.heading, view.heading_link, view.kind) == (
        "Lemma (snake lemma)",
        "https://stacks.math.columbia.edu/tag/010H",
        "lemma",
    )
    assert view.paper == "A <b>title</b>" and view.paper_link == snake["url"]
    assert view.section == "Abelian <categories>" and view.body == snake["snippet"]
    assert view.statements == ()  # the heading names it; the JSON lists them all
    markup = render_hit(snake)
    assert (
        '<p class="heading" data-kind="lemma"><a href="https://stacks.math.columbia.edu/tag/'
        '010H">Lemma (snake lemma)</a></p>'
    ) in markup
    assert '<span class="section">Abelian &lt;categories&gt;</span>' in markup
    assert "<blockquote>Let $0 \\to A$ be exact. Then …</blockquote>" in markup
    # Without a heading, kind and name make one; prose is headed by its section alone.
    assert hit_view(hit("x", kind="theorem", name="B")).heading == "Theorem (B)"
    prose = hit_view(hit("x", kind="text", heading="Flat modules", section="Flat modules"))
    assert (prose.heading, prose.section, prose.heading_link) == ("Flat modules", "", None)
    proof = hit_view(hit("x", kind="proof", heading="From the proof of Lemma (snake lemma)"))
    assert proof.heading == "From the proof of Lemma (snake lemma)" and proof.kind == "proof"


def test_the_page_says_when_no_passage_is_close_and_escapes_the_note() -> None:
    model = {"name": "math-embed", "version": "1", "alias": "champion"}
    answer = {"query": "q", "ranking": "dense", "took_ms": 1.25, "hits": [hit("text")]}
    page = render_page(model, "q", 1, answer)
    assert 'role="status"' not in page and "1 hit in 1.2 ms, dense ranking" in page
    missed = {**answer, "no_close_match": True, "note": "No close match in this corpus: <b>"}
    page = render_page(model, "q", 1, missed)
    assert '<p class="notice" role="status">No close match in this corpus: &lt;b&gt;</p>' in page
    close = render_page(model, "q", 1, {**answer, "no_close_match": False, "note": ""})
    assert 'role="status"' not in close


PROOF = "Proof. Every finitely generated module over a local ring is free: Nakayama."


def test_statements_are_found_in_the_passages_they_or_their_proofs_run_over() -> None:
    chunks = pd.DataFrame(
        {
            "chunk_id": ["a#c1", "a#c0", "b#c0", "a#c2"],
            "paper_id": ["a", "a", "b", "a"],
            "chunk_index": [1, 0, 0, 2],
            "text": [
                "local when it has one maximal ideal, and it ends here. Lemma two: every module "
                "over a local ring is free here.",
                "Definition one: a ring is local when it has one maximal ideal, and it",
                "Lemma two: every module over a local ring is free here, in paper b.",
                PROOF,
            ],
        }
    )
    statements = pd.DataFrame(
        {
            "statement_id": ["a#s0", "a#s1", "a#s2"],
            "paper_id": ["a", "a", "a"],
            "kind": ["definition", "lemma", "lemma"],
            "name": [None, "Two", ""],
            "label": ["def-local", "lemma-two", "lemma-nowhere"],
            "text": [
                "Definition one: a ring is local when it has one maximal ideal, and it ends here.",
                "Lemma two: every module over a local ring is free here.",
                "A statement no passage of this paper holds at all.",
            ],
            "proof": ["", PROOF, ""],
        }
    )
    found = statements_by_passage(chunks, statements)
    local = StatementRef("a#s0", "definition", "", "def-local")
    two = StatementRef("a#s1", "lemma", "Two", "lemma-two")
    # b's like text is not a's; the passage holding only lemma two's proof belongs to it
    assert found == {"a#c0": (local,), "a#c1": (local, two), "a#c2": (two,)}
    without_proofs = statements_by_passage(chunks, statements.drop(columns="proof"))
    assert without_proofs == {"a#c0": (local,), "a#c1": (local, two)}


def test_a_statements_table_without_its_columns_is_refused() -> None:
    chunks = pd.DataFrame({"chunk_id": ["a#c0"], "paper_id": ["a"], "text": ["x"]})
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['kind'"):
        statements_by_passage(chunks, pd.DataFrame(columns=["statement_id", "paper_id"]))


def test_only_the_files_the_page_loads_are_servable(tmp_path: Path) -> None:
    (tmp_path / "katex" / "fonts").mkdir(parents=True)
    (tmp_path / "katex" / "katex.min.js").write_text("js")
    (tmp_path / "katex" / "fonts" / "A.woff2").write_bytes(b"font")
    (tmp_path / "katex" / "README.md").write_text("readme")
    (tmp_path / "katex" / "LICENSE").write_text("mit")
    assets = load_assets(tmp_path)
    assert sorted(assets) == ["katex/fonts/A.woff2", "katex/katex.min.js"]
    assert assets["katex/fonts/A.woff2"].content_type == "font/woff2"
    with pytest.raises(FileNotFoundError, match="static files are missing"):
        load_assets(tmp_path / "nowhere")


def test_the_page_loads_only_what_the_package_ships() -> None:
    shipped = load_assets(STATIC_DIR)
    assert {*SCRIPTS, *STYLESHEETS} <= set(shipped)
    assert {Path(name).suffix for name in shipped} == set(CONTENT_TYPES)
    assert (STATIC_DIR / "katex" / "LICENSE").read_text().startswith("The MIT License")


def test_the_vendored_katex_is_the_version_its_readme_records() -> None:
    katex = STATIC_DIR / "katex"
    script = re.findall(r'version:"([\d.]+)"', (katex / "katex.min.js").read_text())
    sheet = re.findall(
        r'katex-version:after\{content:"([\d.]+)"', (katex / "katex.min.css").read_text()
    )
    readme = (katex / "README.md").read_text().splitlines()[0]
    assert len(set(script)) == 1 and sheet == script[:1], (script, sheet)
    assert readme == f"# KaTeX {script[0]}, vendored"
    # From 0.16.10 on KaTeX counts what \edef expands against maxExpand (issue 29, finding 5).
    assert tuple(map(int, script[0].split("."))) >= (0, 16, 10)


def test_a_revalidation_matches_the_current_etag_only() -> None:
    asset = load_assets(STATIC_DIR)["search.js"]
    assert not_modified(asset, asset.etag)
    assert not_modified(asset, f'"old", W/{asset.etag}')
    assert not_modified(asset, "*")
    assert not not_modified(asset, '"old"') and not not_modified(asset, None)


def test_prose_outside_a_section_is_headed_by_its_paper() -> None:
    prose = hit_view(hit("x", kind="text", heading="Text", section="", link="https://a/p1"))
    assert (prose.heading, prose.heading_link, prose.paper) == ("A <b>title</b>", None, "")
