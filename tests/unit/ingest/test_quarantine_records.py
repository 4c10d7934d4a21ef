"""A corrupt quarantine record names its file and is redone; it never aborts ingest.

One truncated ``data/quarantine/ingest/<id>.json`` used to stop the whole run with a bare
``JSONDecodeError``. Now ``io.quarantined`` and the ingest stage read it as a record to
redo (retryable, naming the file), with a warning.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipelines.common import io
from pipelines.common.config import IngestParams
from pipelines.common.paths import Paths
from pipelines.ingest.arxiv.client import ArxivClient, build_user_agent
from pipelines.ingest.quarantine import rejected_for_good
from pipelines.ingest.stage import run_ingest
from pipelines.mirror.corpora.synthetic import generate_mirror
from pipelines.mirror.server import MirrorServer

CORRUPT = {
    "truncated": b'{"id": "x", "reason": "bad',
    "not-utf8": b"\xff\xfe{}",
    "not-an-object": b"[1, 2]",
    "no-reason": b'{"id": "y"}',
}


@pytest.mark.parametrize("content", CORRUPT.values(), ids=CORRUPT.keys())
def test_an_unreadable_record_comes_back_as_one_to_redo_naming_its_file(
    content: bytes, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    good = io.quarantine(tmp_path, "ingest", "2401.00001v1", "no .tex file")
    bad = tmp_path / "ingest" / "2401.00002v1.json"
    bad.write_bytes(content)

    with caplog.at_level(logging.WARNING):
        records = io.quarantined(tmp_path, "ingest")

    assert [r["id"] for r in records] == ["2401.00001v1", "2401.00002v1"]
    assert records[0] == io.read_json(good)
    stand_in = records[1]
    assert stand_in["details"]["retryable"] is True
    assert str(bad) in stand_in["reason"] and str(bad) in caplog.text
    assert not rejected_for_good(tmp_path, "2401.00002v1")


def test_ingest_redoes_a_paper_whose_record_is_corrupt(tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    generate_mirror(mirror, 20, 7)
    lines = (mirror / "entries.jsonl").read_text(encoding="utf-8").splitlines()
    params = IngestParams(
        source="sample",
        categories=tuple(sorted({c for line in lines for c in json.loads(line)["categories"]})),
        from_date="2000-01-01",
        delay_seconds=0.0,
        max_retries=0,
        max_archive_bytes=5_000_000,
    )
    paths = Paths(tmp_path / "root")

    def ingest() -> list[str]:
        with (
            MirrorServer(mirror) as server,
            ArxivClient(
                server.base_url,
                user_agent=build_user_agent("tests@example.org"),
                delay_seconds=0.0,
                timeout_seconds=5.0,
                max_retries=0,
                backoff_seconds=0.0,
            ) as client,
        ):
            now = datetime(2024, 6, 1, tzinfo=UTC)
            run_ingest(params, paths, client=client, now=now, progress=False)
            return [path for path in server.requests if path.startswith("/e-print/")]

    ingest()
    (paths.raw / "watermark.json").unlink()  # list everything again
    victim = next(r for r in io.quarantined(paths.quarantine, "ingest") if "payload" in r)
    record = io.quarantine_record_path(paths.quarantine, "ingest", victim["id"])
    record.write_text('{"id": ', encoding="utf-8")

    requested = ingest()  # used to raise JSONDecodeError without naming the file

    assert requested == [f"/e-print/{victim['id']}"]  # the others stay rejected for good
    assert io.read_json(record)["reason"] == victim["reason"]  # a valid record again
