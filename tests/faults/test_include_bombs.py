"""An ``\\input`` fan-out: a tiny e-print whose includes expand exponentially is refused fast.

Nine files, each including the next seven times, inline 7**8 (5.7 million) copies of the
last one: a few hundred bytes that used to expand for minutes into tens of megabytes.
The caps in ``resolve_includes`` stop at the first inclusion past the count or size
limit, so the paper is refused in milliseconds with bounded memory, and ingest
quarantines it.
"""

from __future__ import annotations

import gzip
import io
import tarfile
import time
import tracemalloc

import pytest

from pipelines.ingest.arxiv.archive import (
    ArchiveLimits,
    IncludeLimitError,
    Rejected,
    Source,
    extract_source,
    resolve_includes,
)

LIMITS = ArchiveLimits(max_files=500, max_file_bytes=10_000_000, max_total_bytes=50_000_000)
# Measured 0.06 s (0.45 s under tracemalloc) and an 865 KiB traced peak on a shared
# 2-core machine, for a 245-byte e-print; the bounds leave room for a slow CI box while
# staying far below the minutes and the 64 MB the bomb used to take.
TIME_BOUND_SECONDS = 2.0
PEAK_BOUND_BYTES = 8 * 1024 * 1024


def fan_out_texts(levels: int = 9, fan_out: int = 7) -> dict[str, str]:
    texts = {
        f"f{level}.tex": "".join(f"\\input{{f{level + 1}}}" for _ in range(fan_out))
        for level in range(levels - 1)
    }
    texts[f"f{levels - 1}.tex"] = "x"
    texts["f0.tex"] = "\\documentclass{article}" + texts["f0.tex"]
    return texts


def tar_gz(texts: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for name, text in texts.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return gzip.compress(buffer.getvalue(), mtime=0)


def measured(call):  # type: ignore[no-untyped-def]
    tracemalloc.start()
    started = time.perf_counter()
    try:
        result = call()
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, elapsed, peak


def test_an_include_fan_out_is_refused_fast_with_bounded_memory() -> None:
    data = tar_gz(fan_out_texts())
    assert len(data) < 1024  # the whole attack fits in one small e-print

    result, elapsed, peak = measured(lambda: extract_source(data, LIMITS))

    assert isinstance(result, Rejected)
    assert "f0.tex" in result.reason and "inclusions" in result.reason
    assert result.limit is None  # a fixed cap, not a knob: no later run accepts it
    assert elapsed < TIME_BOUND_SECONDS, f"took {elapsed:.2f} s"
    assert peak < PEAK_BOUND_BYTES, f"peak {peak} bytes"
    print(f"include bomb refused in {elapsed * 1000:.1f} ms, peak {peak / 1024:.0f} KiB")


def test_the_expanded_size_cap_names_max_archive_bytes() -> None:
    # Few inclusions, but each inlines a large file: the size cap stops it first.
    texts = {"main.tex": "\\documentclass{x}" + "\\input{big}" * 10, "big.tex": "y" * 10_000}
    with pytest.raises(IncludeLimitError, match="max_archive_bytes") as refused:
        resolve_includes("main.tex", texts, max_chars=50_000)
    assert refused.value.limit == "max_total_bytes"

    limits = ArchiveLimits(max_files=10, max_file_bytes=20_000, max_total_bytes=50_000)
    result = extract_source(tar_gz(texts), limits)
    assert isinstance(result, Rejected) and result.limit == "max_total_bytes"
    assert "max_archive_bytes (50000)" in result.reason


def test_a_paper_under_the_caps_still_inlines_repeated_includes() -> None:
    texts = {"main.tex": "\\documentclass{x}" + "\\input{part}" * 3, "part.tex": "P"}
    result = extract_source(tar_gz(texts), LIMITS)
    assert isinstance(result, Source)
    assert result.text == "\\documentclass{x}PPP"
