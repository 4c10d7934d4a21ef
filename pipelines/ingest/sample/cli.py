"""``mathembed sample`` builds the offline mirror (the real corpus's chapters, or the synthetic
sample); ``mathembed sample-serve`` serves a mirror on 127.0.0.1 for manual use."""

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
    from pipelines.ingest.sample.corpus import CorpusManifest
    from pipelines.ingest.sample.manifest import Manifest

MirrorOption = Annotated[
    Path | None,
    typer.Option("--mirror", help="Mirror folder (default: <root>/data/mirror)."),
]


def sample(
    params: ParamsOption = DEFAULT_PARAMS,
    root: RootOption = DEFAULT_ROOT,
    corpus: Annotated[
        str | None,
        typer.Option("--corpus", help="stacks-project or synthetic (default: sample.corpus)."),
    ] = None,
    n_papers: Annotated[
        int | None,
        typer.Option(
            "--n-papers", help="Synthetic corpus: papers to generate (default: sample.n_papers)."
        ),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option("--seed", help="Synthetic corpus: random seed (default: sample.seed)."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Output folder (default: <root>/data/mirror)."),
    ] = None,
    progress: ProgressOption = True,
) -> None:
    """Build the offline mirror (data/mirror/) that ingest harvests like arXiv.

    An arXiv look-alike (entries.jsonl, e-print/ and manifest.json) from params.yaml's
    sample section: with sample.corpus stacks-project (the default) one paper per chapter
    of corpora/stacks-project/, with synthetic the generated sample (n_papers, seed).
    `mathembed sample-serve` serves a mirror over HTTP.
    """
    import time
    from datetime import date

    from pipelines.common.paths import Paths

    with stage_command("sample", params, root) as loaded:
        sample_params = loaded.sample
        chosen = corpus if corpus is not None else sample_params.corpus
        if chosen not in ("stacks-project", "synthetic"):
            fail("sample", f"--corpus {chosen!r}: use stacks-project or synthetic", EXIT_CONFIG)
        if chosen != "synthetic" and (n_papers is not None or seed is not None):
            fail(
                "sample",
                f"--n-papers and --seed apply to the synthetic corpus only (the corpus is "
                f"{chosen}); add --corpus synthetic",
                EXIT_CONFIG,
            )
        # The loader checked both are YYYY-MM-DD (allowed.IsoDate).
        start = date.fromisoformat(sample_params.start_date)
        end = date.fromisoformat(sample_params.end_date)
        out_dir = out if out is not None else Paths(root).mirror
        began = time.perf_counter()
        try:
            if chosen == "synthetic":
                from pipelines.ingest.sample.generator import generate_mirror

                manifest = generate_mirror(
                    out_dir,
                    sample_params.n_papers if n_papers is None else n_papers,
                    sample_params.seed if seed is None else seed,
                    start=start,
                    end=end,
                    progress=progress,
                )
                summary = _summary(manifest, out_dir, time.perf_counter() - began)
            else:
                from pipelines.ingest.sample.corpus import CORPUS_DIR, build_corpus_mirror

                corpus_manifest = build_corpus_mirror(
                    out_dir, Path(root) / CORPUS_DIR, start=start, end=end
                )
                summary = _corpus_summary(corpus_manifest, out_dir, time.perf_counter() - began)
        except (ValueError, FileNotFoundError) as error:
            # Too few papers for one of every kind, too short a date window, or no corpus
            # folder: the settings (sample.* or the options) or the checkout have to change.
            fail("sample", error, EXIT_CONFIG)
    typer.echo(summary)


def _summary(manifest: Manifest, out_dir: Path, seconds: float) -> str:
    counts = manifest.counts()
    kinds = ", ".join(f"{kind} {count}" for kind, count in counts["kinds"].items())
    return (
        f"sample: {counts['papers']} papers, {counts['versions']} versions "
        f"({counts['revised_papers']} papers revised), {counts['concepts_used']} concepts "
        f"used; kinds: {kinds}; written to {out_dir} in {seconds:.1f} s"
    )


def _corpus_summary(manifest: CorpusManifest, out_dir: Path, seconds: float) -> str:
    first, last = manifest.versions[0], manifest.versions[-1]
    return (
        f"sample: {len(manifest.versions)} chapters of the {manifest.corpus} corpus as papers "
        f"{first.paper_id}..{last.paper_id}; written to {out_dir} in {seconds:.1f} s"
    )


def sample_serve(
    root: RootOption = DEFAULT_ROOT,
    mirror: MirrorOption = None,
    port: Annotated[int, typer.Option("--port", help="Port (default: any free port).")] = 0,
    now: Annotated[
        str | None, typer.Option("--now", help="Hide versions updated after this ISO time.")
    ] = None,
) -> None:
    """Serve a mirror (mathembed sample) on 127.0.0.1 like arXiv's API until Ctrl-C."""
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
