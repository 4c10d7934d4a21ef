"""Deterministic generator of the offline sample mirror: an arXiv look-alike on disk.

``generate_mirror(out_dir, n_papers, seed)`` writes, under ``out_dir``:

``entries.jsonl``
    One arXiv listing entry per line and per paper version, sorted by paper id then
    version: ``paper_id, version, title, summary, authors, categories, primary_category,
    published, updated, comment, withdrawn`` (times ISO 8601 UTC, ``2024-01-03T10:00:00Z``;
    ``published`` is the first version's date, ``updated`` this version's).
``e-print/<safe_name(paper_id)>v<version>``
    The raw bytes arXiv's ``/e-print/`` would send, and beside each a sidecar
    ``<same name>.json``: ``{"content_type": ..., "encoding": "gzip" | null}``.
    A withdrawn version has neither (the server answers 404 for it).
``manifest.json``
    The ground truth, for tests: per paper version its ``kind`` (see :data:`KINDS`),
    its true ``concepts`` (display names from :mod:`pipelines.sample.ontology`), the
    e-print's path, content type, main file and member list; plus counts.

Every paper is about a focus concept and one to three related ones, and its LaTeX is
realistic: preamble, ``\\newcommand`` macros used in the body, comments (and an escaped
``\\%``), named theorem environments with labels, definitions with ``\\emph`` and
"we call ... a ..." phrasing, inline and display math, citations, ``\\keywords`` and
``\\subjclass``. Concepts are mentioned by name, alias, notation and description, so
that retrieval is not a string match. Same ``seed`` and ``n_papers`` → byte-identical
files (tar members have fixed metadata, gzip headers carry no time stamp).

The mirror is built in a temporary sibling folder and swapped in with renames, so a run
killed at any point leaves the previous mirror (or nothing), never half of a new one;
single files are not fsynced one by one, which keeps 10,000 papers fast.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import re
import shutil
import tarfile
import tempfile
import unicodedata
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

from tqdm import tqdm  # type: ignore[import-untyped]  # no stubs pinned (types-tqdm)

from pipelines.common.io import read_json, safe_name
from pipelines.ingest.sample.ontology import CONCEPTS, Concept, concept, latex_text, neighbours

# -- kinds of paper versions ----------------------------------------------------------

TEX_TAR = "tex_tar"
TEX_GZ = "tex_gz"
PDF_ONLY = "pdf_only"
WITHDRAWN = "withdrawn"
LATIN1 = "latin1"
TRUNCATED_GZIP = "truncated_gzip"
PATH_TRAVERSAL = "path_traversal"
ABSOLUTE_PATH = "absolute_path"
SYMLINK = "symlink"
BOMB = "bomb"
NO_TEX = "no_tex"

KINDS: Mapping[str, str] = {
    TEX_TAR: "gzip'd tar: main file with \\documentclass plus \\input/\\include sub-files",
    TEX_GZ: "a single gzip'd .tex file (UTF-8)",
    PDF_ONLY: "no source: the e-print is a PDF (application/pdf)",
    WITHDRAWN: "withdrawn version: comment says so, no e-print (the server answers 404)",
    LATIN1: "a single gzip'd .tex file encoded in latin-1 (not valid UTF-8)",
    TRUNCATED_GZIP: "a gzip'd tar cut in half: the gzip stream ends early",
    PATH_TRAVERSAL: "gzip'd tar with a member named ../../evil.tex",
    ABSOLUTE_PATH: "gzip'd tar with a member at an absolute path (/tmp/...)",
    SYMLINK: "gzip'd tar whose secret.tex is a symlink to /etc/passwd (and is \\input)",
    BOMB: "compression bomb: a small gzip'd single file inflating to 200 MiB",
    NO_TEX: "gzip'd tar without any .tex file (a PDF, a PNG and a README)",
}
MALFORMED_KINDS = (TRUNCATED_GZIP, PATH_TRAVERSAL, ABSOLUTE_PATH, SYMLINK, BOMB, NO_TEX)

CONTENT_TYPE_TAR = "application/x-eprint-tar"
CONTENT_TYPE_SINGLE = "application/x-eprint"
CONTENT_TYPE_PDF = "application/pdf"

BOMB_INFLATED_BYTES = 200 * 1024 * 1024
MIN_PAPERS = 20  # room for one paper of every kind plus revisions
MANIFEST_FORMAT = 1
DEFAULT_START = date(2024, 1, 1)
DEFAULT_END = date(2024, 3, 31)

ENTRIES_FILE = "entries.jsonl"
MANIFEST_FILE = "manifest.json"
EPRINT_DIR = "e-print"


# -- the manifest ---------------------------------------------------------------------


@dataclass(frozen=True)
class VersionRecord:
    """Ground truth about one paper version of the mirror."""

    paper_id: str
    version: int
    kind: str
    concepts: tuple[str, ...]  # display names, focus concept first
    updated: str
    eprint: str | None  # path relative to the mirror folder; None when withdrawn
    content_type: str | None
    encoding: str | None  # "gzip" or None
    main_file: str | None  # the .tex with \documentclass, when there is one
    files: tuple[str, ...]  # archive member names (one name for a single file)

    @property
    def versioned_id(self) -> str:
        return f"{self.paper_id}v{self.version}"


@dataclass(frozen=True)
class Manifest:
    seed: int
    n_papers: int
    start: str  # first day of the date window, "2024-01-01"
    end: str  # last day of the window, inclusive
    versions: tuple[VersionRecord, ...]

    def papers(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(record.paper_id for record in self.versions))

    def latest(self) -> dict[str, VersionRecord]:
        """paper id → its newest version."""
        newest: dict[str, VersionRecord] = {}
        for record in self.versions:
            if record.paper_id not in newest or record.version > newest[record.paper_id].version:
                newest[record.paper_id] = record
        return newest

    def of_kind(self, kind: str) -> tuple[VersionRecord, ...]:
        return tuple(record for record in self.versions if record.kind == kind)

    def record(self, paper_id: str, version: int) -> VersionRecord:
        for record in self.versions:
            if record.paper_id == paper_id and record.version == version:
                return record
        raise KeyError(f"{paper_id}v{version} is not in the manifest")

    def counts(self) -> dict[str, Any]:
        kinds = Counter(record.kind for record in self.versions)
        return {
            "papers": len(self.papers()),
            "versions": len(self.versions),
            "revised_papers": sum(1 for record in self.latest().values() if record.version > 1),
            "kinds": {kind: kinds.get(kind, 0) for kind in KINDS},
            "concepts_used": len({name for record in self.versions for name in record.concepts}),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "format": MANIFEST_FORMAT,
            "generator": "pipelines.sample.generator",
            "seed": self.seed,
            "n_papers": self.n_papers,
            "window": {"start": self.start, "end": self.end},
            "counts": self.counts(),
            "kinds": dict(KINDS),
            "versions": [
                {
                    "paper_id": record.paper_id,
                    "version": record.version,
                    "kind": record.kind,
                    "concepts": list(record.concepts),
                    "updated": record.updated,
                    "eprint": record.eprint,
                    "content_type": record.content_type,
                    "encoding": record.encoding,
                    "main_file": record.main_file,
                    "files": list(record.files),
                }
                for record in self.versions
            ],
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Manifest:
        if raw.get("format") != MANIFEST_FORMAT:
            raise ValueError(
                f"manifest format {raw.get('format')!r} is not {MANIFEST_FORMAT}; "
                "regenerate the mirror with python -m pipelines.sample"
            )
        versions = tuple(
            VersionRecord(
                paper_id=item["paper_id"],
                version=int(item["version"]),
                kind=item["kind"],
                concepts=tuple(item["concepts"]),
                updated=item["updated"],
                eprint=item["eprint"],
                content_type=item["content_type"],
                encoding=item["encoding"],
                main_file=item["main_file"],
                files=tuple(item["files"]),
            )
            for item in raw["versions"]
        )
        window = raw["window"]
        return cls(
            seed=int(raw["seed"]),
            n_papers=int(raw["n_papers"]),
            start=window["start"],
            end=window["end"],
            versions=versions,
        )


def load_manifest(mirror_dir: Path) -> Manifest:
    """Read ``mirror_dir/manifest.json`` (written by :func:`generate_mirror`)."""
    path = mirror_dir / MANIFEST_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; run python -m pipelines.sample first")
    return Manifest.from_json(read_json(path))


def eprint_name(paper_id: str, version: int) -> str:
    """File name of a version's e-print inside ``e-print/`` (the sidecar adds ``.json``)."""
    return f"{safe_name(paper_id)}v{version}"


# -- planning: which papers, versions, dates, kinds and concepts ----------------------


@dataclass
class _VersionPlan:
    version: int
    updated: datetime
    kind: str


@dataclass
class _PaperPlan:
    index: int
    focus: Concept
    published: datetime
    old_style: bool = False
    paper_id: str = ""
    versions: list[_VersionPlan] = field(default_factory=list)


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


def _plan_papers(n_papers: int, seed: int, start: date, end: date) -> list[_PaperPlan]:
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
        _PaperPlan(index, order[index % len(order)], _random_time(master, window_start, window_end))
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

    def take(count: int) -> list[_PaperPlan]:
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
                    _VersionPlan(1, plan.published, first),
                    _VersionPlan(2, _later(master, plan.published, window_end), WITHDRAWN),
                ]
            else:
                plan.versions = [_VersionPlan(1, plan.published, kind)]
    for plan in take(n_old_style):
        # An old-style paper from 2005 revised inside the window: its v1 predates it.
        plan.old_style = True
        revised = plan.published
        plan.published = _random_time(
            master, datetime(2005, 1, 1, tzinfo=UTC), datetime(2005, 12, 31, tzinfo=UTC)
        )
        plan.versions = [
            _VersionPlan(1, plan.published, TEX_GZ),
            _VersionPlan(2, revised, master.choice((TEX_TAR, TEX_GZ))),
        ]
    for count, plan in enumerate(take(n_revised)):
        plan.published = _random_time(master, window_start, late_limit)
        kind = master.choice((TEX_TAR, TEX_GZ))
        plan.versions = [_VersionPlan(1, plan.published, kind)]
        for version in (2, 3) if count < n_third else (2,):
            # A revision sometimes switches between a single file and an archive.
            if master.random() < 0.3:
                kind = TEX_TAR if kind == TEX_GZ else TEX_GZ
            updated = _later(master, plan.versions[-1].updated, window_end)
            plan.versions.append(_VersionPlan(version, updated, kind))
    for plan in shuffled[position:]:
        plan.versions = [_VersionPlan(1, plan.published, master.choice((TEX_TAR, TEX_GZ)))]

    _assign_ids(plans)
    return sorted(plans, key=lambda plan: plan.paper_id)


def _assign_ids(plans: Sequence[_PaperPlan]) -> None:
    """arXiv-style ids numbered by first-submission time within each month."""
    counters: Counter[str] = Counter()
    for plan in sorted(plans, key=lambda plan: (plan.published, plan.index)):
        month = plan.published.strftime("%y%m")
        counters[month] += 1
        number = counters[month]
        plan.paper_id = f"math/{month}{number:03d}" if plan.old_style else f"{month}.{number:05d}"


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# -- prose: names, mentions and glosses -----------------------------------------------

_FIRST_NAMES = (
    "Ana", "Bruno", "Chen", "Dmitri", "Elena", "Fatima", "George", "Hana", "Ivan", "Julia",
    "Kenji", "Lucía", "Marek", "Nadia", "Omar", "Priya", "Quentin", "Rosa", "Sven", "Tomás",
    "Uma", "Viktor", "Wen", "Xavier", "Yuki", "Zoë", "Amélie", "Björn", "Carmen", "Dieter",
    "Eitan", "Frédéric", "Grace", "Hiro", "Ines", "Jonas", "Katarina", "Leon", "Mei", "Nils",
)  # fmt: skip
_LAST_NAMES = (
    "Alvarez", "Bergström", "Castillo", "Dubois", "Eriksen", "Fischer", "García", "Hoffmann",
    "Iyer", "Jansen", "Kowalski", "Lindqvist", "Moreau", "Nakamura", "Okafor", "Petrov",
    "Quinn", "Rossi", "Schmidt", "Tanaka", "Ueda", "Varga", "Weber", "Xu", "Yilmaz", "Zhou",
    "Andersen", "Brandão", "Costa", "Dahl", "Esposito", "Ferreira", "Grünwald", "Haas",
    "Ibáñez", "Jung", "Kessler", "López", "Müller", "Novak",
)  # fmt: skip
_UNIVERSITIES = (
    "University of Vienna", "Pennsylvania State University", "University of Florida",
    "Université de Strasbourg", "University of Cambridge", "Kyoto University",
    "Universidad de Buenos Aires", "University of Illinois at Urbana-Champaign",
    "Uppsala University", "University of Sydney", "Tsinghua University", "ETH Zürich",
    "Universität Bonn", "University of Toronto", "Indian Institute of Science",
)  # fmt: skip

# Real textbooks and papers; each category draws from its own shelf.
_BIBLIOGRAPHY: Mapping[str, str] = {
    "Andrews1976": r"G.~E. Andrews, \emph{The Theory of Partitions}, Encyclopedia of "
    r"Mathematics and its Applications~2, Addison--Wesley, 1976.",
    "Macdonald1995": r"I.~G. Macdonald, \emph{Symmetric Functions and Hall Polynomials}, "
    r"2nd ed., Oxford University Press, 1995.",
    "Stanley1999": r"R.~P. Stanley, \emph{Enumerative Combinatorics, Vol.~2}, Cambridge "
    r"University Press, 1999.",
    "Fulton1997": r"W. Fulton, \emph{Young Tableaux}, London Mathematical Society Student "
    r"Texts~35, Cambridge University Press, 1997.",
    "Sagan2001": r"B.~E. Sagan, \emph{The Symmetric Group}, 2nd ed., Graduate Texts in "
    r"Mathematics~203, Springer, 2001.",
    "FlajoletSedgewick2009": r"P. Flajolet and R. Sedgewick, \emph{Analytic Combinatorics}, "
    r"Cambridge University Press, 2009.",
    "Knuth1970": r"D.~E. Knuth, Permutations, matrices, and generalized Young tableaux, "
    r"\emph{Pacific J. Math.} \textbf{34} (1970), 709--727.",
    "FRT1954": r"J.~S. Frame, G. de B. Robinson and R.~M. Thrall, The hook graphs of the "
    r"symmetric group, \emph{Canad. J. Math.} \textbf{6} (1954), 316--324.",
    "GasperRahman2004": r"G. Gasper and M. Rahman, \emph{Basic Hypergeometric Series}, "
    r"2nd ed., Cambridge University Press, 2004.",
    "Rogers1894": r"L.~J. Rogers, Second memoir on the expansion of certain infinite "
    r"products, \emph{Proc. London Math. Soc.} \textbf{25} (1894), 318--343.",
    "Bailey1948": r"W.~N. Bailey, Identities of the Rogers--Ramanujan type, \emph{Proc. "
    r"London Math. Soc. (2)} \textbf{50} (1948), 1--10.",
    "Andrews1984": r"G.~E. Andrews, Multiple series Rogers--Ramanujan type identities, "
    r"\emph{Pacific J. Math.} \textbf{114} (1984), 267--283.",
    "AndrewsGarvan1988": r"G.~E. Andrews and F.~G. Garvan, Dyson's crank of a partition, "
    r"\emph{Bull. Amer. Math. Soc.} \textbf{18} (1988), 167--171.",
    "Dyson1944": r"F.~J. Dyson, Some guesses in the theory of partitions, \emph{Eureka} "
    r"\textbf{8} (1944), 10--15.",
    "Zwegers2002": r"S.~P. Zwegers, \emph{Mock Theta Functions}, Ph.D. thesis, Universiteit "
    r"Utrecht, 2002.",
    "Apostol1976": r"T.~M. Apostol, \emph{Introduction to Analytic Number Theory}, "
    r"Springer, 1976.",
    "Serre1973": r"J.-P. Serre, \emph{A Course in Arithmetic}, Graduate Texts in "
    r"Mathematics~7, Springer, 1973.",
    "DiamondShurman2005": r"F. Diamond and J. Shurman, \emph{A First Course in Modular "
    r"Forms}, Graduate Texts in Mathematics~228, Springer, 2005.",
    "HardyRamanujan1918": r"G.~H. Hardy and S. Ramanujan, Asymptotic formulae in "
    r"combinatory analysis, \emph{Proc. London Math. Soc. (2)} \textbf{17} (1918), 75--115.",
    "Ono2004": r"K. Ono, \emph{The Web of Modularity}, CBMS Regional Conference Series "
    r"in Mathematics~102, American Mathematical Society, 2004.",
    "IrelandRosen1990": r"K. Ireland and M. Rosen, \emph{A Classical Introduction to Modern "
    r"Number Theory}, 2nd ed., Springer, 1990.",
    "Hatcher2002": r"A. Hatcher, \emph{Algebraic Topology}, Cambridge University Press, 2002.",
    "May1999": r"J.~P. May, \emph{A Concise Course in Algebraic Topology}, University of "
    r"Chicago Press, 1999.",
    "Munkres1984": r"J.~R. Munkres, \emph{Elements of Algebraic Topology}, Addison--Wesley, "
    r"1984.",
    "FultonHarris1991": r"W. Fulton and J. Harris, \emph{Representation Theory: A First "
    r"Course}, Graduate Texts in Mathematics~129, Springer, 1991.",
    "Humphreys1972": r"J.~E. Humphreys, \emph{Introduction to Lie Algebras and "
    r"Representation Theory}, Springer, 1972.",
    "KazhdanLusztig1979": r"D. Kazhdan and G. Lusztig, Representations of Coxeter groups "
    r"and Hecke algebras, \emph{Invent. Math.} \textbf{53} (1979), 165--184.",
    "Kashiwara1991": r"M. Kashiwara, On crystal bases of the $q$-analogue of universal "
    r"enveloping algebras, \emph{Duke Math. J.} \textbf{63} (1991), 465--516.",
    "Kassel1995": r"C. Kassel, \emph{Quantum Groups}, Graduate Texts in Mathematics~155, "
    r"Springer, 1995.",
    "Haiman2001": r"M. Haiman, Hilbert schemes, polygraphs, and the Macdonald positivity "
    r"conjecture, \emph{J. Amer. Math. Soc.} \textbf{14} (2001), 941--1006.",
    "BumpSchilling2017": r"D. Bump and A. Schilling, \emph{Crystal Bases: Representations "
    r"and Combinatorics}, World Scientific, 2017.",
    "Ahlfors1979": r"L.~V. Ahlfors, \emph{Complex Analysis}, 3rd ed., McGraw--Hill, 1979.",
    "Olver1974": r"F.~W.~J. Olver, \emph{Asymptotics and Special Functions}, Academic "
    r"Press, 1974.",
    "AndrewsAskeyRoy1999": r"G.~E. Andrews, R. Askey and R. Roy, \emph{Special Functions}, "
    r"Encyclopedia of Mathematics and its Applications~71, Cambridge University Press, 1999.",
}
_SHELVES: Mapping[str, tuple[str, ...]] = {
    "math.CO": ("Stanley1999", "FlajoletSedgewick2009", "Sagan2001"),
    "math.NT": ("Apostol1976", "Serre1973", "DiamondShurman2005", "IrelandRosen1990"),
    "math.AT": ("Hatcher2002", "May1999", "Munkres1984"),
    "math.RT": ("FultonHarris1991", "Humphreys1972"),
    "math.QA": ("Kassel1995",),
    "math.GR": ("Sagan2001", "FultonHarris1991"),
    "math.CA": ("AndrewsAskeyRoy1999", "Olver1974"),
    "math.CV": ("Ahlfors1979",),
}  # fmt: skip
# Where a concept has a standard source, papers about it cite that source.
_CONCEPT_REFERENCES: Mapping[str, tuple[str, ...]] = {
    "integer partition": ("Andrews1976",),
    "partition function": ("Andrews1976",),
    "Young diagram": ("Fulton1997",),
    "Young tableau": ("Fulton1997", "Sagan2001"),
    "hook length formula": ("FRT1954", "Sagan2001"),
    "symmetric function": ("Macdonald1995", "Stanley1999"),
    "Schur function": ("Macdonald1995", "Stanley1999"),
    "complete homogeneous symmetric function": ("Macdonald1995",),
    "elementary symmetric function": ("Macdonald1995",),
    "Kostka number": ("Macdonald1995", "Fulton1997"),
    "Jacobi–Trudi identity": ("Macdonald1995",),
    "Littlewood–Richardson rule": ("Fulton1997", "Macdonald1995"),
    "RSK correspondence": ("Knuth1970", "Fulton1997"),
    "jeu de taquin": ("Fulton1997",),
    "plethysm": ("Macdonald1995",),
    "Hall–Littlewood polynomial": ("Macdonald1995",),
    "Macdonald polynomial": ("Macdonald1995",),
    "Macdonald positivity": ("Haiman2001",),
    "q-Pochhammer symbol": ("GasperRahman2004",),
    "q-analogue": ("GasperRahman2004",),
    "Gaussian binomial coefficient": ("Andrews1976",),
    "q-binomial theorem": ("GasperRahman2004", "Andrews1976"),
    "basic hypergeometric series": ("GasperRahman2004",),
    "Jacobi triple product": ("Andrews1976", "GasperRahman2004"),
    "Euler's pentagonal number theorem": ("Andrews1976",),
    "Rogers–Ramanujan identities": ("Rogers1894", "Andrews1976"),
    "Andrews–Gordon identities": ("Andrews1984",),
    "Bailey pair": ("Bailey1948",),
    "Bailey's lemma": ("Bailey1948", "Andrews1984"),
    "Durfee square": ("Andrews1976",),
    "Dyson's rank": ("Dyson1944",),
    "partition crank": ("AndrewsGarvan1988",),
    "Ramanujan's congruences": ("Ono2004", "Andrews1976"),
    "Euler's partition theorem": ("Andrews1976",),
    "mock theta function": ("Zwegers2002",),
    "Dedekind eta function": ("Ono2004", "Apostol1976"),
    "Ramanujan tau function": ("Serre1973", "Ono2004"),
    "Hardy–Ramanujan asymptotic formula": ("HardyRamanujan1918", "Andrews1976"),
    "Kazhdan–Lusztig polynomial": ("KazhdanLusztig1979",),
    "crystal basis": ("Kashiwara1991", "BumpSchilling2017"),
    "quantum group": ("Kassel1995",),
    "Specht module": ("Sagan2001",),
    "Gamma function": ("AndrewsAskeyRoy1999",),
    "saddle point method": ("FlajoletSedgewick2009",),
    "Mellin transform": ("FlajoletSedgewick2009",),
}

_ENV_FOR_TYPE = {"theorem": "theorem", "identity": "theorem", "conjecture": "conjecture"}
_VOWEL_SOUND_LETTERS = set("aeiouAEIOUFHLMNRSX")


def _upper_first(text: str) -> str:
    if not text or text.startswith("$") or text[:2] in ("q-", "n-"):
        return text
    return text[0].upper() + text[1:]


def _lower_first(text: str) -> str:
    """Lower the first letter of a description ("Counts ..." → "counts ..."), not of "RSK"."""
    head = text.split(" ", 1)[0]
    if head in {"A", "An", "The"} or (len(head) > 1 and head[0].isupper() and head[1].islower()):
        return text[0].lower() + text[1:]
    return text


def _indefinite(word: str) -> str:
    first = word.lstrip("$\\")[:1]
    if not first:
        return "a"
    acronym = len(word) > 1 and word[:2].isupper()
    if first in "aeiouAEIOU" or (acronym and first in _VOWEL_SOUND_LETTERS):
        return "an"
    return "a"


def _first_clause(description: str) -> tuple[str, str]:
    """Split a description at its first ``"; "`` into the defining clause and the rest."""
    head, _separator, rest = description.partition("; ")
    head = head.rstrip(".")
    return head, (_upper_first(rest) if rest else "")


def _is_plural_verb(description: str) -> bool:
    return not description.split(" ", 1)[0].endswith("s")


@dataclass
class _Style:
    """Per-paper writing habits, drawn once so a paper is consistent with itself."""

    dollar_q: bool  # writes "$q$-series" rather than "q-series"
    amsart: bool
    macros: dict[str, str]  # concept name → macro name defined in the preamble
    q_macro: bool  # defines \qp for q-Pochhammer symbols


class _Writer:
    """Builds the LaTeX of one paper version from a plan; all choices come from ``rng``."""

    def __init__(
        self, rng: random.Random, concepts: Sequence[Concept], style: _Style, seed_text: str
    ) -> None:
        self.rng = rng
        self.concepts = list(concepts)
        self.focus = concepts[0]
        self.style = style
        self.seed_text = seed_text
        self.plain = False  # metadata mode: no macros, no \cite (arXiv abstracts have none)
        self.used_labels: set[str] = set()
        self.equations: dict[str, str] = {}  # concept name → \label of its equation
        self.statements: dict[str, str] = {}  # concept name → \label of its environment
        self.references = self._references()

    # ---- surface forms

    def tex(self, text: str) -> str:
        text = latex_text(text)
        if self.style.dollar_q:
            text = text.replace("q-", "$q$-").replace("$$q$-", "$q$-")
        return text

    def name(self, item: Concept) -> str:
        macro = self.style.macros.get(item.name)
        if macro and not self.plain and self.rng.random() < 0.5:
            return f"\\{macro}{{}}"
        return self.tex(item.name)

    def article(self, item: Concept, plain: str) -> str:
        """The article before ``plain`` (the name or an alias of ``item``) as a subject."""
        if plain.split(" ", 1)[0].endswith("'s"):
            return ""  # "Bailey's lemma", "Ramanujan's mock theta functions"
        base = item.article if plain == item.name else (item.article or "the")
        return _indefinite(plain) if base in ("a", "an") else base

    def phrase(self, item: Concept, plain: str, word: str | None = None) -> str:
        """``plain`` (or its typeset form ``word``) with the right article in front."""
        return f"{self.article(item, plain)} {word or self.tex(plain)}".strip()

    def mention(self, item: Concept) -> str:
        """A noun phrase for ``item``: its name, an alias or its notation, at random."""
        modes = ["name", "name", "alias"]
        if item.aliases:
            modes += ["alias"]
        if item.notation:
            modes += ["notation", "notation"]
        mode = self.rng.choice(modes)
        if mode == "alias" and item.aliases:
            return self.phrase(item, self.rng.choice(item.aliases))
        if mode == "notation":
            symbol = self.rng.choice(item.notation)
            if self.rng.random() < 0.5:
                return f"${symbol}$"
            return f"{self.phrase(item, self.rng.choice(item.aliases or (item.name,)))} ${symbol}$"
        if item.plural and self.rng.random() < 0.4:
            return self.tex(item.plural)
        return self.phrase(item, item.name, self.name(item))

    def nameless(self, item: Concept) -> str:
        """A mention that avoids the display name: alias, notation or description."""
        if item.notation and self.rng.random() < 0.4:
            return f"${self.rng.choice(item.notation)}$"
        if item.aliases and self.rng.random() < 0.7:
            return self.phrase(item, self.rng.choice(item.aliases))
        return self.described(item)

    def described(self, item: Concept) -> str:
        """``item`` referred to by its description only, as a noun phrase."""
        head, _rest = _first_clause(item.description)
        if item.is_noun_phrase:
            return self.tex(_lower_first(head))
        noun = {"identity": "identity", "conjecture": "conjecture"}.get(item.type, "result")
        if _is_plural_verb(item.description):
            noun = {"identity": "identities"}.get(noun, noun + "s")
        return f"the {noun} which {self.tex(_lower_first(head))}"

    def gloss(self, item: Concept, *, by_name: bool = True) -> str:
        """A sentence explaining ``item`` with its description."""
        head, rest = _first_clause(item.description)
        if by_name or not item.aliases:
            plain, word = item.name, self.name(item)
        else:
            plain = self.rng.choice(item.aliases)
            word = self.tex(plain)
        if item.is_noun_phrase:
            # A countable thing is glossed generically ("a Young diagram is ...").
            article = _indefinite(plain) if item.plural else self.article(item, plain)
            subject = f"{article} {word}".strip()
            opener = self.rng.choice(("Recall that", "We recall that", "Here", "As usual,"))
            sentence = f"{opener} {subject} is {self.tex(_lower_first(head))}."
        else:
            subject = self.phrase(item, plain, word)
            sentence = f"{_upper_first(subject)} {self.tex(_lower_first(head))}."
        if rest and self.rng.random() < 0.7:
            sentence += f" {self.tex(rest)}"
        return _upper_first(sentence)

    def space_cite(self) -> str:
        citation = self.cite()
        return f" {citation}" if citation else ""

    def label(self, base: str) -> str:
        """A fresh ``\\label`` name: ``base``, or ``base-2``, ... if it is taken."""
        candidate, number = base, 1
        while candidate in self.used_labels:
            number += 1
            candidate = f"{base}-{number}"
        self.used_labels.add(candidate)
        return candidate

    def cite(self) -> str:
        if self.plain:
            return ""
        keys = self.references
        key = self.rng.choice(keys)
        if self.rng.random() < 0.25:
            where = self.rng.choice(("Theorem", "Chapter", "Section", "Proposition"))
            return f"\\cite[{where}~{self.rng.randint(1, 9)}.{self.rng.randint(1, 12)}]{{{key}}}"
        if len(keys) > 1 and self.rng.random() < 0.3:
            other = self.rng.choice([k for k in keys if k != key])
            return f"\\cite{{{key},{other}}}"
        return f"\\cite{{{key}}}"

    def _references(self) -> tuple[str, ...]:
        keys: dict[str, None] = {}
        for item in self.concepts:
            for key in _CONCEPT_REFERENCES.get(item.name, ()):
                keys[key] = None
        for item in self.concepts[:2]:
            shelf = _SHELVES[item.category]
            keys[shelf[_hash_index(self.seed_text + item.name, len(shelf))]] = None
        return tuple(keys)

    # ---- blocks

    def relation_sentence(self, source: Concept, target: Concept) -> str:
        """A sentence stating how two concepts of the paper are related, if they are."""
        kind = next((r.kind for r in source.relations if r.target == target.name), None)
        if kind is None:
            kind = next((r.kind for r in target.relations if r.target == source.name), None)
            source, target = target, source
        a, b = self.mention(source), self.mention(target)
        if kind == "generalizes":
            return self.rng.choice(
                (
                    f"{_upper_first(a)} generalizes {b}.",
                    f"In particular, {b} is a special case of {a}.",
                    f"One recovers {b} as a special case of {a}.",
                )
            )
        if kind == "is_instance_of":
            return self.rng.choice(
                (
                    f"{_upper_first(a)} is an example of {self.tex(target.plural or target.name)}.",
                    f"Note that {a} is a special case of {b}.",
                )
            )
        if kind == "uses":
            return self.rng.choice(
                (
                    f"The study of {a} relies on {b}.",
                    f"{_upper_first(a)} is built from {b}.",
                    f"Our treatment of {a} uses {b} throughout.",
                )
            )
        if kind == "implies":
            return f"{_upper_first(a)} implies {b} as a limiting case."
        return self.rng.choice(
            (
                f"There is a close connection between {a} and {b}.",
                f"{_upper_first(a)} is closely related to {b}{self.space_cite()}.",
                f"Both {a} and {b} appear naturally in this context.",
            )
        )

    def definition(self, item: Concept) -> str:
        head, rest = _first_clause(item.description)
        label = self.label(f"def:{_slug(item.name)}")
        self.statements[item.name] = label
        article = _indefinite(item.name) if item.plural else item.article
        term = f"\\emph{{{self.tex(item.name)}}}"
        called = f"{article} {term}".strip()
        body = self.tex(_lower_first(head))
        title = f"[{_upper_first(self.tex(item.name))}]" if self.rng.random() < 0.3 else ""
        lines = [f"\\begin{{definition}}{title}\\label{{{label}}}"]
        phrase = self.rng.random()
        if phrase < 0.5:
            lines.append(f"We call {body} {called}.")
        elif phrase < 0.8:
            lines.append(f"{_upper_first(called)} is {body}.")
        else:
            lines.append(f"Following {self.cite()}, we say that {body} is {called}.")
        if item.aliases and self.rng.random() < 0.6:
            lines.append(f"It is also known as {self.phrase(item, item.aliases[0])}.")
        if item.notation:
            lines.append(f"We write ${item.notation[0]}$ for it.")
        lines.append("\\end{definition}")
        block = "\n".join(lines)
        extras = []
        if rest:
            extras.append(self.tex(rest))
        if item.formula:
            extras.append(self.display(item, "For instance,"))
        if extras:
            block += "\n\n" + " ".join(extras)
        return block

    def display(self, item: Concept, lead: str) -> str:
        """``lead`` followed by the concept's formula, as an equation or ``\\[...\\]``."""
        formula = self.math(item.formula)
        if self.rng.random() < 0.6:
            label = self.label(f"eq:{_slug(item.name)}")
            self.equations.setdefault(item.name, label)
            return f"{lead}\n\\begin{{equation}}\\label{{{label}}}\n  {formula}\n\\end{{equation}}"
        return f"{lead}\n\\[\n  {formula}\n\\]"

    def math(self, formula: str) -> str:
        if self.style.q_macro:
            formula = _use_q_macro(formula)
        return formula

    def statement(self, item: Concept, *, recalled: bool) -> str:
        env = _ENV_FOR_TYPE.get(item.type, "proposition")
        label = self.label(f"{'conj' if env == 'conjecture' else 'thm'}:{_slug(item.name)}")
        self.statements[item.name] = label
        short = _upper_first(self.tex(_short_name(self.rng.choice((item.name, *item.aliases[:1])))))
        citation = self.cite() if recalled and env != "conjecture" else ""
        opening = f"\\begin{{{env}}}[{short}{', ' + citation if citation else ''}]"
        lines = [f"{opening}\\label{{{label}}}"]
        if item.formula:
            condition = self.rng.choice(
                ("For $\\abs{q} < 1$ we have", "For all $n \\in \\N$,", "We have", "One has")
            )
            if "q" not in item.formula and "abs" in condition:
                condition = "We have"
            equation = self.label(f"eq:{_slug(item.name)}")
            self.equations.setdefault(item.name, equation)
            lines.append(f"{condition}\n\\begin{{equation}}\\label{{{equation}}}")
            lines.append(f"  {self.math(item.formula)}")
            lines.append("\\end{equation}")
        else:
            head, _rest = _first_clause(item.description)
            subject = _upper_first(f"{item.article} {self.tex(item.name)}".strip())
            lines.append(f"{subject} {self.tex(_lower_first(head))}.")
        lines.append(f"\\end{{{env}}}")
        return "\n".join(lines)

    def technique_paragraph(self, item: Concept) -> str:
        head, rest = _first_clause(item.description)
        opener = self.rng.choice(
            (
                f"Our main tool is {self.mention(item)}.",
                f"The argument is based on {self.mention(item)}.",
                f"We shall use {self.nameless(item)} repeatedly.",
            )
        )
        parts = [opener, self.gloss(item, by_name=self.rng.random() < 0.5)]
        if item.formula and self.rng.random() < 0.5:
            parts.append(self.display(item, "In its simplest form it reads"))
        return " ".join(parts)


def _short_name(name: str) -> str:
    """How a statement is titled: "Seifert–van Kampen theorem" → "Seifert–van Kampen"."""
    for suffix in (" theorem", " identities", " identity"):
        stem = name.removesuffix(suffix)
        if stem != name and ("–" in stem or " " not in stem):
            return stem
    return name


def _slug(name: str) -> str:
    keep = "".join(ch if ch.isalnum() else "-" for ch in name.lower())
    return "-".join(part for part in keep.split("-") if part)[:32]


def _hash_index(text: str, size: int) -> int:
    """A stable index in ``range(size)`` for ``text`` (``hash()`` is salted per process)."""
    return zlib.crc32(text.encode("utf-8")) % size


_CONTROL_WORD = re.compile(r"\\[A-Za-z]+")


def _use_q_macro(formula: str) -> str:
    """Rewrite ``(a;q)_{n}`` and ``(a;q)_n`` as ``\\qp{a}{n}`` where it is unambiguous."""
    out = []
    index = 0
    while True:
        found = formula.find(";q)_", index)
        if found < 0:
            out.append(formula[index:])
            return "".join(out)
        open_paren = formula.rfind("(", index, found)
        argument = formula[open_paren + 1 : found] if open_paren >= 0 else ""
        rest = formula[found + 4 :]
        control_word = _CONTROL_WORD.match(rest)
        if rest.startswith("{"):
            close = rest.find("}")
            subscript, consumed = rest[1:close], close + 1
        elif control_word:  # (a;q)_\infty: the subscript is the whole control word
            subscript, consumed = control_word.group(0), control_word.end()
        else:
            subscript, consumed = rest[:1], 1
        if open_paren < 0 or not argument or "(" in argument or "{" in subscript:
            out.append(formula[index : found + 4])
            index = found + 4
            continue
        out.append(formula[index:open_paren])
        out.append(f"\\qp{{{argument}}}{{{subscript}}}")
        index = found + 4 + consumed


# -- whole papers ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Metadata:
    title: str  # LaTeX
    authors: tuple[str, ...]
    abstract: str  # LaTeX
    keywords: tuple[str, ...]
    msc: tuple[str, ...]
    categories: tuple[str, ...]
    comment: str


@dataclass(frozen=True)
class _Source:
    """The text of one paper version: the main file and any sub-files (name → text)."""

    main_name: str
    files: dict[str, str]


def _choose_concepts(rng: random.Random, focus: Concept) -> tuple[Concept, ...]:
    related = list(neighbours(focus.name))
    rng.shuffle(related)
    wanted = rng.choice((1, 2, 2, 3))
    chosen = related[:wanted]
    return (focus, *(concept(name) for name in chosen))


def _metadata(
    rng: random.Random, writer: _Writer, concepts: Sequence[Concept], *, latin1: bool
) -> _Metadata:
    focus, others = concepts[0], concepts[1:]
    n_authors = rng.choice((1, 1, 2, 2, 2, 3, 4))
    authors = []
    for _ in range(n_authors):
        author = f"{rng.choice(_FIRST_NAMES)} {rng.choice(_LAST_NAMES)}"
        if author not in authors:
            authors.append(author)
    if latin1:
        authors[0] = rng.choice(("René Lefèvre", "Hélène Müller", "Søren Ødegård"))

    def title_form(item: Concept) -> str:
        return writer.tex(item.plural) if item.plural else writer.phrase(item, item.name)

    first = title_form(focus)
    second = title_form(others[0]) if others else writer.tex("generating functions")
    title = rng.choice(
        (
            f"On {first}",
            f"{_upper_first(first)} and {second}",
            f"A note on {first}",
            f"{_upper_first(first)} via {second}",
            f"Remarks on {first} and {second}",
            f"A combinatorial approach to {first}",
            f"Refinements of {first}",
            f"New identities for {first}",
            f"{_upper_first(first)} revisited",
            f"Some consequences of {first}",
        )
    )
    title = _upper_first(title)

    technique = next((item for item in others if item.type == "technique"), None)
    sentences = [
        rng.choice(
            (
                f"We study {writer.mention(focus)} and {writer.mention(others[0])}."
                if others
                else f"We study {writer.mention(focus)}.",
                writer.gloss(focus, by_name=rng.random() < 0.5),
                f"This paper is concerned with {writer.nameless(focus)}.",
            )
        ),
        rng.choice(
            (
                f"We give a {rng.choice(('new', 'short', 'bijective', 'uniform'))} proof of a "
                f"{rng.choice(('refinement', 'generalization', 'finite version'))} of "
                f"{writer.mention(focus)}.",
                f"Our main result expresses {writer.mention(focus)} in terms of "
                f"{writer.mention(others[-1]) if others else writer.described(focus)}.",
                f"We obtain new {rng.choice(('identities', 'formulas', 'bounds'))} involving "
                f"{writer.nameless(focus)}.",
            )
        ),
    ]
    if technique is not None:
        sentences.append(f"The proof relies on {writer.mention(technique)}.")
    for item in others[1:]:
        sentences.append(
            rng.choice(
                (
                    f"As an application we discuss {writer.mention(item)}.",
                    f"We also explain the role of {writer.nameless(item)}.",
                )
            )
        )
    if rng.random() < 0.5:
        sentences.append(writer.relation_sentence(focus, others[0]) if others else "")
    abstract = " ".join(sentence for sentence in sentences if sentence)

    keywords = tuple(
        dict.fromkeys(writer.tex(rng.choice((item.name, *item.aliases[:1]))) for item in concepts)
    )
    primary = focus.category
    msc = (focus.msc, *dict.fromkeys(item.msc for item in others if item.msc != focus.msc))
    categories = (
        primary,
        *dict.fromkeys(item.category for item in others if item.category != primary),
    )
    pages = rng.randint(8, 42)
    figures = rng.randint(1, 6) if rng.random() < 0.4 else 0
    comment = f"{pages} pages" + (
        f", {figures} figure{'s' if figures > 1 else ''}" if figures else ""
    )
    return _Metadata(title, tuple(authors), abstract, keywords, msc, categories, comment)


def _preamble(rng: random.Random, writer: _Writer, *, latin1: bool) -> list[str]:
    style = writer.style
    lines = [
        "\\documentclass[11pt]{amsart}"
        if style.amsart
        else "\\documentclass[11pt,a4paper]{article}",
        f"% {rng.choice(('Draft', 'Preprint', 'Submitted version', 'arXiv version'))} "
        f"-- compiled with pdflatex",
        "\\usepackage{amsmath,amssymb,amsthm}",
    ]
    if latin1:
        lines.append("\\usepackage[latin1]{inputenc}")
    elif rng.random() < 0.5:
        lines.append("\\usepackage[utf8]{inputenc}")
    lines.append("\\usepackage[T1]{fontenc}")
    if rng.random() < 0.6:
        lines.append("\\usepackage{hyperref}")
    if rng.random() < 0.3:
        lines.append("% \\usepackage{showkeys} % uncomment to see labels")
    if rng.random() < 0.3:
        lines.append("\\usepackage{tikz} % for the diagrams")
    return lines


def _macro_lines(writer: _Writer, *, article_class: bool) -> list[str]:
    lines = [
        "% ---- notation",
        "\\newcommand{\\N}{\\mathbb{N}}",
        "\\newcommand{\\Z}{\\mathbb{Z}}",
        "\\newcommand{\\C}{\\mathbb{C}}",
        "\\newcommand{\\abs}[1]{\\left|#1\\right|}",
    ]
    if writer.style.q_macro:
        lines.append("\\newcommand{\\qp}[2]{(#1;q)_{#2}} % q-Pochhammer symbol")
    for name, macro in writer.style.macros.items():
        lines.append(f"\\newcommand{{\\{macro}}}{{{latex_text(name)}}}")
    if article_class:
        lines.append("\\newcommand{\\keywords}[1]{\\par\\noindent\\textbf{Keywords:} #1}")
        lines.append("\\newcommand{\\subjclass}[2][2020]{\\par\\noindent\\textbf{MSC #1:} #2}")
    lines += [
        "",
        "\\newtheorem{theorem}{Theorem}[section]",
        "\\newtheorem{lemma}[theorem]{Lemma}",
        "\\newtheorem{proposition}[theorem]{Proposition}",
        "\\newtheorem{corollary}[theorem]{Corollary}",
        "\\newtheorem{conjecture}[theorem]{Conjecture}",
        "\\theoremstyle{definition}",
        "\\newtheorem{definition}[theorem]{Definition}",
        "\\theoremstyle{remark}",
        "\\newtheorem{remark}[theorem]{Remark}",
    ]
    return lines


def _front_matter(rng: random.Random, writer: _Writer, meta: _Metadata) -> list[str]:
    lines = []
    msc = f"Primary {meta.msc[0]}" + (
        f"; Secondary {', '.join(meta.msc[1:])}" if meta.msc[1:] else ""
    )
    if writer.style.amsart:
        lines.append(f"\\title{{{meta.title}}}")
        for author in meta.authors:
            first, last = author.split(" ", 1)
            email = _ascii(f"{first}.{last}").lower().replace(" ", "")
            lines.append(f"\\author{{{author}}}")
            lines.append(f"\\address{{Department of Mathematics, {rng.choice(_UNIVERSITIES)}}}")
            lines.append(f"\\email{{{email}@example.edu}}")
        lines.append(f"\\subjclass[2020]{{{msc}}}")
        lines.append(f"\\keywords{{{', '.join(meta.keywords)}}}")
        lines.append("\\date{}")
        lines.append("")
        lines.append("\\begin{document}")
        lines.append("")
        lines.append("\\begin{abstract}")
        lines.append(meta.abstract)
        lines.append("\\end{abstract}")
        lines.append("")
        lines.append("\\maketitle")
    else:
        lines.append(f"\\title{{{meta.title}}}")
        joined = " \\and ".join(meta.authors)
        lines.append(f"\\author{{{joined}}}")
        lines.append("\\date{}")
        lines.append("")
        lines.append("\\begin{document}")
        lines.append("\\maketitle")
        lines.append("")
        lines.append("\\begin{abstract}")
        lines.append(meta.abstract)
        lines.append("\\end{abstract}")
        lines.append("")
        lines.append(f"\\subjclass[2020]{{{msc}}}")
        lines.append(f"\\keywords{{{', '.join(meta.keywords)}}}")
    return lines


def _introduction(rng: random.Random, writer: _Writer, concepts: Sequence[Concept]) -> str:
    focus, others = concepts[0], concepts[1:]
    paragraphs = []
    first = [
        rng.choice(
            (
                f"The study of {writer.mention(focus)} has a long history {writer.cite()}.",
                f"This paper is about {writer.mention(focus)}.",
                f"Our starting point is {writer.nameless(focus)} {writer.cite()}.",
            )
        ),
        writer.gloss(focus, by_name=rng.random() < 0.6),
        rng.choice(("We refer to", "See", "Standard references are")) + f" {writer.cite()}.",
    ]
    if focus.formula and rng.random() < 0.5:
        first.append(writer.display(focus, "A typical instance is"))
    paragraphs.append(" ".join(first))
    if others:
        second = [writer.relation_sentence(focus, item) for item in others]
        second.append(
            rng.choice(
                (
                    f"In this note we revisit {writer.nameless(focus)} from the point of view "
                    f"of {writer.mention(others[0])}.",
                    f"The purpose of this paper is to make the role of "
                    f"{writer.nameless(others[0])} explicit.",
                    f"Roughly 40\\% of the identities we need are classical; the others "
                    f"involve {writer.mention(others[-1])}.",
                )
            )
        )
        paragraphs.append(" ".join(second))
    paragraphs.append(
        rng.choice(
            (
                "Our main result is Theorem~\\ref{thm:main}. The paper is organized as "
                "follows. In Section~\\ref{sec:prelim} we recall the necessary background, "
                "Section~\\ref{sec:main} states and proves the main results, and "
                "Section~\\ref{sec:remarks} contains further remarks.",
                "Theorem~\\ref{thm:main} below is our main result. Section~\\ref{sec:prelim} "
                "fixes notation, Section~\\ref{sec:main} contains the proofs and "
                "Section~\\ref{sec:remarks} lists open questions.",
                f"After recalling background on {writer.mention(concepts[-1])} in "
                "Section~\\ref{sec:prelim}, we prove Theorem~\\ref{thm:main} in "
                "Section~\\ref{sec:main}; Section~\\ref{sec:remarks} concludes.",
            )
        )
    )
    if rng.random() < 0.5:
        paragraphs.append(
            "% TODO: shorten this paragraph before submission\n"
            f"% An earlier draft claimed that {latex_text(focus.name)} holds without any "
            "assumption; that is false."
        )
    return "\\section{Introduction}\\label{sec:intro}\n\n" + "\n\n".join(paragraphs)


def _preliminaries(rng: random.Random, writer: _Writer, concepts: Sequence[Concept]) -> str:
    blocks = [
        rng.choice(
            (
                "Throughout, $q$ denotes a complex number with $\\abs{q} < 1$ and $n \\in \\N$.",
                "We use standard notation; $n, k \\in \\Z$ are integers and "
                "$z \\in \\C$ is a complex variable.",
            )
        )
    ]
    for item in concepts:
        if item.is_noun_phrase and item.type in ("object", "definition"):
            blocks.append(writer.definition(item))
        elif item.type == "technique":
            blocks.append(writer.technique_paragraph(item))
        elif item is not concepts[0]:
            lead = rng.choice(("We shall need the following classical result.", "Recall:"))
            blocks.append(f"{lead}\n\n{writer.statement(item, recalled=True)}")
            if rng.random() < 0.6:
                blocks.append(writer.gloss(item, by_name=False))
    title = rng.choice(("Preliminaries", "Background and notation", "Notation and background"))
    return f"\\section{{{title}}}\\label{{sec:prelim}}\n\n" + "\n\n".join(blocks)


def _main_results(rng: random.Random, writer: _Writer, concepts: Sequence[Concept]) -> str:
    focus, others = concepts[0], concepts[1:]
    partner = others[0] if others else focus
    blocks = []
    if not focus.is_noun_phrase:
        blocks.append(f"We first restate {writer.mention(focus)} in the form we need.")
        blocks.append(writer.statement(focus, recalled=False))
        if focus.type == "conjecture":
            blocks.append(
                f"We do not prove Conjecture~\\ref{{{writer.statements[focus.name]}}}; instead we "
                f"establish a consequence of it for {writer.mention(partner)}."
            )
    bound = rng.randint(1, 5)
    equation = ""
    if partner.formula:
        equation = (
            "\\begin{equation}\\label{eq:main}\n"
            f"  {writer.math(partner.formula)}\n"
            "\\end{equation}\n"
        )
    statement = rng.choice(
        (
            f"Let $n \\geq {bound}$. Then {writer.mention(focus)} admits a refinement in which "
            f"every term is weighted by {writer.mention(partner)}.",
            f"For every $n \\geq {bound}$ the quantities attached to {writer.nameless(focus)} "
            f"are determined by {writer.mention(partner)}.",
            f"Assume $\\abs{{q}} < 1$. Then {writer.mention(focus)} and {writer.mention(partner)} "
            f"satisfy the relation below for all $n \\in \\N$.",
        )
    )
    blocks.append(
        "\\begin{theorem}\\label{thm:main}\n"
        + statement
        + (f" In particular,\n{equation}" if equation else "\n")
        + "\\end{theorem}"
    )
    key_item = others[-1] if others else focus
    lemma = rng.choice(
        (
            f"Let $1 \\leq m \\leq n$. The contribution of {writer.mention(key_item)} to the "
            "right-hand side is a polynomial in $q$ of degree at most $m n$.",
            f"For every $m \\geq {bound}$ the terms coming from {writer.mention(key_item)} "
            "satisfy a recurrence of order at most two in $m$.",
            f"The map sending {writer.nameless(key_item)} to its image under "
            f"{writer.mention(partner)} is injective.",
        )
    )
    reference = (
        f" together with \\eqref{{{writer.equations[key_item.name]}}}"
        if key_item.name in writer.equations
        else ""
    )
    proof = rng.choice(
        (
            f"We argue by induction on $n$, the case $n = {bound}$ being clear. The induction "
            f"step follows from {writer.mention(partner)} applied to $m - 1${reference}.",
            f"Expand both sides as power series in $q$ and compare coefficients, using "
            f"{writer.mention(partner)}{reference}.",
            f"This is a direct consequence of {writer.mention(partner)}{writer.space_cite()}; "
            "we include the short argument for completeness.",
        )
    )
    blocks.append(
        f"\\begin{{lemma}}\\label{{lem:key}}\n{lemma}\n\\end{{lemma}}\n\n"
        f"\\begin{{proof}}\n{proof}\n\\end{{proof}}"
    )
    blocks.append(
        "\\begin{proof}[Proof of Theorem~\\ref{thm:main}]\n"
        + rng.choice(
            (
                f"Combine Lemma~\\ref{{lem:key}} with {writer.nameless(partner)}; the error "
                "terms cancel in pairs. ",
                f"By Lemma~\\ref{{lem:key}} it suffices to compare coefficients, which is "
                f"done with {writer.mention(partner)} {writer.cite()}. ",
            )
        )
        + "Summing over $m$ gives the claim.\n"
        "\\end{proof}"
    )
    corollary_target = others[1] if len(others) > 1 else partner
    blocks.append(
        "\\begin{corollary}\\label{cor:main}\n"
        + rng.choice(
            (
                f"The same conclusion holds for {writer.mention(corollary_target)}.",
                f"In particular, Theorem~\\ref{{thm:main}} applies to "
                f"{writer.nameless(corollary_target)}.",
            )
        )
        + "\n\\end{corollary}"
    )
    return "\\section{Main results}\\label{sec:main}\n\n" + "\n\n".join(blocks)


def _remarks(rng: random.Random, writer: _Writer, concepts: Sequence[Concept]) -> str:
    focus = concepts[0]
    blocks = [
        rng.choice(
            (
                f"It would be interesting to extend Theorem~\\ref{{thm:main}} to "
                f"{writer.nameless(focus)} in several variables.",
                f"We expect similar results for {writer.mention(focus)} at roots of unity.",
            )
        )
    ]
    if len(concepts) > 1:
        blocks.append(
            "\\begin{remark}\n"
            + writer.gloss(concepts[-1], by_name=rng.random() < 0.4)
            + " This explains why Corollary~\\ref{cor:main} cannot be improved in general.\n"
            "\\end{remark}"
        )
    return "\\section{Further remarks}\\label{sec:remarks}\n\n" + "\n\n".join(blocks)


def _revision_section(
    rng: random.Random, writer: _Writer, concepts: Sequence[Concept], version: int
) -> str:
    item = rng.choice(list(concepts))
    return (
        f"\\section{{Addendum to version {version}}}\\label{{sec:addendum-{version}}}\n\n"
        f"In the previous version the proof of Lemma~\\ref{{lem:key}} omitted the case $m = n$. "
        f"That case follows from {writer.mention(item)} as well. "
        + writer.gloss(item, by_name=rng.random() < 0.5)
    )


def _bibliography(writer: _Writer) -> str:
    lines = [f"\\begin{{thebibliography}}{{{len(writer.references)}}}", ""]
    for key in writer.references:
        lines.append(f"\\bibitem{{{key}}} {_BIBLIOGRAPHY[key]}")
        lines.append("")
    lines.append("\\end{thebibliography}")
    return "\n".join(lines)


def _write_paper(
    seed: int, plan: _PaperPlan, version: int, *, split: bool, latin1: bool
) -> tuple[_Metadata, _Source, tuple[Concept, ...]]:
    """The metadata and LaTeX source of ``plan`` at ``version`` (v2+ add an addendum)."""
    seed_text = f"{seed}/{plan.paper_id}"
    rng = random.Random(seed_text)
    concepts = _choose_concepts(rng, plan.focus)
    macros = {item.name: item.macro for item in concepts if item.macro and rng.random() < 0.6}
    q_series = any("(a;q)_n" in item.notation or ";q)_" in item.formula for item in concepts)
    style = _Style(
        dollar_q=rng.random() < 0.5,
        amsart=rng.random() < 0.75,
        macros=macros,
        q_macro=q_series and rng.random() < 0.7,
    )
    writer = _Writer(rng, concepts, style, seed_text)
    writer.plain = True
    meta = _metadata(rng, writer, concepts, latin1=latin1)
    writer.plain = False
    sections = [
        _introduction(rng, writer, concepts),
        _preliminaries(rng, writer, concepts),
        _main_results(rng, writer, concepts),
        _remarks(rng, writer, concepts),
    ]
    abstract = meta.abstract
    comment = meta.comment
    if version > 1:
        # Later versions add to the same text, so their own randomness is separate.
        revision_rng = random.Random(f"{seed_text}/v{version}")
        revision_writer = _Writer(revision_rng, concepts, style, seed_text)
        revision_writer.used_labels = set(writer.used_labels)
        revision_writer.plain = True
        extra_abstract = (
            f" In this version we also correct the proof of the key lemma and add a "
            f"discussion of {revision_writer.mention(revision_rng.choice(list(concepts)))}."
        )
        revision_writer.plain = False
        for number in range(2, version + 1):
            sections.append(_revision_section(revision_rng, revision_writer, concepts, number))
        abstract += extra_abstract
        comment += f"; v{version}: corrected proof of Lemma 3.2, added Section {4 + version - 1}"
    meta = _Metadata(
        meta.title, meta.authors, abstract, meta.keywords, meta.msc, meta.categories, comment
    )
    if latin1:
        sections[0] = sections[0].replace(
            "\\section{Introduction}\\label{sec:intro}\n\n",
            "\\section{Introduction}\\label{sec:intro}\n\n"
            "Following Poincaré, we keep the classical notation of Möbius and Schützenberger. ",
        )
    acknowledgements = (
        "\\section*{Acknowledgements}\n"
        f"We thank {rng.choice(_FIRST_NAMES)} {rng.choice(_LAST_NAMES)} for helpful comments."
    )
    preamble = _preamble(rng, writer, latin1=latin1)
    macro_lines = _macro_lines(writer, article_class=not style.amsart)
    front = _front_matter(rng, writer, meta)
    bibliography = _bibliography(writer)
    if not split:
        text = "\n".join(
            [*preamble, *macro_lines, "", *front, "", "\n\n".join(sections), "",
             acknowledgements, "", bibliography, "", "\\end{document}", ""]
        )  # fmt: skip
        name = rng.choice(("main.tex", "paper.tex", f"{_slug(meta.authors[0].split()[-1])}.tex"))
        return meta, _Source(name, {name: text}), concepts

    folder = rng.choice(("sections/", "", "tex/"))
    macros_name = rng.choice(("macros.tex", "defs.tex", "preamble.tex"))
    main_name = rng.choice(("main.tex", "paper.tex", "ms.tex"))
    files = {
        macros_name: "\n".join(macro_lines) + "\n",
        f"{folder}introduction.tex": sections[0] + "\n",
        f"{folder}preliminaries.tex": sections[1] + "\n",
        "results.tex": sections[2] + "\n",
        main_name.replace(".tex", ".bbl"): bibliography + "\n",
    }
    body = [
        f"\\input{{{folder}introduction}}",
        f"\\input{{{folder}preliminaries.tex}}",
        "\\include{results}",
        *sections[3:],
        "",
        acknowledgements,
        "",
        "\\bibliographystyle{amsplain}",
        "\\bibliography{refs}",
        "",
        "\\end{document}",
        "",
    ]
    files[main_name] = "\n".join(
        [*preamble, f"\\input{{{macros_name.removesuffix('.tex')}}}", "", *front, "", *body]
    )
    return meta, _Source(main_name, files), concepts


def _ascii(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")


# -- packaging: tar, gzip, PDF and the malformed e-prints ------------------------------


def _gzip(data: bytes) -> bytes:
    # mtime=0 and no file name: the same bytes in give the same bytes out.
    return gzip.compress(data, compresslevel=6, mtime=0)


def _tar_gz(members: Sequence[tarfile.TarInfo | tuple[str, bytes]], mtime: int) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                member.mtime = mtime
                archive.addfile(member)
                continue
            name, data = member
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = mtime
            info.mode = 0o644
            archive.addfile(info, io.BytesIO(data))
    return _gzip(buffer.getvalue())


def _pdf(title: str) -> bytes:
    """A minimal one-page PDF showing ``title`` (ASCII), with a correct xref table."""
    text = _ascii(title).replace("\\", "").replace("(", "[").replace(")", "]")[:90]
    stream = f"BT /F1 14 Tf 72 720 Td ({text}) Tj ET".encode("ascii")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


@cache
def bomb_bytes() -> bytes:
    """A gzip stream of a LaTeX header followed by zeros, inflating to 200 MiB (~200 KB)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: gzip wrapper, mtime 0
    header = b"\\documentclass{article}\n% padding follows\n"
    parts = [compressor.compress(header)]
    chunk = bytes(1024 * 1024)
    remaining = BOMB_INFLATED_BYTES - len(header)
    while remaining > 0:
        piece = chunk[: min(len(chunk), remaining)]
        parts.append(compressor.compress(piece))
        remaining -= len(piece)
    parts.append(compressor.flush())
    return b"".join(parts)


_FAKE_PNG = b"\x89PNG\r\n\x1a\n" + bytes(64)


@dataclass(frozen=True)
class _Eprint:
    data: bytes
    content_type: str
    encoding: str | None
    main_file: str | None
    files: tuple[str, ...]


def _package(
    kind: str, meta: _Metadata, source: _Source | None, mtime: int, rng: random.Random
) -> _Eprint:
    if kind == PDF_ONLY:
        return _Eprint(_pdf(meta.title), CONTENT_TYPE_PDF, None, None, ())
    if kind == BOMB:
        return _Eprint(bomb_bytes(), CONTENT_TYPE_SINGLE, "gzip", None, ("main.tex",))
    if kind == NO_TEX:
        loose: list[tarfile.TarInfo | tuple[str, bytes]] = [
            ("paper.pdf", _pdf(meta.title)),
            ("figure1.png", _FAKE_PNG),
            ("README.txt", b"Source files are available from the authors on request.\n"),
        ]
        names: tuple[str, ...] = ("paper.pdf", "figure1.png", "README.txt")
        return _Eprint(_tar_gz(loose, mtime), CONTENT_TYPE_TAR, "gzip", None, names)
    assert source is not None
    if kind in (TEX_GZ, LATIN1):
        text = source.files[source.main_name]
        data = text.encode("latin-1") if kind == LATIN1 else text.encode("utf-8")
        return _Eprint(
            _gzip(data), CONTENT_TYPE_SINGLE, "gzip", source.main_name, (source.main_name,)
        )

    files = dict(source.files)
    extra: list[tarfile.TarInfo | tuple[str, bytes]] = []
    if kind == PATH_TRAVERSAL:
        files[source.main_name] = files[source.main_name].replace(
            "\\begin{document}", "\\input{../../evil}\n\\begin{document}", 1
        )
        extra.append(("../../evil.tex", b"% this file must never be written outside the folder\n"))
    elif kind == ABSOLUTE_PATH:
        files[source.main_name] = files[source.main_name].replace(
            "\\begin{document}", "\\input{/tmp/mathembed-absolute}\n\\begin{document}", 1
        )
        extra.append(("/tmp/mathembed-absolute.tex", b"% an absolute member path\n"))
    elif kind == SYMLINK:
        files[source.main_name] = files[source.main_name].replace(
            "\\begin{document}", "\\input{secret}\n\\begin{document}", 1
        )
        link = tarfile.TarInfo("secret.tex")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        extra.append(link)
    members: list[tarfile.TarInfo | tuple[str, bytes]] = [
        (name, text.encode("utf-8")) for name, text in files.items()
    ]
    if rng.random() < 0.4:
        members.append(("figures/diagram.png", _FAKE_PNG))
    rng.shuffle(members)
    members += extra
    names = tuple(m.name if isinstance(m, tarfile.TarInfo) else m[0] for m in members)
    data = _tar_gz(members, mtime)
    if kind == TRUNCATED_GZIP:
        data = data[: len(data) // 2]
    return _Eprint(data, CONTENT_TYPE_TAR, "gzip", source.main_name, names)


# -- the whole mirror -----------------------------------------------------------------


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
    plans = _plan_papers(n_papers, seed, start, end)
    out_dir = out_dir.resolve()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        manifest = _write_mirror(staging, plans, seed, n_papers, start, end, progress)
        _swap_in(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return manifest


def _write_mirror(
    folder: Path,
    plans: Sequence[_PaperPlan],
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
            meta, source, concepts = _write_paper(
                seed, plan, text_version, split=split, latin1=kind == LATIN1
            )
            comment = meta.comment
            eprint_path: str | None = None
            packed: _Eprint | None = None
            if kind == WITHDRAWN:
                comment = (
                    "This paper has been withdrawn by the authors due to a gap in the proof "
                    "of the main theorem"
                )
            else:
                rng = random.Random(f"{seed}/{plan.paper_id}/package/{version_plan.version}")
                mtime = int(version_plan.updated.timestamp())
                packed = _package(kind, meta, source, mtime, rng)
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
                "published": _iso(plan.published),
                "updated": _iso(version_plan.updated),
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


def _swap_in(staging: Path, out_dir: Path) -> None:
    """Replace ``out_dir`` by ``staging`` with two renames; the old tree is then deleted."""
    old: Path | None = None
    if out_dir.exists():
        old = out_dir.with_name(f".{out_dir.name}.old-{os.getpid()}")
        os.replace(out_dir, old)
    os.replace(staging, out_dir)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def iter_tex_sources(
    mirror_dir: Path, records: Iterable[VersionRecord]
) -> Iterable[tuple[VersionRecord, dict[str, str]]]:
    """For tests and benchmarks: the text files of well-formed tex e-prints (name → text)."""
    for record in records:
        if record.kind not in (TEX_TAR, TEX_GZ, LATIN1) or record.eprint is None:
            continue
        data = (mirror_dir / record.eprint).read_bytes()
        encoding = "latin-1" if record.kind == LATIN1 else "utf-8"
        if record.kind == TEX_TAR:
            texts = {}
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
                for member in archive.getmembers():
                    if member.isfile() and member.name.endswith((".tex", ".bbl")):
                        handle = archive.extractfile(member)
                        assert handle is not None
                        texts[member.name] = handle.read().decode(encoding)
            yield record, texts
        else:
            assert record.main_file is not None
            yield record, {record.main_file: gzip.decompress(data).decode(encoding)}
