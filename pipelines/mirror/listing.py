"""The arXiv API answered from a mirror's entries, without HTTP: parsing ``search_query``,
selecting and sorting the listed versions, and rendering the Atom feed (or arXiv's error
feed). :mod:`pipelines.mirror.server` documents the query grammar and the feed, and
serves them.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from xml.sax.saxutils import escape, quoteattr

from pipelines.mirror.layout import MirrorEntry

MAX_RESULTS_LIMIT = 2000
DEFAULT_MAX_RESULTS = 10
ATOM_NS = "http://www.w3.org/2005/Atom"
OPENSEARCH_NS = "http://a9.com/-/spec/opensearch/1.1/"
ARXIV_NS = "http://arxiv.org/schemas/atom"


class QueryError(ValueError):
    """A request the mirror does not support; the message is sent back in the error feed."""

    def __init__(self, message: str, anchor: str = "unsupported_query") -> None:
        super().__init__(message)
        self.anchor = anchor


# -- the entries ---------------------------------------------------------------------


def visible_versions(
    entries: Sequence[MirrorEntry], now: datetime | None
) -> dict[str, list[MirrorEntry]]:
    """paper id → its versions with ``updated <= now``, oldest first (papers with none left out)."""
    papers: dict[str, list[MirrorEntry]] = {}
    for entry in entries:
        if now is None or entry.updated_at <= now:
            papers.setdefault(entry.paper_id, []).append(entry)
    for versions in papers.values():
        versions.sort(key=lambda entry: entry.version)
    return papers


# -- search_query ---------------------------------------------------------------------

Predicate = Callable[[MirrorEntry], bool]

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<open>\() | (?P<close>\)) |
        (?P<op>ANDNOT|AND|OR)(?=[\s()]|$) |
        (?P<field>[A-Za-z_]+):(?:
            \[\s*(?P<low>[^\s\]]+)\s+TO\s+(?P<high>[^\s\]]+)\s*\]
          | "(?P<quoted>[^"]*)"
          | (?P<value>[^\s()]+)
        )
    )""",
    re.VERBOSE,
)
_DATE_FIELDS = {"lastUpdatedDate": "updated_at", "submittedDate": "published_at"}
PAPER_ID = re.compile(
    r"(?P<paper_id>\d{4}\.\d{4,5}|[a-z][a-z-]*(?:\.[A-Z]{2})?/\d{7})(?:v(?P<version>\d+))?"
)


@dataclass(frozen=True)
class _Token:
    kind: str  # "(", ")", "AND", "OR", "ANDNOT", "term"
    predicate: Predicate | None = None


def parse_search_query(text: str) -> Predicate:
    """Compile an arXiv ``search_query`` (the subset in the module docstring) to a test."""
    tokens = _tokenize(text)
    if not tokens:
        raise QueryError("search_query is empty", "empty_search_query")
    predicate, position = _parse_or(tokens, 0)
    if position != len(tokens):
        raise QueryError(f"unexpected {tokens[position].kind!r} in search_query {text!r}")
    return predicate


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    position = 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        if match is None:
            raise QueryError(f"cannot parse search_query {text!r} at {text[position:]!r}")
        position = match.end()
        if match["open"]:
            tokens.append(_Token("("))
        elif match["close"]:
            tokens.append(_Token(")"))
        elif match["op"]:
            tokens.append(_Token(match["op"]))
        else:
            tokens.append(_Token("term", _term(match)))
    return tokens


def _term(match: re.Match[str]) -> Predicate:
    field = match["field"]
    if field in _DATE_FIELDS:
        if match["low"] is None:
            raise QueryError(f"{field} needs a range: {field}:[YYYYMMDDHHMM TO YYYYMMDDHHMM]")
        low = _minute(match["low"], field)
        high = _minute(match["high"], field) + timedelta(minutes=1)
        attribute = _DATE_FIELDS[field]
        return lambda entry: low <= getattr(entry, attribute) < high
    value = match["quoted"] if match["quoted"] is not None else match["value"]
    if value is None:
        raise QueryError(f"{field}: takes a single value, not a range")
    if field == "cat":
        return lambda entry: value in entry.categories
    if field == "id":
        wanted = PAPER_ID.fullmatch(value)
        if wanted is None:
            raise QueryError(f"incorrect id format for {value}", f"incorrect_id_format_for_{value}")
        return lambda entry: entry.paper_id == wanted["paper_id"]
    raise QueryError(
        f"unsupported field {field!r} in search_query; this mirror supports cat:, id:, "
        "lastUpdatedDate: and submittedDate:"
    )


def _minute(text: str, field: str) -> datetime:
    if not re.fullmatch(r"\d{12}", text):
        raise QueryError(f"{field} bound {text!r} is not YYYYMMDDHHMM (12 digits, UTC)")
    try:
        return datetime.strptime(text, "%Y%m%d%H%M").replace(tzinfo=UTC)
    except ValueError as error:
        raise QueryError(f"{field} bound {text!r} is not a valid date") from error


def _parse_or(tokens: Sequence[_Token], position: int) -> tuple[Predicate, int]:
    left, position = _parse_and(tokens, position)
    while position < len(tokens) and tokens[position].kind == "OR":
        right, position = _parse_and(tokens, position + 1)
        left = _either(left, right)
    return left, position


def _parse_and(tokens: Sequence[_Token], position: int) -> tuple[Predicate, int]:
    left, position = _parse_atom(tokens, position)
    while position < len(tokens) and tokens[position].kind in ("AND", "ANDNOT"):
        negate = tokens[position].kind == "ANDNOT"
        right, position = _parse_atom(tokens, position + 1)
        left = _both(left, _negation(right) if negate else right)
    return left, position


def _parse_atom(tokens: Sequence[_Token], position: int) -> tuple[Predicate, int]:
    if position >= len(tokens):
        raise QueryError("search_query ends where a term was expected")
    token = tokens[position]
    if token.kind == "(":
        inner, position = _parse_or(tokens, position + 1)
        if position >= len(tokens) or tokens[position].kind != ")":
            raise QueryError("unbalanced parentheses in search_query")
        return inner, position + 1
    if token.kind == "term" and token.predicate is not None:
        return token.predicate, position + 1
    raise QueryError(f"unexpected {token.kind!r} in search_query where a term was expected")


def _either(left: Predicate, right: Predicate) -> Predicate:
    return lambda entry: left(entry) or right(entry)


def _both(left: Predicate, right: Predicate) -> Predicate:
    return lambda entry: left(entry) and right(entry)


def _negation(predicate: Predicate) -> Predicate:
    return lambda entry: not predicate(entry)


# -- the listing ----------------------------------------------------------------------


@dataclass(frozen=True)
class Listing:
    entries: tuple[MirrorEntry, ...]  # this page
    total: int
    start: int
    max_results: int


def run_query(
    params: Mapping[str, str], entries: Sequence[MirrorEntry], now: datetime | None
) -> Listing:
    """Answer ``/api/query`` parameters over ``entries`` as seen at ``now`` (pure)."""
    start = _non_negative(params.get("start", "0"), "start")
    max_results = _non_negative(params.get("max_results", str(DEFAULT_MAX_RESULTS)), "max_results")
    if max_results > MAX_RESULTS_LIMIT:
        raise QueryError(
            f"max_results must be at most {MAX_RESULTS_LIMIT}; page with start instead",
            "max_results_too_large",
        )
    sort_by = params.get("sortBy", "relevance")
    if sort_by not in ("relevance", "lastUpdatedDate", "submittedDate"):
        raise QueryError(
            f"sortBy must be relevance, lastUpdatedDate or submittedDate, not {sort_by!r}"
        )
    sort_order = params.get("sortOrder", "descending")
    if sort_order not in ("ascending", "descending"):
        raise QueryError(f"sortOrder must be ascending or descending, not {sort_order!r}")

    search = params.get("search_query", "").strip()
    id_list = [item.strip() for item in params.get("id_list", "").split(",") if item.strip()]
    if not search and not id_list:
        return Listing((), 0, start, max_results)
    predicate = parse_search_query(search) if search else None

    papers = visible_versions(entries, now)
    if id_list:
        candidates = []
        for item in id_list:
            match = PAPER_ID.fullmatch(item)
            if match is None:
                raise QueryError(
                    f"incorrect id format for {item}", f"incorrect_id_format_for_{item}"
                )
            versions = papers.get(match["paper_id"], [])
            if match["version"] is not None:
                versions = [entry for entry in versions if entry.version == int(match["version"])]
            if versions:
                candidates.append(versions[-1])
    else:
        candidates = [versions[-1] for versions in papers.values()]
    matches = [entry for entry in candidates if predicate is None or predicate(entry)]
    if sort_by == "submittedDate":
        matches.sort(key=lambda entry: (entry.published_at, entry.paper_id))
    elif sort_by == "lastUpdatedDate" or not id_list:
        matches.sort(key=lambda entry: (entry.updated_at, entry.paper_id))
    if sort_order == "descending" and (sort_by != "relevance" or not id_list):
        matches.reverse()
    page = tuple(matches[start : start + max_results])
    return Listing(page, len(matches), start, max_results)


def _non_negative(text: str, name: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise QueryError(f"{name} must be an integer", f"{name}_must_be_an_integer") from None
    if value < 0:
        raise QueryError(f"{name} must be non-negative", f"{name}_must_be_non-negative")
    return value


def _feed_head(query: str, title_query: str, updated: str, base_url: str) -> list[str]:
    digest = base64.urlsafe_b64encode(hashlib.sha1(query.encode("utf-8")).digest()).decode()
    return [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<feed xmlns="{ATOM_NS}" xmlns:opensearch="{OPENSEARCH_NS}" xmlns:arxiv="{ARXIV_NS}">',
        f'  <link href={quoteattr(f"{base_url}/api/query?{query}")} rel="self" '
        'type="application/atom+xml"/>',
        f'  <title type="html">{escape(f"ArXiv Query: {title_query}")}</title>',
        f"  <id>http://arxiv.org/api/{digest.rstrip('=')}</id>",
        f"  <updated>{updated}</updated>",
    ]


def _title_query(params: Mapping[str, str]) -> str:
    return (
        f"search_query={params.get('search_query', '')}&id_list={params.get('id_list', '')}"
        f"&start={params.get('start', '0')}&max_results="
        f"{params.get('max_results', str(DEFAULT_MAX_RESULTS))}"
    )


def render_feed(
    listing: Listing,
    params: Mapping[str, str],
    query: str,
    updated: str,
    base_url: str,
    links: Mapping[str, str] | None = None,
) -> bytes:
    """The Atom feed of ``listing``; a paper with a link in ``links`` (paper id -> where a
    reader finds it) gets it as ``<link title="source" rel="related">``, beside the
    ``pdf`` link, as arXiv gives a paper's DOI (``title="doi"``)."""
    links = links or {}
    lines = _feed_head(query, _title_query(params), updated, base_url)
    lines += [
        f"  <opensearch:totalResults>{listing.total}</opensearch:totalResults>",
        f"  <opensearch:startIndex>{listing.start}</opensearch:startIndex>",
        f"  <opensearch:itemsPerPage>{listing.max_results}</opensearch:itemsPerPage>",
    ]
    for entry in listing.entries:
        versioned = f"{entry.paper_id}v{entry.version}"
        lines.append("  <entry>")
        lines.append(f"    <id>http://arxiv.org/abs/{versioned}</id>")
        lines.append(f"    <updated>{entry.updated}</updated>")
        lines.append(f"    <published>{entry.published}</published>")
        lines.append(f"    <title>{escape(entry.title)}</title>")
        lines.append(f"    <summary>{escape(entry.summary)}</summary>")
        for author in entry.authors:
            lines.append(f"    <author>\n      <name>{escape(author)}</name>\n    </author>")
        if entry.comment:
            lines.append(f"    <arxiv:comment>{escape(entry.comment)}</arxiv:comment>")
        lines.append(
            f'    <link href="http://arxiv.org/abs/{versioned}" rel="alternate" type="text/html"/>'
        )
        lines.append(
            f'    <link title="pdf" href="http://arxiv.org/pdf/{versioned}" rel="related" '
            'type="application/pdf"/>'
        )
        if entry.paper_id in links:
            lines.append(
                f'    <link title="source" href={quoteattr(links[entry.paper_id])} '
                'rel="related" type="text/html"/>'
            )
        lines.append(
            f"    <arxiv:primary_category term={quoteattr(entry.primary_category)} "
            f'scheme="{ARXIV_NS}"/>'
        )
        for category in entry.categories:
            lines.append(f'    <category term={quoteattr(category)} scheme="{ARXIV_NS}"/>')
        lines.append("  </entry>")
    lines.append("</feed>")
    return ("\n".join(lines) + "\n").encode("utf-8")


def render_error_feed(
    error: QueryError, params: Mapping[str, str], query: str, updated: str, base_url: str
) -> bytes:
    anchor = re.sub(r"[^A-Za-z0-9_.:-]+", "_", error.anchor)
    error_id = f"http://arxiv.org/api/errors#{anchor}"
    lines = _feed_head(query, _title_query(params), updated, base_url)
    lines += [
        "  <opensearch:totalResults>1</opensearch:totalResults>",
        "  <opensearch:startIndex>0</opensearch:startIndex>",
        "  <opensearch:itemsPerPage>1</opensearch:itemsPerPage>",
        "  <entry>",
        f"    <id>{escape(error_id)}</id>",
        "    <title>Error</title>",
        f"    <summary>{escape(str(error))}</summary>",
        f"    <updated>{updated}</updated>",
        f'    <link href={quoteattr(error_id)} rel="alternate" type="text/html"/>',
        "    <author>\n      <name>arXiv api core</name>\n    </author>",
        "  </entry>",
        "</feed>",
    ]
    return ("\n".join(lines) + "\n").encode("utf-8")
