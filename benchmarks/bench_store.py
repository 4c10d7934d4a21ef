"""Which library keeps the per-passage embedding store: LanceDB, usearch or faiss, side by side.

Not a test: nothing here asserts. It decides what ``pipelines/retrieval/vector_store.py`` is
built on and records why, in ``benchmarks/results/store_choice.{json,md}``. The store keeps,
per model, one vector per passage text keyed by a hash of that text; a night asks it for
the vectors of the corpus it holds (a keyed lookup), adds the few passages it lacks (an
upsert) and, for search, opens it again in a new process (a reopen). Each library is used
the way it is meant to be: a LanceDB table with a string key column and ``merge_insert``;
a usearch ``Index`` (``f32``, keys = 64 bits of the hash) saved whole and restored or
memory-mapped (``view``); a faiss ``IndexIDMap2`` over a flat inner-product index, written
whole (``write_index``). usearch and faiss write one file, made atomic here by temp file +
rename; LanceDB commits a new table version (a manifest) only after the data is written.

Measured on synthetic unit vectors (384 dims, the demo model's width) at the demo's corpus
size (3,393) and at 100,000 passages:

* **create** the store with all vectors, and **upsert** 1 % new ones into the 100k store
  (persisted: what a night with a few new papers costs);
* **lookup**: the vectors of 3,393 keys from the 100k store, checked bit for bit;
* **reopen**: open the 100k store as a new process would, ready for a lookup;
* **size** on disk at 100k;
* **corruption**: the store's largest file cut in half (a write cut short by a crash, a
  full disk): does opening it fail loudly (good: the store is rebuilt), or does it answer
  wrong vectors (bad)? And a write interrupted before its commit (LanceDB: data files
  written, no manifest): is the previous version still whole?

    .venv/bin/python benchmarks/bench_store.py      # minutes (usearch's 100k build dominates)
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
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
from machine import REPO_ROOT, git_state, installed_versions, load_average, to_jsonable

RESULTS = REPO_ROOT / "benchmarks" / "results"
DIM = 384
DEMO_PASSAGES = 3_393
LARGE = 100_000
NEW_SHARE = 0.01
SEED = 21

Vectors = npt.NDArray[np.float32]


def unit_vectors(count: int, seed: int) -> Vectors:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((count, DIM), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix


def text_keys(count: int, offset: int = 0) -> list[str]:
    """Hex SHA-256 of synthetic passage texts: the store's key."""
    return [
        hashlib.sha256(f"passage {i}".encode()).hexdigest() for i in range(offset, offset + count)
    ]


def int_keys(keys: list[str]) -> npt.NDArray[np.uint64]:
    """64 bits of each hash: the integer key usearch and faiss take."""
    return np.array([int(key[:16], 16) >> 1 for key in keys], dtype=np.uint64)


def folder_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())


def largest_file(path: Path) -> Path:
    if path.is_file():
        return path
    return max((item for item in path.rglob("*") if item.is_file()), key=lambda p: p.stat().st_size)


def atomic_replace(path: Path, write: Callable[[Path], None]) -> None:
    temporary = path.with_name(path.name + ".tmp")
    write(temporary)
    os.replace(temporary, path)


class Store(Protocol):
    """What the benchmark does with each library."""

    def create(self, keys: list[str], vectors: Vectors) -> None: ...
    def upsert(self, keys: list[str], vectors: Vectors) -> None: ...
    def reopen(self) -> None: ...
    def lookup(self, keys: list[str]) -> Vectors: ...
    def interrupted_write(self, keys: list[str], vectors: Vectors) -> None: ...


class LanceStore:
    name = "lancedb"

    def __init__(self, folder: Path) -> None:
        import lancedb

        self.folder = folder
        self.db = lancedb.connect(str(folder))
        self.table: Any = None

    def _arrow(self, keys: list[str], vectors: Vectors) -> Any:
        import pyarrow as pa

        flat = pa.array(vectors.reshape(-1), type=pa.float32())
        return pa.table(
            {"key": pa.array(keys), "vector": pa.FixedSizeListArray.from_arrays(flat, DIM)}
        )

    def create(self, keys: list[str], vectors: Vectors) -> None:
        self.table = self.db.create_table("store", self._arrow(keys, vectors), mode="overwrite")

    def upsert(self, keys: list[str], vectors: Vectors) -> None:
        (
            self.table.merge_insert("key")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute(self._arrow(keys, vectors))
        )

    def reopen(self) -> None:
        import lancedb

        self.db = lancedb.connect(str(self.folder))
        self.table = self.db.open_table("store")
        self._all = None

    def lookup(self, keys: list[str]) -> Vectors:
        # The whole table (keys and vectors, Arrow, zero-copy into NumPy), rows by key.
        stored = self.table.to_arrow()
        position = {key: row for row, key in enumerate(stored.column("key").to_pylist())}
        matrix = np.asarray(stored.column("vector").combine_chunks().values, dtype=np.float32)
        rows = [position[key] for key in keys]
        return matrix.reshape(-1, DIM)[rows]

    def interrupted_write(self, keys: list[str], vectors: Vectors) -> None:
        """Data files of an append written, its manifest not: the commit never happened
        (the data file of the same rows written elsewhere, dropped into the table's folder)."""
        import lancedb

        elsewhere = self.folder.with_name(self.folder.name + "-elsewhere")
        lancedb.connect(str(elsewhere)).create_table("store", self._arrow(keys, vectors))
        for data_file in (elsewhere / "store.lance" / "data").iterdir():
            shutil.copy(data_file, self.folder / "store.lance" / "data" / data_file.name)


class USearchStore:
    name = "usearch"

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / "store.usearch"
        self.index: Any = None

    def _new(self) -> Any:
        from usearch.index import Index

        return Index(ndim=DIM, metric="ip", dtype="f32")

    def create(self, keys: list[str], vectors: Vectors) -> None:
        self.index = self._new()
        self.index.add(int_keys(keys), vectors)
        atomic_replace(self.path, lambda path: self.index.save(str(path)))

    def upsert(self, keys: list[str], vectors: Vectors) -> None:
        ints = int_keys(keys)
        known = self.index.contains(ints)
        if known.any():
            self.index.remove(ints[known])
        self.index.add(ints, vectors)
        atomic_replace(self.path, lambda path: self.index.save(str(path)))

    def reopen(self) -> None:
        from usearch.index import Index

        self.index = Index.restore(str(self.path), view=True)

    def lookup(self, keys: list[str]) -> Vectors:
        return np.asarray(self.index.get(int_keys(keys)), dtype=np.float32)

    def interrupted_write(self, keys: list[str], vectors: Vectors) -> None:
        """A save cut short leaves only the temp file: the rename never happened."""
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_bytes(self.path.read_bytes()[: self.path.stat().st_size // 3])


class FaissStore:
    name = "faiss"

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / "store.faiss"
        self.index: Any = None

    def create(self, keys: list[str], vectors: Vectors) -> None:
        import faiss

        self.index = faiss.IndexIDMap2(faiss.IndexFlatIP(DIM))
        self.index.add_with_ids(vectors, int_keys(keys).astype(np.int64))
        atomic_replace(self.path, lambda path: faiss.write_index(self.index, str(path)))

    def upsert(self, keys: list[str], vectors: Vectors) -> None:
        import faiss

        ids = int_keys(keys).astype(np.int64)
        self.index.remove_ids(faiss.IDSelectorArray(ids))
        self.index.add_with_ids(vectors, ids)
        atomic_replace(self.path, lambda path: faiss.write_index(self.index, str(path)))

    def reopen(self) -> None:
        import faiss

        self.index = faiss.read_index(str(self.path))

    def lookup(self, keys: list[str]) -> Vectors:
        ids = int_keys(keys).astype(np.int64)
        return np.stack([self.index.reconstruct(int(i)) for i in ids]).astype(np.float32)

    def interrupted_write(self, keys: list[str], vectors: Vectors) -> None:
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_bytes(self.path.read_bytes()[: self.path.stat().st_size // 3])


LIBRARIES: dict[str, Callable[[Path], Store]] = {
    "lancedb": LanceStore,
    "usearch": USearchStore,
    "faiss": FaissStore,
}


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def measure(name: str, scratch: Path) -> dict[str, Any]:
    demo_keys, demo_vectors = text_keys(DEMO_PASSAGES), unit_vectors(DEMO_PASSAGES, SEED)
    large_keys, large_vectors = text_keys(LARGE), unit_vectors(LARGE, SEED)
    new = int(LARGE * NEW_SHARE)
    new_keys, new_vectors = text_keys(new, offset=LARGE), unit_vectors(new, SEED + 1)
    result: dict[str, Any] = {}

    small = LIBRARIES[name](scratch / f"{name}-demo")
    result["create_demo_s"], _ = timed(lambda: small.create(demo_keys, demo_vectors))

    store = LIBRARIES[name](scratch / f"{name}-large")
    result["create_100k_s"], _ = timed(lambda: store.create(large_keys, large_vectors))
    result["upsert_1pct_into_100k_s"], _ = timed(lambda: store.upsert(new_keys, new_vectors))
    result["reopen_100k_s"], _ = timed(store.reopen)
    lookup_keys = large_keys[:: LARGE // DEMO_PASSAGES][:DEMO_PASSAGES]
    result["lookup_3393_of_100k_s"], found = timed(lambda: store.lookup(lookup_keys))
    expected = large_vectors[:: LARGE // DEMO_PASSAGES][:DEMO_PASSAGES]
    result["lookup_exact"] = bool(np.array_equal(found, expected))
    folder = scratch / f"{name}-large"
    result["size_100k_mb"] = folder_bytes(folder) / 1e6
    result["raw_vectors_mb"] = large_vectors.nbytes / 1e6

    # A write interrupted before its commit: is the last committed state still whole?
    store.interrupted_write(text_keys(500, offset=2 * LARGE), unit_vectors(500, SEED + 2))
    store.reopen()
    try:
        whole = np.array_equal(store.lookup(lookup_keys), expected)
        result["interrupted_write"] = "previous state intact" if whole else "WRONG vectors"
    except Exception as error:  # noqa: BLE001 -- what fails is the finding
        result["interrupted_write"] = f"error: {type(error).__name__}"

    # The largest file cut in half after the fact (a crash mid-write of a non-atomic writer,
    # a disk error): a loud failure is what lets the store be rebuilt, never trusted.
    victim = largest_file(scratch / f"{name}-demo")
    with victim.open("r+b") as handle:
        handle.truncate(victim.stat().st_size // 2)
    try:
        small.reopen()
        same = np.array_equal(small.lookup(demo_keys), demo_vectors)
        result["truncated_file"] = "read back whole (?)" if same else "WRONG vectors, no error"
    except Exception as error:  # noqa: BLE001 -- what fails is the finding
        result["truncated_file"] = f"error on open/read: {type(error).__name__}"
    return result


DECISION = """\
## Decision: LanceDB

* **Writes that a night makes are cheap only in LanceDB**: it appends a fragment and commits a
  new manifest (1 % new vectors into 100k: tens of milliseconds), where usearch and faiss
  rewrite their one file whole (seconds), and usearch also inserts into its HNSW graph on
  every add (its 100k create took minutes on these two shared cores: the store would pay an
  ANN build for every model, the base and each candidate included, that only evaluate reads).
* **Atomic by design**: a LanceDB write is data files, then a manifest; an interrupted write
  leaves the last version whole, and a damaged data file is an error on read (so the store
  drops the table with a warning and rebuilds it). usearch and faiss need our own temp file +
  rename for the same guarantee; all three fail loudly on a truncated file.
* **Keyed rows**: a string key column and `merge_insert` give "add the passages the store
  lacks" directly; usearch and faiss take 64-bit integer keys (a cut hash).
* **Its cost: keyed lookup** reads the table (1 s for 100k rows here against 0.05-0.15 s) and
  reopening is instant; at the demo's size both are far below a model load.
* **Not the search index**: LanceDB's own ANN index (IVF-HNSW, 8-bit) could not be built
  at 10^6 passages within 11 minutes and its incremental update cost 3x a rebuild at 10^5
  (`ann_scale.md`, `bench_ann.py`, same machine), so search above `search.ann_threshold`
  uses a faiss IVF-SQ8 index derived from this store's vectors and kept beside them
  (`pipelines/search/ann.py`): the vectors stay here, the index is a rebuildable file.
"""


def markdown(record: dict[str, Any]) -> str:
    rows = record["libraries"]
    names = list(rows)
    lines = [
        "# Embedding store: which library (issue 21)",
        "",
        f"Measured by `benchmarks/bench_store.py` on {record['machine_note']} "
        f"(load average at start {record['load_start']}, shared with other work); synthetic "
        f"unit vectors, {DIM} dims; versions {record['versions']}.",
        "",
        "| | " + " | ".join(names) + " |",
        "| --- | " + " | ".join("---" for _ in names) + " |",
    ]
    fields = [
        ("create, 3,393 vectors (s)", "create_demo_s", "{:.3f}"),
        ("create, 100k vectors (s)", "create_100k_s", "{:.2f}"),
        ("upsert 1 % new into 100k, persisted (s)", "upsert_1pct_into_100k_s", "{:.3f}"),
        ("reopen 100k (s)", "reopen_100k_s", "{:.3f}"),
        ("keyed lookup, 3,393 of 100k (s)", "lookup_3393_of_100k_s", "{:.3f}"),
        ("lookup returns the exact vectors", "lookup_exact", "{}"),
        ("size on disk, 100k (MB; raw float32 = 153.6)", "size_100k_mb", "{:.1f}"),
        ("write interrupted before commit", "interrupted_write", "{}"),
        ("largest file truncated to half", "truncated_file", "{}"),
    ]
    for label, key, fmt in fields:
        lines.append(f"| {label} | " + " | ".join(fmt.format(rows[n][key]) for n in names) + " |")
    lines += ["", DECISION]
    if record.get("serve_search"):
        lines += [serve_markdown(record["serve_search"])]
    return "\n".join(lines) + "\n"


def serve_markdown(serve: dict[str, Any]) -> str:
    """The demo's search start-up before and after the store, as measured (``--serve``)."""
    before, after = serve["before"], serve["after"]
    lines = [
        "## `serve-search` on the demo, before and after",
        "",
        serve["how"],
        "",
        "| | before (.npy cache + .npz index) | after (embedding store) |",
        "| --- | --- | --- |",
        "| first answer after a night (s) | "
        f"{before['after_night']['seconds']:.1f} | {after['after_night']['seconds']:.1f} |",
        f"| first answer after a restart (s) | {before['restart']['seconds']:.1f} | "
        f"{after['restart']['seconds']:.1f} |",
        f"| one-shot `mathembed search` (s) | {before['one_shot_search_s']:.1f} | "
        f"{after['one_shot_search_s']:.1f} |",
        f"| load average at start | {before['load_start']} | {after['load_start']} |",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=RESULTS / "store_choice.json")
    parser.add_argument("--libraries", nargs="*", default=list(LIBRARIES))
    parser.add_argument(
        "--render", type=Path, help="write the markdown of this record again, measuring nothing"
    )
    parser.add_argument(
        "--serve",
        type=Path,
        help="JSON {how, before, after}: serve-search timings on the demo to record beside it",
    )
    args = parser.parse_args()
    if args.render:
        record = json.loads(args.render.read_text(encoding="utf-8"))
        if args.serve:
            record["serve_search"] = json.loads(args.serve.read_text(encoding="utf-8"))
        write(record, args.out)
        return
    record: dict[str, Any] = {
        "benchmark": "bench_store",
        "git": git_state(),
        "versions": installed_versions("lancedb", "pylance", "usearch", "faiss-cpu", "numpy"),
        "cpus": os.cpu_count(),
        "machine_note": f"{os.cpu_count()} CPUs (shared)",
        "load_start": load_average(),
        "dim": DIM,
        "libraries": {},
    }
    scratch = Path(tempfile.mkdtemp(prefix="bench-store-"))
    try:
        for name in args.libraries:
            print(f"{name} ...", file=sys.stderr, flush=True)
            record["libraries"][name] = measure(name, scratch)
            print(json.dumps(record["libraries"][name]), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    record["load_end"] = load_average()
    write(record, args.out)


def write(record: dict[str, Any], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(to_jsonable(record), indent=2) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(record), encoding="utf-8")
    print(markdown(record))


if __name__ == "__main__":
    main()
