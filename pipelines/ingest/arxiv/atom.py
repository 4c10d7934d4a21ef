"""The arXiv API's Atom feed: build the listing query, parse a page into typed entries.

Pure functions, bytes in and values out, so they are tested without a network. A feed
that is not well-formed XML (or is an arXiv API error feed) raises :class:`FeedError`;
one malformed entry in an otherwise good feed is rejected on its own, with its reason,
so the caller can quarantine it and keep the rest of the page.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NoReturn
from xml.parsers import expat

from pipelines.common.tables import ARXIV_ABS

ATOM = "{http://www.w3.org/2005/Atom}"
OPENSEARCH = "{http://a9.com/-/spec/opensearch/1.1/}"
ARXIV = "{http://arxiv.org/schemas/atom}"

# New style: 2401.00001 (4 or 5 digits after the dot). Old style: math/0501001, where
# some old records carry a subject class (math.CO/0501001).
_ENTRY_ID = re.compile(
    r"(?:https?://arxiv\.org/abs/)?"
    r"(?P<paper_id>\d{4}\.\d{4,5}|[a-z][a-z-]*(?:\.[A-Z]{2})?/\d{7})"
    r"v(?P<version>\d+)"
)
_CATEGORY = re.compile(r"[a-z][a-z-]*(?:\.[A-Za-z][A-Za-z-]*)?")
_WITHDRAWN = re.compile(r"\bwithdrawn\b", re.IGNORECASE)
_WHITESPACE = re.compile(r"\s+")


class FeedError(ValueError):
    """The bytes are not an arXiv Atom feed we can read (or are the API's error feed)."""


@dataclass(frozen=True)
class Entry:
    """One paper version as the listing describes it."""

    paper_id: str
    version: int
    title: str
    abstract: str
    authors: tuple[str, ...]
    categories: tuple[str, ...]
    primary_category: str
    published: str  # ISO 8601 UTC, "2024-01-03T10:00:00Z": first version's date
    updated: str  # same format: this version's date (what the watermark follows)
    comment: str
    withdrawn: bool
    #: Where a reader finds the paper when the listing says (a ``<link title="source">``,
    #: as the offline mirror gives a Stacks chapter its source); arXiv gives none.
    source_url: str | None = None

    @property
    def versioned_id(self) -> str:
        return f"{self.paper_id}v{self.version}"


@dataclass(frozen=True)
class RejectedEntry:
    """An ``<entry>`` that could not be read; ``entry_id`` is its ``<id>`` text if any."""

    entry_id: str
    reason: str
    xml: bytes


@dataclass(frozen=True)
class Feed:
    """One page of a listing."""

    entries: tuple[Entry, ...]
    rejected: tuple[RejectedEntry, ...]
    total_results: int
    start_index: int


def normalise_whitespace(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


def parse_paper_id(text: str) -> tuple[str, int]:
    """``http://arxiv.org/abs/math/0501001v2`` (or ``2401.00001v1``) -> (id, version)."""
    match = _ENTRY_ID.fullmatch(text.strip())
    if match is None:
        raise ValueError(
            f"{text!r} is not a versioned arXiv id (expected e.g. 2401.00001v1 or math/0501001v2)"
        )
    version = int(match["version"])
    if version < 1:
        raise ValueError(f"{text!r}: versions start at 1")
    return match["paper_id"], version


def abs_page(paper_id: str) -> str:
    """The abstract page of ``paper_id`` on arXiv: ``https://arxiv.org/abs/2401.00007``."""
    return f"{ARXIV_ABS}{paper_id}"


def format_timestamp(moment: datetime) -> str:
    """The one timestamp format of the raw store: ``2024-01-03T10:00:00Z`` (UTC)."""
    return _as_utc(moment).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_timestamp(text: str) -> datetime:
    """Parse an ISO 8601 timestamp (``Z`` or an offset; a date alone means midnight UTC)."""
    value = text.strip()
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as error:
        raise ValueError(f"{text!r} is not an ISO 8601 timestamp") from error
    return _as_utc(moment)


def _as_utc(moment: datetime) -> datetime:
    # A naive datetime is taken to be UTC: arXiv's clock and the raw store are UTC.
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def build_query(categories: Sequence[str], from_dt: datetime, to_dt: datetime) -> str:
    """The API ``search_query`` for papers in ``categories`` updated in [from_dt, to_dt].

    >>> build_query(["math.CO", "math.NT"], datetime(2024, 1, 1), datetime(2024, 2, 1))
    '(cat:math.CO OR cat:math.NT) AND lastUpdatedDate:[202401010000 TO 202402010000]'

    arXiv's date range has minute resolution and is inclusive at both ends.
    """
    if not categories:
        raise ValueError("build_query: at least one category is needed (e.g. math.CO)")
    for category in categories:
        if not _CATEGORY.fullmatch(category):
            raise ValueError(f"build_query: {category!r} is not an arXiv category like math.CO")
    start, end = _as_utc(from_dt), _as_utc(to_dt)
    if start > end:
        raise ValueError(f"build_query: window start {start} is after its end {end}")
    cats = " OR ".join(f"cat:{category}" for category in categories)
    window = f"[{start:%Y%m%d%H%M} TO {end:%Y%m%d%H%M}]"
    return f"({cats}) AND lastUpdatedDate:{window}"


def parse_feed(data: bytes) -> Feed:
    """Parse one page of the API's Atom feed."""
    refuse_dtd(data)
    try:
        root = ElementTree.fromstring(data)
    except ElementTree.ParseError as error:
        raise FeedError(f"feed is not well-formed XML: {error}") from error
    if root.tag != f"{ATOM}feed":
        raise FeedError(f"expected an Atom <feed> root element, got <{root.tag}>")

    raw_entries = root.findall(f"{ATOM}entry")
    _raise_on_api_error(raw_entries)
    total = _int_child(root, f"{OPENSEARCH}totalResults", default=len(raw_entries))
    start = _int_child(root, f"{OPENSEARCH}startIndex", default=0)

    entries: list[Entry] = []
    rejected: list[RejectedEntry] = []
    for element in raw_entries:
        entry_id = _text(element, f"{ATOM}id")
        try:
            entries.append(_parse_entry(element))
        except ValueError as error:
            rejected.append(
                RejectedEntry(entry_id, str(error), ElementTree.tostring(element, "utf-8"))
            )
    return Feed(tuple(entries), tuple(rejected), total, start)


class _DeclaresDtd(Exception):
    """Internal: the document declared a DTD or an entity (raised from an expat handler)."""


def refuse_dtd(data: bytes) -> None:
    """Raise :class:`FeedError` when ``data`` declares a DTD or any entity.

    arXiv feeds never carry one, and refusing it rules out every entity trick (an internal
    entity expanded into a title, billion laughs, external entities). Expat reads the
    document as the parser will, in whatever encoding it declares (a byte-order mark, an
    XML declaration, UTF-16 as well as UTF-8), so no encoding hides a declaration from the
    check as a byte search would.
    """

    def refuse(*_args: object) -> NoReturn:
        raise _DeclaresDtd

    parser = expat.ParserCreate()
    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.UnparsedEntityDeclHandler = refuse
    parser.ExternalEntityRefHandler = refuse
    try:
        parser.Parse(data, True)
    except _DeclaresDtd:
        raise FeedError("feed declares a DTD or entities, which arXiv feeds never do") from None
    except (expat.ExpatError, ValueError) as error:  # ValueError: an unsupported encoding
        raise FeedError(f"feed is not well-formed XML: {error}") from error


def _raise_on_api_error(entries: Iterable[ElementTree.Element]) -> None:
    # A bad query gets HTTP 400 and a feed with one entry whose id is .../api/errors#...
    for element in entries:
        if "/api/errors" in _text(element, f"{ATOM}id"):
            message = normalise_whitespace(_text(element, f"{ATOM}summary"))
            raise FeedError(f"arXiv API error: {message or 'no message'}")


def _parse_entry(element: ElementTree.Element) -> Entry:
    paper_id, version = parse_paper_id(_text(element, f"{ATOM}id"))
    title = normalise_whitespace(_text(element, f"{ATOM}title"))
    if not title:
        raise ValueError("entry has no title")
    published = format_timestamp(parse_timestamp(_required(element, f"{ATOM}published")))
    updated = format_timestamp(parse_timestamp(_required(element, f"{ATOM}updated")))
    authors = tuple(
        name
        for author in element.findall(f"{ATOM}author")
        if (name := normalise_whitespace(_text(author, f"{ATOM}name")))
    )
    categories = tuple(
        dict.fromkeys(
            term
            for category in element.findall(f"{ATOM}category")
            if (term := (category.get("term") or "").strip())
        )
    )
    primary = element.find(f"{ARXIV}primary_category")
    primary_category = (primary.get("term") or "").strip() if primary is not None else ""
    primary_category = primary_category or (categories[0] if categories else "")
    if not primary_category:
        raise ValueError("entry has no category")
    if primary_category not in categories:
        categories = (primary_category, *categories)
    comment = normalise_whitespace(_text(element, f"{ARXIV}comment"))
    source_url = next(
        (
            href.strip()
            for link in element.findall(f"{ATOM}link")
            if link.get("title") == "source" and (href := link.get("href") or "").strip()
        ),
        None,
    )
    return Entry(
        paper_id=paper_id,
        version=version,
        title=title,
        abstract=normalise_whitespace(_text(element, f"{ATOM}summary")),
        authors=authors,
        categories=categories,
        primary_category=primary_category,
        published=published,
        updated=updated,
        comment=comment,
        withdrawn=bool(_WITHDRAWN.search(comment)),
        source_url=source_url,
    )


def _text(element: ElementTree.Element, tag: str) -> str:
    child = element.find(tag)
    return "".join(child.itertext()) if child is not None else ""


def _required(element: ElementTree.Element, tag: str) -> str:
    value = _text(element, tag).strip()
    if not value:
        raise ValueError(f"entry has no <{tag.rpartition('}')[2]}>")
    return value


def _int_child(root: ElementTree.Element, tag: str, *, default: int) -> int:
    text = _text(root, tag).strip()
    if not text:
        return default
    try:
        return int(text)
    except ValueError as error:
        raise FeedError(f"<{tag.rpartition('}')[2]}> is not an integer: {text!r}") from error
