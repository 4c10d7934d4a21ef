"""The ingest stage over real HTTP: ArxivClient and run_ingest against the sample MirrorServer.

Every test talks to ``pipelines.mirror.server.MirrorServer`` on 127.0.0.1, serving a
small generated mirror (one paper of every kind, malformed ones included). The client's
``sleep`` is injected, so retries and politeness are asserted on the waits requested,
never by waiting.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import requests
from typer.testing import CliRunner

from pipelines import cli
from pipelines.common import io
from pipelines.common.config import IngestParams
from pipelines.common.paths import Paths
from pipelines.common.raw_layout import RAW_META_FILE as META_FILE
from pipelines.common.raw_layout import is_stored, version_folder
from pipelines.ingest.arxiv.atom import Entry, Feed, RejectedEntry, parse_timestamp
from pipelines.ingest.arxiv.client import (
    CONTACT_ENV,
    FALLBACK_CONTACT,
    ArxivClient,
    Eprint,
    build_user_agent,
    user_agent_for,
)
from pipelines.ingest.arxiv.transport import ArxivError, parse_retry_after
from pipelines.ingest.raw_store import read_watermark
from pipelines.ingest.stage import run_ingest
from pipelines.mirror.corpora.synthetic import generate_mirror
from pipelines.mirror.manifest import SYNTHETIC, Manifest, PaperRecord, read_manifest
from pipelines.mirror.server import MirrorServer

N_PAPERS = 20  # the generator's minimum: one paper of every kind, some revised
SEED = 7
NOW = datetime(2024, 6, 1, tzinfo=UTC)
META_KEYS = {
    "paper_id",
    "version",
    "title",
    "authors",
    "abstract",
    "categories",
    "primary_category",
    "published",
    "updated",
    "comment",
    "source_kind",
    "main_file",
    "source_sha256",
    "encoding",
    "unresolved_includes",
    "fetched_at",
    "url",
}
QUARANTINE_REASONS = {
    "truncated_gzip": "truncated gzip",
    "path_traversal": "path traversal",
    "absolute_path": "absolute path",
    "symlink": "symlink",
    "bomb": "compression bomb",
    "no_tex": "no .tex file",
}


# -- fixtures -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("sample") / "mirror"
    generate_mirror(folder, N_PAPERS, SEED)
    return folder


@pytest.fixture(scope="module")
def manifest(mirror: Path) -> Manifest:
    return read_manifest(mirror, SYNTHETIC)


@pytest.fixture(scope="module")
def all_categories(mirror: Path) -> tuple[str, ...]:
    lines = (mirror / "entries.jsonl").read_text(encoding="utf-8").splitlines()
    return tuple(sorted({cat for line in lines for cat in json.loads(line)["categories"]}))


@pytest.fixture(scope="module")
def params(all_categories: tuple[str, ...]) -> IngestParams:
    return IngestParams(
        source="sample",
        categories=all_categories,
        from_date="2000-01-01",  # the mirror has an old-style paper first submitted in 2005
        max_papers=500,
        page_size=7,  # several pages for 20 papers
        delay_seconds=0.0,
        timeout_seconds=5.0,
        max_retries=3,
        backoff_seconds=0.5,
        max_archive_bytes=5_000_000,  # the bomb inflates to 200 MiB; refuse it early
    )


@pytest.fixture
def paths(tmp_path: Path) -> Paths:
    return Paths(tmp_path / "root")


@pytest.fixture
def server(mirror: Path) -> Iterator[MirrorServer]:
    with MirrorServer(mirror, stall_seconds=2.0) as running:
        yield running


@dataclasses.dataclass
class Waits:
    """Injected ``sleep``: records each requested wait instead of waiting."""

    requested: list[float] = dataclasses.field(default_factory=list)

    def __call__(self, seconds: float) -> None:
        self.requested.append(seconds)


def make_client(
    server: MirrorServer, params: IngestParams, waits: Waits | None = None, **overrides: Any
) -> ArxivClient:
    options: dict[str, Any] = {
        "user_agent": build_user_agent("tests@example.org"),
        "delay_seconds": params.delay_seconds,
        "timeout_seconds": params.timeout_seconds,
        "max_retries": params.max_retries,
        "backoff_seconds": params.backoff_seconds,
        "sleep": waits if waits is not None else Waits(),
        "jitter": lambda: 0.5,  # backoff = base * 1.25, deterministic
    }
    options.update(overrides)
    return ArxivClient(server.base_url, **options)


def latest(manifest: Manifest, at: str | None = None) -> dict[str, PaperRecord]:
    """paper id -> newest version visible at ``at``."""
    newest: dict[str, PaperRecord] = {}
    for record in manifest.versions:
        if at is not None and record.updated > at:
            continue
        if record.paper_id not in newest or record.version > newest[record.paper_id].version:
            newest[record.paper_id] = record
    return newest


def eprint_requests(server: MirrorServer, since: int = 0) -> list[str]:
    return [path for path in server.requests[since:] if path.startswith("/e-print/")]


def stored_ids(raw: Path) -> set[str]:
    return {
        f"{meta['paper_id']}v{meta['version']}"
        for meta in (io.read_json(path) for path in raw.glob(f"*/v*/{META_FILE}"))
    }


def tree_snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def one_of_kind(manifest: Manifest, kind: str) -> PaperRecord:
    newest = latest(manifest)
    return next(r for r in manifest.of_kind(kind) if newest[r.paper_id] == r)


# -- pure helpers of the client -------------------------------------------------------


def test_user_agent_names_the_project_and_the_contact() -> None:
    agent = user_agent_for("https://export.arxiv.org", {CONTACT_ENV: "me@uni.edu"})
    assert agent.startswith("mathembed/")
    assert agent.endswith("(mailto:me@uni.edu)")


def test_missing_contact_warns_for_live_arxiv_only(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pipelines.arxiv.client"):
        local = user_agent_for("http://127.0.0.1:8080", {})
        assert caplog.records == []
        live = user_agent_for("https://export.arxiv.org", {})
    assert FALLBACK_CONTACT in local and FALLBACK_CONTACT in live
    (record,) = caplog.records
    assert CONTACT_ENV in record.getMessage()


def test_parse_retry_after_seconds_and_http_date() -> None:
    now = datetime(2024, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("7", now) == 7.0
    assert parse_retry_after("Mon, 01 Jan 2024 12:00:30 GMT", now) == 30.0
    assert parse_retry_after("Mon, 01 Jan 2024 11:00:00 GMT", now) == 0.0  # in the past
    assert parse_retry_after("soon", now) is None
    assert parse_retry_after(None, now) is None


# -- the client over HTTP -------------------------------------------------------------


def test_listing_paginates_and_returns_latest_versions(
    server: MirrorServer, params: IngestParams, manifest: Manifest
) -> None:
    with make_client(server, params) as client:
        listing = client.list_entries(
            params.categories, datetime(2000, 1, 1, tzinfo=UTC), NOW, page_size=7
        )
    expected = latest(manifest)
    assert {entry.versioned_id for entry in listing.entries} == {
        record.versioned_id for record in expected.values()
    }
    assert listing.total_results == len(expected) == N_PAPERS
    updated = [entry.updated for entry in listing.entries]
    assert updated == sorted(updated)  # oldest first: what the watermark relies on
    queries = [path for path in server.requests if path.startswith("/api/query")]
    assert len(queries) == 3  # 20 entries, 7 per page
    assert "sortBy=lastUpdatedDate" in queries[0] and "sortOrder=ascending" in queries[0]


def test_listing_respects_max_results(server: MirrorServer, params: IngestParams) -> None:
    with make_client(server, params) as client:
        listing = client.list_entries(
            params.categories, datetime(2000, 1, 1, tzinfo=UTC), NOW, page_size=7, max_results=9
        )
    assert len(listing.entries) == 9
    assert [p for p in server.requests if "max_results=2" in p]  # the second page asks for 2


def test_user_agent_is_sent(server: MirrorServer, params: IngestParams) -> None:
    session = requests.Session()
    sent: list[str] = []
    session.hooks["response"].append(
        lambda response, *args, **kwargs: sent.append(response.request.headers["User-Agent"])
    )
    with make_client(server, params, session=session) as client:
        assert client.fetch_eprint("2401.00001", 1) is not None
    session.close()
    assert sent == [build_user_agent("tests@example.org")]
    assert sent[0].startswith("mathembed/") and "(mailto:tests@example.org)" in sent[0]


@pytest.mark.parametrize(
    ("fault", "expected_wait"),
    [
        ("429", 1.0),  # Retry-After: 1 wins over the backoff
        ("503", 1.0),
        ("500", 0.625),  # no Retry-After: backoff 0.5 * 2**0 * (1 + 0.5 * jitter 0.5)
        ("stall", 0.625),  # read timeout
        ("reset", 0.625),  # connection closed without a response
        ("truncate", 0.625),  # half of the body under the full Content-Length
    ],
)
@pytest.mark.parametrize("target", ["listing", "eprint"])
def test_each_fault_is_retried(
    mirror: Path, params: IngestParams, fault: str, expected_wait: float, target: str
) -> None:
    prefix = "/api/query" if target == "listing" else "/e-print/2401.00004v1"
    waits = Waits()
    with (
        MirrorServer(mirror, faults={prefix: [fault]}, stall_seconds=2.0) as server,
        make_client(server, params, waits, timeout_seconds=0.3) as client,
    ):
        if target == "listing":
            listing = client.list_entries(
                params.categories, datetime(2000, 1, 1, tzinfo=UTC), NOW, page_size=50
            )
            assert len(listing.entries) == N_PAPERS
        else:
            eprint = client.fetch_eprint("2401.00004", 1)
            assert eprint is not None
            assert eprint.data == (mirror / "e-print" / "2401.00004v1").read_bytes()
        assert [applied for _, applied in server.faults_applied] == [fault]
        assert len(server.requests) == 2  # the failed request and its retry
    assert waits.requested == [pytest.approx(expected_wait)]


def test_backoff_grows_exponentially(mirror: Path, params: IngestParams) -> None:
    waits = Waits()
    with (
        MirrorServer(mirror, faults={"/e-print/": ["500", "500", "500"]}) as server,
        make_client(server, params, waits) as client,
    ):
        assert client.fetch_eprint("2401.00004", 1) is not None
    assert waits.requested == [pytest.approx(0.625 * 2**n) for n in range(3)]


def test_giving_up_names_the_url_and_the_last_status(mirror: Path, params: IngestParams) -> None:
    waits = Waits()
    faults = {"/e-print/2401.00004v1": ["429", "500", "503", "503"]}
    with (
        MirrorServer(mirror, faults=faults) as server,
        make_client(server, params, waits) as client,
    ):
        with pytest.raises(ArxivError) as caught:
            client.fetch_eprint("2401.00004", 1)
        assert len(server.requests) == params.max_retries + 1
    message = str(caught.value)
    assert "/e-print/2401.00004v1" in message and "HTTP 503" in message
    assert "4 attempt(s)" in message
    assert caught.value.status == 503
    assert waits.requested == [1.0, pytest.approx(1.25), 1.0]  # Retry-After, backoff, Retry-After


def test_an_oversized_body_is_refused_without_retries(
    server: MirrorServer, params: IngestParams
) -> None:
    with (
        make_client(server, params, max_body_bytes=1000) as client,
        pytest.raises(ArxivError, match="exceeds 1000") as caught,
    ):
        client.fetch_eprint("2401.00004", 1)
    assert caught.value.retryable is False
    assert len(server.requests) == 1


def test_missing_and_withdrawn_eprints_are_none(
    server: MirrorServer, params: IngestParams, manifest: Manifest
) -> None:
    withdrawn = manifest.of_kind("withdrawn")[0]
    with make_client(server, params) as client:
        assert client.fetch_eprint("2499.99999", 1) is None
        assert client.fetch_eprint(withdrawn.paper_id, withdrawn.version) is None


def test_old_style_ids_fetch_through_their_slash(
    server: MirrorServer, params: IngestParams, mirror: Path
) -> None:
    with make_client(server, params) as client:
        eprint = client.fetch_eprint("math/0503001", 2)
    assert eprint == Eprint(
        "application/x-eprint-tar", (mirror / "e-print" / "math_0503001v2").read_bytes()
    )
    assert server.requests == ["/e-print/math/0503001v2"]


def test_requests_are_spaced_by_the_polite_delay(
    server: MirrorServer, params: IngestParams
) -> None:
    # A fake clock that only moves when the client sleeps: every gap must be slept.
    moment = [100.0]
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        moment[0] += seconds

    with make_client(
        server, params, delay_seconds=3.0, sleep=sleep, clock=lambda: moment[0]
    ) as client:
        client.list_entries(params.categories, datetime(2000, 1, 1, tzinfo=UTC), NOW, page_size=7)
        client.fetch_eprint("2401.00004", 1)
    assert len(server.requests) == 4
    assert waits == [3.0, 3.0, 3.0]


def test_retry_after_and_politeness_combine(mirror: Path, params: IngestParams) -> None:
    moment = [0.0]
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        moment[0] += seconds

    with (
        MirrorServer(mirror, faults={"/e-print/": ["429"]}) as server,
        make_client(server, params, delay_seconds=3.0, sleep=sleep, clock=lambda: moment[0]) as c,
    ):
        assert c.fetch_eprint("2401.00004", 1) is not None
    # Retry-After says 1 s, but arXiv's 3 s between requests still holds: 1 + 2.
    assert waits == [1.0, 2.0]


# -- run_ingest -----------------------------------------------------------------------


def run(
    server: MirrorServer,
    params: IngestParams,
    paths: Paths,
    waits: Waits | None = None,
    client: ArxivClient | None = None,
) -> Any:
    with client or make_client(server, params, waits) as active:
        return run_ingest(params, paths, client=active, now=NOW, progress=False)


@dataclasses.dataclass(frozen=True)
class FullRun:
    paths: Paths
    report: Any
    eprint_requests: list[str]


@pytest.fixture(scope="module")
def full_run(
    mirror: Path, params: IngestParams, tmp_path_factory: pytest.TempPathFactory
) -> FullRun:
    """One uninterrupted run over the whole mirror, shared by the tests that only read it."""
    paths = Paths(tmp_path_factory.mktemp("full") / "root")
    with MirrorServer(mirror) as server:
        report = run(server, params, paths)
        return FullRun(paths, report, eprint_requests(server))


def test_full_run_stores_every_kind_as_the_contract_says(
    full_run: FullRun, manifest: Manifest, mirror: Path
) -> None:
    paths, report = full_run.paths, full_run.report
    newest = latest(manifest)
    kinds = [record.kind for record in newest.values()]

    counts = report.counts
    assert counts["listed"] == N_PAPERS
    assert counts["listed"] == sum(
        counts[key] for key in ("tex", "abstract_only", "withdrawn", "skipped", "quarantined")
    )
    assert counts["tex"] == sum(kind in ("tex_tar", "tex_gz", "latin1") for kind in kinds)
    assert counts["abstract_only"] == kinds.count("pdf_only")
    assert counts["withdrawn"] == kinds.count("withdrawn")
    assert counts["quarantined"] == sum(kind in QUARANTINE_REASONS for kind in kinds)
    assert counts["skipped"] == 0
    assert io.read_json(paths.metrics / "ingest.json") == report.metrics()

    for record in newest.values():
        folder = version_folder(paths.raw, record.paper_id, record.version)
        if record.kind in QUARANTINE_REASONS:
            assert not folder.exists(), record
            continue
        meta = io.read_json(folder / META_FILE)
        assert set(meta) == META_KEYS
        assert (meta["paper_id"], meta["version"]) == (record.paper_id, record.version)
        assert meta["updated"] == record.updated
        assert meta["fetched_at"] == "2024-06-01T00:00:00Z"
        assert meta["url"] is None  # the synthetic ids look like arXiv's but name no paper
        if record.kind == "withdrawn":
            assert meta["source_kind"] == "withdrawn"
            assert sorted(p.name for p in folder.iterdir()) == [META_FILE]
            continue
        assert record.eprint is not None
        assert (folder / "eprint.bin").read_bytes() == (mirror / record.eprint).read_bytes()
        if record.kind == "pdf_only":
            assert meta["source_kind"] == "abstract_only"
            assert meta["main_file"] is None and meta["source_sha256"] is None
            assert not (folder / "source.tex").exists()
            assert meta["abstract"]
            continue
        source = (folder / "source.tex").read_bytes()
        assert meta["source_kind"] == "tex"
        assert meta["source_sha256"] == io.sha256_hex(source)
        assert meta["encoding"] == ("latin-1" if record.kind == "latin1" else "utf-8")
        assert meta["unresolved_includes"] == []  # every generated \input is in the archive
        text = source.decode("utf-8")
        assert "\\documentclass" in text
        if record.kind == "tex_tar":
            assert meta["main_file"] == record.main_file
            assert "\\input{" not in text and "\\include{" not in text  # all inlined

    # No withdrawn version was requested; every other listed version exactly once.
    requested = full_run.eprint_requests
    assert len(requested) == len(set(requested)) == N_PAPERS - kinds.count("withdrawn")
    assert read_watermark(paths.raw) == max(record.updated for record in newest.values())
    assert not list(paths.root.parent.rglob("evil.tex"))  # nothing escaped the archive


def test_latin1_source_is_stored_as_utf8(full_run: FullRun, manifest: Manifest) -> None:
    paths = full_run.paths
    record = one_of_kind(manifest, "latin1")
    folder = version_folder(paths.raw, record.paper_id, record.version)
    text = (folder / "source.tex").read_text(encoding="utf-8")
    assert any(ord(char) > 127 for char in text)  # the accents survived the round trip


def test_malformed_eprints_are_quarantined_with_reasons(
    full_run: FullRun, manifest: Manifest
) -> None:
    paths = full_run.paths
    records = {record["id"]: record for record in io.quarantined(paths.quarantine, "ingest")}
    for kind, reason in QUARANTINE_REASONS.items():
        version = one_of_kind(manifest, kind)
        record = records.pop(version.versioned_id)
        assert reason in record["reason"], (kind, record["reason"])
        assert record["details"]["retryable"] is False
        payload = paths.quarantine / "ingest" / record["payload"]
        assert io.sha256_hex(payload.read_bytes()) == record["payload_sha256"]
    assert records == {}  # nothing else was quarantined


def test_second_run_refetches_nothing(
    full_run: FullRun, server: MirrorServer, params: IngestParams, paths: Paths
) -> None:
    shutil.copytree(full_run.paths.root, paths.root)
    first = full_run.report
    before = tree_snapshot(paths.raw)
    second = run(server, params, paths)
    assert eprint_requests(server) == []
    assert second.counts["skipped"] == second.counts["listed"] > 0
    assert tree_snapshot(paths.raw) == before
    assert second.watermark_after == first.watermark_after

    # Even with the watermark gone, so that everything is listed again, nothing is
    # fetched: stored versions and versions rejected for good are both skipped.
    (paths.raw / "watermark.json").unlink()
    before = tree_snapshot(paths.raw)
    third = run(server, params, paths)
    assert eprint_requests(server) == []
    assert third.counts["listed"] == third.counts["skipped"] == N_PAPERS
    assert third.counts["quarantined"] == 0
    assert third.watermark_after == first.watermark_after
    before["watermark.json"] = (paths.raw / "watermark.json").read_bytes()
    assert tree_snapshot(paths.raw) == before


class CrashingClient(ArxivClient):
    """Dies (as a killed process would) on the ``crash_at``-th e-print download."""

    def __init__(self, base_url: str, *, crash_at: int, **options: Any) -> None:
        super().__init__(base_url, **options)
        self.crash_at = crash_at
        self.downloads = 0

    def fetch_eprint(self, paper_id: str, version: int) -> Eprint | None:
        self.downloads += 1
        if self.downloads == self.crash_at:
            raise KeyboardInterrupt("simulated kill")
        return super().fetch_eprint(paper_id, version)


def test_killed_run_resumes_without_refetching_or_skipping(
    full_run: FullRun, server: MirrorServer, params: IngestParams, paths: Paths
) -> None:
    crashing = CrashingClient(
        server.base_url,
        crash_at=8,
        user_agent="t",
        delay_seconds=0.0,
        timeout_seconds=5.0,
        max_retries=0,
        backoff_seconds=0.0,
    )
    with pytest.raises(KeyboardInterrupt):
        run(server, params, paths, client=crashing)
    stored_before = stored_ids(paths.raw)
    assert 0 < len(stored_before) < N_PAPERS
    watermark = read_watermark(paths.raw)
    assert watermark is not None

    mark = len(server.requests)
    resumed = run(server, params, paths)
    refetched = {path.removeprefix("/e-print/") for path in eprint_requests(server, mark)}
    assert refetched.isdisjoint(stored_before)

    # The result is exactly what one uninterrupted run gives.
    clean = full_run.paths
    assert stored_ids(paths.raw) == stored_ids(clean.raw)
    assert resumed.watermark_after == read_watermark(clean.raw)
    quarantined_ids = {r["id"] for r in io.quarantined(paths.quarantine, "ingest")}
    assert quarantined_ids == {r["id"] for r in io.quarantined(clean.quarantine, "ingest")}


def test_a_folder_without_meta_is_redone(
    server: MirrorServer,
    params: IngestParams,
    paths: Paths,
    manifest: Manifest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    victim = one_of_kind(manifest, "tex_tar")
    real_write_json = io.write_json

    def dying_write_json(path: Path, value: Any) -> None:
        if path.name == META_FILE and value["paper_id"] == victim.paper_id:
            raise KeyboardInterrupt("killed between source.tex and meta.json")
        real_write_json(path, value)

    monkeypatch.setattr(io, "write_json", dying_write_json)
    with pytest.raises(KeyboardInterrupt):
        run(server, params, paths)
    monkeypatch.setattr(io, "write_json", real_write_json)
    folder = version_folder(paths.raw, victim.paper_id, victim.version)
    assert (folder / "source.tex").exists() and not is_stored(
        paths.raw, victim.paper_id, victim.version
    )

    mark = len(server.requests)
    run(server, params, paths)
    assert f"/e-print/{victim.versioned_id}" in eprint_requests(server, mark)
    assert is_stored(paths.raw, victim.paper_id, victim.version)


def test_watermark_and_new_papers_on_the_next_night(
    server: MirrorServer, params: IngestParams, paths: Paths, manifest: Manifest
) -> None:
    first_night = "2024-02-01T00:00:00Z"
    server.set_now(first_night)
    first = run(server, params, paths)
    seen_first = latest(manifest, first_night)
    assert stored_ids(paths.raw) | {
        r["id"] for r in io.quarantined(paths.quarantine, "ingest")
    } == {record.versioned_id for record in seen_first.values()}
    assert first.watermark_after == max(record.updated for record in seen_first.values())

    server.set_now("2024-04-01T00:00:00Z")
    mark = len(server.requests)
    second = run(server, params, paths)
    (listing_query, *_) = [p for p in server.requests[mark:] if p.startswith("/api/query")]
    watermark_minute = parse_timestamp(first.watermark_after).strftime("%Y%m%d%H%M")
    assert f"lastUpdatedDate%3A%5B{watermark_minute}+TO+" in listing_query
    new = {
        record.versioned_id
        for record in latest(manifest).values()
        if record.updated > first.watermark_after
    }
    fetched = {path.removeprefix("/e-print/") for path in eprint_requests(server, mark)}
    withdrawn = {record.versioned_id for record in manifest.of_kind("withdrawn")}
    assert fetched == new - withdrawn
    assert second.counts["listed"] == len(new) + second.counts["skipped"]
    assert second.counts["skipped"] <= 1  # at most the entry at the watermark's minute


def test_a_new_version_gets_its_own_folder(
    server: MirrorServer, params: IngestParams, paths: Paths
) -> None:
    # 2401.00001: v1 on 2024-01-01, v2 on 2024-01-30, v3 on 2024-02-29.
    server.set_now("2024-01-15T00:00:00Z")
    run(server, params, paths)
    v1 = version_folder(paths.raw, "2401.00001", 1)
    v1_files = tree_snapshot(v1)
    assert is_stored(paths.raw, "2401.00001", 1)

    server.set_now("2024-02-10T00:00:00Z")
    run(server, params, paths)
    assert is_stored(paths.raw, "2401.00001", 2)
    assert not is_stored(paths.raw, "2401.00001", 3)
    assert tree_snapshot(v1) == v1_files  # the old version stays, untouched
    assert io.read_json(version_folder(paths.raw, "2401.00001", 2) / META_FILE)["version"] == 2


def test_failed_download_is_quarantined_and_retried_next_run(
    mirror: Path, params: IngestParams, paths: Paths, manifest: Manifest
) -> None:
    order = sorted(latest(manifest).values(), key=lambda r: (r.updated, r.paper_id))
    victim = next(r for r in order[5:] if r.kind == "tex_gz")
    before_victim = order[order.index(victim) - 1]
    faults = {f"/e-print/{victim.versioned_id}": ["503"] * (params.max_retries + 1)}
    with MirrorServer(mirror, faults=faults) as server:
        first = run(server, params, paths)
        (record,) = [
            r for r in io.quarantined(paths.quarantine, "ingest") if r["id"] == victim.versioned_id
        ]
        assert record["details"]["retryable"] is True
        assert "HTTP 503" in record["reason"] and victim.versioned_id in record["reason"]
        assert first.fetch_failures == 1
        # The run went on past the failure...
        later = [r for r in order[order.index(victim) + 1 :] if r.kind == "tex_gz"]
        assert all(is_stored(paths.raw, r.paper_id, r.version) for r in later)
        # ...but the watermark stopped just before it.
        assert read_watermark(paths.raw) == before_victim.updated

        mark = len(server.requests)
        second = run(server, params, paths)
        assert eprint_requests(server, mark) == [f"/e-print/{victim.versioned_id}"]
    assert is_stored(paths.raw, victim.paper_id, victim.version)
    assert victim.versioned_id not in {r["id"] for r in io.quarantined(paths.quarantine, "ingest")}
    assert second.watermark_after == order[-1].updated


def test_max_papers_caps_each_run_and_the_next_run_continues(
    server: MirrorServer, params: IngestParams, paths: Paths, manifest: Manifest
) -> None:
    capped = dataclasses.replace(params, max_papers=6)
    order = sorted(latest(manifest).values(), key=lambda r: (r.updated, r.paper_id))
    first = run(server, capped, paths)
    handled = first.counts["listed"] - first.counts["skipped"]
    assert handled == 6
    assert first.watermark_after == order[5].updated
    for _ in range(3):  # 20 papers, 6 per run
        run(server, capped, paths)
    mark = len(server.requests)
    final = run(server, capped, paths)
    assert final.counts["listed"] == final.counts["skipped"]  # nothing left to do
    assert eprint_requests(server, mark) == []
    done = stored_ids(paths.raw) | {r["id"] for r in io.quarantined(paths.quarantine, "ingest")}
    assert done == {record.versioned_id for record in order}
    assert read_watermark(paths.raw) == order[-1].updated


def test_listing_failure_keeps_what_was_stored_and_raises(
    mirror: Path, params: IngestParams, paths: Paths
) -> None:
    # The first page succeeds; the second fails on every retry.
    with MirrorServer(mirror) as server:
        client = make_client(server, params)
        pages = client.iter_pages

        def failing_after_first_page(*args: Any, **kwargs: Any) -> Iterator[Feed]:
            for number, page in enumerate(pages(*args, **kwargs)):
                yield page
                if number == 0:
                    server.add_faults("/api/query", ["503"] * (params.max_retries + 1))

        client.iter_pages = failing_after_first_page  # type: ignore[method-assign]
        with pytest.raises(ArxivError, match=r"/api/query.*HTTP 503"):
            run(server, params, paths, client=client)
    metrics = io.read_json(paths.metrics / "ingest.json")
    assert metrics["listing_complete"] is False
    assert metrics["listed"] == params.page_size
    assert len(stored_ids(paths.raw)) + metrics["quarantined"] == params.page_size


class FeedClient(ArxivClient):
    """Serves one prepared page instead of listing over HTTP (downloads stay real)."""

    def __init__(self, base_url: str, feed: Feed, **options: Any) -> None:
        super().__init__(base_url, **options)
        self.feed = feed

    def iter_pages(self, *args: Any, **kwargs: Any) -> Iterator[Feed]:
        yield self.feed


def test_unreadable_listing_entries_are_quarantined(
    server: MirrorServer, params: IngestParams, paths: Paths
) -> None:
    good = Entry(
        paper_id="2401.00004",
        version=1,
        title="T",
        abstract="A",
        authors=("X",),
        categories=("math.CO",),
        primary_category="math.CO",
        published="2024-01-12T11:31:44Z",
        updated="2024-01-12T11:31:44Z",
        comment="",
        withdrawn=False,
    )
    bad = RejectedEntry("http://arxiv.org/abs/2401.0000x", "not a versioned id", b"<entry/>")
    client = FeedClient(
        server.base_url,
        Feed((good,), (bad,), 2, 0),
        user_agent="t",
        delay_seconds=0.0,
        timeout_seconds=5.0,
        max_retries=0,
        backoff_seconds=0.0,
    )
    report = run(server, params, paths, client=client)
    assert report.counts["listed"] == 2
    assert report.counts["quarantined"] == 1 and report.counts["tex"] == 1
    (record,) = io.quarantined(paths.quarantine, "ingest")
    assert record["id"] == "2401.0000x"
    assert "not a versioned id" in record["reason"]


# -- the command line -----------------------------------------------------------------


def write_params(path: Path, params: IngestParams) -> None:
    section = dataclasses.asdict(params)
    section["categories"] = list(params.categories)
    path.write_text(json.dumps({"ingest": section}), encoding="utf-8")  # JSON is YAML


def test_main_serves_the_sample_mirror(mirror: Path, params: IngestParams, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(mirror, Paths(root).mirror)
    params_file = tmp_path / "params.yaml"
    write_params(params_file, dataclasses.replace(params, delay_seconds=3.0))
    result = CliRunner().invoke(
        cli.app, ["ingest", "--params", str(params_file), "--root", str(root), "--no-progress"]
    )
    assert result.exit_code == 0
    metrics = io.read_json(Paths(root).metrics / "ingest.json")
    assert metrics["listed"] == N_PAPERS
    assert (
        len(stored_ids(Paths(root).raw))
        == metrics["tex"] + metrics["abstract_only"] + (metrics["withdrawn"])
    )
    assert "ingest: listed 20" in result.stdout


def test_main_without_a_mirror_says_how_to_make_one(params: IngestParams, tmp_path: Path) -> None:
    params_file = tmp_path / "params.yaml"
    write_params(params_file, params)
    result = CliRunner().invoke(
        cli.app, ["ingest", "--params", str(params_file), "--root", str(tmp_path / "empty")]
    )
    assert result.exit_code == 1  # missing input data, not configuration
    assert "run mathembed sample first" in result.stderr


def test_main_rejects_a_bad_params_file(tmp_path: Path) -> None:
    params_file = tmp_path / "params.yaml"
    params_file.write_text("ingest:\n  max_paper: 3\n", encoding="utf-8")
    result = CliRunner().invoke(
        cli.app, ["ingest", "--params", str(params_file), "--root", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "max_paper" in result.stderr
