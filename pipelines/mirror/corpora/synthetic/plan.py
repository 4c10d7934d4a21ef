"""Planning the mirror: which papers, versions, dates, kinds and focus concepts."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from pipelines.mirror.corpora.synthetic.kinds import (
    LATIN1,
    MALFORMED_KINDS,
    PDF_ONLY,
    TEX_GZ,
    TEX_TAR,
    WITHDRAWN,
)
from pipelines.mirror.corpora.synthetic.ontology import CONCEPTS, Concept

MIN_PAPERS = 20  # room for one paper of every kind plus revisions


@dataclass
class VersionPlan:
    version: int
    updated: datetime
    kind: str


@dataclass
class PaperPlan:
    index: int
    focus: Concept
    published: datetime
    old_style: bool = False
    paper_id: str = ""
    versions: list[VersionPlan] = field(default_factory=list)


def _special_counts(n_papers: int) -> dict[str, int]:
    """How many papers of each special kind: a handful at 96, still a handful at 10,000."""
    rare = max(1, n_papers // 2000)
    counts = {PDF_ONLY: max(2, n_papers // 40), WITHDRAWN: max(2, n_papers // 50)}
    counts[LATIN1] = max(1, n_papers // 500)
    counts.update(dict.fromkeys(MALFORMED_KINDS, rare))
    return counts


def _random_time(rng: random.Random, start: datetime, end: datetime) -> datetime:
    seconds = int((end - start).total_seconds())
    return start + timedelta(seconds=rng.randrange(max(seconds, 1)))


def _later(rng: random.Random, after: datetime, end: datetime) -> datetime:
    """A time strictly after ``after`` and no later than ``end`` (10–50 % of the way)."""
    span = (end - after).total_seconds()
    return after + timedelta(seconds=max(3600, int(span * rng.uniform(0.1, 0.5))))


def plan_papers(n_papers: int, seed: int, start: date, end: date) -> list[PaperPlan]:
    master = random.Random(f"mathembed-sample/{seed}")
    window_start = datetime(start.year, start.month, start.day, tzinfo=UTC)
    window_end = datetime(end.year, end.month, end.day, 23, 59, 59, tzinfo=UTC)
    if window_end - window_start < timedelta(days=14):
        raise ValueError(f"sample date window {start}..{end} is shorter than 14 days")
    # Focus concepts cycle through a shuffled ontology, so every concept is the focus of
    # some paper as soon as there are as many papers as concepts.
    order = list(CONCEPTS)
    master.shuffle(order)
    plans = [
        PaperPlan(index, order[index % len(order)], _random_time(master, window_start, window_end))
        for index in range(n_papers)
    ]

    specials = _special_counts(n_papers)
    n_old_style = max(1, n_papers // 48)
    n_revised = max(3, n_papers // 10)
    n_third = max(1, n_papers // 50)
    needed = sum(specials.values()) + n_old_style + n_revised
    if n_papers < max(MIN_PAPERS, needed):
        raise ValueError(
            f"n_papers={n_papers} is too small for one paper of every kind; use at least "
            f"{max(MIN_PAPERS, needed)} (params.yaml sample.n_papers)"
        )
    shuffled = list(plans)
    master.shuffle(shuffled)
    position = 0

    def take(count: int) -> list[PaperPlan]:
        nonlocal position
        chosen = shuffled[position : position + count]
        position += count
        return chosen

    late_limit = window_end - timedelta(days=10)
    for kind, count in specials.items():
        for plan in take(count):
            if kind == WITHDRAWN:
                plan.published = _random_time(master, window_start, late_limit)
                first = master.choice((TEX_TAR, TEX_GZ))
                plan.versions = [
                    VersionPlan(1, plan.published, first),
                    VersionPlan(2, _later(master, plan.published, window_end), WITHDRAWN),
                ]
            else:
                plan.versions = [VersionPlan(1, plan.published, kind)]
    for plan in take(n_old_style):
        # An old-style paper from 2005 revised inside the window: its v1 predates it.
        plan.old_style = True
        revised = plan.published
        plan.published = _random_time(
            master, datetime(2005, 1, 1, tzinfo=UTC), datetime(2005, 12, 31, tzinfo=UTC)
        )
        plan.versions = [
            VersionPlan(1, plan.published, TEX_GZ),
            VersionPlan(2, revised, master.choice((TEX_TAR, TEX_GZ))),
        ]
    for count, plan in enumerate(take(n_revised)):
        plan.published = _random_time(master, window_start, late_limit)
        kind = master.choice((TEX_TAR, TEX_GZ))
        plan.versions = [VersionPlan(1, plan.published, kind)]
        for version in (2, 3) if count < n_third else (2,):
            # A revision sometimes switches between a single file and an archive.
            if master.random() < 0.3:
                kind = TEX_TAR if kind == TEX_GZ else TEX_GZ
            updated = _later(master, plan.versions[-1].updated, window_end)
            plan.versions.append(VersionPlan(version, updated, kind))
    for plan in shuffled[position:]:
        plan.versions = [VersionPlan(1, plan.published, master.choice((TEX_TAR, TEX_GZ)))]

    _assign_ids(plans)
    return sorted(plans, key=lambda plan: plan.paper_id)


def _assign_ids(plans: Sequence[PaperPlan]) -> None:
    """arXiv-style ids numbered by first-submission time within each month."""
    counters: Counter[str] = Counter()
    for plan in sorted(plans, key=lambda plan: (plan.published, plan.index)):
        month = plan.published.strftime("%y%m")
        counters[month] += 1
        number = counters[month]
        plan.paper_id = f"math/{month}{number:03d}" if plan.old_style else f"{month}.{number:05d}"
