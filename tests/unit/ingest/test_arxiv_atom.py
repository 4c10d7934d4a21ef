"""The Atom listing: query building and feed parsing (pure, no network)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from pipelines.ingest.arxiv.atom import (
    FeedError,
    build_query,
    format_timestamp,
    parse_feed,
    parse_paper_id,
    parse_timestamp,
)

FEED_HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<feed xmlns="http://www.w3.org/2005/Atom" '
    'xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/" '
    'xmlns:arxiv="http://arxiv.org/schemas/atom">\n'
    "<title>ArXiv Query</title>\n"
    "<opensearch:totalResults>{total}</opensearch:totalResults>\n"
    "<opensearch:startIndex>{start}</opensearch:startIndex>\n"
    "<opensearch:itemsPerPage>10</opensearch:itemsPerPage>\n"
)


def entry_xml(
    ident: str = "http://arxiv.org/abs/2401.00001v2",
    *,
    title: str = "  On the\n   Rogers–Ramanujan  identities ",
    summary: str = "\n  We prove   things\n about partitions.  ",
    updated: str = "2024-01-05T10:00:00Z",
    published: str = "2024-01-03T09:30:00Z",
    comment: str | None = "12 pages",
    primary: str | None = "math.CO",
    categories: tuple[str, ...] = ("math.CO", "math.NT"),
    authors: tuple[str, ...] = ("Ada Lovelace", " Srinivasa\n Ramanujan "),
) -> str:
    parts = [f"<entry><id>{ident}</id>"]
    if updated:
        parts.append(f"<updated>{updated}</updated>")
    if published:
        parts.append(f"<published>{published}</published>")
    parts.append(f"<title>{title}</title><summary>{summary}</summary>")
    parts += [f"<author><name>{name}</name></author>" for name in authors]
    if comment is not None:
        parts.append(f"<arxiv:comment>{comment}</arxiv:comment>")
    parts.append(f'<link href="{ident}" rel="alternate" type="text/html"/>')
    parts.append(f'<link title="pdf" href="{ident}" rel="related" type="application/pdf"/>')
    if primary is not None:
        parts.append(f'<arxiv:primary_category term="{primary}" scheme="http://arxiv.org/"/>')
    parts += [f'<category term="{term}" scheme="http://arxiv.org/"/>' for term in categories]
    parts.append("</entry>")
    return "".join(parts)


def feed(*entries: str, total: int | None = None, start: int = 0) -> bytes:
    head = FEED_HEAD.format(total=len(entries) if total is None else total, start=start)
    return (head + "\n".join(entries) + "\n</feed>\n").encode("utf-8")


def test_build_query_matches_the_api_syntax() -> None:
    query = build_query(
        ["math.CO", "math.NT"],
        datetime(2024, 1, 1, tzinfo=UTC),
        datetime(2024, 2, 1, tzinfo=UTC),
    )
    assert query == (
        "(cat:math.CO OR cat:math.NT) AND lastUpdatedDate:[202401010000 TO 202402010000]"
    )


def test_build_query_converts_to_utc_and_keeps_minutes() -> None:
    plus_two = timezone(timedelta(hours=2))
    query = build_query(
        ["math.QA"],
        datetime(2024, 3, 5, 14, 7, 59, tzinfo=plus_two),
        datetime(2024, 3, 6, 0, 0, tzinfo=UTC),
    )
    assert query == "(cat:math.QA) AND lastUpdatedDate:[202403051207 TO 202403060000]"


@pytest.mark.parametrize(
    ("categories", "message"),
    [([], "at least one category"), (["math.CO) OR (all:x"], "not an arXiv category")],
)
def test_build_query_rejects_bad_categories(categories: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_query(categories, datetime(2024, 1, 1), datetime(2024, 1, 2))


def test_build_query_rejects_a_reversed_window() -> None:
    with pytest.raises(ValueError, match="after its end"):
        build_query(["math.CO"], datetime(2024, 2, 1), datetime(2024, 1, 1))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http://arxiv.org/abs/2401.00001v2", ("2401.00001", 2)),
        ("http://arxiv.org/abs/0704.0001v1", ("0704.0001", 1)),
        ("https://arxiv.org/abs/math/0501001v12", ("math/0501001", 12)),
        ("math-ph/0101001v3", ("math-ph/0101001", 3)),
        ("math.CO/0501001v1", ("math.CO/0501001", 1)),
    ],
)
def test_parse_paper_id_new_and_old_style(text: str, expected: tuple[str, int]) -> None:
    assert parse_paper_id(text) == expected


@pytest.mark.parametrize(
    "text", ["http://arxiv.org/abs/2401.00001", "2401.1v1", "math/05v1", "2401.00001v0", ""]
)
def test_parse_paper_id_rejects_unversioned_or_malformed(text: str) -> None:
    with pytest.raises(ValueError, match="versioned arXiv id|versions start"):
        parse_paper_id(text)


def test_timestamps_round_trip_in_one_format() -> None:
    assert format_timestamp(parse_timestamp("2024-01-03T10:00:00+02:00")) == "2024-01-03T08:00:00Z"
    assert format_timestamp(parse_timestamp("2024-01-03")) == "2024-01-03T00:00:00Z"
    with pytest.raises(ValueError, match="ISO 8601"):
        parse_timestamp("yesterday")


def test_parse_feed_reads_every_field() -> None:
    page = parse_feed(feed(entry_xml(), total=37, start=10))
    assert page.total_results == 37
    assert page.start_index == 10
    assert page.rejected == ()
    (entry,) = page.entries
    assert entry.paper_id == "2401.00001"
    assert entry.version == 2
    assert entry.versioned_id == "2401.00001v2"
    assert entry.title == "On the Rogers–Ramanujan identities"
    assert entry.abstract == "We prove things about partitions."
    assert entry.authors == ("Ada Lovelace", "Srinivasa Ramanujan")
    assert entry.categories == ("math.CO", "math.NT")
    assert entry.primary_category == "math.CO"
    assert entry.published == "2024-01-03T09:30:00Z"
    assert entry.updated == "2024-01-05T10:00:00Z"
    assert entry.comment == "12 pages"
    assert entry.withdrawn is False


def test_parse_feed_old_style_id_and_missing_optional_parts() -> None:
    xml = entry_xml(
        "http://arxiv.org/abs/math/0501001v1",
        comment=None,
        primary=None,
        categories=("math.AT",),
    )
    (entry,) = parse_feed(feed(xml)).entries
    assert (entry.paper_id, entry.version) == ("math/0501001", 1)
    assert entry.comment == ""
    assert entry.primary_category == "math.AT"


@pytest.mark.parametrize(
    "comment",
    [
        "This paper has been withdrawn by the author due to an error in Lemma 3",
        "WITHDRAWN: duplicate of 2401.00002",
    ],
)
def test_withdrawn_comes_from_the_comment(comment: str) -> None:
    (entry,) = parse_feed(feed(entry_xml(comment=comment))).entries
    assert entry.withdrawn is True


def test_primary_category_is_added_to_categories_when_missing() -> None:
    (entry,) = parse_feed(feed(entry_xml(primary="math.NT", categories=("math.CO",)))).entries
    assert entry.categories == ("math.NT", "math.CO")


@pytest.mark.parametrize(
    ("bad_entry", "reason"),
    [
        (entry_xml("http://arxiv.org/abs/2401.00009"), "versioned arXiv id"),
        (entry_xml("http://arxiv.org/abs/2401.00009v1", title="  "), "no title"),
        (entry_xml("http://arxiv.org/abs/2401.00009v1", updated=""), "no <updated>"),
        (entry_xml("http://arxiv.org/abs/2401.00009v1", published="soon"), "ISO 8601"),
        (
            entry_xml("http://arxiv.org/abs/2401.00009v1", primary=None, categories=()),
            "no category",
        ),
    ],
)
def test_a_malformed_entry_is_rejected_alone(bad_entry: str, reason: str) -> None:
    page = parse_feed(feed(entry_xml(), bad_entry, entry_xml("http://arxiv.org/abs/2401.00003v1")))
    assert [entry.versioned_id for entry in page.entries] == ["2401.00001v2", "2401.00003v1"]
    (rejected,) = page.rejected
    assert reason in rejected.reason
    assert rejected.entry_id.startswith("http://arxiv.org/abs/2401.00009")
    assert b"<entry" in rejected.xml or b":entry" in rejected.xml


def test_an_empty_feed_has_no_entries() -> None:
    page = parse_feed(feed(total=0))
    assert page.entries == ()
    assert page.total_results == 0


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"<feed><entry>", "not well-formed"),
        (b"", "not well-formed"),
        (b"<html><body>Rate limited</body></html>", "Atom <feed>"),
        (
            b'<?xml version="1.0"?><!DOCTYPE feed [<!ENTITY a "aaaa">]><feed/>',
            "DTD",
        ),
        (
            feed(entry_xml()).replace(b"<opensearch:totalResults>1", b"<opensearch:totalResults>x"),
            "not an integer",
        ),
    ],
)
def test_a_malformed_feed_raises_feed_error(data: bytes, message: str) -> None:
    with pytest.raises(FeedError, match=message):
        parse_feed(data)


def test_the_api_error_feed_raises_with_its_message() -> None:
    error_entry = entry_xml(
        "http://arxiv.org/api/errors#incorrect_id_format_for_1234",
        title="Error",
        summary="incorrect id format for 1234",
    )
    with pytest.raises(FeedError, match="arXiv API error: incorrect id format for 1234"):
        parse_feed(feed(error_entry))
