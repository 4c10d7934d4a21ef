"""Macro bombs: a tiny source whose macros expand to hundreds of MB is quarantined with the
reason, in bounded time and memory, and the run goes on with the other papers.

The bomb is the one from issue 14: ``\\def\\a{…}`` (a ~19 KB body) used 20,000 times, a
~190-byte gzip that expanded to 380 MB of text and 260,002 chunks. It is built here, and
prepare runs in a subprocess so that its peak memory (``VmHWM``) is its own.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from repo import REPO

from pipelines.common.io import quarantined, safe_name
from pipelines.common.paths import Paths
from pipelines.prepare import cleaner
from pipelines.prepare.cleaner import clean_latex, prepare_document
from pipelines.prepare.latex.macros import (
    Definitions,
    ExpansionLimitError,
    collect_definitions,
    expand_macros,
    expansion_limit,
)
from pipelines.prepare.latex.source import Problems

BOMB_USES = 20_000
TIME_LIMIT_S = 20.0  # the whole subprocess; the fixed code takes well under this
PEAK_RSS_LIMIT_MB = 400  # interpreter + pyarrow/pandas imports + the run; the bomb took 1.6 GB
PEAK_PYTHON_LIMIT_MB = 64  # tracemalloc peak inside run_prepare


def bomb_tex(uses: int = BOMB_USES) -> str:
    body = "bomb " * 3_800  # ~19 KB per use
    return (
        f"\\documentclass{{article}}\\def\\a{{{body}}}\n\\begin{{document}}\n"
        + "\\a " * uses
        + "\n\\end{document}\n"
    )


def bomb_gzip() -> bytes:
    return gzip.compress(bomb_tex().encode(), compresslevel=9, mtime=0)


def good_tex() -> str:
    text = "\n\n".join(
        f"Paragraph {i}: we study $\\R^{{{i}}}$ and partitions; each has a Durfee square."
        for i in range(6)
    )
    return (
        "\\documentclass{amsart}\n\\newcommand{\\R}{\\mathbb{R}}\n\\begin{document}\n"
        f"\\section{{Introduction}}\n{text}\n\\end{{document}}\n"
    )


def write_paper(raw: Path, paper_id: str, source: bytes) -> None:
    folder = raw / safe_name(paper_id) / "v1"
    folder.mkdir(parents=True)
    (folder / "source.tex").write_bytes(source)
    meta: dict[str, Any] = {
        "paper_id": paper_id,
        "version": 1,
        "title": f"Paper {paper_id}",
        "authors": ["A. Author"],
        "abstract": "An abstract that is long enough to be a passage of its own, surely.",
        "categories": ["math.CO"],
        "primary_category": "math.CO",
        "published": "2024-01-03T10:00:00Z",
        "updated": "2024-01-03T10:00:00Z",
        "comment": "",
        "source_kind": "tex",
        "main_file": "main.tex",
        "source_sha256": None,
        "encoding": "utf-8",
        "fetched_at": "2024-01-10T00:00:00Z",
    }
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")


# Runs prepare on ``root`` and prints the report, the time and the peaks as JSON.
_MEASURE = textwrap.dedent(
    """
    import json, sys, time, tracemalloc
    from pathlib import Path
    from pipelines.common.config import load_params
    from pipelines.common.paths import Paths
    from pipelines.prepare.stage import run_prepare

    params = load_params(Path("params.yaml")).prepare
    tracemalloc.start()
    started = time.perf_counter()
    report = run_prepare(params, Paths(Path(sys.argv[1])), progress=False, workers=1)
    seconds = time.perf_counter() - started
    python_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    # VmHWM: this process's own peak. (ru_maxrss would also count the parent's RSS at
    # fork time, which Linux carries across exec: the whole pytest process's.)
    status = Path("/proc/self/status").read_text()
    rss_kib = int(next(l.split()[1] for l in status.splitlines() if l.startswith("VmHWM:")))
    print(json.dumps({
        "report": report.as_dict(),
        "seconds": seconds,
        "python_peak_mb": python_peak / 2**20,
        "peak_rss_mb": rss_kib / 1024,
    }))
    """
)


def test_the_bomb_is_tiny() -> None:
    assert len(bomb_gzip()) < 256  # the was 187 bytes
    assert len(bomb_tex()) > 50_000


def test_expansion_stops_at_the_limit_not_after_the_pass() -> None:
    definitions, problems = Definitions(), Problems()
    body = collect_definitions(bomb_tex(), definitions, problems)
    with pytest.raises(ExpansionLimitError, match="macro bomb"):
        expand_macros(body, definitions, problems)
    assert expansion_limit(len(body)) < 1_000_000  # vs 380 MB expanded


def test_a_bomb_is_fatal_with_the_reason() -> None:
    document = clean_latex(bomb_tex())
    assert document.fatal is not None and "macro bomb" in document.fatal
    assert document.sections == ()


def test_one_argument_repeated_in_a_body_is_a_bomb_in_a_single_call() -> None:
    # One use, no second pass: #1 repeated 5,000 times, times a 10 KB argument = 50 MB.
    source = (
        "\\def\\b#1{" + "#1" * 5_000 + "}\\begin{document}\\b{" + "x" * 10_000 + "}\\end{document}"
    )
    document = clean_latex(source)
    assert document.fatal is not None and "macro bomb" in document.fatal


def test_more_cleaned_text_than_a_paper_has_is_fatal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cleaner, "MAX_CLEANED_CHARS", 1_000)  # the real cap is 5 M characters
    source = "\\begin{document}" + "A sentence of plain prose. " * 100 + "\\end{document}"
    document = prepare_document(source, chunk_chars=400, overlap_chars=80, min_chunk_chars=50)
    assert document.fatal is not None and "characters after cleaning" in document.fatal
    assert document.chunks == ()


def test_prepare_quarantines_a_macro_bomb_in_bounded_time_and_memory(tmp_path: Path) -> None:
    raw = Paths(tmp_path).raw
    # The raw store holds what ingest unpacked from the gzip.
    write_paper(raw, "2401.00001", gzip.decompress(bomb_gzip()))
    write_paper(raw, "2401.00002", good_tex().encode())
    completed = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=TIME_LIMIT_S * 3,  # a hang still ends; the bound is asserted below
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    measured = json.loads(completed.stdout.strip().splitlines()[-1])
    print(f"macro bomb: {json.dumps(measured)}")  # shown with -s: the numbers in the report

    report = measured["report"]
    assert report["quarantined"] == 1 and report["prepared"] == 1
    assert report["papers_in"] == report["prepared"] + report["reused"] + report["quarantined"]
    assert report["chunks"] < 20  # the good paper's passages only
    (record,) = quarantined(Paths(tmp_path).quarantine, "prepare")
    assert record["id"] == "2401.00001v1"
    assert "macro bomb" in record["reason"]
    assert measured["seconds"] < TIME_LIMIT_S
    assert measured["python_peak_mb"] < PEAK_PYTHON_LIMIT_MB
    assert measured["peak_rss_mb"] < PEAK_RSS_LIMIT_MB
