"""Command line of the sample corpus: generate the mirror, or serve it for manual use.

``python -m pipelines.sample [--params params.yaml] [--root .] [--n-papers N] [--seed S]
[--out DIR]`` writes the mirror (default ``<root>/data/mirror``; the DVC ``sample`` stage
runs this) and prints a summary. ``python -m pipelines.sample serve [--root .]
[--mirror DIR] [--port P] [--now ISO]`` serves a mirror on 127.0.0.1 until Ctrl-C.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Sequence
from datetime import date
from pathlib import Path

from pipelines.common.config import PARAMS_FILE, ConfigError, load_params
from pipelines.common.paths import Paths
from pipelines.ingest.sample.generator import Manifest, generate_mirror

SERVE = "serve"


def _generate_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pipelines.sample",
        description=(
            "Generate the offline sample mirror (an arXiv look-alike: entries.jsonl, "
            "e-print/ and manifest.json) from params.yaml's sample section. "
            f"Run 'python -m pipelines.sample {SERVE} --help' to serve a mirror over HTTP."
        ),
    )
    parser.add_argument("--params", type=Path, default=PARAMS_FILE, help="params.yaml to read")
    parser.add_argument("--root", type=Path, default=Path("."), help="root of the data layout")
    parser.add_argument(
        "--n-papers", type=int, help="papers to generate (default: sample.n_papers)"
    )
    parser.add_argument("--seed", type=int, help="random seed (default: sample.seed)")
    parser.add_argument("--out", type=Path, help="output folder (default: <root>/data/mirror)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def _serve_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"python -m pipelines.sample {SERVE}",
        description="Serve a generated mirror on 127.0.0.1 like arXiv's API until Ctrl-C.",
    )
    parser.add_argument("--root", type=Path, default=Path("."), help="root of the data layout")
    parser.add_argument("--mirror", type=Path, help="mirror folder (default: <root>/data/mirror)")
    parser.add_argument("--port", type=int, default=0, help="port (default: any free port)")
    parser.add_argument("--now", help="hide versions updated after this ISO time")
    return parser


def summary(manifest: Manifest, out_dir: Path, seconds: float) -> str:
    counts = manifest.counts()
    kinds = ", ".join(f"{kind} {count}" for kind, count in counts["kinds"].items())
    return (
        f"sample: {counts['papers']} papers, {counts['versions']} versions "
        f"({counts['revised_papers']} papers revised), {counts['concepts_used']} concepts "
        f"used; kinds: {kinds}; written to {out_dir} in {seconds:.1f} s"
    )


def _generate(argv: Sequence[str]) -> int:
    args = _generate_parser().parse_args(argv)
    try:
        params = load_params(args.params).sample
        start = date.fromisoformat(params.start_date)
        end = date.fromisoformat(params.end_date)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except ValueError as error:
        print(
            f"error: {args.params}: sample.start_date/end_date must be YYYY-MM-DD ({error})",
            file=sys.stderr,
        )
        return 2
    n_papers = params.n_papers if args.n_papers is None else args.n_papers
    seed = params.seed if args.seed is None else args.seed
    out_dir = args.out if args.out is not None else Paths(args.root).mirror
    began = time.perf_counter()
    try:
        manifest = generate_mirror(
            out_dir, n_papers, seed, start=start, end=end, progress=not args.no_progress
        )
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(summary(manifest, out_dir, time.perf_counter() - began))
    return 0


def _serve(argv: Sequence[str]) -> int:
    # Imported here: generating the mirror does not need the HTTP server.
    from pipelines.ingest.sample.server import MirrorServer

    args = _serve_parser().parse_args(argv)
    mirror = args.mirror if args.mirror is not None else Paths(args.root).mirror
    try:
        server = MirrorServer(mirror, now=args.now, port=args.port)
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    with server:
        print(f"serving {mirror} at {server.base_url} (Ctrl-C stops)")
        print(
            f"  try {server.base_url}/api/query?search_query=cat:math.CO&max_results=5",
            flush=True,
        )
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            print("stopped")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == [SERVE]:
        return _serve(arguments[1:])
    return _generate(arguments)


if __name__ == "__main__":
    raise SystemExit(main())
