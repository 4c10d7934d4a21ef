"""The cost of arguments that never close, before and after the brace index (issue 23,
finding 1).

Not a test: nothing here asserts (``tests/faults/test_unclosed_arguments.py`` does, on
characters read). It prepares hostile sources of 1, 10 and 100 KB, the campaign's: a
9-argument macro used once per paragraph with its first argument never closed, the
paragraph either words (``words``) or small closed groups (``groups``, which cost the old
search a Python step per brace). Each is prepared with the argument search as it was (each
search reads forward up to ARG_SCAN_LIMIT characters; kept here as :func:`forward_search`,
patched in for the "before" rows) and as it is (the index), side by side in one process.
It records seconds (best of ``--repeats``, ``perf_counter``) and the characters the search
read, and checks both give the same passages.

Run it from the repository root (the 100 KB "before" rows take about half a minute)::

    .venv/bin/python benchmarks/bench_arg_scan.py
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from machine import cpu_facts, git_state, load_average

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pipelines.prepare import source  # noqa: E402  # after the path is set
from pipelines.prepare.cleaner import prepare_document  # noqa: E402

SIZES_KB = (1, 10, 100)
RESULT = REPO / "benchmarks" / "results" / "arg_scan.json"
PARAGRAPHS = {
    "words": "Some words \\a{ and more words\n\n",
    "groups": "\\a{ {x}{y}{z}{w}{v}{u}\n\n",
}
HEAD = "\\documentclass{article}\n\\newcommand{\\a}[9]{x}\n\\begin{document}\n"


def hostile_source(size: int, paragraph: str) -> str:
    repeats = max(1, (size - len(HEAD)) // len(paragraph))
    return HEAD + paragraph * repeats + "\\end{document}\n"


def forward_search(text: str, open_pos: int) -> int:
    """The search before the index: read forward up to ARG_SCAN_LIMIT characters."""
    depth = 0
    limit = min(len(text), open_pos + source.ARG_SCAN_LIMIT)
    for match in source._BRACE_SCAN.finditer(text, open_pos, limit):
        char = match.group()
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                source._count_scanned(match.end() - open_pos)
                return match.start()
    source._count_scanned(limit - open_pos)
    return -1


@contextmanager
def searching_with(search: Callable[[str, int], int] | None) -> Iterator[None]:
    """Run with ``search`` as the argument search (None: the module's own)."""
    original = source._group_end
    if search is not None:
        source._group_end = search
    try:
        yield
    finally:
        source._group_end = original


def measure(text: str, repeats: int) -> tuple[float, int, Any]:
    """Best seconds over ``repeats``, characters read (one run, cold) and the passages."""
    best = float("inf")
    scanned = 0
    passages: Any = None
    for repeat in range(repeats):
        source.forget_brace_indexes()
        before = source.characters_scanned()
        start = time.perf_counter()
        document = prepare_document(text, chunk_chars=1500, overlap_chars=200, min_chunk_chars=50)
        best = min(best, time.perf_counter() - start)
        if repeat == 0:
            scanned = source.characters_scanned() - before
            passages = document.chunks
    return best, scanned, passages


def compare(variant: str, paragraph: str, size_kb: int, repeats: int) -> dict[str, Any]:
    """One row: the old search and the index on the same source."""
    text = hostile_source(size_kb * 1000, paragraph)
    # The old search is slow at 100 KB: one run there is enough to see it.
    with searching_with(forward_search):
        before = measure(text, 1 if size_kb >= 100 else repeats)
    after = measure(text, repeats)
    row = {
        "paragraph": variant,
        "size_kb": size_kb,
        "source_chars": len(text),
        "before_seconds": round(before[0], 4),
        "after_seconds": round(after[0], 4),
        "before_chars_scanned": before[1],
        "after_chars_scanned": after[1],
        "speedup": round(before[0] / after[0], 1),
        "same_passages": before[2] == after[2],
    }
    print(
        f"{variant:>6} {size_kb:>4} KB  before {row['before_seconds']:>8.3f} s "
        f"{row['before_chars_scanned']:>12,} chars  after {row['after_seconds']:>7.4f} s "
        f"{row['after_chars_scanned']:>9,} chars  same passages: {row['same_passages']}"
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per row (best kept)")
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args()

    rows = []
    for variant, paragraph in PARAGRAPHS.items():
        for size_kb in SIZES_KB:
            rows.append(compare(variant, paragraph, size_kb, args.repeats))
    result = {
        "benchmark": "bench_arg_scan.py",
        "what": (
            "prepare_document on a hostile source: \\newcommand{\\a}[9]{x}, then one "
            "paragraph after another, each using \\a with its first argument never closed"
        ),
        "paragraphs": PARAGRAPHS,
        "arg_scan_limit": source.ARG_SCAN_LIMIT,
        "repeats": args.repeats,
        "rows": rows,
        "machine": {**cpu_facts(), "load_average": load_average()},
        "git": git_state(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
