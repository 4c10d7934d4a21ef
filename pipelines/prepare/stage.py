"""The ``prepare`` stage: raw store → cleaned passages and statements in Parquet.

Reads ``data/raw/<paper>/v<n>/meta.json`` (and ``source.tex``), keeps the latest version
of each paper, and writes ``data/processed/{papers,chunks,statements}.parquet`` (their
schemas are in :mod:`pipelines.common.tables`) plus ``metrics/prepare.json``. The LaTeX
rules live in :mod:`pipelines.prepare.cleaner`; reading the raw store in
:mod:`~pipelines.prepare.raw_store`, cleaning papers in :mod:`~pipelines.prepare.cleaning`,
the tables and the cache in :mod:`~pipelines.prepare.outputs`.

* A paper whose latest version is withdrawn is left out (and counted).
* An abstract-only paper gets exactly one passage: its (cleaned) abstract, whatever
  its length.
* A paper whose source cannot be used (missing, binary, nothing left after cleaning)
  goes to ``data/quarantine/prepare/`` with the reason; the run goes on.
* So does a paper whose cleaning raises, kills its worker or runs past
  ``prepare.paper_timeout_seconds``: each paper is cleaned in a worker process that is
  stopped at the budget (:func:`~pipelines.prepare.cleaning.clean_in_order`). The budget
  is recorded with the paper, and a later run with a larger one cleans it again.
* Once the cleaning has taken ``prepare.stage_budget_seconds``, the papers not started
  are deferred: counted, not quarantined, left out of the outputs, and cleaned by the
  next run (issue 29: sixty papers that each run out of time would take four hours).

Incremental: the previous outputs are the cache. They carry, in their Parquet schema
metadata, a fingerprint of the cleaner version and the chunking knobs; a paper whose
(paper_id, version, content_hash) is already in them under the same fingerprint is
copied over, not redone. A paper quarantined earlier under the same fingerprint and
hash is counted again without redoing it (unless it ran out of a time budget that has grown
since). So a nightly run with 1 % new papers costs
a scan of the raw store's metadata and hashes, 1 % of the cleaning and one rewrite of
the tables; a run with nothing new leaves the tables untouched.

Counts add up: ``papers_in = prepared + reused + quarantined + withdrawn + deferred`` and
``folders_seen = papers_in + superseded + invalid_meta``.
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type information
import pyarrow.compute as pc  # type: ignore[import-untyped]
from tqdm import tqdm  # type: ignore[import-untyped]  # no stubs pinned (types-tqdm)

from pipelines.common.config import ConfigError, PrepareParams
from pipelines.common.io import (
    ensure_quarantine,
    quarantine,
    quarantine_record_path,
    read_json,
    write_json,
)
from pipelines.common.isolation import Deferred, Failure
from pipelines.common.paths import Paths
from pipelines.prepare.cleaning import Job, clean_in_order
from pipelines.prepare.outputs import (
    PreviousOutputs,
    Rows,
    by_paper,
    fingerprint,
    load_previous,
    reused_rows,
    write_outputs,
)
from pipelines.prepare.raw_store import RawPaper, content_hash, latest_versions, scan_raw_store

STAGE = "prepare"
HASH_THREADS = 4
#: The knob a paper that ran out of time is recorded with (so a larger one retries it).
TIME_BUDGET = "prepare.paper_timeout_seconds"

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PrepareReport:
    """The counts of one run (written to ``metrics/prepare.json``)."""

    folders_seen: int
    invalid_meta: int
    superseded: int
    papers_in: int
    prepared: int
    reused: int
    quarantined: int
    withdrawn: int
    chunks: int
    statements: int
    short_chunks_dropped: int
    papers_with_problems: int
    # Papers not cleaned because the run had spent prepare.stage_budget_seconds: the next
    # run cleans them.
    deferred: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def validate_params(params: PrepareParams) -> None:
    """Raise ConfigError unless the chunking knobs can be used together."""
    if not (
        params.chunk_chars >= 1
        and 0 <= params.overlap_chars < params.chunk_chars
        and 0 <= params.min_chunk_chars <= params.chunk_chars
    ):
        raise ConfigError(
            "params.yaml prepare: need chunk_chars >= 1, 0 <= overlap_chars < chunk_chars and "
            f"0 <= min_chunk_chars <= chunk_chars; got {params}"
        )


def budget_raised(details: dict[str, Any], params: PrepareParams) -> bool:
    """Whether the time budget a paper ran out of (its record's ``details``) is larger now."""
    refused_at = details.get("limit_value")
    return (
        details.get("limit") == TIME_BUDGET
        and isinstance(refused_at, int | float)
        and params.paper_timeout_seconds > refused_at
    )


def _quarantined_before(
    paths: Paths, raw: RawPaper, digest: str, current_fingerprint: str, params: PrepareParams
) -> bool:
    record_path = quarantine_record_path(paths.quarantine, STAGE, raw.key)
    if not record_path.is_file():
        return False
    try:
        details = read_json(record_path).get("details", {})
    except (OSError, ValueError, AttributeError):
        return False
    return bool(
        details.get("content_hash") == digest
        and details.get("fingerprint") == current_fingerprint
        and not budget_raised(details, params)
    )


@dataclass
class _Plan:
    """What a run has to do: papers to clean, papers to copy over, papers skipped."""

    jobs: list[Job]
    reused: list[Job]
    withdrawn: int
    quarantined_before: int


def _plan(
    latest: list[RawPaper],
    previous: PreviousOutputs | None,
    paths: Paths,
    params: PrepareParams,
    progress: bool,
) -> _Plan:
    candidates = [raw for raw in latest if raw.source_kind != "withdrawn"]
    # Reading and hashing release the GIL: threads make this pass over every paper cheap.
    with ThreadPoolExecutor(max_workers=HASH_THREADS) as hashing:
        digests = tqdm(
            hashing.map(content_hash, candidates),
            total=len(candidates),
            desc="prepare: hashing",
            unit="paper",
            disable=None if progress else True,
        )
        hashed = [Job(raw, digest) for raw, digest in zip(candidates, digests, strict=True)]
    plan = _Plan([], [], len(latest) - len(candidates), 0)
    current_fingerprint = fingerprint(params)
    for job in hashed:
        raw = job.raw
        if previous is not None and previous.hashes.get(raw.paper_id) == (
            raw.version,
            job.content_hash,
        ):
            plan.reused.append(job)
        elif _quarantined_before(paths, raw, job.content_hash, current_fingerprint, params):
            plan.quarantined_before += 1
        else:
            plan.jobs.append(job)
    return plan


def failure_reason(failure: Failure, params: PrepareParams) -> tuple[str, dict[str, Any]]:
    """The quarantine reason of a paper whose cleaning failed, and what to record with it."""
    if failure.kind == "timeout":
        reason = (
            f"cleaning {failure.detail} (params.yaml {TIME_BUDGET}: "
            f"{params.paper_timeout_seconds:g}); a run with a larger budget retries it"
        )
        return reason, {
            "failure": failure.kind,
            "limit": TIME_BUDGET,
            "limit_value": params.paper_timeout_seconds,
        }
    if failure.kind == "died":
        return f"cleaning failed: {failure.detail} (out of memory?)", {"failure": failure.kind}
    return f"cleaning raised {failure.detail}", {"failure": failure.kind}


@dataclass
class _Cleaned:
    rows: Rows
    prepared: int = 0
    quarantined: int = 0
    deferred: int = 0
    short_chunks_dropped: int = 0
    with_problems: int = 0


def _clean(
    jobs: list[Job],
    params: PrepareParams,
    paths: Paths,
    current_fingerprint: str,
    workers: int,
    progress: bool,
) -> _Cleaned:
    """Clean ``jobs``; quarantine the unusable ones; collect the rows of the others."""
    cleaned = _Cleaned(Rows())
    outputs = tqdm(
        clean_in_order(jobs, params, workers),
        total=len(jobs),
        desc="prepare: cleaning",
        unit="paper",
        disable=None if progress else True,
    )
    for job, output in zip(jobs, outputs, strict=True):
        details = {
            "paper_id": job.raw.paper_id,
            "version": job.raw.version,
            "folder": str(job.raw.folder),
            "content_hash": job.content_hash,
            "fingerprint": current_fingerprint,
        }
        if isinstance(output, Deferred):
            # Not quarantined: nothing is wrong with it. A record of an earlier run stands.
            cleaned.deferred += 1
            continue
        if isinstance(output, Failure):
            cleaned.quarantined += 1
            reason, extra = failure_reason(output, params)
            logger.warning("prepare: quarantined %s: %s", job.raw.key, reason)
            quarantine(paths.quarantine, STAGE, job.raw.key, reason, details=details | extra)
            continue
        cleaned.with_problems += bool(output.problems)
        if output.fatal is not None:
            cleaned.quarantined += 1
            details["problems"] = list(output.problems)
            quarantine(paths.quarantine, STAGE, job.raw.key, output.fatal, details=details)
            continue
        # Cleaned now: a record left by an earlier run (one out of time) no longer holds.
        quarantine_record_path(paths.quarantine, STAGE, job.raw.key).unlink(missing_ok=True)
        cleaned.prepared += 1
        cleaned.short_chunks_dropped += output.short_chunks_dropped
        cleaned.rows.add(output)
    return cleaned


def run_prepare(
    params: PrepareParams, paths: Paths, *, progress: bool = True, workers: int | None = None
) -> PrepareReport:
    """Run the stage once over ``paths.raw``; see the module docstring.

    Papers are cleaned in worker processes (:mod:`pipelines.common.isolation`): ``workers``
    of them (default: one per CPU) when there are at least
    :data:`~pipelines.prepare.cleaning.MIN_PAPERS_FOR_POOL` papers, one otherwise. They
    are forked from a ``forkserver``, so a script that calls this needs the usual
    ``if __name__ == "__main__":`` guard.
    """
    validate_params(params)
    ensure_quarantine(paths.quarantine, STAGE)
    current_fingerprint = fingerprint(params)
    found, invalid, folders_seen = scan_raw_store(paths.raw)
    for folder, reason in invalid:
        item = f"{folder.parent.name}/{folder.name}"
        quarantine(paths.quarantine, STAGE, item, f"invalid meta: {reason}")
    latest = latest_versions(found)
    previous = load_previous(paths.processed, current_fingerprint)
    plan = _plan(latest, previous, paths, params, progress)
    counts = {
        "folders_seen": folders_seen,
        "invalid_meta": len(invalid),
        "superseded": len(found) - len(latest),
        "papers_in": len(latest),
        "withdrawn": plan.withdrawn,
    }

    if previous is not None and not plan.jobs and len(plan.reused) == previous.papers.num_rows:
        # Nothing new, nothing gone: the outputs would be rewritten byte for byte.
        report = PrepareReport(
            **counts,
            prepared=0,
            reused=len(plan.reused),
            quarantined=plan.quarantined_before,
            chunks=int(pc.sum(previous.papers["n_chunks"]).as_py() or 0),
            statements=int(pc.sum(previous.papers["n_statements"]).as_py() or 0),
            short_chunks_dropped=0,
            papers_with_problems=0,
        )
        write_json(paths.metric_file(STAGE), report.as_dict())
        return report

    kept: tuple[pa.Table, ...] = ()
    if previous is not None and plan.reused:
        try:
            kept = reused_rows(previous, [job.raw.paper_id for job in plan.reused])
        except (OSError, pa.ArrowException):
            # Unreadable previous passages: clean those papers again instead.
            plan.jobs = sorted(plan.jobs + plan.reused, key=lambda job: job.raw.paper_id)
            plan.reused = []
    worker_count = workers if workers is not None else (os.cpu_count() or 1)
    cleaned = _clean(plan.jobs, params, paths, current_fingerprint, worker_count, progress)

    parts = [cleaned.rows.tables()]
    if kept:
        parts.insert(0, (kept[0], kept[1], kept[2]))
    papers = by_paper(pa.concat_tables([part[0] for part in parts]), [("paper_id", "ascending")])
    chunks = by_paper(
        pa.concat_tables([part[1] for part in parts]),
        [("paper_id", "ascending"), ("chunk_index", "ascending")],
    )
    # pyarrow's sort is stable: statements keep their order within a paper.
    statements = by_paper(
        pa.concat_tables([part[2] for part in parts]), [("paper_id", "ascending")]
    )
    write_outputs(paths.processed, papers, chunks, statements, current_fingerprint)

    report = PrepareReport(
        **counts,
        prepared=cleaned.prepared,
        reused=len(plan.reused),
        quarantined=plan.quarantined_before + cleaned.quarantined,
        chunks=chunks.num_rows,
        statements=statements.num_rows,
        short_chunks_dropped=cleaned.short_chunks_dropped,
        papers_with_problems=cleaned.with_problems,
        deferred=cleaned.deferred,
    )
    if cleaned.deferred:
        logger.warning(
            "prepare: %d papers deferred to the next run: the cleaning took "
            "prepare.stage_budget_seconds (%g s)",
            cleaned.deferred,
            params.stage_budget_seconds,
        )
    write_json(paths.metric_file(STAGE), report.as_dict())
    return report
