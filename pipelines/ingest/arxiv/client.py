"""The arXiv API listing and the e-print service, as the ``ingest`` stage uses them.

:class:`ArxivClient` speaks ``/api/query`` (the Atom listing, page by page, oldest first)
and ``/e-print/<id>v<n>`` over :class:`~pipelines.ingest.arxiv.transport.PoliteHttpClient`
(politeness, retries, deadlines: :mod:`.transport`). Its User-Agent names the project with
a contact address (``MATHEMBED_CONTACT_EMAIL``), as arXiv asks of automated clients.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

from pipelines.common.config import IngestParams
from pipelines.ingest.arxiv.atom import (
    Entry,
    Feed,
    FeedError,
    RejectedEntry,
    build_query,
    parse_feed,
)
from pipelines.ingest.arxiv.transport import ArxivError, PoliteHttpClient, request_url

logger = logging.getLogger(__name__)

CONTACT_ENV = "MATHEMBED_CONTACT_EMAIL"
# Used when CONTACT_ENV is unset. ".invalid" is a reserved TLD: the address plainly says
# "nobody set a contact", rather than pointing at someone who never agreed to it.
FALLBACK_CONTACT = "unset-contact@mathembed.invalid"
_LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


@dataclass(frozen=True)
class Eprint:
    """The bytes ``/e-print/<id>v<n>`` answered with, exactly as sent (gzip stays gzip)."""

    content_type: str
    data: bytes


@dataclass(frozen=True)
class Listing:
    entries: tuple[Entry, ...]
    rejected: tuple[RejectedEntry, ...]
    total_results: int


def package_version() -> str:
    try:
        return importlib.metadata.version("mathembed")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


def build_user_agent(contact: str, version: str | None = None) -> str:
    """``mathembed/0.1.0 (mailto:someone@example.org)``."""
    return f"mathembed/{version or package_version()} (mailto:{contact})"


def user_agent_for(base_url: str, environ: Mapping[str, str] | None = None) -> str:
    """The User-Agent to send to ``base_url``, with the contact from ``MATHEMBED_CONTACT_EMAIL``.

    Without it the fallback address is used, and for anything but a loopback mirror a
    warning says so: arXiv asks automated clients to say who to contact.
    """
    environment = os.environ if environ is None else environ
    contact = environment.get(CONTACT_ENV, "").strip()
    if not contact:
        if urlsplit(base_url).hostname not in _LOCAL_HOSTS:
            logger.warning(
                "%s is not set: requests to %s will carry the placeholder contact %s; "
                "export %s=<your address> so arXiv can reach you",
                CONTACT_ENV,
                base_url,
                FALLBACK_CONTACT,
                CONTACT_ENV,
            )
        contact = FALLBACK_CONTACT
    return build_user_agent(contact)


class ArxivClient(PoliteHttpClient):
    """Talks to ``base_url`` the way export.arxiv.org expects (``/api/query``, ``/e-print/``)."""

    @classmethod
    def from_params(
        cls,
        params: IngestParams,
        *,
        base_url: str | None = None,
        delay_seconds: float | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> ArxivClient:
        """A client configured by the ``ingest`` section (``base_url``/``delay`` overridable)."""
        url = params.base_url if base_url is None else base_url
        return cls(
            url,
            user_agent=user_agent_for(url, environ),
            delay_seconds=params.delay_seconds if delay_seconds is None else delay_seconds,
            timeout_seconds=params.timeout_seconds,
            max_retries=params.max_retries,
            backoff_seconds=params.backoff_seconds,
        )

    # -- listing -----------------------------------------------------------------------

    def iter_pages(
        self,
        categories: Sequence[str],
        from_dt: datetime,
        to_dt: datetime,
        page_size: int,
        max_results: int | None = None,
    ) -> Iterator[Feed]:
        """The listing of ``categories`` updated in [from_dt, to_dt], oldest first, page by page.

        Lazy: a page is requested only when the previous one has been consumed, so a
        caller that stops early costs no further requests.
        """
        if page_size < 1:
            raise ValueError(f"page_size must be >= 1, got {page_size}")
        query = build_query(categories, from_dt, to_dt)
        start = 0
        while max_results is None or start < max_results:
            size = page_size if max_results is None else min(page_size, max_results - start)
            feed = self._listing_page(query, start, size)
            yield feed
            received = len(feed.entries) + len(feed.rejected)
            start += received
            if start >= feed.total_results:
                return
            if received == 0:
                # arXiv sometimes answers a page with no entries before the end; later
                # runs resume from the watermark, so stopping loses nothing.
                logger.warning(
                    "listing page at start=%d came back empty (%d results announced); "
                    "stopping this listing early",
                    start,
                    feed.total_results,
                )
                return

    def list_entries(
        self,
        categories: Sequence[str],
        from_dt: datetime,
        to_dt: datetime,
        page_size: int,
        max_results: int | None = None,
    ) -> Listing:
        """The whole listing (up to ``max_results`` entries), paginated ``page_size`` at a time."""
        entries: list[Entry] = []
        rejected: list[RejectedEntry] = []
        total = 0
        for feed in self.iter_pages(categories, from_dt, to_dt, page_size, max_results):
            entries.extend(feed.entries)
            rejected.extend(feed.rejected)
            total = feed.total_results
        return Listing(tuple(entries), tuple(rejected), total)

    def _listing_page(self, query: str, start: int, size: int) -> Feed:
        url = f"{self.base_url}/api/query"
        params = {
            "search_query": query,
            "start": str(start),
            "max_results": str(size),
            "sortBy": "lastUpdatedDate",
            "sortOrder": "ascending",
        }
        reply = self.get(url, params)
        address = request_url(url, params)
        if reply.status != 200:
            raise ArxivError(
                f"GET {address} answered HTTP {reply.status}; expected an Atom feed",
                url=address,
                status=reply.status,
            )
        try:
            return parse_feed(reply.body)
        except FeedError as error:
            raise ArxivError(f"GET {address}: {error}", url=address, status=reply.status) from error

    # -- e-prints ----------------------------------------------------------------------

    def fetch_eprint(self, paper_id: str, version: int) -> Eprint | None:
        """The source bytes of ``paper_id`` v``version``; ``None`` when arXiv has none (404)."""
        url = f"{self.base_url}/e-print/{paper_id}v{version}"
        reply = self.get(url, None)
        if reply.status == 404:
            return None
        if reply.status != 200:
            raise ArxivError(
                f"GET {url} answered HTTP {reply.status}; expected the e-print",
                url=url,
                status=reply.status,
            )
        return Eprint(reply.headers.get("Content-Type", ""), reply.body)
