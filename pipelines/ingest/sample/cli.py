"""``mathembed sample`` generates the offline sample mirror; ``mathembed sample-serve`` serves
a generated mirror on 127.0.0.1 for manual use."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pipelines.common.cli import (
    DEFAULT_PARAMS,
    DEFAULT_ROOT,
    EXIT_CONFIG,
    ParamsOption,
    ProgressOption,
    RootOption,
    fail,
    stage_command,
)

if TYPE_CHECKING:
    from pipelines.ingest.sample.manifest import Manifest

MirrorOption = Annotated[
    Path | None,
    typer.Option("--mirror", help="Mirror folder (default: <root>/data/mirror)."),
]


def sample(
    params: ParamsOption = DEFAULT_PARAMS,
    root: RootOption = DEFAULT_ROOT,
    n_papers: Annotated[
        int | None,
        typer.Option("--n-papers", help="Papers to generate (default: sample.n_papers)."),
    ] = None,
    seed: Annotated[
        int | None, typer.Option("--seed", help="Random seed (default: sample.seed).")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Output folder (default: <root>/data/mirror)."),
    ] = None,
    progress: ProgressOption = True,
) -> None:
    """Generate the offline sample mirror (data/mirror/).

    An arXiv look-alike (entries.jsonl, e-print/ and manifest.json) from params.yaml's
    sample section. `mathembed sample-serve` serves a mirror over HTTP.
    """
    import time
    from datetime import date

    from pipelines.common.paths import Paths
    from pipelines.ingest.sample.generator import generate_mirror

    with stage_command("sample", params, root) as loaded:
        sample_params = loaded.sample
        # The loader checked both are YYYY-MM-DD (allowed.IsoDate).
        start = date.fromisoformat(sample_params.start_date)
        end = date.fromisoformat(sample_params.end_date)
        out_dir = out if out is not None else Paths(root).mirror
        began = time.perf_counter()
        try:
            manifest = generate_mirror(
                out_dir,
                sample_params.n_papers if n_papers is None else n_papers,
                sample_params.seed if seed is None else seed,
                start=start,
                end=end,
                progress=progress,
            )
        except ValueError as error:
            # Too few papers for one of every kind, or too short a date window: the
            # settings (sample.* or --n-papers) have to change.
            fail("sample", error, EXIT_CONFIG)
    typer.echo(_summary(manifest, out_dir, time.perf_counter() - began))


def _summary(manifest: Manifest, out_dir: Path, seconds: float) -> str:
    counts = manifest.counts()
    kinds = ", ".join(f"{kind} {count}" for kind, count in counts["kinds"].items())
    return (
        f"sample: {counts['papers']} papers, {counts['versions']} versions "
        f"({counts['revised_papers']} papers revised), {counts['concepts_used']} concepts "
        f"used; kinds: {kinds}; written to {out_dir} in {seconds:.1f} s"
    )


def sample_serve(
    root: RootOption = DEFAULT_ROOT,
    mirror: MirrorOption = None,
    port: Annotated[int, typer.Option("--port", help="Port (default: any free port).")] = 0,
    now: Annotated[
        str | None, typer.Option("--now", help="Hide versions updated after this ISO time.")
    ] = None,
) -> None:
    """Serve a generated mirror on 127.0.0.1 like arXiv's API until Ctrl-C."""
    import threading

    from pipelines.common.paths import Paths
    from pipelines.ingest.sample.server import MirrorServer

    mirror_dir = mirror if mirror is not None else Paths(root).mirror
    try:
        server = MirrorServer(mirror_dir, now=now, port=port)
    except (FileNotFoundError, ValueError) as error:
        # Exit 2, as this command always has (a missing or malformed mirror, a bad --now).
        fail("sample-serve", error, EXIT_CONFIG)
    with server:
        typer.echo(f"serving {mirror_dir} at {server.base_url} (Ctrl-C stops)")
        typer.echo(f"  try {server.base_url}/api/query?search_query=cat:math.CO&max_results=5")
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            typer.echo("stopped")


def register(app: typer.Typer) -> None:
    app.command("sample")(sample)
    app.command("sample-serve")(sample_serve)
