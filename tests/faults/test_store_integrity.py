"""The embedding store's stored state cannot lie (issue 29, findings 1-3).

* A table damaged on disk (other finite bytes over part of a data file, flipped exponent
  bits) is caught by its rows' checksums, dropped with a warning naming it and rebuilt: the
  vectors handed out are the model's, never the damaged ones; ``verify`` (``mathembed
  status``) finds it too, and an ANN index derived from the table goes with it.
* A write the disk refuses (a file-size limit, as a full disk) is one warning; the run goes
  on with the vectors it computed, and what the store held before is untouched.
* A table another process has open is never evicted from under it.

Real LanceDB tables on disk, real child processes; the encoder is a deterministic stand-in.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fixtures_models import RecordingEncoder
from typer.testing import CliRunner

from pipelines import cli
from pipelines.common.paths import Paths
from pipelines.retrieval import store_layout
from pipelines.retrieval.store_layout import CHECKSUM_COLUMN, StoreCorruptError, verified_rows
from pipelines.retrieval.vector_store import EmbeddingStore, StoreKey, arrow_table, embed_stored

pytestmark = pytest.mark.usefixtures("bounded_in_time")

REPO = Path(__file__).resolve().parents[2]
TEXTS = [f"passage {n} on the cohomology of a scheme" for n in range(3_000)]
DIM = 64


def embed(store: EmbeddingStore | None, texts: list[str] = TEXTS, **options: Any) -> np.ndarray:
    encoder = RecordingEncoder(dim=DIM)
    return embed_stored(
        encoder, texts, model_fingerprint="fp", store=store, batch_size=512, **options
    )


def data_files(store: EmbeddingStore) -> list[Path]:
    table = store.table_path(StoreKey("fp"))
    return sorted((table / "data").glob("*.lance"), key=lambda path: path.stat().st_size)


def test_verified_rows_refuses_a_row_whose_vector_or_key_changed() -> None:
    hashes = [f"{n:064x}" for n in range(4)]
    vectors = np.arange(4 * DIM, dtype=np.float32).reshape(4, DIM)
    table = arrow_table(StoreKey("fp").metadata(), hashes, vectors)
    assert verified_rows(table)[0] == hashes
    for damaged in (vectors.copy(), list(hashes)):
        if isinstance(damaged, np.ndarray):
            damaged[2, 7] = np.float32(2.0) ** 40  # one exponent bit: a finite, wrong value
            swapped = table.set_column(1, "vector", arrow_table({}, hashes, damaged)["vector"])
        else:
            damaged[1] = "f" * 64  # a key whose bytes changed
            swapped = table.set_column(0, "text_hash", arrow_table({}, damaged, vectors)[0])
        with pytest.raises(StoreCorruptError, match="1 of 4 rows"):
            verified_rows(swapped)
    # The checksum column itself damaged: the row no longer matches it either.
    bad_sums = arrow_table({}, hashes, vectors)[CHECKSUM_COLUMN].to_numpy().copy()
    bad_sums[0] ^= 1
    with pytest.raises(StoreCorruptError):
        verified_rows(table.set_column(2, CHECKSUM_COLUMN, [bad_sums]))


def test_finite_bytes_written_over_a_data_file_are_caught_and_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clean = embed(EmbeddingStore(tmp_path))
    target = data_files(EmbeddingStore(tmp_path))[-1]
    payload = bytearray(target.read_bytes())
    middle = len(payload) // 2
    torn = np.random.default_rng(7).normal(size=16_384).astype(np.float32).tobytes()
    payload[middle : middle + len(torn)] = torn  # 64 KiB of other finite floats
    target.write_bytes(bytes(payload))

    store = EmbeddingStore(tmp_path)
    with caplog.at_level(logging.WARNING):
        again = embed(store)
    np.testing.assert_array_equal(again, clean)  # the model's vectors, not the damaged ones
    assert store.rebuilt == 1 and store.embedded == len(TEXTS)
    table = StoreKey("fp").table_name()
    assert any(
        table in record.message and "rebuilding" in record.message for record in caplog.records
    )
    # Rebuilt whole: the next process reads it without complaint.
    after = EmbeddingStore(tmp_path)
    np.testing.assert_array_equal(embed(after), clean)
    assert (after.rebuilt, after.embedded) == (0, 0)


def test_flipped_exponent_bits_are_caught_by_status_and_the_derived_index_goes(
    tmp_path: Path,
) -> None:
    folder = Paths(tmp_path).embedding_store
    clean = embed(EmbeddingStore(folder))
    target = data_files(EmbeddingStore(folder))[-1]
    payload = np.frombuffer(target.read_bytes(), dtype=np.uint8).copy()
    flipped = 0
    for value in np.frombuffer(clean[:17, 3].tobytes(), dtype=np.uint32):
        at = payload.tobytes().find(value.tobytes())
        if at >= 0:  # the float as written: flip one bit of its exponent
            payload[at + 3] ^= 0x08
            flipped += 1
    assert flipped >= 10
    target.write_bytes(payload.tobytes())
    derived = folder / f"{StoreKey('fp').table_name()}.faiss"
    derived.write_bytes(b"an ANN index built from the table")

    status = CliRunner().invoke(cli.app, ["status", "--root", str(tmp_path)])
    assert status.exit_code == 0, status.output
    table = StoreKey("fp").table_name()
    assert status.stdout.splitlines()[-1].startswith(f"embedding store: table {table} (model fp)")
    assert "DAMAGED" in status.stdout and "do not match their checksums" in status.stdout
    assert not EmbeddingStore(folder).table_path(StoreKey("fp")).exists()  # dropped
    assert not derived.exists()
    np.testing.assert_array_equal(embed(EmbeddingStore(folder)), clean)  # rebuilt on use
    status = CliRunner().invoke(cli.app, ["status", "--root", str(tmp_path)])
    expected = f"embedding store: 1 table(s), {len(TEXTS):,} vectors checked, sound"
    assert status.stdout.splitlines()[-1] == expected


CHILD = """
import resource, sys
sys.path[:0] = [{repo!r}, {tests!r}]
import numpy as np
from fixtures_models import RecordingEncoder
from typer.testing import CliRunner

from pipelines import cli
from pipelines.common.paths import Paths
from pipelines.retrieval.vector_store import EmbeddingStore, embed_stored
texts = [f"passage {{n}} on the cohomology of a scheme" for n in range({count})]
store = EmbeddingStore(__import__("pathlib").Path({folder!r}))
limit = {limit}
if limit:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
vectors = embed_stored(RecordingEncoder(dim={dim}), texts, model_fingerprint="fp", store=store,
                       batch_size=512)
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
np.save({out!r}, vectors)
print("unsaved", store.unsaved)
"""


def run_child(
    folder: Path, out: Path, *, count: int, limit: int
) -> subprocess.CompletedProcess[str]:
    script = CHILD.format(
        repo=str(REPO),
        tests=str(REPO / "tests"),
        count=count,
        folder=str(folder),
        limit=limit,
        dim=DIM,
        out=str(out),
    )
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )


def test_a_write_the_disk_refuses_loses_no_work_and_damages_nothing(tmp_path: Path) -> None:
    before = embed(EmbeddingStore(tmp_path), TEXTS[:100])
    out = tmp_path / "vectors.npy"
    # A file-size limit far below what 3,000 vectors take: LanceDB's write fails with EFBIG.
    done = run_child(tmp_path, out, count=len(TEXTS), limit=64 * 1024)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    warnings = [line for line in done.stderr.splitlines() if "embedding store not saved" in line]
    assert len(warnings) == 1 and "results computed in memory" in warnings[0]
    assert "File too large" in warnings[0] and ".rs:" not in warnings[0]
    assert "unsaved 1" in done.stdout
    np.testing.assert_array_equal(np.load(out), embed(None))  # every vector, computed
    # What the store held before is whole: the first 100 are read back, not embedded.
    store = EmbeddingStore(tmp_path)
    np.testing.assert_array_equal(embed(store, TEXTS[:100]), before)
    assert (store.rebuilt, store.embedded) == (0, 0)


LEASE_HOLDER = """
import sys
sys.path[:0] = [{repo!r}, {tests!r}]
from pathlib import Path
from fixtures_models import RecordingEncoder
from typer.testing import CliRunner

from pipelines import cli
from pipelines.common.paths import Paths
from pipelines.retrieval.vector_store import EmbeddingStore, embed_stored
store = EmbeddingStore(Path({folder!r}))
encode = dict(model_fingerprint="reader", store=store, batch_size=8)
embed_stored(RecordingEncoder(dim=4), ["first"], **encode)
print("open", flush=True)
sys.stdin.readline()  # meanwhile another process writes four new models
embed_stored(RecordingEncoder(dim=4), ["second"], **encode)
print("unsaved", store.unsaved, "rebuilt", store.rebuilt, flush=True)
"""


def test_a_model_another_process_has_open_is_not_evicted(tmp_path: Path) -> None:
    script = LEASE_HOLDER.format(repo=str(REPO), tests=str(REPO / "tests"), folder=str(tmp_path))
    reader = subprocess.Popen(
        [sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert reader.stdout is not None and reader.stdin is not None
        assert reader.stdout.readline().strip() == "open"
        writer = EmbeddingStore(tmp_path, max_models=4)
        for fingerprint in ("m1", "m2", "m3", "m4"):
            embed_stored(
                RecordingEncoder(dim=4),
                ["x"],
                model_fingerprint=fingerprint,
                store=writer,
                batch_size=8,
            )
        assert writer.evicted == 0  # "reader", least recently used, is leased
        assert EmbeddingStore(tmp_path).table_path(StoreKey("reader")).exists()
        out, err = reader.communicate("go\n", timeout=30)
    finally:
        reader.kill()
    assert reader.returncode == 0, err
    assert out.strip() == "unsaved 0 rebuilt 0" and "Traceback" not in err
    # The reader gone, its lease went with it: once least recently used, it is evicted.
    os.utime(writer.table_path(StoreKey("reader")), (1_000, 1_000))
    embed_stored(RecordingEncoder(dim=4), ["x"], model_fingerprint="m5", store=writer, batch_size=8)
    assert not writer.table_path(StoreKey("reader")).exists()


def test_a_check_leaves_the_eviction_order_and_reports_a_foreign_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embed(EmbeddingStore(tmp_path), TEXTS[:10])
    table = EmbeddingStore(tmp_path).table_path(StoreKey("fp"))
    os.utime(table, (1_000, 1_000))
    checks = EmbeddingStore(tmp_path).verify()
    assert [(check.rows, check.problem) for check in checks] == [(10, None)]
    assert table.stat().st_mtime == 1_000  # checking is not using: LRU order unchanged
    monkeypatch.setattr(store_layout, "STORE_FORMAT", "3")  # a later layout
    checks = EmbeddingStore(tmp_path).verify()
    assert checks[0].problem == "mathembed.format is '2', expected '3'"
    assert not table.exists()
