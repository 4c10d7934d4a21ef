"""A feed that declares a DTD or an entity is refused, whatever its encoding (issue 23,
finding 7).

The check used to search the bytes for ``<!DOCTYPE``/``<!ENTITY`` as UTF-8, so a UTF-16
feed passed it and expat expanded its internal entity into a paper's title. Each feed
here defines ``&injected;`` and uses it in a title; served over real HTTP, the listing is
refused and nothing of the entity reaches the raw store.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_arxiv import NOW, PARAMS, Answer, atom_entry, atom_feed, client_for, hostile_arxiv

from pipelines.common.paths import Paths
from pipelines.ingest.arxiv.atom import FeedError, parse_feed
from pipelines.ingest.arxiv.transport import ArxivError
from pipelines.ingest.stage import run_ingest

INJECTED = "INJECTED-BY-THE-DTD"
DTD = f'<!DOCTYPE feed [<!ENTITY injected "{INJECTED}">]>'
EXTERNAL_DTD = '<!DOCTYPE feed SYSTEM "http://127.0.0.1:9/feed.dtd">'


def hostile_feed(encoding: str, prolog: str = DTD) -> bytes:
    text = atom_feed([atom_entry("2401.00001v1", title="&injected;")], prolog=prolog)
    declared = "UTF-16" if encoding.startswith("utf-16") else encoding.upper()
    return text.replace('encoding="UTF-8"', f'encoding="{declared}"').encode(encoding)


FEEDS = [
    pytest.param(hostile_feed("utf-16"), id="utf-16-with-bom"),
    pytest.param(hostile_feed("utf-16-be"), id="utf-16-be-without-bom"),
    pytest.param(hostile_feed("utf-8"), id="utf-8"),
    pytest.param(b"\xef\xbb\xbf" + hostile_feed("utf-8"), id="utf-8-with-bom"),
    pytest.param(hostile_feed("utf-16", EXTERNAL_DTD), id="utf-16-external-dtd"),
]


@pytest.mark.parametrize("feed", FEEDS)
def test_parse_feed_refuses_a_dtd_in_any_encoding(feed: bytes) -> None:
    with pytest.raises(FeedError, match="DTD|not well-formed"):
        parse_feed(feed)


@pytest.mark.parametrize("feed", FEEDS)
def test_a_served_feed_with_a_dtd_stores_nothing(
    bounded_in_time: None, tmp_path: Path, feed: bytes
) -> None:
    paths = Paths(tmp_path)
    answers = {"/api/query": Answer(200, (("Content-Type", "application/atom+xml"),), feed)}
    with (
        hostile_arxiv(answers) as base_url,
        client_for(base_url) as client,
        pytest.raises(ArxivError, match="DTD|not well-formed"),
    ):
        run_ingest(PARAMS, paths, client=client, now=NOW, progress=False)
    for path in tmp_path.rglob("*"):
        assert not path.is_file() or INJECTED.encode() not in path.read_bytes()
    assert not (paths.raw / "2401.00001").exists()


def test_a_feed_without_a_dtd_still_parses_in_utf_16() -> None:
    text = atom_feed([atom_entry("2401.00001v1", title="Plain")])
    feed = parse_feed(text.replace('encoding="UTF-8"', 'encoding="UTF-16"').encode("utf-16"))
    assert [entry.title for entry in feed.entries] == ["Plain"]
