"""One ingest run's work on each listed entry, and the watermark as it advances.

For each listed paper version a run either skips it (its folder is complete, or it was
rejected for good before), records it (withdrawn), or downloads its e-print, extracts the
LaTeX and stores it (:mod:`.raw_store`); rejections are quarantined with their reason
(:mod:`.quarantine`) and the run goes on.

Each listed entry is a unit: an unreadable entry, an e-print the client cannot use (a
redirect loop, a malformed header), an error page served in its place, or any other
error while handling it quarantines that entry alone; only a failing listing or local
file system stops the run. An entry dated after the run's window (``2099-01-01``) is
refused and never becomes the watermark, which would leave every later window empty.

The watermark (``data/raw/watermark.json``) moves only over papers that are safely
handled, and stops at the first download that failed (those are retried next run), so
a run killed at any point resumes without refetching what it has and without skipping
what it lacks. An abnormal run (:func:`pipelines.ingest.report.quarantine_alarm`) holds
it before the first paper a cap refused, so those are listed, and refused, again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

from pipelines.common.config import ConfigError, IngestParams
from pipelines.common.paths import Paths
from pipelines.common.raw_layout import WATERMARK_FILE, is_stored
from pipelines.ingest.arxiv.archive import (
    AbstractOnly,
    ArchiveLimits,
    Rejected,
    Source,
    extract_source,
)
from pipelines.ingest.arxiv.atom import (
    Entry,
    RejectedEntry,
    abs_page,
    format_timestamp,
    parse_timestamp,
)
from pipelines.ingest.arxiv.client import ArxivClient, Eprint
from pipelines.ingest.arxiv.transport import ArxivError
from pipelines.ingest.quarantine import (
    cap_details,
    clear_record,
    is_final,
    quarantine_entry,
    quarantine_unreadable,
    raised_cap_refusals,
    recorded_details,
)
from pipelines.ingest.raw_store import clear_watermark, store_version, write_watermark
from pipelines.ingest.report import IngestReport, Outcome

logger = logging.getLogger(__name__)

# The ArchiveLimits field each ingest.* key sets (see archive_limits).
LIMIT_KEYS = {
    "max_files": "max_archive_files",
    "max_file_bytes": "max_file_bytes",
    "max_total_bytes": "max_archive_bytes",
}

#: Listed paper -> where a reader finds it (``meta.json``'s ``url``), or ``None`` when no
#: true link is known; chosen per source by :func:`pipelines.ingest.stage.run_from_source`.
LinkRule = Callable[[Entry], str | None]


def no_link(entry: Entry) -> None:
    """The rule for a source whose ids name no real paper."""
    return None


def abstract_page(entry: Entry) -> str:
    """The rule for arXiv: the paper's abstract page."""
    return abs_page(entry.paper_id)


def listed_source(entry: Entry) -> str | None:
    """The rule for the offline mirror: the link its listing gives the paper, if any (a
    Stacks chapter's source; none for the synthetic sample, whose ids name no real paper)."""
    return entry.source_url


def archive_limits(params: IngestParams) -> ArchiveLimits:
    return ArchiveLimits(
        max_files=params.max_archive_files,
        max_file_bytes=params.max_file_bytes,
        max_total_bytes=params.max_archive_bytes,
    )


def window_start(params: IngestParams, watermark: str | None, now: datetime) -> datetime:
    """Where the listing window of a run at ``now`` starts: the watermark's minute, else
    ``ingest.from_date``."""
    # The API's date range has minute resolution and is inclusive, so papers at the
    # watermark's minute are listed again; they are skipped as already stored.
    if watermark is not None:
        start = parse_timestamp(watermark).replace(second=0, microsecond=0)
        if start > now:
            # Written by a version that let a listed date from the future through.
            raise ValueError(
                f"the watermark {watermark} ({WATERMARK_FILE} in the raw store) is after "
                f"now ({format_timestamp(now)}): set it to the last date really harvested, "
                "or delete it to restart from ingest.from_date (stored papers are skipped)"
            )
        return start
    try:
        return parse_timestamp(params.from_date)
    except ValueError as error:
        raise ConfigError(f"ingest.from_date: {error}") from error


class Harvest:
    """The state of one run: paths, counters, the watermark as it advances."""

    def __init__(
        self,
        params: IngestParams,
        paths: Paths,
        client: ArxivClient,
        report: IngestReport,
        fetched_at: str,
        link: LinkRule,
    ) -> None:
        self.params = params
        self.paths = paths
        self.client = client
        self.report = report
        self.fetched_at = fetched_at
        self.link = link
        self.limits = archive_limits(params)
        self.watermark = report.watermark_before
        # Set at the first download that failed for now: the watermark must not pass it.
        self.blocked = False
        # Where the watermark stood before the first paper a cap refused this run: an
        # abnormal run rolls back to it, so the papers are listed (and refused) again.
        self.limit_refused = False
        self.before_limit_refusal: str | None = None

    def is_from_the_future(self, entry: Entry) -> bool:
        """Whether ``entry`` says it was updated after this run's window ends (a broken or
        hostile upstream: ``2099-01-01``). Such a date must never become the watermark, or
        every later window would start after it ends."""
        return entry.updated > self.report.window_to  # one format, so strings compare as times

    def handle_listed(self, entry: Entry) -> Outcome:
        """One listed entry as a unit: whatever goes wrong with it quarantines it alone.

        An error of the local file system (``OSError``: a full disk, a read-only store)
        is not the entry's fault and stops the run, as it would stop every entry after it.
        """
        if self.is_from_the_future(entry):
            self._quarantine(
                entry,
                f"listed as updated at {entry.updated}, after this run's window ends "
                f"({self.report.window_to}): refused, neither stored nor the watermark; "
                "retried when it is listed again",
                retryable=True,
            )
            return "quarantined"
        considered = self.report.considered
        try:
            return self.handle_entry(entry)
        except OSError:
            raise
        except Exception as error:  # one bad entry never stops the harvest
            logger.exception("handling %s failed", entry.versioned_id)
            # Weighed by the quarantine alarm as one refused paper, wherever it failed: an
            # upstream that breaks every entry is abnormal.
            self.report.considered = considered + 1
            self.report.refused += 1
            self._quarantine(
                entry, f"unexpected error: {type(error).__name__}: {error}", retryable=True
            )
            return "failed"

    def handle_entry(self, entry: Entry) -> Outcome:
        item_id = entry.versioned_id
        if is_stored(self.paths.raw, entry.paper_id, entry.version):
            return "skipped"
        details = recorded_details(self.paths.quarantine, item_id)
        if details is not None and is_final(details, self.params):
            if isinstance(details.get("limit"), str):
                # Still refused by a cap in force: as abnormal as refusing it anew.
                self.report.considered += 1
                self.report.refused += 1
                self._note_limit_refusal(details["limit"])
            return "skipped"
        if entry.withdrawn:
            # A withdrawn version's e-print is only the withdrawal notice (or nothing):
            # record the fact without a request.
            self._store(entry, "withdrawn", eprint=None, source=None)
            return "withdrawn"
        self.report.considered += 1
        outcome = self._download(entry)
        if outcome in ("quarantined", "failed"):
            self.report.refused += 1
        return outcome

    def _note_limit_refusal(self, key: str) -> None:
        self.report.limit_refusals[key] += 1
        if not self.limit_refused:
            self.limit_refused = True
            self.before_limit_refusal = self.watermark

    def _download(self, entry: Entry) -> Outcome:
        try:
            eprint = self.client.fetch_eprint(entry.paper_id, entry.version)
        except ArxivError as error:
            self._quarantine(entry, f"download failed: {error}", retryable=error.retryable)
            return "failed" if error.retryable else "quarantined"
        if eprint is None:
            self._quarantine(entry, "no e-print: the server answered 404", retryable=False)
            return "quarantined"
        return self._extract_and_store(entry, eprint)

    def _extract_and_store(self, entry: Entry, eprint: Eprint, *, replay: bool = False) -> Outcome:
        try:
            result = extract_source(eprint.data, self.limits)
        except Exception as error:  # one bad paper never stops the run
            logger.exception("extracting %s failed", entry.versioned_id)
            result = Rejected(f"extraction failed unexpectedly: {error!r}")
        if isinstance(result, Rejected) and result.retryable:
            # Not the e-print but an error page served with HTTP 200: the download failed
            # for now, so it is retried on a later run like any other failed download.
            self._quarantine(
                entry,
                result.reason,
                retryable=True,
                payload=eprint.data,
                content_type=eprint.content_type,
            )
            return "failed"
        if isinstance(result, Rejected):
            limit: dict[str, Any] = {}
            if result.limit is not None:
                # Recorded so a run with a larger cap re-extracts it (retry_limit_refusals).
                key = f"ingest.{LIMIT_KEYS[result.limit]}"
                limit = cap_details(entry, key, getattr(self.limits, result.limit))
                if not replay:
                    self._note_limit_refusal(key)
            self._quarantine(
                entry,
                result.reason,
                retryable=False,
                payload=eprint.data,
                content_type=eprint.content_type,
                extra=limit,
            )
            return "quarantined"
        if isinstance(result, AbstractOnly):
            self._store(entry, "abstract_only", eprint=eprint.data, source=None)
            return "abstract_only"
        self._store(entry, "tex", eprint=eprint.data, source=result)
        return "tex"

    def _store(
        self,
        entry: Entry,
        source_kind: Literal["tex", "abstract_only", "withdrawn"],
        *,
        eprint: bytes | None,
        source: Source | None,
    ) -> None:
        store_version(
            self.paths.raw,
            entry,
            source_kind=source_kind,
            eprint=eprint,
            source=source,
            fetched_at=self.fetched_at,
            url=self.link(entry),
        )
        clear_record(self.paths.quarantine, entry.versioned_id)
        self.report.stored.append(entry.versioned_id)

    def _quarantine(
        self,
        entry: Entry,
        reason: str,
        *,
        retryable: bool,
        payload: bytes | None = None,
        content_type: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        quarantine_entry(
            self.paths.quarantine,
            entry,
            reason,
            retryable=retryable,
            payload=payload,
            content_type=content_type,
            extra=extra,
        )
        self.report.quarantined.append((entry.versioned_id, reason))
        logger.info("quarantined %s: %s", entry.versioned_id, reason)

    def quarantine_unreadable(self, rejected: RejectedEntry) -> None:
        self.report.quarantined.append(quarantine_unreadable(self.paths.quarantine, rejected))

    def retry_limit_refusals(self) -> None:
        """Re-extract the papers an earlier run's caps refused, where the cap is larger now.

        The watermark has passed them, so the listing will not bring them back; their
        quarantined e-print and entry are enough, and no request is made.
        """
        for refusal in raised_cap_refusals(self.paths.quarantine, self.params):
            entry = refusal.entry
            self.report.counts["retried"] += 1
            if is_stored(self.paths.raw, entry.paper_id, entry.version):
                clear_record(self.paths.quarantine, entry.versioned_id)
                continue
            eprint = Eprint(refusal.content_type, refusal.payload.read_bytes())
            if self._extract_and_store(entry, eprint, replay=True) not in ("quarantined", "failed"):
                self.report.counts["recovered"] += 1
                logger.info("recovered %s with the larger %s", refusal.item_id, refusal.limit)

    def hold_watermark(self) -> None:
        """Roll the watermark back to before the first paper a cap refused this run."""
        if not self.limit_refused or self.watermark == self.before_limit_refusal:
            return
        self.watermark = self.before_limit_refusal
        if self.watermark is None:
            clear_watermark(self.paths.raw)
        else:
            write_watermark(self.paths.raw, self.watermark)
        logger.warning("watermark held at %s, before the papers a cap refused", self.watermark)

    def advance_watermark(self, entry: Entry, outcome: Outcome) -> None:
        if outcome == "failed":
            self.blocked = True
        if self.blocked or self.is_from_the_future(entry):
            return
        if self.watermark is None or entry.updated > self.watermark:
            self.watermark = entry.updated
            write_watermark(self.paths.raw, entry.updated)
