"""``mathembed sample`` builds the offline mirror from one of its corpora (the Stacks
chapters, the Lean blueprints or the synthetic sample); ``mathembed sample-serve`` serves a
mirror on 127.0.0.1 for manual use."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

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
    from pipelines.mirror.manifest import Manifest

MirrorOption = Annotated[
    Path | None,
    typer.Option("--mirror", help="Mirror folder (default: <root>/data/mirror)."),
]


def sample(
    params: ParamsOption = DEFAULT_PARAMS,
    root: RootOption = DEFAULT_ROOT,
    corpus: Annotated[
        str | None,
        typer.Option(
            "--corpus", help="stacks-project, blueprints or synthetic (default: sample.corpus)."
        ),
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
    of corpora/stacks-project/, with blueprints one paper per chapter of the Lean
    blueprint projects in sample.blueprints_dir, with synthetic the generated sample
    (n_papers, seed).
    `mathembed sample-serve` serves a mirror over HTTP.
    """
    import dataclasses
    import time
    from datetime import date

    from pipelines.common.config import ConfigError
    from pipelines.common.paths import Paths

    with stage_command("sample", params, root) as loaded:
        sample_params = loaded.sample
        if corpus is not None:
            try:  # checked as sample.corpus is, against the one list of corpora
                sample_params = dataclasses.replace(sample_params, corpus=cast(Any, corpus))
            except ConfigError as error:
                fail("sample", f"--corpus {corpus!r}: {error}", EXIT_CONFIG)
        chosen = sample_params.corpus
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
                # Test and scale data (the ontology, the prose), loaded only when asked for.
                from pipelines.mirror.corpora.synthetic import generate_mirror

                manifest = generate_mirror(
                    out_dir,
                    sample_params.n_papers if n_papers is None else n_papers,
                    sample_params.seed if seed is None else seed,
                    start=start,
                    end=end,
                    progress=progress,
                )
                summary = _summary(manifest, out_dir, time.perf_counter() - began)
            elif chosen == "blueprints":
                from pipelines.mirror.corpora.blueprints import (
                    build_blueprint_mirror,
                    categories_outside,
                )

                manifest = build_blueprint_mirror(
                    out_dir, Path(root) / sample_params.blueprints_dir, start=start, end=end
                )
                summary = _blueprint_summary(
                    manifest,
                    categories_outside(manifest, loaded.ingest.categories),
                    out_dir,
                    time.perf_counter() - began,
                )
            else:
                from pipelines.mirror.corpora.stacks import CORPUS_DIR, build_stacks_mirror

                manifest = build_stacks_mirror(
                    out_dir, Path(root) / CORPUS_DIR, start=start, end=end
                )
                summary = _corpus_summary(manifest, out_dir, time.perf_counter() - began)
        except (ValueError, FileNotFoundError) as error:
            # Too few papers for one of every kind, too short a date window, or no corpus
            # folder: the settings (sample.* or the options) or the checkout have to change.
            fail("sample", error, EXIT_CONFIG)
    typer.echo(summary)


def _summary(manifest: Manifest, out_dir: Path, seconds: float) -> str:
    counts = manifest.counts
    kinds = ", ".join(f"{kind} {count}" for kind, count in counts["kinds"].items())
    return (
        f"sample: {counts['papers']} papers, {counts['versions']} versions "
        f"({counts['revised_papers']} papers revised), {counts['concepts_used']} concepts "
        f"used; kinds: {kinds}; written to {out_dir} in {seconds:.1f} s"
    )


def _corpus_summary(manifest: Manifest, out_dir: Path, seconds: float) -> str:
    first, last = manifest.versions[0], manifest.versions[-1]
    return (
        f"sample: {len(manifest.versions)} chapters of the {manifest.corpus} corpus as papers "
        f"{first.paper_id}..{last.paper_id}; written to {out_dir} in {seconds:.1f} s"
    )


def _blueprint_summary(
    manifest: Manifest,
    missed: dict[str, tuple[int, tuple[str, ...]]],
    out_dir: Path,
    seconds: float,
) -> str:
    first, last = manifest.versions[0], manifest.versions[-1]
    projects = len({record.project for record in manifest.versions})
    summary = (
        f"sample: {len(manifest.versions)} chapters of {projects} blueprint projects as papers "
        f"{first.paper_id}..{last.paper_id}; written to {out_dir} in {seconds:.1f} s"
    )
    if missed:
        # Said here, not discovered later as a short harvest.
        names = "; ".join(
            f"{project} ({count} papers: {', '.join(categories)})"
            for project, (count, categories) in sorted(missed.items())
        )
        summary += (
            f"\nnote: ingest.categories holds none of the categories of {names}; "
            "ingest will not list those papers unless one of each is added"
        )
    return summary


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
    from pipelines.mirror.server import MirrorServer

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
