"""The ``ingest`` stage: harvest new arXiv math papers into the append-only raw store.

One run lists the papers updated since the watermark (or ``ingest.from_date``), oldest
first, and handles each listed paper version as a unit (:mod:`.harvest`): skipped (its
folder is complete, or it was rejected for good before), recorded (withdrawn), or
downloaded, its LaTeX extracted and stored under ``data/raw/<paper>/v<version>/``
(:mod:`.raw_store`). Rejections go to ``data/quarantine/ingest/`` with their reason
(:mod:`.quarantine`) and the run goes on; only a failing listing or local file system
stops it. Papers an earlier run's cap refused are re-extracted first when the cap is
larger now. The watermark moves only over papers safely handled, so a run killed at any
point resumes without refetching what it has and without skipping what it lacks.

The counts, which add up, go to ``metrics/ingest.json`` (:mod:`.report`). A run that
quarantines more than half of the papers it downloaded is abnormal: it writes what it
fetched and its metrics, holds the watermark before the first paper a cap refused, then
raises :class:`~pipelines.ingest.report.QuarantineRateError` naming the cap to raise, so
the command exits 1 and the flow's ingest step fails.

This module is the run's shell: the listing loop, the progress bar and the source.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from typing import Any

from tqdm import tqdm  # type: ignore[import-untyped]  # no stubs pinned (types-tqdm)
from tqdm.contrib.logging import logging_redirect_tqdm  # type: ignore[import-untyped]

from pipelines.common import io
from pipelines.common.config import IngestParams
from pipelines.common.paths import Paths
from pipelines.ingest.arxiv.atom import format_timestamp
from pipelines.ingest.arxiv.client import ArxivClient
from pipelines.ingest.arxiv.transport import ArxivError
from pipelines.ingest.harvest import (
    Harvest,
    LinkRule,
    abstract_page,
    listed_source,
    no_link,
    window_start,
)
from pipelines.ingest.progress import HarvestProgress, harvest_target
from pipelines.ingest.raw_store import read_watermark
from pipelines.ingest.report import STAGE, IngestReport, QuarantineRateError, quarantine_alarm

logger = logging.getLogger(__name__)


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
    window_from = window_start(params, watermark, moment)
    report = IngestReport(
        window_from=format_timestamp(window_from),
        window_to=format_timestamp(moment),
        watermark_before=watermark,
    )
    run = Harvest(params, paths, client, report, fetched_at=format_timestamp(moment), link=link)
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


def _progress_bar(enabled: bool) -> Any:
    # disable=None: shown on a terminal, silent in logs and CI.
    return tqdm(total=None, unit="paper", desc=STAGE, disable=None if enabled else True)


def _logs_beside(bar: Any) -> AbstractContextManager[Any]:
    # While a bar is drawn, log lines go through tqdm.write so neither breaks the other;
    # without one (logs, CI, progress off) the logging setup is left exactly as it is.
    return nullcontext() if bar.disable else logging_redirect_tqdm()


def run_from_source(params: IngestParams, paths: Paths, *, progress: bool) -> IngestReport:
    """Run :func:`run_ingest` against ``ingest.source``: the live arXiv API (papers link to
    their abstract pages), or the offline mirror served on 127.0.0.1 for the length of the
    run (papers link where its listing says: a Stacks chapter to its source)."""
    if params.source == "arxiv":
        with ArxivClient.from_params(params) as client:
            return run_ingest(params, paths, client=client, progress=progress, link=abstract_page)
    # Imported here: only the sample source needs the mirror, and ingest reaches it only
    # through its server, harvested like arXiv.
    from pipelines.mirror.server import serving

    with (
        serving(paths.mirror) as base_url,
        # The mirror is local: no need to keep arXiv's 3 s between requests.
        ArxivClient.from_params(params, base_url=base_url, delay_seconds=0.0) as client,
    ):
        return run_ingest(params, paths, client=client, progress=progress, link=listed_source)
