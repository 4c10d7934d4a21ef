"""A too-tight cap loses nothing and fails loudly.

``ingest.max_archive_bytes: 1000`` used to quarantine nearly every paper as final, move
the watermark past them and leave a rerun with the right params nothing to recover.
Now a cap's refusal is recorded with the key and value that refused it, the abnormal run
raises (after writing what it fetched) with the key to raise, a retry with the same params
fails the same way, and a run with a larger cap re-extracts every refused paper.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pipelines import cli
from pipelines.common import io
from pipelines.common.config import IngestParams
from pipelines.common.paths import Paths
from pipelines.common.raw_layout import RAW_META_FILE
from pipelines.ingest.arxiv.client import ArxivClient, build_user_agent
from pipelines.ingest.raw_store import read_watermark
from pipelines.ingest.report import COUNT_KEYS, IngestReport, QuarantineRateError, quarantine_alarm
from pipelines.ingest.stage import run_ingest
from pipelines.mirror.corpora.synthetic import generate_mirror
from pipelines.mirror.server import MirrorServer

N_PAPERS = 20
SEED = 7
NOW = datetime(2024, 6, 1, tzinfo=UTC)
TIGHT = 1000  # bytes: the misconfiguration from the issue


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("sample") / "mirror"
    generate_mirror(folder, N_PAPERS, SEED)
    return folder


@pytest.fixture(scope="module")
def params(mirror: Path) -> IngestParams:
    lines = (mirror / "entries.jsonl").read_text(encoding="utf-8").splitlines()
    categories = tuple(sorted({cat for line in lines for cat in json.loads(line)["categories"]}))
    return IngestParams(
        source="sample",
        categories=categories,
        from_date="2000-01-01",
        max_papers=500,
        page_size=7,
        delay_seconds=0.0,
        timeout_seconds=5.0,
        max_retries=0,
        backoff_seconds=0.0,
        max_archive_bytes=5_000_000,  # the mirror's bomb inflates to 200 MiB
    )


def ingest(mirror: Path, params: IngestParams, paths: Paths) -> tuple[Any, list[str]]:
    """(the report or the QuarantineRateError, the e-prints requested)."""
    with (
        MirrorServer(mirror) as server,
        ArxivClient(
            server.base_url,
            user_agent=build_user_agent("tests@example.org"),
            delay_seconds=0.0,
            timeout_seconds=params.timeout_seconds,
            max_retries=0,
            backoff_seconds=0.0,
        ) as client,
    ):
        try:
            outcome: Any = run_ingest(params, paths, client=client, now=NOW, progress=False)
        except QuarantineRateError as alarm:
            outcome = alarm
        return outcome, [path for path in server.requests if path.startswith("/e-print/")]


def stored(paths: Paths) -> set[str]:
    return {
        f"{meta['paper_id']}v{meta['version']}"
        for meta in map(io.read_json, paths.raw.glob(f"*/v*/{RAW_META_FILE}"))
    }


def refused_by(paths: Paths, key: str) -> dict[str, dict[str, Any]]:
    records = io.quarantined(paths.quarantine, "ingest")
    return {r["id"]: r for r in records if r["details"].get("limit") == key}


def assert_counts_add_up(paths: Paths) -> dict[str, Any]:
    metrics = io.read_json(paths.metric_file("ingest"))
    assert metrics["listed"] == sum(metrics[key] for key in COUNT_KEYS)
    return metrics


def test_a_too_tight_cap_fails_loudly_and_a_larger_cap_recovers_every_paper(
    mirror: Path, params: IngestParams, tmp_path: Path
) -> None:
    clean = Paths(tmp_path / "clean")
    ingest(mirror, params, clean)
    paths = Paths(tmp_path / "root")
    tight = dataclasses.replace(params, max_archive_bytes=TIGHT)

    alarm, _ = ingest(mirror, tight, paths)

    assert isinstance(alarm, QuarantineRateError)
    message = str(alarm)
    assert "ingest.max_archive_bytes" in message and "raise" in message
    assert "\n" not in message
    metrics = assert_counts_add_up(paths)  # written before raising
    assert metrics["quarantined"] > metrics["listed"] / 2
    refused = refused_by(paths, "ingest.max_archive_bytes")
    assert len(refused) > N_PAPERS / 2
    for record in refused.values():
        assert record["details"]["limit_value"] == TIGHT
        assert (paths.quarantine / "ingest" / record["payload"]).is_file()
    # The watermark stays before every refused paper, so the listing brings them back.
    watermark = read_watermark(paths.raw)
    assert watermark == alarm.report.watermark_after
    assert watermark is None or all(r["details"]["updated"] > watermark for r in refused.values())

    # The flow retries its ingest step: with the same params it must fail again, not pass.
    again, requested_again = ingest(mirror, tight, paths)
    assert isinstance(again, QuarantineRateError)
    assert not {f"/e-print/{item}" for item in refused} & set(requested_again)
    assert_counts_add_up(paths)

    report, requested = ingest(mirror, params, paths)

    assert isinstance(report, IngestReport)
    assert stored(paths) == stored(clean)  # nothing was lost to the tight cap
    assert report.counts["recovered"] == len(stored(paths) & set(refused))
    assert not {f"/e-print/{item}" for item in refused} & set(requested)  # re-extracted
    still = refused_by(paths, "ingest.max_archive_bytes")
    assert {r["details"]["limit_value"] for r in still.values()} <= {params.max_archive_bytes}
    assert set(still) == set(refused_by(clean, "ingest.max_archive_bytes"))  # the bomb
    assert_counts_add_up(paths)


def test_the_command_exits_1_naming_the_key_to_raise(
    mirror: Path, params: IngestParams, tmp_path: Path
) -> None:
    root = tmp_path / "repo"
    shutil.copytree(mirror, Paths(root).mirror)
    section = dataclasses.asdict(dataclasses.replace(params, max_archive_bytes=TIGHT))
    section["categories"] = list(params.categories)
    params_file = tmp_path / "params.yaml"
    params_file.write_text(json.dumps({"ingest": section}), encoding="utf-8")

    result = CliRunner().invoke(
        cli.app, ["ingest", "--params", str(params_file), "--root", str(root), "--no-progress"]
    )

    assert result.exit_code == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("ingest: ") and "ingest.max_archive_bytes" in line
    assert io.read_json(Paths(root).metric_file("ingest"))["quarantined"] > 0


def alarm_for(considered: int, refused: int, limits: Counter[str] | None = None) -> str | None:
    report = IngestReport("2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z", None)
    report.considered, report.refused = considered, refused
    report.limit_refusals = limits or Counter()
    return quarantine_alarm(report, Path("quarantine/ingest"))


def test_the_alarm_is_quiet_for_healthy_or_tiny_runs() -> None:
    assert alarm_for(20, 6) is None  # the sample mirror's malformed share
    assert alarm_for(10, 5) is None  # exactly half is not more than half
    assert alarm_for(4, 4) is None  # too few papers to call it abnormal
    unexplained = alarm_for(10, 6)
    assert unexplained is not None and "quarantine/ingest" in unexplained
    capped = alarm_for(96, 92, Counter({"ingest.max_file_bytes": 92}))
    assert capped is not None and "92 of the 96" in capped
    assert "raise ingest.max_file_bytes" in capped
