"""The concept graph measured on the whole real corpus (the Stacks Project beside the checkout).

Shared by ``benchmarks/bench_quality.py`` (which records the figures) and
``tests/unit/graph/test_real_corpus_graph.py`` (which guards them):

* **precision**: of :data:`LABEL_SAMPLE_SIZE` concepts drawn with :data:`LABEL_SEED` from
  the graph, the share labelled a mathematical concept in ``benchmarks/labels/concepts.csv``
  (labelled once by hand, by the rule written at the top of that file); a concept the
  sample holds and the file does not is listed, to be labelled;
* **recall**: of the terms the corpus itself marks as defined (emphasised inside a
  ``definition`` environment: ``\\emph``, ``{\\it …}``, ``{\\em …}``, ``\\textit``,
  ``\\textbf``), read here from the raw LaTeX by a reader of its own, not by prepare, the
  share that is a concept (or an alias of one).

The corpus is written straight into a raw store, as ingest leaves it (``source.tex`` is the
preamble followed by the chapter); prepare and graph run on it with the project's params.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from pipelines.mathtext.names import normalise_name

REPO = Path(__file__).resolve().parent.parent
SHARED_CORPUS = REPO.parent / "shared" / "corpora" / "stacks-project"
LABELS_FILE = REPO / "benchmarks" / "labels" / "concepts.csv"
LABEL_SAMPLE_SIZE = 200
LABEL_SEED = 20261124
#: Files of the book that are not mathematics (licence, bibliography, tables of contents).
NOT_MATHEMATICS = frozenset(
    {"preamble", "fdl", "bibliography", "chapters", "obsolete", "index", "introduction"}
    | {"conventions", "coding", "desirables", "guide", "examples", "examples-defos"}
    | {"examples-stacks"}
)

_DEFINITION = re.compile(r"\\begin\{definition\}(.*?)\\end\{definition\}", re.S)
_EMPHASIS = re.compile(r"\\(?:emph|textit|textbf)\s*\{|\{\\(?:it|em|bf)\b")
_STANDALONE_MATH = re.compile(r"\$[^$]*\$(?![-\w])")


def chapters(corpus: Path = SHARED_CORPUS) -> list[Path]:
    """The mathematical chapters of the corpus, by name."""
    return sorted(path for path in corpus.glob("*.tex") if path.stem not in NOT_MATHEMATICS)


def write_raw_store(root: Path, corpus: Path = SHARED_CORPUS) -> int:
    """Write every chapter into ``root``'s raw store as ingest would; returns how many."""
    preamble = (corpus / "preamble.tex").read_text(encoding="utf-8")
    found = chapters(corpus)
    for index, path in enumerate(found, 1):
        text = path.read_text(encoding="utf-8").replace("\\input{preamble}", preamble, 1)
        paper_id = f"stacks/2607{index:03d}"
        folder = root / "data" / "raw" / paper_id.replace("/", "_") / "v1"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "source.tex").write_text(text, encoding="utf-8")
        meta = {
            "paper_id": paper_id,
            "version": 1,
            "title": f"Stacks Project: {path.stem}",
            "abstract": f"The chapter {path.stem} of the Stacks Project.",
            "authors": ["The Stacks project authors"],
            "categories": ["math.AG"],
            "primary_category": "math.AG",
            "published": "2026-07-14T00:00:00Z",
            "updated": "2026-07-14T00:00:00Z",
            "comment": "",
            "source_kind": "tex",
            "main_file": path.name,
            "encoding": "utf-8",
            "fetched_at": "2026-07-14T00:00:00Z",
            "source_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        }
        (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return len(found)


def build_graph(root: Path) -> pd.DataFrame:
    """Prepare and graph ``root`` (a raw store from :func:`write_raw_store`); the concepts."""
    from pipelines.common.config import load_params
    from pipelines.common.paths import Paths
    from pipelines.graph.stage import run_graph
    from pipelines.prepare.stage import run_prepare

    params = load_params()
    paths = Paths(root)
    run_prepare(params.prepare, paths, progress=False, workers=1)
    run_graph(params.graph, paths)
    return pd.read_parquet(paths.graph / "concepts.parquet")


# -- precision ----------------------------------------------------------------------


def label_sample(names: Iterable[str], size: int = LABEL_SAMPLE_SIZE) -> list[str]:
    """The concepts whose labels measure precision: the ``size`` names with the smallest
    ``sha256(seed:name)``. A random draw, and a stable one: when the extractor changes, only
    the names it adds or removes enter or leave the sample, so the labels keep serving."""
    return sorted(
        set(names), key=lambda name: hashlib.sha256(f"{LABEL_SEED}:{name}".encode()).digest()
    )[:size]


def read_labels(path: Path = LABELS_FILE) -> dict[str, bool]:
    """``name -> is a mathematical concept`` from the labels file (``#`` lines are comments)."""
    lines = [
        line for line in path.read_text(encoding="utf-8").splitlines() if not line.startswith("#")
    ]
    return {row["name"]: row["label"] == "1" for row in csv.DictReader(lines)}


@dataclass(frozen=True)
class Precision:
    labelled: int
    correct: int
    unlabelled: list[str]
    wrong: list[str]

    @property
    def value(self) -> float:
        return self.correct / self.labelled if self.labelled else 0.0


def precision(sample: Iterable[str], labels: dict[str, bool]) -> Precision:
    sample = list(sample)
    judged = [name for name in sample if name in labels]
    return Precision(
        labelled=len(judged),
        correct=sum(labels[name] for name in judged),
        unlabelled=[name for name in sample if name not in labels],
        wrong=[name for name in judged if not labels[name]],
    )


# -- recall -------------------------------------------------------------------------


def _group_text(text: str, open_brace: int) -> str:
    depth = 0
    for index in range(open_brace, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return text[open_brace + 1 : index]
    return ""


def marked_terms(latex: str) -> list[str]:
    """The terms emphasised inside ``definition`` environments, as written (notation and all)."""
    terms = []
    for definition in _DEFINITION.finditer(latex):
        body = definition.group(1)
        for match in _EMPHASIS.finditer(body):
            start = match.end() - 1 if match.group().endswith("{") else match.start()
            inner = _group_text(body, start)
            if match.group().startswith("{\\"):
                inner = re.sub(r"^\\(?:it|em|bf)\b\s*", "", inner)
            terms.append(" ".join(inner.split()))
    return terms


_ACCENT = re.compile(r"\\['`^\"~=.uvHc]\s*\{?([A-Za-z])\}?")
_ARTICLES = frozenset(["a", "an", "the"])
_TRAILING = frozenset(
    [
        "of",
        "at",
        "over",
        "to",
        "on",
        "for",
        "in",
        "with",
        "by",
        "from",
        "and",
        "or",
        "the",
        "a",
        "an",
    ]
)


def reference_name(term: str) -> str:
    """The concept a marked term names: the words before its first standalone formula, less
    articles in front and prepositions behind ("the big étale site of $S$" -> "big étale
    site"), accents written as TeX accents read as letters."""
    cut = _STANDALONE_MATH.search(term)
    words = _ACCENT.sub(r"\1", term[: cut.start()] if cut else term).split()
    while words and words[0].lower() in _ARTICLES:
        words.pop(0)
    while words and words[-1].lower().strip(",.;:") in _TRAILING:
        words.pop()
    return normalise_name(" ".join(words).strip(" ,.;:"))


@dataclass(frozen=True)
class Recall:
    defined: int
    found: int
    missed: list[str]

    @property
    def value(self) -> float:
        return self.found / self.defined if self.defined else 0.0


def recall(corpus: Path, concepts: pd.DataFrame) -> Recall:
    """Of the distinct names the corpus marks as defined, the share the graph has."""
    known = set(concepts["name"])
    for aliases in concepts["aliases"]:
        known.update(normalise_name(alias) for alias in aliases)
    defined = {
        name
        for path in chapters(corpus)
        for term in marked_terms(path.read_text(encoding="utf-8"))
        if (name := reference_name(term)) and any(len(word) >= 3 for word in name.split())
    }
    missed = sorted(defined - known)
    return Recall(defined=len(defined), found=len(defined) - len(missed), missed=missed)
