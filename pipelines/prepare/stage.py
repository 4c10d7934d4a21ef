"""The ``prepare`` stage: raw store → cleaned passages and statements in Parquet.

Reads ``data/raw/<paper>/v<n>/meta.json`` (and ``source.tex``), keeps the latest version
of each paper, and writes ``data/processed/{papers,chunks,statements}.parquet`` (the
schemas are :data:`PAPERS_SCHEMA`, :data:`CHUNKS_SCHEMA`, :data:`STATEMENTS_SCHEMA`)
plus ``metrics/prepare.json``. The LaTeX rules live in :mod:`pipelines.latex`.

* A paper whose latest version is withdrawn is left out (and counted).
* An abstract-only paper gets exactly one passage: its (cleaned) abstract, whatever
  its length.
* A paper whose source cannot be used (missing, binary, nothing left after cleaning)
  goes to ``data/quarantine/prepare/`` with the reason; the run goes on.

Incremental: the previous outputs are the cache. They carry, in their Parquet schema
metadata, a fingerprint of the cleaner version and the chunking knobs; a paper whose
(paper_id, version, content_hash) is already in them under the same fingerprint is
copied over, not redone. A paper quarantined earlier under the same fingerprint and
hash is counted again without redoing it. So a nightly run with 1 % new papers costs
a scan of the raw store's metadata and hashes, 1 % of the cleaning and one rewrite of
the tables; a run with nothing new leaves the tables untouched.

Counts add up: ``papers_in = prepared + reused + quarantined + withdrawn`` and
``folders_seen = papers_in + superseded + invalid_meta``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type information
import pyarrow.compute as pc  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
from tqdm import tqdm  # type: ignore[import-untyped]  # no stubs pinned (types-tqdm)

from pipelines.common.config import ConfigError, PrepareParams, add_config_arguments, load_params
from pipelines.common.io import (
    atomic_output,
    ensure_quarantine,
    quarantine,
    read_json,
    safe_name,
    write_json,
)
from pipelines.common.paths import Paths
from pipelines.prepare import latex

STAGE = "prepare"
SOURCE_KINDS = ("tex", "abstract_only", "withdrawn")

PAPERS_SCHEMA = pa.schema(
    [
        ("paper_id", pa.string()),
        ("version", pa.int64()),
        ("title", pa.string()),
        ("abstract", pa.string()),
        ("authors", pa.list_(pa.string())),
        ("categories", pa.list_(pa.string())),
        ("primary_category", pa.string()),
        ("published", pa.string()),
        ("updated", pa.string()),
        ("source_kind", pa.string()),
        ("content_hash", pa.string()),
        ("n_chunks", pa.int64()),
        ("n_statements", pa.int64()),
    ]
)
CHUNKS_SCHEMA = pa.schema(
    [
        ("chunk_id", pa.string()),
        ("paper_id", pa.string()),
        ("version", pa.int64()),
        ("chunk_index", pa.int64()),
        ("section", pa.string()),
        ("text", pa.string()),
    ]
)
STATEMENTS_SCHEMA = pa.schema(
    [
        ("statement_id", pa.string()),
        ("paper_id", pa.string()),
        ("version", pa.int64()),
        ("kind", pa.string()),
        ("name", pa.string()),
        ("label", pa.string()),
        ("text", pa.string()),
    ]
)

FINGERPRINT_KEY = b"mathembed.prepare.fingerprint"
RUN_KEY = b"mathembed.prepare.run"
# Below this many papers to clean, a process pool costs more than it saves.
MIN_PAPERS_FOR_POOL = 400
POOL_BATCH = 256  # papers handed to the pool at a time (bounds memory)
HASH_THREADS = 4


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

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class RawPaper:
    """One version folder of the raw store, with its validated metadata."""

    paper_id: str
    version: int
    folder: Path
    meta: dict[str, Any]

    @property
    def key(self) -> str:
        return f"{self.paper_id}v{self.version}"

    @property
    def source_kind(self) -> str:
        return str(self.meta["source_kind"])


@dataclass(frozen=True)
class PaperOutput:
    """Everything ``prepare`` writes for one paper (or why it could not)."""

    paper: dict[str, Any]
    chunks: tuple[latex.Chunk, ...]
    statements: tuple[latex.Statement, ...]
    problems: tuple[str, ...]
    fatal: str | None
    short_chunks_dropped: int = 0


# --------------------------------------------------------------------------- pure parts


def fingerprint(params: PrepareParams) -> str:
    """What the outputs depend on besides the input: the cleaner and the chunking knobs."""
    text = (
        f"cleaner={latex.CLEANER_VERSION};chunk_chars={params.chunk_chars};"
        f"overlap_chars={params.overlap_chars};min_chunk_chars={params.min_chunk_chars}"
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def validate_params(params: PrepareParams) -> None:
    if not (
        params.chunk_chars >= 1
        and 0 <= params.overlap_chars < params.chunk_chars
        and 0 <= params.min_chunk_chars <= params.chunk_chars
    ):
        raise ConfigError(
            "params.yaml prepare: need chunk_chars >= 1, 0 <= overlap_chars < chunk_chars and "
            f"0 <= min_chunk_chars <= chunk_chars; got {params}"
        )


def chunk_id(paper_id: str, version: int, index: int) -> str:
    return f"{paper_id}v{version}#c{index:04d}"


def statement_id(paper_id: str, version: int, index: int) -> str:
    return f"{paper_id}v{version}#s{index:03d}"


def validate_meta(meta: Any, folder: Path) -> dict[str, Any]:
    """Check a ``meta.json`` against the raw-store contract; raise ValueError naming the fault."""
    if not isinstance(meta, dict):
        raise ValueError("meta.json is not a JSON object")
    paper_id = meta.get("paper_id")
    version = meta.get("version")
    if not isinstance(paper_id, str) or not paper_id:
        raise ValueError("meta.json has no paper_id string")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"meta.json version {version!r} is not an integer >= 1")
    if meta.get("source_kind") not in SOURCE_KINDS:
        raise ValueError(f"meta.json source_kind {meta.get('source_kind')!r} not in {SOURCE_KINDS}")
    expected = (safe_name(paper_id), f"v{version}")
    if (folder.parent.name, folder.name) != expected:
        raise ValueError(
            f"meta.json says {paper_id}v{version} but lies in {folder.parent.name}/{folder.name}"
        )
    for key in ("authors", "categories"):
        value = meta.get(key) or []
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ValueError(f"meta.json {key} is not a list of strings")
    for key in ("title", "abstract", "primary_category", "published", "updated"):
        value = meta.get(key)
        if value is not None and not isinstance(value, str):
            raise ValueError(f"meta.json {key} is not a string")
    return meta


def paper_row(raw: RawPaper, content_hash: str, n_chunks: int, n_statements: int) -> dict[str, Any]:
    meta = raw.meta
    return {
        "paper_id": raw.paper_id,
        "version": raw.version,
        "title": latex.clean_inline(meta.get("title") or ""),
        "abstract": latex.clean_paragraphs(meta.get("abstract") or ""),
        "authors": list(meta.get("authors") or []),
        "categories": list(meta.get("categories") or []),
        "primary_category": meta.get("primary_category") or "",
        "published": meta.get("published") or "",
        "updated": meta.get("updated") or "",
        "source_kind": raw.source_kind,
        "content_hash": content_hash,
        "n_chunks": n_chunks,
        "n_statements": n_statements,
    }


def prepare_paper(
    raw: RawPaper, source: bytes | None, content_hash: str, params: PrepareParams
) -> PaperOutput:
    """Clean one paper (``source`` is ``source.tex``'s bytes, None when abstract-only)."""
    if raw.source_kind == "abstract_only":
        abstract = latex.clean_paragraphs(raw.meta.get("abstract") or "")
        row = paper_row(raw, content_hash, 1, 0)
        if not abstract:
            return PaperOutput(row, (), (), (), "abstract-only paper with an empty abstract")
        return PaperOutput(row, (latex.Chunk("", abstract),), (), (), None)
    if source is None:
        return PaperOutput(paper_row(raw, content_hash, 0, 0), (), (), (), "source.tex missing")
    document = latex.prepare_document(
        source.decode("utf-8", errors="replace"),
        chunk_chars=params.chunk_chars,
        overlap_chars=params.overlap_chars,
        min_chunk_chars=params.min_chunk_chars,
    )
    row = paper_row(raw, content_hash, len(document.chunks), len(document.statements))
    return PaperOutput(
        row,
        document.chunks,
        document.statements,
        document.problems,
        document.fatal,
        document.dropped_short,
    )


# --------------------------------------------------------------------------- the raw store


def scan_raw_store(raw_dir: Path) -> tuple[list[RawPaper], list[tuple[Path, str]], int]:
    """All complete version folders: (valid ones, (folder, reason) for invalid ones, count).

    A folder without ``meta.json`` is still being written by ingest and is ignored.
    (os.scandir and plain strings rather than Path.glob: this runs over every paper of
    the store on every nightly run.)
    """
    valid: list[RawPaper] = []
    invalid: list[tuple[Path, str]] = []
    seen = 0
    for paper_dir in _sorted_dirs(str(raw_dir)):
        for version_dir in _sorted_dirs(paper_dir):
            if not os.path.basename(version_dir).startswith("v"):
                continue
            meta_path = os.path.join(version_dir, "meta.json")
            try:
                with open(meta_path, "rb") as handle:
                    data = json.loads(handle.read())
            except FileNotFoundError:
                continue  # incomplete: ingest writes meta.json last
            except (OSError, ValueError) as error:
                seen += 1
                invalid.append((Path(version_dir), f"{meta_path}: {error}"))
                continue
            seen += 1
            folder = Path(version_dir)
            try:
                meta = validate_meta(data, folder)
            except ValueError as error:
                invalid.append((folder, f"{meta_path}: {error}"))
                continue
            valid.append(RawPaper(meta["paper_id"], meta["version"], folder, meta))
    return valid, invalid, seen


def _sorted_dirs(folder: str) -> list[str]:
    try:
        with os.scandir(folder) as entries:
            return sorted(entry.path for entry in entries if entry.is_dir())
    except FileNotFoundError:
        return []


def latest_versions(papers: Iterable[RawPaper]) -> list[RawPaper]:
    """The newest version of each paper, sorted by paper id."""
    latest: dict[str, RawPaper] = {}
    for paper in papers:
        current = latest.get(paper.paper_id)
        if current is None or paper.version > current.version:
            latest[paper.paper_id] = paper
    return [latest[paper_id] for paper_id in sorted(latest)]


def content_hash(raw: RawPaper) -> str:
    """sha256 of ``source.tex`` (of the abstract when abstract-only; of nothing if missing)."""
    if raw.source_kind == "abstract_only":
        abstract = raw.meta.get("abstract") or ""
        return hashlib.sha256(abstract.encode("utf-8")).hexdigest()
    try:
        data = (raw.folder / "source.tex").read_bytes()
    except FileNotFoundError:
        data = b""
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- previous outputs


@dataclass
class PreviousOutputs:
    """The last run's outputs, usable as a cache when written under the same fingerprint.

    Only the small papers table is read up front; the passages and statements are read
    when some of them are needed (not at all when nothing changed).
    """

    papers: pa.Table
    chunks_path: Path
    statements_path: Path
    hashes: dict[str, tuple[int, str]]  # paper_id → (version, content_hash)

    def tables(self) -> tuple[pa.Table, pa.Table, pa.Table]:
        chunks = pq.read_table(self.chunks_path)
        statements = pq.read_table(self.statements_path)
        if not (
            chunks.schema.remove_metadata().equals(CHUNKS_SCHEMA)
            and statements.schema.remove_metadata().equals(STATEMENTS_SCHEMA)
        ):
            raise pa.ArrowInvalid(f"{self.chunks_path.parent}: unexpected schema")
        return self.papers, chunks, statements


OUTPUT_FILES = ("papers.parquet", "chunks.parquet", "statements.parquet")


def load_previous(processed: Path, expected_fingerprint: str) -> PreviousOutputs | None:
    """The previous outputs if all three are there, from one run, with this fingerprint."""
    paths = [processed / name for name in OUTPUT_FILES]
    if not all(path.is_file() for path in paths):
        return None
    try:
        metadata = [pq.read_schema(path).metadata or {} for path in paths]
        runs = {meta.get(RUN_KEY) for meta in metadata}
        fingerprints = {meta.get(FINGERPRINT_KEY) for meta in metadata}
        if len(runs) != 1 or None in runs or fingerprints != {expected_fingerprint.encode()}:
            return None  # another cleaner/knobs, or a run that died between two files
        papers = pq.read_table(paths[0])
        if not papers.schema.remove_metadata().equals(PAPERS_SCHEMA):
            return None
    except (OSError, pa.ArrowException):
        return None
    hashes = {
        paper_id: (version, digest)
        for paper_id, version, digest in zip(
            papers["paper_id"].to_pylist(),
            papers["version"].to_pylist(),
            papers["content_hash"].to_pylist(),
            strict=True,
        )
    }
    return PreviousOutputs(papers, paths[1], paths[2], hashes)


def _quarantined_before(paths: Paths, raw: RawPaper, digest: str, current_fingerprint: str) -> bool:
    record_path = paths.quarantine / STAGE / f"{safe_name(raw.key)}.json"
    if not record_path.is_file():
        return False
    try:
        details = read_json(record_path).get("details", {})
    except (OSError, ValueError, AttributeError):
        return False
    return bool(
        details.get("content_hash") == digest and details.get("fingerprint") == current_fingerprint
    )


# --------------------------------------------------------------------------- the stage


@dataclass(frozen=True)
class _Job:
    raw: RawPaper
    content_hash: str


def _run_job(job: _Job, params: PrepareParams) -> PaperOutput:
    """Worker entry: read the source (again: cheaper than shipping it) and clean it."""
    source = None
    if job.raw.source_kind == "tex":
        try:
            source = (job.raw.folder / "source.tex").read_bytes()
        except FileNotFoundError:
            source = None
    return prepare_paper(job.raw, source, job.content_hash, params)


def _run_batch(jobs: Sequence[_Job], params: PrepareParams) -> list[PaperOutput]:
    return [_run_job(job, params) for job in jobs]


def _outputs(jobs: list[_Job], params: PrepareParams, workers: int) -> Iterator[PaperOutput]:
    """Clean ``jobs`` in order, in a process pool when there are enough of them."""
    if workers <= 1 or len(jobs) < MIN_PAPERS_FOR_POOL:
        for job in jobs:
            yield _run_job(job, params)
        return
    # spawn, not fork: the parent may hold threads (tqdm's monitor) that fork would copy.
    context = multiprocessing.get_context("spawn")
    batch = max(1, min(POOL_BATCH, len(jobs) // (4 * workers) or 1))
    batches = [jobs[start : start + batch] for start in range(0, len(jobs), batch)]
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as executor:
        # Executor.map keeps the input order, so the output is deterministic.
        for outputs in executor.map(_run_batch, batches, [params] * len(batches)):
            yield from outputs


class _Tables:
    """Rows of the three tables, collected column by column and turned into Arrow in batches.

    Batches keep the peak memory near the size of the Arrow data, not that of millions of
    Python strings.
    """

    BATCH_PAPERS = 500

    def __init__(self) -> None:
        self._parts: list[tuple[pa.Table, pa.Table, pa.Table]] = []
        self._reset()

    def _reset(self) -> None:
        self.papers: dict[str, list[Any]] = {name: [] for name in PAPERS_SCHEMA.names}
        self.chunks: dict[str, list[Any]] = {name: [] for name in CHUNKS_SCHEMA.names}
        self.statements: dict[str, list[Any]] = {name: [] for name in STATEMENTS_SCHEMA.names}

    def add(self, output: PaperOutput) -> None:
        row = output.paper
        paper_id, version = row["paper_id"], row["version"]
        for name, value in row.items():
            self.papers[name].append(value)
        for index, chunk in enumerate(output.chunks):
            self.chunks["chunk_id"].append(chunk_id(paper_id, version, index))
            self.chunks["paper_id"].append(paper_id)
            self.chunks["version"].append(version)
            self.chunks["chunk_index"].append(index)
            self.chunks["section"].append(chunk.section)
            self.chunks["text"].append(chunk.text)
        for index, statement in enumerate(output.statements):
            self.statements["statement_id"].append(statement_id(paper_id, version, index))
            self.statements["paper_id"].append(paper_id)
            self.statements["version"].append(version)
            self.statements["kind"].append(statement.kind)
            self.statements["name"].append(statement.name)
            self.statements["label"].append(statement.label)
            self.statements["text"].append(statement.text)
        if len(self.papers["paper_id"]) >= self.BATCH_PAPERS:
            self._flush()

    def _flush(self) -> None:
        self._parts.append(
            (
                pa.table(self.papers, schema=PAPERS_SCHEMA),
                pa.table(self.chunks, schema=CHUNKS_SCHEMA),
                pa.table(self.statements, schema=STATEMENTS_SCHEMA),
            )
        )
        self._reset()

    def tables(self) -> tuple[pa.Table, pa.Table, pa.Table]:
        self._flush()
        papers, chunks, statements = zip(*self._parts, strict=True)
        return (
            pa.concat_tables(papers),
            pa.concat_tables(chunks),
            pa.concat_tables(statements),
        )


def _reused_rows(previous: PreviousOutputs, paper_ids: list[str]) -> tuple[pa.Table, ...]:
    tables = previous.tables()
    if len(paper_ids) == previous.papers.num_rows:
        return tables  # every previous paper is kept: no filtering copy
    value_set = pa.array(paper_ids, type=pa.string())
    return tuple(table.filter(pc.is_in(table["paper_id"], value_set=value_set)) for table in tables)


def _by_paper(table: pa.Table, keys: list[tuple[str, str]]) -> pa.Table:
    """``table`` ordered by paper id (rows of one paper keep their order).

    Reused rows and new rows are each in order already, and new papers usually sort
    after the old ones, so the (copying) sort is skipped when the order already holds.
    """
    ids = table["paper_id"]
    if table.num_rows < 2 or pc.all(pc.less_equal(ids[:-1], ids[1:])).as_py():
        return table
    return table.sort_by(keys)


def _write_table(path: Path, table: pa.Table, metadata: dict[bytes, bytes]) -> None:
    with atomic_output(path, "wb") as handle:
        pq.write_table(table.replace_schema_metadata(metadata), handle)


@dataclass
class _Plan:
    """What a run has to do: papers to clean, papers to copy over, papers skipped."""

    jobs: list[_Job]
    reused: list[_Job]
    withdrawn: int
    quarantined_before: int


def _plan(
    latest: list[RawPaper],
    previous: PreviousOutputs | None,
    paths: Paths,
    current_fingerprint: str,
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
        hashed = [_Job(raw, digest) for raw, digest in zip(candidates, digests, strict=True)]
    plan = _Plan([], [], len(latest) - len(candidates), 0)
    for job in hashed:
        raw = job.raw
        if previous is not None and previous.hashes.get(raw.paper_id) == (
            raw.version,
            job.content_hash,
        ):
            plan.reused.append(job)
        elif _quarantined_before(paths, raw, job.content_hash, current_fingerprint):
            plan.quarantined_before += 1
        else:
            plan.jobs.append(job)
    return plan


@dataclass
class _Cleaned:
    tables: _Tables
    prepared: int = 0
    quarantined: int = 0
    short_chunks_dropped: int = 0
    with_problems: int = 0


def _clean(
    jobs: list[_Job],
    params: PrepareParams,
    paths: Paths,
    current_fingerprint: str,
    workers: int,
    progress: bool,
) -> _Cleaned:
    """Clean ``jobs``; quarantine the unusable ones; collect the rows of the others."""
    cleaned = _Cleaned(_Tables())
    outputs = tqdm(
        _outputs(jobs, params, workers),
        total=len(jobs),
        desc="prepare: cleaning",
        unit="paper",
        disable=None if progress else True,
    )
    for job, output in zip(jobs, outputs, strict=True):
        cleaned.with_problems += bool(output.problems)
        if output.fatal is not None:
            cleaned.quarantined += 1
            quarantine(
                paths.quarantine,
                STAGE,
                job.raw.key,
                output.fatal,
                details={
                    "paper_id": job.raw.paper_id,
                    "version": job.raw.version,
                    "folder": str(job.raw.folder),
                    "content_hash": job.content_hash,
                    "fingerprint": current_fingerprint,
                    "problems": list(output.problems),
                },
            )
            continue
        cleaned.prepared += 1
        cleaned.short_chunks_dropped += output.short_chunks_dropped
        cleaned.tables.add(output)
    return cleaned


def _write_outputs(
    processed: Path, papers: pa.Table, chunks: pa.Table, statements: pa.Table, fingerprint: str
) -> None:
    """Write the three tables, each atomically, tagged with the fingerprint and a run token.

    The run token (a hash of the papers written) is the same in all three files only when
    they come from one run, so outputs of a run killed between two writes are not reused.
    """
    run_token = hashlib.sha256(
        "\n".join(
            f"{paper_id}v{version}:{digest}"
            for paper_id, version, digest in zip(
                papers["paper_id"].to_pylist(),
                papers["version"].to_pylist(),
                papers["content_hash"].to_pylist(),
                strict=True,
            )
        ).encode()
    ).hexdigest()
    metadata = {FINGERPRINT_KEY: fingerprint.encode(), RUN_KEY: run_token.encode()}
    _write_table(processed / "chunks.parquet", chunks, metadata)
    _write_table(processed / "statements.parquet", statements, metadata)
    _write_table(processed / "papers.parquet", papers, metadata)


def run_prepare(
    params: PrepareParams, paths: Paths, *, progress: bool = True, workers: int | None = None
) -> PrepareReport:
    """Run the stage once over ``paths.raw``; see the module docstring.

    ``workers`` (default: one per CPU) processes clean the papers when there are at least
    MIN_PAPERS_FOR_POOL of them. The pool uses the ``spawn`` start method, so a script
    that calls this with workers > 1 needs the usual ``if __name__ == "__main__":`` guard.
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
    plan = _plan(latest, previous, paths, current_fingerprint, progress)
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
        write_json(paths.metrics / "prepare.json", report.as_dict())
        return report

    kept: tuple[pa.Table, ...] = ()
    if previous is not None and plan.reused:
        try:
            kept = _reused_rows(previous, [job.raw.paper_id for job in plan.reused])
        except (OSError, pa.ArrowException):
            # Unreadable previous passages: clean those papers again instead.
            plan.jobs = sorted(plan.jobs + plan.reused, key=lambda job: job.raw.paper_id)
            plan.reused = []
    worker_count = workers if workers is not None else (os.cpu_count() or 1)
    cleaned = _clean(plan.jobs, params, paths, current_fingerprint, worker_count, progress)

    parts = [cleaned.tables.tables()]
    if kept:
        parts.insert(0, (kept[0], kept[1], kept[2]))
    papers = _by_paper(pa.concat_tables([part[0] for part in parts]), [("paper_id", "ascending")])
    chunks = _by_paper(
        pa.concat_tables([part[1] for part in parts]),
        [("paper_id", "ascending"), ("chunk_index", "ascending")],
    )
    # pyarrow's sort is stable: statements keep their order within a paper.
    statements = _by_paper(
        pa.concat_tables([part[2] for part in parts]), [("paper_id", "ascending")]
    )
    _write_outputs(paths.processed, papers, chunks, statements, current_fingerprint)

    report = PrepareReport(
        **counts,
        prepared=cleaned.prepared,
        reused=len(plan.reused),
        quarantined=plan.quarantined_before + cleaned.quarantined,
        chunks=chunks.num_rows,
        statements=statements.num_rows,
        short_chunks_dropped=cleaned.short_chunks_dropped,
        papers_with_problems=cleaned.with_problems,
    )
    write_json(paths.metrics / "prepare.json", report.as_dict())
    return report


# --------------------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pipelines.prepare",
        description=(
            "Clean the raw store's LaTeX into passages and statements: "
            "data/raw → data/processed/{papers,chunks,statements}.parquet and "
            "metrics/prepare.json. Papers already prepared (same id, version and "
            "content hash, same cleaner and knobs) are reused, not redone."
        ),
    )
    add_config_arguments(parser)
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="processes for cleaning (default: one per CPU; 1 = no pool)",
    )
    args = parser.parse_args(argv)
    try:
        params = load_params(args.params).prepare
        report = run_prepare(params, Paths(args.root), workers=args.workers)
    except ConfigError as error:
        print(f"prepare: {error}", file=sys.stderr)
        return 2
    print(
        f"prepare: {report.papers_in} papers: {report.prepared} prepared, {report.reused} "
        f"reused, {report.quarantined} quarantined, {report.withdrawn} withdrawn; "
        f"{report.chunks} chunks, {report.statements} statements"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
