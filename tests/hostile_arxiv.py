"""A real HTTP server on 127.0.0.1 that answers the way a broken or hostile arXiv might.

The sample mirror (``pipelines.mirror.server``) serves well-formed answers with a
few transport faults; this one serves whatever a test builds, byte for byte: a feed with
odd entries, an e-print that redirects in a loop or to ``file://``, a malformed header,
an error page with status 200. ``with hostile_arxiv(answers) as base_url:`` maps a path
(``/api/query``, ``/e-print/2401.00001v1``; the query string is ignored) to an
:class:`Answer`; any other path gets 404. ``atom_feed``, ``atom_entry`` and ``tex_eprint``
build the usual parts, so a test writes only the part that is hostile.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from canned_http import serving

from pipelines.common.config import IngestParams
from pipelines.ingest.arxiv.client import ArxivClient, build_user_agent

#: The end of the listing window in these tests; every good entry is updated before it.
NOW = datetime(2024, 6, 1, tzinfo=UTC)
CATEGORY = "math.CO"
PARAMS = IngestParams(
    source="arxiv",
    base_url="https://export.arxiv.org",  # replaced by the server's in client_for
    categories=(CATEGORY,),
    from_date="2024-01-01",
    max_papers=100,
    page_size=100,
    delay_seconds=0.0,
    timeout_seconds=5.0,
    max_retries=0,  # no retry waits: a fault is final for the attempt
    backoff_seconds=0.0,
    max_archive_files=50,
    max_file_bytes=1_000_000,
    max_archive_bytes=5_000_000,
)


@dataclass(frozen=True)
class Answer:
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""


def atom_entry(
    versioned_id: str,
    *,
    updated: str = "2024-01-02T10:00:00Z",
    title: str = "On a theorem",
    extra: str = "",
) -> str:
    """One ``<entry>`` of the API's feed (the id is put after ``http://arxiv.org/abs/``;
    ``extra`` is XML added at its end, a ``<link>`` say)."""
    return f"""<entry>
    <id>http://arxiv.org/abs/{versioned_id}</id>
    <updated>{updated}</updated>
    <published>2024-01-01T10:00:00Z</published>
    <title>{title}</title>
    <summary>An abstract.</summary>
    <author><name>A. Author</name></author>
    <arxiv:primary_category term="{CATEGORY}"/>
    <category term="{CATEGORY}"/>{extra}
  </entry>"""


def atom_feed(entries: Sequence[str], *, prolog: str = "") -> str:
    """A one-page feed holding ``entries`` (``prolog`` goes before the root element)."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>{prolog}
<feed xmlns="http://www.w3.org/2005/Atom"
      xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/"
      xmlns:arxiv="http://arxiv.org/schemas/atom">
  <title>arXiv Query</title>
  <opensearch:totalResults>{len(entries)}</opensearch:totalResults>
  <opensearch:startIndex>0</opensearch:startIndex>
  {"".join(entries)}
</feed>
"""


def feed_answer(entries: Sequence[str]) -> Answer:
    body = atom_feed(entries).encode("utf-8")
    return Answer(200, (("Content-Type", "application/atom+xml; charset=utf-8"),), body)


def tex_eprint(title: str = "A paper") -> Answer:
    """A gzip'd single ``.tex``, the commonest e-print."""
    tex = f"\\documentclass{{article}}\\begin{{document}}{title}\\end{{document}}\n"
    return Answer(200, (("Content-Type", "application/x-eprint"),), gzip.compress(tex.encode()))


@contextmanager
def hostile_arxiv(answers: Mapping[str, Answer]) -> Iterator[str]:
    """Serve ``answers`` on 127.0.0.1 for the block; yields the base URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            answer = answers.get(urlsplit(self.path).path, Answer(404, body=b"not here\n"))
            self.send_response(answer.status)
            names = {name.lower() for name, _ in answer.headers}
            for name, value in answer.headers:
                self.send_header(name, value)  # as given: a test may send a malformed one
            if "content-length" not in names:
                self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    # A short poll: shutdown() waits for it, once per harvest.
    with serving(server, poll_interval=0.05) as url:
        yield url


def client_for(base_url: str) -> ArxivClient:
    """A client with no waits: no polite delay, no retries."""
    return ArxivClient(
        base_url,
        user_agent=build_user_agent("tests@example.org"),
        delay_seconds=0.0,
        timeout_seconds=PARAMS.timeout_seconds,
        max_retries=0,
        backoff_seconds=0.0,
    )
