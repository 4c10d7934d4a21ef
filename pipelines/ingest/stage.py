"""The ``ingest`` stage: harvest new arXiv math papers into the append-only raw store.

One run lists the papers updated since the watermark (or ``ingest.from_date``), oldest
first, and for each listed paper version either skips it (its folder is complete, or it
was rejected for good before), records it (withdrawn), or downloads its e-print,
extracts the LaTeX and stores it under ``data/raw/<paper>/v<version>/`` — ``eprint.bin``,
``source.tex``, then ``meta.json`` last, each written atomically, so a folder without
``meta.json`` is an interrupted write that the next run redoes (the layout prepare reads
too: :mod:`pipelines.common.raw_layout`). Rejections go to
``data/quarantine/ingest/`` with their reason and the run goes on.

Each listed entry is a unit: an unreadable entry, an e-print the client cannot use (a
redirect loop, a malformed header), an error page served in its place, or any other
error while handling it quarantines that entry alone; only a failing listing or local
file system stops the run. An entry dated after the run's window (``2099-01-01``) is
refused and never becomes the watermark, which would leave every later window empty.

The watermark (``data/raw/watermark.json``) moves only over papers that are safely
handled, and stops at the first download that failed (those are retried next run), so
a run killed at any point resumes without refetching what it has and without skipping
what it lacks. Counts add up: listed = tex + abstract_only + withdrawn + skipped +
quarantined, written to ``metrics/ingest.json``.

A paper refused by a configured cap (``ingest.max_archive_bytes``, ``max_file_bytes``,
``max_archive_files``) is quarantined with the key and value that refused it, its
listing entry and its e-print, and every later run whose cap is larger re-extracts it
from the quarantined e-print before listing (``retried``/``recovered`` in the metrics,
outside ``listed``): a cap never loses a paper for good.

A run that quarantines more than half of the papers it downloaded (a too-tight cap, a
broken upstream) is abnormal: it writes what it fetched and its metrics, holds the
watermark before the first paper a cap refused, then raises
:class:`QuarantineRateError` naming the cap to raise, so the command exits 1 and the
flow's ingest step fails. Papers still refused by a recorded cap count as refused again
when relisted, so a retry with unchanged params fails the same way.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from tqdm import tqdm  # type: ignore[import-untyped]  # no stubs pinned (types-tqdm)
from tqdm.contrib.logging import logging_redirect_tqdm  # type: ignore[import-untyped]

from pipelines.common import io
from pipelines.common.config import ConfigError, IngestParams
from pipelines.common.paths import Paths
from pipelines.common.raw_layout import (
    RAW_EPRINT_FILE,
    RAW_META_FILE,
    RAW_SOURCE_FILE,
    WATERMARK_FILE,
    is_stored,
    version_folder,
)
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
from pipelines.ingest.arxiv.client import ArxivClient, ArxivError, Eprint
from pipelines.ingest.progress import HarvestProgress, harvest_target
from pipelines.ingest.sample.layout import ENTRIES_FILE

logger = logging.getLogger(__name__)

STAGE = "ingest"
COUNT_KEYS = ("tex", "abstract_only", "withdrawn", "skipped", "quarantined")
# A run that quarantines more than this share of the papers it fetched (and at least
# ALARM_MIN_PAPERS of them) is abnormal: a too-tight cap, a broken mirror or upstream.
# Fixed, not a knob: the sample mirror, malformed papers included, stays near 30 %.
ALARM_QUARANTINE_SHARE = 0.5
ALARM_MIN_PAPERS = 5
# The ArchiveLimits field each ingest.* key sets (see archive_limits).
LIMIT_KEYS = {
    "max_files": "max_archive_files",
    "max_file_bytes": "max_file_bytes",
    "max_total_bytes": "max_archive_bytes",
}

Outcome = Literal["tex", "abstract_only", "withdrawn", "skipped", "quarantined", "failed"]
#: Paper id -> where a reader finds the paper (``meta.json``'s ``url``), or ``None`` when no
#: true link is known; chosen per source by :func:`run_from_source`.
LinkRule = Callable[[str], str | None]


def no_link(paper_id: str) -> None:
    """The rule for a source whose ids name no real paper (the synthetic sample)."""
    return None


@dataclass
class IngestReport:
    """What one run did. ``counts['listed']`` equals the sum of the other counts."""

    window_from: str
    window_to: str
    watermark_before: str | None
    watermark_after: str | None = None
    counts: Counter[str] = field(default_factory=Counter)
    stored: list[str] = field(default_factory=list)  # "<id>v<n>" written this run
    quarantined: list[tuple[str, str]] = field(default_factory=list)  # (item id, reason)
    listing_complete: bool = True
    # What the quarantine alarm weighs: papers downloaded this run plus papers skipped
    # because a cap still in force refused them earlier, and how many of those were refused.
    considered: int = 0
    refused: int = 0
    limit_refusals: Counter[str] = field(default_factory=Counter)  # "ingest.<key>" -> papers

    @property
    def fetch_failures(self) -> int:
        """Downloads that failed for now (quarantined, retried by the next run)."""
        return self.counts["fetch_failed"]

    def metrics(self) -> dict[str, Any]:
        counts = {
            key: self.counts[key]
            for key in ("listed", *COUNT_KEYS, "fetch_failed", "retried", "recovered")
        }
        return {
            **counts,
            "fetched": self.counts["tex"] + self.counts["abstract_only"],
            "window_from": self.window_from,
            "window_to": self.window_to,
            "watermark": self.watermark_after,
            "listing_complete": self.listing_complete,
        }


# -- the raw store --------------------------------------------------------------------


def read_watermark(raw_dir: Path) -> str | None:
    path = raw_dir / WATERMARK_FILE
    if not path.is_file():
        return None
    try:
        value = io.read_json(path)["updated"]
        return format_timestamp(parse_timestamp(str(value)))
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(
            f'{path} is not a watermark like {{"updated": "2024-01-03T10:00:00Z"}} '
            f"({error}); fix it or delete it to restart from ingest.from_date"
        ) from error


def write_watermark(raw_dir: Path, updated: str) -> None:
    io.write_json(raw_dir / WATERMARK_FILE, {"updated": updated})


def meta_record(
    entry: Entry,
    *,
    source_kind: Literal["tex", "abstract_only", "withdrawn"],
    source: Source | None,
    fetched_at: str,
    url: str | None,
) -> dict[str, Any]:
    """``meta.json`` as the data contract defines it."""
    return {
        "paper_id": entry.paper_id,
        "version": entry.version,
        "title": entry.title,
        "authors": list(entry.authors),
        "abstract": entry.abstract,
        "categories": list(entry.categories),
        "primary_category": entry.primary_category,
        "published": entry.published,
        "updated": entry.updated,
        "comment": entry.comment,
        "source_kind": source_kind,
        "main_file": source.main_file if source else None,
        "source_sha256": io.sha256_hex(source.text.encode("utf-8")) if source else None,
        "encoding": source.encoding if source else None,
        # \input/\include targets not in the archive: the text is kept with them left as
        # written, and this says what is missing (a chapter's \input{chapters}, say).
        "unresolved_includes": list(source.unresolved) if source else [],
        "fetched_at": fetched_at,
        # Where a reader finds the paper (its abstract page on arXiv, a mirror's
        # equivalent); prepare carries it to the papers table, search links hits to it.
        "url": url,
    }


def store_version(
    raw_dir: Path,
    entry: Entry,
    *,
    source_kind: Literal["tex", "abstract_only", "withdrawn"],
    eprint: bytes | None,
    source: Source | None,
    fetched_at: str,
    url: str | None,
) -> Path:
    """Write one version folder: ``eprint.bin``, ``source.tex``, then ``meta.json``."""
    folder = version_folder(raw_dir, entry.paper_id, entry.version)
    if (folder / RAW_META_FILE).exists():
        raise FileExistsError(f"{folder} is already stored; the raw store is append-only")
    if eprint is not None:
        io.write_bytes(folder / RAW_EPRINT_FILE, eprint)
    if source is not None:
        io.write_text(folder / RAW_SOURCE_FILE, source.text)
    meta = meta_record(
        entry, source_kind=source_kind, source=source, fetched_at=fetched_at, url=url
    )
    io.write_json(folder / RAW_META_FILE, meta)
    return folder


# -- quarantine -----------------------------------------------------------------------


def _quarantine_path(quarantine_dir: Path, item_id: str) -> Path:
    return io.quarantine_record_path(quarantine_dir, STAGE, item_id)


class QuarantineRateError(ValueError):
    """The run quarantined an abnormal share of what it downloaded (raised after writing)."""

    def __init__(self, message: str, report: IngestReport) -> None:
        super().__init__(message)
        self.report = report


def recorded_details(quarantine_dir: Path, item_id: str) -> dict[str, Any] | None:
    """The ``details`` of ``item_id``'s quarantine record; None when it has none.

    An unreadable record comes back as retryable (``io.read_quarantine_record``): the
    paper is redone, never skipped because of a broken file.
    """
    path = _quarantine_path(quarantine_dir, item_id)
    if not path.is_file():
        return None
    details = io.read_quarantine_record(path).get("details", {})
    return details if isinstance(details, dict) else {}


def is_final(details: dict[str, Any], params: IngestParams | None = None) -> bool:
    """Whether a refusal recorded with ``details`` stands: not retryable, and not refused
    by a cap that ``params`` has since raised."""
    if params is not None and limit_raised(details, params):
        return False
    return not bool(details.get("retryable", False))


def rejected_for_good(
    quarantine_dir: Path, item_id: str, params: IngestParams | None = None
) -> bool:
    """Whether ``item_id`` was quarantined earlier for a reason a retry cannot fix."""
    details = recorded_details(quarantine_dir, item_id)
    return details is not None and is_final(details, params)


def limit_raised(details: dict[str, Any], params: IngestParams) -> bool:
    """Whether the cap that refused a paper (``details``) is larger in ``params`` now."""
    key, refused_at = details.get("limit"), details.get("limit_value")
    if not isinstance(key, str) or not isinstance(refused_at, int):
        return False
    current = getattr(params, key.removeprefix("ingest."), None)
    return isinstance(current, int) and current > refused_at


def _entry_from_details(details: dict[str, Any]) -> Entry | None:
    fields = details.get("entry")
    if not isinstance(fields, dict):
        return None
    try:
        return Entry(
            **{
                **fields,
                "authors": tuple(fields["authors"]),
                "categories": tuple(fields["categories"]),
            }
        )
    except (KeyError, TypeError):
        return None


def _clear_quarantine(quarantine_dir: Path, item_id: str) -> None:
    """Drop a stale record of a failed download once the paper is stored after all."""
    path = _quarantine_path(quarantine_dir, item_id)
    path.unlink(missing_ok=True)
    path.with_suffix(".bin").unlink(missing_ok=True)


# -- the run --------------------------------------------------------------------------


def archive_limits(params: IngestParams) -> ArchiveLimits:
    return ArchiveLimits(
        max_files=params.max_archive_files,
        max_file_bytes=params.max_file_bytes,
        max_total_bytes=params.max_archive_bytes,
    )


def _window_start(params: IngestParams, watermark: str | None, now: datetime) -> datetime:
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


class _Run:
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
                limit = {
                    "limit": key,
                    "limit_value": getattr(self.limits, result.limit),
                    "entry": dataclasses.asdict(entry),
                }
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
            url=self.link(entry.paper_id),
        )
        _clear_quarantine(self.paths.quarantine, entry.versioned_id)
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
        details: dict[str, Any] = {
            "retryable": retryable,
            "paper_id": entry.paper_id,
            "version": entry.version,
            "updated": entry.updated,
            "title": entry.title,
            **(extra or {}),
        }
        if content_type is not None:
            details["content_type"] = content_type
        io.quarantine(
            self.paths.quarantine, STAGE, entry.versioned_id, reason, payload, details=details
        )
        self.report.quarantined.append((entry.versioned_id, reason))
        logger.info("quarantined %s: %s", entry.versioned_id, reason)

    def quarantine_unreadable(self, rejected: RejectedEntry) -> None:
        # The same feed gives the same entry next time: rejected for good.
        item_id = rejected.entry_id.rsplit("/abs/", 1)[-1] or (
            "entry-" + io.sha256_hex(rejected.xml)[:12]
        )
        reason = f"unreadable listing entry: {rejected.reason}"
        io.quarantine(
            self.paths.quarantine,
            STAGE,
            item_id,
            reason,
            rejected.xml,
            details={"retryable": False, "entry_id": rejected.entry_id},
        )
        self.report.quarantined.append((item_id, reason))

    def retry_limit_refusals(self) -> None:
        """Re-extract the papers an earlier run's caps refused, where the cap is larger now.

        The watermark has passed them, so the listing will not bring them back; their
        quarantined e-print and entry are enough, and no request is made.
        """
        for record in io.quarantined(self.paths.quarantine, STAGE):
            details = record.get("details", {})
            entry = _entry_from_details(details)
            # Only a file beside the record: the name comes from a file on disk.
            payload = self.paths.quarantine / STAGE / Path(str(record.get("payload", ""))).name
            if entry is None or not limit_raised(details, self.params) or not payload.is_file():
                continue
            self.report.counts["retried"] += 1
            if is_stored(self.paths.raw, entry.paper_id, entry.version):
                _clear_quarantine(self.paths.quarantine, entry.versioned_id)
                continue
            eprint = Eprint(str(details.get("content_type", "")), payload.read_bytes())
            if self._extract_and_store(entry, eprint, replay=True) not in ("quarantined", "failed"):
                self.report.counts["recovered"] += 1
                logger.info("recovered %s with the larger %s", record["id"], details["limit"])

    def hold_watermark(self) -> None:
        """Roll the watermark back to before the first paper a cap refused this run."""
        if not self.limit_refused or self.watermark == self.before_limit_refusal:
            return
        self.watermark = self.before_limit_refusal
        if self.watermark is None:
            (self.paths.raw / WATERMARK_FILE).unlink(missing_ok=True)
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


def run_ingest(
    params: IngestParams,
    paths: Paths,
    *,
    client: ArxivClient,
    now: datetime | None = None,
    progress: bool = True,
    clock: Callable[[], float] = time.monotonic,
    link: LinkRule = no_link,
) -> IngestReport:
    """Harvest what is new since the watermark into ``paths.raw``; see the module docstring.

    ``now`` is the end of the listing window (default: the current time) and the
    ``fetched_at`` of what is stored. At most ``params.max_papers`` papers are handled
    (skipped ones do not count); the rest waits for the next run. Progress goes to the
    bar on a terminal and, every :data:`~pipelines.ingest.progress.LOG_EVERY_SECONDS` of
    ``clock``, to the log. ``link`` gives each stored version its ``url``.
    """
    moment = datetime.now(UTC) if now is None else now
    io.ensure_quarantine(paths.quarantine, STAGE)
    watermark = read_watermark(paths.raw)
    window_from = _window_start(params, watermark, moment)
    report = IngestReport(
        window_from=format_timestamp(window_from),
        window_to=format_timestamp(moment),
        watermark_before=watermark,
    )
    run = _Run(params, paths, client, report, fetched_at=format_timestamp(moment), link=link)
    run.retry_limit_refusals()
    counts = report.counts
    handled = 0
    listing_error: ArxivError | None = None
    harvest = HarvestProgress(clock=clock)
    listed_total = 0

    with _progress_bar(progress) as bar, _logs_beside(bar):
        pages = client.iter_pages(params.categories, window_from, moment, params.page_size)
        try:
            for feed in pages:
                if bar.total is None:
                    bar.total = feed.total_results  # the window's size; the cap may end it early
                    listed_total = feed.total_results
                    logger.info(
                        "listing: %d papers updated since %s; handling up to %d new ones",
                        listed_total,
                        report.window_from,
                        params.max_papers,
                    )
                for rejected in feed.rejected:
                    counts["listed"] += 1
                    counts["quarantined"] += 1
                    run.quarantine_unreadable(rejected)
                for entry in feed.entries:
                    if handled >= params.max_papers:
                        break
                    outcome = run.handle_listed(entry)
                    counts["listed"] += 1
                    if outcome == "failed":
                        counts["quarantined"] += 1
                        counts["fetch_failed"] += 1
                    else:
                        counts[outcome] += 1
                    if outcome != "skipped":
                        handled += 1
                    bar.update(1)
                    run.advance_watermark(entry, outcome)
                    bar.set_postfix(
                        fetched=counts["tex"] + counts["abstract_only"],
                        skipped=counts["skipped"],
                        quarantined=counts["quarantined"],
                        withdrawn=counts["withdrawn"],
                        refresh=False,
                    )
                    target = harvest_target(listed_total, counts["skipped"], params.max_papers)
                    line = harvest.update(counts["listed"], target, counts["quarantined"])
                    if line is not None:
                        logger.info(line)
                if handled >= params.max_papers:
                    break
        except ArxivError as error:
            # The listing itself failed: keep what was stored, report, then fail loudly.
            listing_error = error
            report.listing_complete = False

    alarm = quarantine_alarm(report, paths.quarantine / STAGE)
    if alarm is not None:
        run.hold_watermark()
    report.watermark_after = run.watermark
    io.write_json(paths.metric_file(STAGE), report.metrics())
    if listing_error is not None:
        raise listing_error
    if alarm is not None:
        raise QuarantineRateError(alarm, report)
    return report


def quarantine_alarm(report: IngestReport, quarantine_folder: Path) -> str | None:
    """One line saying the run's quarantine rate is abnormal, or None when it is not."""
    considered, refused = report.considered, report.refused
    if considered < ALARM_MIN_PAPERS or refused <= ALARM_QUARANTINE_SHARE * considered:
        return None
    message = (
        f"{refused} of the {considered} papers this run fetched (or found refused by a cap "
        f"still in force) are quarantined, more than {ALARM_QUARANTINE_SHARE:.0%}"
    )
    if report.limit_refusals:
        key, papers = report.limit_refusals.most_common(1)[0]
        return (
            f"{message}; {papers} of them refused by {key}: raise {key} in params.yaml "
            f"and rerun (they are re-extracted from {quarantine_folder}, nothing is lost)"
        )
    return f"{message}; see the reasons in {quarantine_folder}"


def _progress_bar(enabled: bool) -> Any:
    # disable=None: shown on a terminal, silent in logs and CI.
    return tqdm(total=None, unit="paper", desc=STAGE, disable=None if enabled else True)


def _logs_beside(bar: Any) -> AbstractContextManager[Any]:
    # While a bar is drawn, log lines go through tqdm.write so neither breaks the other;
    # without one (logs, CI, progress off) the logging setup is left exactly as it is.
    return nullcontext() if bar.disable else logging_redirect_tqdm()


def run_from_source(params: IngestParams, paths: Paths, *, progress: bool) -> IngestReport:
    """Run :func:`run_ingest` against ``ingest.source``: the live arXiv API (papers link to
    their abstract pages), or the sample mirror served on 127.0.0.1 for the length of the
    run (papers link where the mirror says: a Stacks chapter to its source)."""
    if params.source == "arxiv":
        with ArxivClient.from_params(params) as client:
            return run_ingest(params, paths, client=client, progress=progress, link=abs_page)
    if not (paths.mirror / ENTRIES_FILE).is_file():
        raise FileNotFoundError(
            f"the sample mirror {paths.mirror} is missing (no {ENTRIES_FILE}); "
            "run mathembed sample first"
        )
    # Imported here: only the sample source needs the mirror.
    from pipelines.ingest.sample.corpus_manifest import paper_links
    from pipelines.ingest.sample.server import MirrorServer

    links = paper_links(paths.mirror)
    with (
        MirrorServer(paths.mirror) as server,
        # The mirror is local: no need to keep arXiv's 3 s between requests.
        ArxivClient.from_params(params, base_url=server.base_url, delay_seconds=0.0) as client,
    ):
        return run_ingest(params, paths, client=client, progress=progress, link=links.get)
