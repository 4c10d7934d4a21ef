"""What checking the embedding store by content costs: per-row checksums against per-file
digests, at 10^5 and 10^7 rows, side by side in one run.

Not a test: nothing here asserts. It records why :mod:`pipelines.retrieval.store_layout` checks
rows rather than files, in ``benchmarks/results/store_integrity.{json,md}``. One table of
the store's own layout (text hash, 384 ``float32``, checksum: :func:`arrow_table`) is
written with LanceDB at each size, then read as a process opening it for serving or
``mathembed status`` would, a batch at a time (:data:`READ_BATCH` rows):

* **read**: the rows streamed into what the store holds (keys as strings, vectors as a
  ``float32`` matrix), nothing checked (the anchor: what opening costs anyway);
* **per-row**: the same stream, each batch through :func:`verified_rows` (what the store
  does: the checksum recomputed and compared, finiteness checked);
* **per-file**: the stream, then SHA-256 of every data file of the table (the other
  design: a digest recorded per file at write, compared at open);
* **disk**: the table's bytes on disk, and what each check adds (8 bytes a row for the
  checksum column; one digest a data file, 64 bytes, in a side file).

Times are seconds on this machine; the ratio against **read** is what to compare.

    .venv/bin/python benchmarks/bench_store_integrity.py            # 10^5 and 10^7 rows
    .venv/bin/python benchmarks/bench_store_integrity.py --sizes 100000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
from machine import REPO_ROOT, git_state, installed_versions, load_average, to_jsonable

from pipelines.retrieval.store_layout import (
    HASH_COLUMN,
    READ_BATCH,
    ROW_COLUMNS,
    pa_table,
    vectors_of,
    verified_rows,
)
from pipelines.retrieval.vector_store import StoreKey, arrow_table, lancedb_module

RESULTS = REPO_ROOT / "benchmarks" / "results"
DIM = 384
WRITE_BATCH = 250_000
SIZES = (100_000, 10_000_000)


def batches_of(rows: int, seed: int) -> Iterator[tuple[list[str], np.ndarray]]:
    """``rows`` synthetic (hash, unit vector) rows, :data:`WRITE_BATCH` at a time."""
    rng = np.random.default_rng(seed)
    for start in range(0, rows, WRITE_BATCH):
        count = min(WRITE_BATCH, rows - start)
        vectors = rng.standard_normal((count, DIM), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        hashes = [hashlib.sha256(str(n).encode()).hexdigest() for n in range(start, start + count)]
        yield hashes, vectors


def write_table(folder: Path, rows: int) -> Any:
    """A store table of ``rows`` rows, appended a batch at a time (data files as a night's
    appends leave them), then compacted as the store does after a write."""
    database = lancedb_module().connect(str(folder))
    key = StoreKey("bench", None, normalize=True)
    table = None
    for hashes, vectors in batches_of(rows, seed=rows):
        part = arrow_table(key.metadata(), hashes, vectors)
        if table is None:
            table = database.create_table(key.table_name(), part, mode="overwrite")
        else:
            table.add(part)
    assert table is not None
    table.optimize(cleanup_older_than=timedelta(0))  # the store keeps old versions an hour
    return table


def unchecked_rows(batch: Any) -> tuple[list[str], np.ndarray]:
    """What :func:`verified_rows` hands the store, without its checks."""
    return batch.column(HASH_COLUMN).to_pylist(), vectors_of(pa_table(batch))


def stream(table: Any, check: Callable[[Any], object]) -> int:
    rows = 0
    for batch in table.search().select(ROW_COLUMNS).limit(None).to_batches(READ_BATCH):
        check(batch)
        rows += batch.num_rows
    return rows


def file_digests(table_folder: Path) -> dict[str, str]:
    digests = {}
    for path in sorted((table_folder / "data").glob("*.lance")):
        digest = hashlib.sha256()
        with path.open("rb") as source:
            while chunk := source.read(1 << 22):
                digest.update(chunk)
        digests[path.name] = digest.hexdigest()
    return digests


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def timed(action: Callable[[], object], repeats: int) -> float:
    """The best of ``repeats`` runs (the first warms the page cache for the others)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def measure(rows: int, workdir: Path) -> dict[str, Any]:
    folder = workdir / f"store-{rows}"
    start = time.perf_counter()
    write_table(folder, rows)
    written = time.perf_counter() - start
    table_folder = folder / f"{StoreKey('bench', None, normalize=True).table_name()}.lance"
    repeats = 3 if rows <= 1_000_000 else 2

    def reopened() -> Any:
        return lancedb_module().connect(str(folder)).open_table(table_folder.stem)

    read = timed(lambda: stream(reopened(), unchecked_rows), repeats)
    per_row = timed(lambda: stream(reopened(), lambda b: verified_rows(pa_table(b))), repeats)
    per_file = timed(
        lambda: (stream(reopened(), unchecked_rows), file_digests(table_folder)), repeats
    )
    data_files = len(list((table_folder / "data").glob("*.lance")))
    size = folder_bytes(table_folder)
    result = {
        "rows": rows,
        "dim": DIM,
        "write_s": round(written, 2),
        "read_s": round(read, 3),
        "per_row_s": round(per_row, 3),
        "per_file_s": round(per_file, 3),
        "per_row_ratio": round(per_row / read, 3),
        "per_file_ratio": round(per_file / read, 3),
        "table_bytes": size,
        "data_files": data_files,
        "per_row_extra_bytes": 8 * rows,
        "per_file_extra_bytes": 64 * data_files,
    }
    shutil.rmtree(folder, ignore_errors=True)
    return result


def markdown(record: dict[str, Any]) -> str:
    lines = [
        "# Checking the embedding store by content: per-row checksums vs per-file digests",
        "",
        "`benchmarks/bench_store_integrity.py`, one run, "
        f"{record['dim']} float32 per row, read {record['read_batch']:,} rows a batch; "
        f"load average before: {record['load_before']}.",
        "",
        "| rows | read (anchor) | + per-row checksums | + per-file SHA-256 | table on disk "
        "| per-row adds | per-file adds |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in record["sizes"]:
        lines.append(
            f"| {row['rows']:,} | {row['read_s']} s | {row['per_row_s']} s "
            f"(x{row['per_row_ratio']}) | {row['per_file_s']} s (x{row['per_file_ratio']}) "
            f"| {row['table_bytes'] / 1e6:,.1f} MB | {row['per_row_extra_bytes'] / 1e6:,.1f} MB "
            f"| {row['per_file_extra_bytes']} B ({row['data_files']} files) |"
        )
    lines += ["", record["verdict"], ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--workdir", type=Path, default=None, help="where the tables go")
    parser.add_argument("--out", type=Path, default=RESULTS / "store_integrity.json")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="store-integrity-", dir=args.workdir))
    record: dict[str, Any] = {
        "git": git_state(),
        "versions": installed_versions("lancedb", "pyarrow", "numpy"),
        "cpus": os.cpu_count(),
        "load_before": load_average(),
        "dim": DIM,
        "read_batch": READ_BATCH,
        "sizes": [],
    }
    try:
        for rows in args.sizes:
            print(f"{rows:,} rows ...", file=sys.stderr, flush=True)
            record["sizes"].append(measure(rows, workdir))
            print(json.dumps(record["sizes"][-1]), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    record["load_after"] = load_average()
    record["verdict"] = (
        "Per-row checksums are what the store does: checked on the rows a read takes anyway "
        "(a lookup of a few passages checks those only), no side file to keep in step with "
        "LanceDB's versions and compactions, 8 bytes a row."
    )
    args.out.write_text(json.dumps(to_jsonable(record), indent=2) + "\n", encoding="utf-8")
    args.out.with_suffix(".md").write_text(markdown(record), encoding="utf-8")
    print(markdown(record))


if __name__ == "__main__":
    main()
