"""The whole mirror: plan it, write every paper version, and swap the result in."""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
from collections.abc import Callable, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import TypeVar

from tqdm import tqdm  # type: ignore[import-untyped]  # no stubs pinned (types-tqdm)

from pipelines.common.io import current_umask
from pipelines.ingest.sample.generator.packaging import Eprint, package_eprint
from pipelines.ingest.sample.generator.paper import write_paper
from pipelines.ingest.sample.generator.plan import PaperPlan, plan_papers
from pipelines.ingest.sample.manifest import (
    BOMB,
    ENTRIES_FILE,
    EPRINT_DIR,
    LATIN1,
    MANIFEST_FILE,
    TEX_GZ,
    WITHDRAWN,
    Manifest,
    VersionRecord,
    eprint_name,
)

DEFAULT_START = date(2024, 1, 1)
DEFAULT_END = date(2024, 3, 31)


T = TypeVar("T")


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


def built_in_staging(out_dir: Path, write: Callable[[Path], T]) -> T:
    """Run ``write`` on a fresh folder beside ``out_dir``, then swap it in: a mirror is
    replaced whole or not at all (a failed build leaves the old one and no debris)."""
    out_dir = out_dir.resolve()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        # mkdtemp's folder is private (0700); the mirror is served and shared like any
        # folder mkdir would make, so give it the umask's mode (0777 less the umask).
        staging.chmod(0o777 & ~current_umask())
        result = write(staging)
        swap_in(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return result


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
                name = eprint_name(plan.paper_id, version_plan.version)
                (eprints / name).write_bytes(packed.data)
                sidecar = {"content_type": packed.content_type, "encoding": packed.encoding}
                (eprints / f"{name}.json").write_text(
                    json.dumps(sidecar, sort_keys=True) + "\n", encoding="utf-8"
                )
                eprint_path = f"{EPRINT_DIR}/{name}"
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
            entries.append(json.dumps(entry, ensure_ascii=False, sort_keys=True))
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
    (folder / ENTRIES_FILE).write_text("\n".join(entries) + "\n", encoding="utf-8")
    manifest = Manifest(seed, n_papers, start.isoformat(), end.isoformat(), tuple(records))
    (folder / MANIFEST_FILE).write_text(
        json.dumps(manifest.to_json(), indent=1, sort_keys=True, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    return manifest


def _plain(latex: str) -> str:
    """Metadata text as arXiv shows it: math kept, ``--`` as a plain hyphen."""
    return latex.replace("---", "—").replace("--", "-").replace("\\%", "%").replace("~", " ")


def swap_in(staging: Path, out_dir: Path) -> None:
    """Replace ``out_dir`` by ``staging`` with two renames; the old tree is then deleted."""
    old: Path | None = None
    if out_dir.exists():
        old = out_dir.with_name(f".{out_dir.name}.old-{os.getpid()}")
        os.replace(out_dir, old)
    os.replace(staging, out_dir)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def iso_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
