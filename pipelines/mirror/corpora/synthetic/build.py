"""The whole mirror: plan it, and give every paper version to the mirror's writer."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from datetime import date
from pathlib import Path

from tqdm import tqdm  # type: ignore[import-untyped]  # no stubs pinned (types-tqdm)

from pipelines.mirror.corpora.synthetic.kinds import (
    BOMB,
    GENERATOR,
    KINDS,
    LATIN1,
    TEX_GZ,
    WITHDRAWN,
    synthetic_counts,
)
from pipelines.mirror.corpora.synthetic.packaging import package_eprint
from pipelines.mirror.corpora.synthetic.paper import write_paper
from pipelines.mirror.corpora.synthetic.plan import PaperPlan, plan_papers
from pipelines.mirror.layout import MirrorEntry, format_time
from pipelines.mirror.manifest import SYNTHETIC, Manifest, Origin, PaperRecord
from pipelines.mirror.writer import Eprint, PaperVersion, write_mirror

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

    def describe(records: tuple[PaperRecord, ...]) -> Manifest:
        header = {"generator": GENERATOR, "seed": seed, "n_papers": n_papers, "kinds": dict(KINDS)}
        counts = synthetic_counts(records)
        return Manifest(SYNTHETIC, start.isoformat(), end.isoformat(), records, counts, header)

    return write_mirror(out_dir, _papers(plans, seed, progress), describe)


def _papers(plans: Sequence[PaperPlan], seed: int, progress: bool) -> Iterator[PaperVersion]:
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
            eprint: Eprint | None = None
            if kind == WITHDRAWN:
                comment = (
                    "This paper has been withdrawn by the authors due to a gap in the proof "
                    "of the main theorem"
                )
            else:
                rng = random.Random(f"{seed}/{plan.paper_id}/package/{version_plan.version}")
                mtime = int(version_plan.updated.timestamp())
                eprint = package_eprint(kind, meta, source, mtime, rng)
            entry = MirrorEntry(
                paper_id=plan.paper_id,
                version=version_plan.version,
                title=_plain(meta.title),
                summary=_plain(meta.abstract),
                authors=tuple(meta.authors),
                categories=tuple(meta.categories),
                primary_category=meta.categories[0],
                published=format_time(plan.published),
                updated=format_time(version_plan.updated),
                comment=comment,
                withdrawn=kind == WITHDRAWN,
            )
            origin = Origin(kind=kind, concepts=tuple(item.name for item in concepts))
            yield PaperVersion(entry, eprint, origin)


def _plain(latex: str) -> str:
    """Metadata text as arXiv shows it: math kept, ``--`` as a plain hyphen."""
    return latex.replace("---", "—").replace("--", "-").replace("\\%", "%").replace("~", " ")
