"""GET over HTTP the way arXiv asks of a client: polite, patient, bounded, loud on failure.

Polite: one ``requests.Session`` holding one connection, at least ``delay_seconds``
between the starts of two requests (arXiv asks for 3 s), and the User-Agent it is given
(:func:`pipelines.ingest.arxiv.client.user_agent_for` names the project and a contact).
Patient: 429, 5xx, connection errors, timeouts and bodies shorter than their
Content-Length are retried with exponential backoff plus jitter, and a ``Retry-After``
header (seconds or an HTTP date) is honoured as given. Bounded: ``timeout_seconds`` bounds
each wait for bytes and ``REQUEST_DEADLINE_FACTOR * timeout_seconds`` the whole of one
request, so an upstream that drips its body a byte at a time fails the attempt instead of
holding the run. Loud: when the retries run out, :class:`ArxivError` names the URL and the
last status or error; an answer no retry can read (a redirect loop, a redirect to
``file://``, a malformed header) is an :class:`ArxivError` at once — never a bare
``requests`` error, which is an ``OSError`` and would read as a local disk problem.
``tenacity`` runs the retry loop; the politeness and the caps are ours. ``sleep``,
``clock`` and ``jitter`` are injectable so tests assert on the waits instead of waiting.
"""

from __future__ import annotations

import logging
import random
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from types import TracebackType
from typing import NoReturn, Self

import requests
import urllib3.exceptions
from requests.adapters import HTTPAdapter
from requests.structures import CaseInsensitiveDict
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    retry_if_result,
    stop_after_attempt,
)

logger = logging.getLogger(__name__)

# A server asking for a longer pause than this is treated as "not today": fail now
# rather than hold a nightly run for hours.
MAX_RETRY_AFTER_SECONDS = 600.0
# arXiv's largest e-prints are about 50 MB; anything far beyond is not an e-print.
DEFAULT_MAX_BODY_BYTES = 200_000_000
# One request (headers and body) may take at most this many times ``timeout_seconds``
# in all: with the default 30 s, 300 s, which still lets a 50 MB e-print arrive at
# 170 kB/s, while a server dripping a byte every few seconds is cut off.
REQUEST_DEADLINE_FACTOR = 10
_READ_CHUNK = 1 << 16


class ArxivError(RuntimeError):
    """A request to arXiv (or the mirror) failed; the message names the URL and the cause.

    ``retryable`` says whether a later run may succeed (the server was down, busy or
    refused for now) or not (the answer itself is unacceptable, e.g. far too large).
    """

    def __init__(
        self, message: str, *, url: str, status: int | None = None, retryable: bool = True
    ) -> None:
        super().__init__(message)
        self.url = url
        self.status = status
        self.retryable = retryable


@dataclass(frozen=True)
class Reply:
    """The answer to one GET: status, headers and the body as it arrived."""

    status: int
    headers: CaseInsensitiveDict[str]
    body: bytes
    #: Seconds the server asked us to wait (``Retry-After``), read for retryable answers.
    retry_after: float | None = None


class _TruncatedBody(Exception):
    """The connection closed before Content-Length bytes arrived."""


class _DeadlinePassed(Exception):
    """The request ran past its total deadline (a stalled or dripping upstream)."""


#: Failures of one attempt that a later attempt may not see.
_TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    requests.ConnectionError,
    requests.Timeout,
    requests.exceptions.ChunkedEncodingError,
    urllib3.exceptions.HTTPError,
    _TruncatedBody,
    _DeadlinePassed,
)


def parse_retry_after(value: str | None, now: datetime) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP date."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max(0.0, (moment - now).total_seconds())


def _is_retryable_status(status: int) -> bool:
    return status == 429 or 500 <= status <= 599


def parse_content_length(value: str | None) -> int | None:
    """The byte count a ``Content-Length`` header announces; ``None`` when there is none.

    Only ASCII digits: ``str.isdigit`` also accepts ``"236\u00b2"`` (a superscript two),
    which ``int`` then refuses. A malformed value raises ``ValueError`` naming it.
    """
    if value is None:
        return None
    text = value.strip()
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"malformed Content-Length header {value!r} (not a byte count)")
    return int(text)


class PoliteHttpClient:
    """GETs from ``base_url``, one at a time, politely, with retries and bounds."""

    def __init__(
        self,
        base_url: str,
        *,
        user_agent: str,
        delay_seconds: float,
        timeout_seconds: float,
        max_retries: int,
        backoff_seconds: float,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        jitter: Callable[[], float] = random.random,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        if max_retries < 0 or delay_seconds < 0 or backoff_seconds < 0 or timeout_seconds <= 0:
            raise ValueError(
                f"{type(self).__name__}: max_retries, delay_seconds and backoff_seconds must "
                "be >= 0 and timeout_seconds > 0"
            )
        self.base_url = base_url.rstrip("/")
        self.delay_seconds = delay_seconds
        self.timeout_seconds = timeout_seconds
        self.request_deadline_seconds = REQUEST_DEADLINE_FACTOR * timeout_seconds
        self.max_retries = max_retries
        self.backoff_seconds = backoff_seconds
        self.max_body_bytes = max_body_bytes
        self._sleep = sleep
        self._clock = clock
        self._jitter = jitter
        self._wall_clock = wall_clock
        self._owns_session = session is None
        self._session = session if session is not None else requests.Session()
        # One connection to one host: requests are sequential, so a pool of one suffices.
        self._session.mount("http://", HTTPAdapter(pool_connections=1, pool_maxsize=1))
        self._session.mount("https://", HTTPAdapter(pool_connections=1, pool_maxsize=1))
        self._session.headers["User-Agent"] = user_agent
        # Bodies are read as sent: an e-print's gzip must reach the archive reader intact,
        # and Content-Length can then be checked against what arrived.
        self._session.headers["Accept-Encoding"] = "identity"
        self._last_request_started: float | None = None
        self.requests_sent = 0

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._owns_session:
            self._session.close()

    def get(self, url: str, params: Mapping[str, str] | None) -> Reply:
        """GET with politeness and retries; returns any final reply that is not retryable.

        ``tenacity`` runs the attempts; what is ours is what arXiv asks of a client: the
        polite gap before every attempt (:meth:`_wait_for_turn`), ``Retry-After`` honoured
        as given (and refused past :data:`MAX_RETRY_AFTER_SECONDS`), and one error naming
        the URL and the last status when the attempts run out.
        """
        full_url = request_url(url, params)
        statuses: list[int] = []  # every retryable status seen, for the final error

        def attempt() -> Reply:
            self._wait_for_turn()
            try:
                reply = self._send(url, params)
            except _TRANSIENT_ERRORS:
                raise  # tenacity retries these
            except requests.RequestException as error:
                # A redirect loop, a redirect to file://: not worth retrying now, but
                # upstream may answer properly on a later run.
                raise ArxivError(
                    f"GET {full_url}: the answer could not be used ({type(error).__name__}: "
                    f"{error}); an upstream or network problem, retried on a later run",
                    url=full_url,
                ) from error
            if _is_retryable_status(reply.status):
                statuses.append(reply.status)
                return self._with_retry_after(reply, full_url)
            return reply

        retrying = Retrying(
            stop=stop_after_attempt(self.max_retries + 1),
            retry=(
                retry_if_exception_type(_TRANSIENT_ERRORS)
                | retry_if_result(lambda reply: _is_retryable_status(reply.status))
            ),
            wait=self._wait_before_retry,
            sleep=self._sleep,
            before_sleep=lambda state: self._log_retry(full_url, state),
            retry_error_callback=lambda state: self._give_up(full_url, state, statuses),
        )
        reply: Reply = retrying(attempt)
        return reply

    def _with_retry_after(self, reply: Reply, full_url: str) -> Reply:
        """``reply`` with its ``Retry-After`` read; one asking for too long fails the run now."""
        retry_after = parse_retry_after(reply.headers.get("Retry-After"), self._wall_clock())
        if retry_after is not None and retry_after > MAX_RETRY_AFTER_SECONDS:
            raise ArxivError(
                f"GET {full_url} answered HTTP {reply.status} asking to retry after "
                f"{retry_after:.0f} s (more than {MAX_RETRY_AFTER_SECONDS:.0f} s); "
                "giving up for this run",
                url=full_url,
                status=reply.status,
            )
        return replace(reply, retry_after=retry_after)

    def _wait_before_retry(self, state: RetryCallState) -> float:
        """The server's ``Retry-After`` when it gave one, else :meth:`_backoff`."""
        outcome = state.outcome
        if outcome is not None and not outcome.failed:
            retry_after: float | None = outcome.result().retry_after
            if retry_after is not None:
                return retry_after
        return self._backoff(state.attempt_number - 1)

    def _log_retry(self, full_url: str, state: RetryCallState) -> None:
        logger.info(
            "GET %s: %s; retry %d/%d in %.1f s",
            full_url,
            _problem(state),
            state.attempt_number,
            self.max_retries,
            state.upcoming_sleep,
        )

    def _give_up(self, full_url: str, state: RetryCallState, statuses: list[int]) -> NoReturn:
        raise ArxivError(
            f"GET {full_url} failed after {state.attempt_number} attempt(s); "
            f"last: {_problem(state)}",
            url=full_url,
            status=statuses[-1] if statuses else None,
        )

    def _send(self, url: str, params: Mapping[str, str] | None) -> Reply:
        started = self._clock()
        self._last_request_started = started
        self.requests_sent += 1
        with self._session.get(
            url, params=params, timeout=self.timeout_seconds, stream=True
        ) as response:
            body = self._read_body(response, deadline=started + self.request_deadline_seconds)
            return Reply(response.status_code, response.headers, body)

    def _read_body(self, response: requests.Response, deadline: float) -> bytes:
        try:
            expected = parse_content_length(response.headers.get("Content-Length"))
        except ValueError as error:
            raise ArxivError(
                f"GET {response.url}: {error}; an upstream or network problem, retried on a "
                "later run",
                url=str(response.url),
                status=response.status_code,
            ) from error
        if expected is not None and expected > self.max_body_bytes:
            raise ArxivError(
                f"GET {response.url}: body of {expected} bytes exceeds {self.max_body_bytes}",
                url=str(response.url),
                status=response.status_code,
                retryable=False,
            )
        chunks: list[bytes] = []
        size = 0
        while True:
            if self._clock() > deadline:
                raise _DeadlinePassed(
                    f"the total deadline of {self.request_deadline_seconds:g} s "
                    f"({REQUEST_DEADLINE_FACTOR} x ingest.timeout_seconds) passed with {size} "
                    f"of {expected if expected is not None else 'an unknown number of'} "
                    "bytes received: the upstream is stalled or dripping"
                )
            # read1 returns what has arrived; read() would wait for a full chunk, however
            # slowly it comes, and never let the deadline be checked.
            chunk = response.raw.read1(_READ_CHUNK, decode_content=False)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > self.max_body_bytes:
                raise ArxivError(
                    f"GET {response.url}: body exceeds {self.max_body_bytes} bytes",
                    url=str(response.url),
                    status=response.status_code,
                    retryable=False,
                )
        body = b"".join(chunks)
        if expected is not None and len(body) != expected:
            raise _TruncatedBody(
                f"received {len(body)} of {expected} bytes announced by Content-Length"
            )
        encoding = response.headers.get("Content-Encoding", "").strip().lower()
        if encoding in ("gzip", "x-gzip") and "atom" in response.headers.get("Content-Type", ""):
            # We asked for identity; a listing compressed anyway is still readable.
            return _gunzip_listing(body, self.max_body_bytes)
        return body

    def _wait_for_turn(self) -> None:
        if self._last_request_started is None or self.delay_seconds <= 0:
            return
        remaining = self.delay_seconds - (self._clock() - self._last_request_started)
        if remaining > 0:
            self._sleep(remaining)

    def _backoff(self, attempt: int) -> float:
        """``backoff_seconds * 2**attempt``, plus up to half of that again as jitter."""
        base = self.backoff_seconds * (2.0**attempt)
        return base * (1.0 + 0.5 * self._jitter())


def _problem(state: RetryCallState) -> str:
    """What went wrong in the attempt ``state`` describes: an error, or a status to retry."""
    outcome = state.outcome
    if outcome is None:
        return "no attempt made"
    error = outcome.exception()
    if error is not None:
        return f"{type(error).__name__}: {error}"
    return f"HTTP {outcome.result().status}"


def request_url(url: str, params: Mapping[str, str] | None) -> str:
    """``url`` with ``params`` as its query string, as the request is sent."""
    prepared = requests.Request("GET", url, params=dict(params or {})).prepare()
    return str(prepared.url)


def _gunzip_listing(body: bytes, limit: int) -> bytes:
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error as error:
        raise _TruncatedBody(f"gzip-encoded listing is corrupt: {error}") from error
    if len(data) > limit or not inflater.eof:
        raise _TruncatedBody("gzip-encoded listing is truncated or too large")
    return data
