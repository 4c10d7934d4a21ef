"""The whole mirror: plan it, write every paper version, and swap the result in."""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import date
from pathlib import Path

from tqdm import tqdm  # type: ignore[import-untyped]  # no stubs pinned (types-tqdm)

from pipelines.dev.synthetic.manifest import (
    BOMB,
    LATIN1,
    TEX_GZ,
    WITHDRAWN,
    Manifest,
    VersionRecord,
)
from pipelines.dev.synthetic.packaging import Eprint, package_eprint
from pipelines.dev.synthetic.paper import write_paper
from pipelines.dev.synthetic.plan import PaperPlan, plan_papers
from pipelines.ingest.sample.layout import (
    EPRINT_DIR,
    built_in_staging,
    iso_time,
    listing_line,
    write_eprint,
    write_index,
)

DEFAULT_START = date(2024, 1, 1)
DEFAULT_END = date(2024, 3, 31)


def generate_mirror(
    out_dir: Path,
    n_papers: int,
    seed: int,
    *,
    start: date = DEFAULT_START,
    end: date = DEFAULT_END,
    progress: bool = False,
) -> Manifest:
    """Write the sample mirror to ``out_dir`` (replacing it) and return its manifest."""
    plans = plan_papers(n_papers, seed, start, end)
    return built_in_staging(
        out_dir,
        lambda staging: _write_mirror(staging, plans, seed, n_papers, start, end, progress),
    )


def _write_mirror(
    folder: Path,
    plans: Sequence[PaperPlan],
    seed: int,
    n_papers: int,
    start: date,
    end: date,
    progress: bool,
) -> Manifest:
    eprints = folder / EPRINT_DIR
    eprints.mkdir()
    entries: list[str] = []
    records: list[VersionRecord] = []
    for plan in tqdm(plans, desc="sample", unit="paper", disable=None if progress else True):
        for version_plan in plan.versions:
            kind = version_plan.kind
            split = kind not in (TEX_GZ, LATIN1, BOMB)
            # A withdrawal keeps the withdrawn paper's metadata; it adds no text of its own.
            text_version = version_plan.version - 1 if kind == WITHDRAWN else version_plan.version
            meta, source, concepts = write_paper(
                seed, plan, text_version, split=split, latin1=kind == LATIN1
            )
            comment = meta.comment
            eprint_path: str | None = None
            packed: Eprint | None = None
            if kind == WITHDRAWN:
                comment = (
                    "This paper has been withdrawn by the authors due to a gap in the proof "
                    "of the main theorem"
                )
            else:
                rng = random.Random(f"{seed}/{plan.paper_id}/package/{version_plan.version}")
                mtime = int(version_plan.updated.timestamp())
                packed = package_eprint(kind, meta, source, mtime, rng)
                eprint_path = write_eprint(
                    eprints,
                    plan.paper_id,
                    version_plan.version,
                    packed.data,
                    packed.content_type,
                    packed.encoding,
                )
            entry = {
                "paper_id": plan.paper_id,
                "version": version_plan.version,
                "title": _plain(meta.title),
                "summary": _plain(meta.abstract),
                "authors": list(meta.authors),
                "categories": list(meta.categories),
                "primary_category": meta.categories[0],
                "published": iso_time(plan.published),
                "updated": iso_time(version_plan.updated),
                "comment": comment,
                "withdrawn": kind == WITHDRAWN,
            }
            entries.append(listing_line(entry))
            records.append(
                VersionRecord(
                    paper_id=plan.paper_id,
                    version=version_plan.version,
                    kind=kind,
                    concepts=tuple(item.name for item in concepts),
                    updated=entry["updated"],
                    eprint=eprint_path,
                    content_type=packed.content_type if packed else None,
                    encoding=packed.encoding if packed else None,
                    main_file=packed.main_file if packed else None,
                    files=packed.files if packed else (),
                )
            )
    manifest = Manifest(seed, n_papers, start.isoformat(), end.isoformat(), tuple(records))
    write_index(folder, entries, manifest.to_json())
    return manifest


def _plain(latex: str) -> str:
    """Metadata text as arXiv shows it: math kept, ``--`` as a plain hyphen."""
    return latex.replace("---", "—").replace("--", "-").replace("\\%", "%").replace("~", " ")
