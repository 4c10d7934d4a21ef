"""Lexical ranking (BM25, ``bm25s``) and its fusion with the model's ranking.

Search ranks a query one of three ways (:data:`Ranking`, :func:`order`): ``dense``, by the
model's cosine alone; ``hybrid``, the model's list and BM25's over the passages' words fused by
reciprocal rank (:func:`fuse`: a passage's fused score is ``sum w / (RRF_K + rank)`` over the
lists it appears in, so one that both rankings place high comes first, and neither list's
score scale matters); ``adaptive``, the same fusion with BM25's weight set by the query's
shape (:func:`lexical_weight`: full for a few words, a name; low for a sentence, whose words a
passage rarely repeats). Whichever orders, a hit's score is the model's cosine: fusion only
orders. The service's default is params.yaml ``search.ranking``, chosen by
``benchmarks/bench_search_quality.py`` (``benchmarks/results/search_quality.md``); the
evaluate and promote stages score the model alone.

The corpus's BM25 index is saved where :attr:`Paths.lexical_index
<pipelines.common.paths.Paths.lexical_index>` says (``data/embeddings/bm25/``) by evaluate,
which builds it anyway for its reference row, and loaded memory-mapped by ``search`` and
``serve-search`` instead of being built a third time (~30 s at 420,000 passages,
``benchmarks/results/night_cost.md``). It is keyed by :func:`corpus_digest`: the passages'
texts in order, the tokenizer's settings and the bm25s version, so it can never disagree
with the corpus. Its manifest records each file's size and SHA-256; a missing, corrupt or
mismatched index is rebuilt with a warning, never trusted. Written into a temporary folder
and renamed, so a reader sees a whole index or none.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, get_args

from pipelines.common.config import Ranking

log = logging.getLogger(__name__)

#: Reciprocal-rank fusion's constant: 60, as in Cormack, Clarke & Büttcher (SIGIR 2009),
#: not tuned on the eval set the fusion is judged on.
RRF_K = 60
#: How deep each ranking goes before fusion (and at least ``k``).
FUSION_DEPTH = 100

RANKINGS: tuple[Ranking, ...] = get_args(Ranking)
#: A query of at most this many BM25 words (stop words out) is a name ("snake lemma",
#: "fundamental theorem of Galois theory"); a longer one is a sentence.
NAME_WORDS = 4
#: BM25's weight beside the model's (weight 1) in ``adaptive`` fusion: a name's words are
#: the passage's words; a sentence's are the asker's own. Set before the question set was
#: measured (the benchmark shows its neighbours), not tuned on it.
NAME_LEXICAL_WEIGHT = 1.0
SENTENCE_LEXICAL_WEIGHT = 0.25

#: How a text becomes BM25 words (bm25s.tokenize's arguments): lower-cased, runs of two or
#: more word characters, English stop words out. Part of a saved index's key.
TOKENIZER: dict[str, Any] = {"lower": True, "token_pattern": r"(?u)\b\w\w+\b", "stopwords": "en"}
#: A saved index's layout; bumped when it or what :func:`corpus_digest` covers changes.
INDEX_FORMAT = 1
#: The manifest a saved index carries, written last: key, passages, each file's size and hash.
MANIFEST_FILE = "mathembed.json"
#: A temporary folder older than this is a writer that died: deleted by the next writer.
STALE_TEMPORARY_S = 3600.0

Tokens = list[list[str]]


def check_ranking(ranking: str) -> Ranking:
    """``ranking`` as a :data:`Ranking`, or ``ValueError`` naming the choices."""
    for known in RANKINGS:
        if ranking == known:
            return known
    raise ValueError(f"ranking must be one of {', '.join(RANKINGS)}, got {ranking!r}")


def tokenize(texts: Sequence[str]) -> Tokens:
    """Each text's BM25 words (:data:`TOKENIZER`); a text's words do not depend on the
    other texts, so a corpus with a few rows changed needs only those tokenized again
    (:func:`retokenized`)."""
    import bm25s

    tokens: Tokens = bm25s.tokenize(list(texts), return_ids=False, show_progress=False, **TOKENIZER)
    return tokens


def retokenized(tokens: Sequence[list[str]], changed: Mapping[int, str]) -> Tokens:
    """``tokens`` (a corpus's, row by row) with the rows in ``changed`` (row -> new text)
    tokenized anew; the other rows' lists are shared, not copied."""
    rows = sorted(changed)
    updated = list(tokens)
    for row, words in zip(rows, tokenize([changed[row] for row in rows]), strict=True):
        updated[row] = words
    return updated


class LexicalIndex:
    """BM25 over the passages (row ``i`` is passage ``i``); read-only once built."""

    def __init__(self, texts: Sequence[str]) -> None:
        self._bm25 = _bm25_of(tokenize(texts))
        self.passages = len(texts)

    @classmethod
    def from_tokens(cls, tokens: Sequence[list[str]]) -> LexicalIndex:
        """The index of a corpus already tokenized (:func:`tokenize`): the same index as
        ``LexicalIndex(texts)``, without tokenizing again."""
        index = cls.__new__(cls)
        index._bm25 = _bm25_of(tokens)
        index.passages = len(tokens)
        return index

    def top(self, query: str, depth: int) -> tuple[list[int], list[float]]:
        """Rows and BM25 scores of at most ``depth`` passages sharing a word with ``query``,
        best first (ties by row); none when it has no word beyond stop words."""
        import numpy as np  # here, not at the top: the CLI reads the defaults above

        tokens = tokenize([query])[0]
        if not tokens or self._bm25 is None:
            return [], []
        scores = np.asarray(self._bm25.get_scores(tokens), dtype=np.float64)
        matching = np.flatnonzero(scores > 0)
        if len(matching) > depth:
            matching = matching[np.argpartition(-scores[matching], depth - 1)[:depth]]
        order = matching[np.lexsort((matching, -scores[matching]))]
        return order.tolist(), scores[order].tolist()


def _bm25_of(tokens: Sequence[list[str]]) -> Any:
    import bm25s

    if not any(tokens):  # bm25s cannot index a corpus without a single word
        return None
    bm25 = bm25s.BM25()
    bm25.index(list(tokens), show_progress=False)
    return bm25


# ------------------------------------------------------------------------ the saved index


def corpus_digest(texts: Sequence[str]) -> str:
    """SHA-256 of what a saved index must match: its layout, the bm25s version (its stop
    words and scoring), :data:`TOKENIZER` and the passages' texts in order."""
    import bm25s

    digest = hashlib.sha256()
    settings = {"format": INDEX_FORMAT, "bm25s": bm25s.__version__, "tokenizer": TOKENIZER}
    digest.update(json.dumps(settings, sort_keys=True).encode("utf-8"))
    for text in texts:
        data = text.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _problem(folder: Path, digest: str, passages: int) -> str | None:
    """Why the index in ``folder`` may not serve these passages (None: it may)."""
    if not folder.is_dir():
        others = [p.name for p in folder.parent.glob("*") if not p.name.startswith(".")]
        return (
            "the saved one was built from other passages (or another tokenizer)"
            if others
            else "none is saved"
        )
    try:
        manifest = json.loads((folder / MANIFEST_FILE).read_text("utf-8"))
    except (OSError, ValueError) as error:
        return f"its manifest cannot be read ({type(error).__name__}: {error})"
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        return "its manifest is not an object with files"
    if manifest.get("digest") != digest or manifest.get("passages") != passages:
        return "its manifest names other passages"
    for name, expected in manifest["files"].items():
        path = folder / name
        if not isinstance(expected, dict) or not path.is_file():
            return f"{name} is missing"
        if path.stat().st_size != expected.get("bytes"):
            return f"{name} has {path.stat().st_size} bytes, not {expected.get('bytes')}"
        if _file_sha256(path) != expected.get("sha256"):
            return f"{name} does not match its SHA-256"
    return None


def load_lexical_index(root: Path, texts: Sequence[str]) -> LexicalIndex | None:
    """The index saved under ``root`` for exactly these passages, memory-mapped; None with
    a warning saying why when there is none to trust."""
    import bm25s

    digest = corpus_digest(texts)
    folder = root / digest
    problem = _problem(folder, digest, len(texts))
    if problem is None:
        try:
            bm25 = bm25s.BM25.load(folder, mmap=True, show_progress=False)
            if bm25.scores["num_docs"] != len(texts):
                raise ValueError(f"it holds {bm25.scores['num_docs']} passages")
        except (OSError, ValueError, KeyError, TypeError) as error:
            problem = f"it cannot be loaded ({type(error).__name__}: {error})"
        else:
            index = LexicalIndex.__new__(LexicalIndex)
            index._bm25 = bm25
            index.passages = len(texts)
            return index
    log.warning("BM25 index in %s is not used: %s; building it", root, problem)
    return None


def save_lexical_index(root: Path, texts: Sequence[str], index: LexicalIndex) -> None:
    """Keep ``index`` (of ``texts``) under ``root`` for :func:`load_lexical_index`, unless
    the same is kept already; the others there are deleted. A failure to write is a
    warning: the index is only a saving."""
    digest = corpus_digest(texts)
    folder = root / digest
    if index._bm25 is None or _problem(folder, digest, len(texts)) is None:
        return  # a corpus without a word is indexed in no time; or it is there already
    temporary = root / f".{digest}.{os.getpid()}.tmp"
    try:
        shutil.rmtree(temporary, ignore_errors=True)
        temporary.mkdir(parents=True)
        index._bm25.save(temporary, show_progress=False)
        files = {
            path.name: {"bytes": path.stat().st_size, "sha256": _file_sha256(path)}
            for path in sorted(temporary.iterdir())
        }
        manifest = {"format": INDEX_FORMAT, "digest": digest, "passages": len(texts)}
        (temporary / MANIFEST_FILE).write_text(
            json.dumps({**manifest, "files": files}, indent=2, sort_keys=True), "utf-8"
        )
        shutil.rmtree(folder, ignore_errors=True)  # an untrusted one of the same key
        os.rename(temporary, folder)
    except OSError as error:
        shutil.rmtree(temporary, ignore_errors=True)
        if not folder.is_dir():  # another process may have renamed the same index in
            log.warning("BM25 index not saved in %s: %s", root, error)
            return
    _delete_others(root, keep=folder.name)
    log.info("BM25 index of %d passages saved in %s", len(texts), folder)


def _delete_others(root: Path, *, keep: str) -> None:
    """The other saved indexes (a reader holding one open keeps its mapped files) and the
    temporary folders of writers that died."""
    for path in root.iterdir():
        if path.name == keep:
            continue
        with contextlib.suppress(OSError):
            writing = time.time() - path.stat().st_mtime < STALE_TEMPORARY_S
            if path.name.startswith(".") and writing:
                continue  # another writer's temporary folder, perhaps still being written
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()


def open_lexical_index(root: Path, texts: Sequence[str]) -> LexicalIndex:
    """The BM25 index of ``texts``: the one saved under ``root`` when it matches them,
    else built now (and saved for the next start)."""
    index = load_lexical_index(root, texts)
    if index is None:
        index = LexicalIndex(texts)
        save_lexical_index(root, texts, index)
    return index


def fuse(
    rankings: Sequence[Sequence[int]], limit: int, weights: Sequence[float] | None = None
) -> tuple[list[int], list[float]]:
    """Reciprocal-rank fusion of ranked row lists, each weighted (default: all 1): the best
    ``limit`` rows and their fused scores, best first; ties go to the row ranked higher in
    the first list, then by row."""
    weights = [1.0] * len(rankings) if weights is None else list(weights)
    if len(weights) != len(rankings):
        raise ValueError(f"{len(rankings)} rankings but {len(weights)} weights")
    fused: dict[int, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, row in enumerate(ranking, 1):
            fused[row] = fused.get(row, 0.0) + weight / (RRF_K + rank)
    first = {row: rank for rank, row in enumerate(rankings[0])} if rankings else {}
    order = sorted(fused, key=lambda row: (-fused[row], first.get(row, len(first)), row))
    best = order[:limit]
    return best, [fused[row] for row in best]


def query_words(query: str) -> int:
    """How many BM25 words ``query`` has (:data:`TOKENIZER`: stop words out)."""
    return len(tokenize([query])[0])


def lexical_weight(ranking: Ranking, query: str) -> float:
    """BM25's weight beside the model's when ``ranking`` orders ``query``: 0 (``dense``),
    1 (``hybrid``), by the query's shape (``adaptive``: :data:`NAME_WORDS`)."""
    if ranking == "dense":
        return 0.0
    if ranking == "hybrid":
        return 1.0
    return NAME_LEXICAL_WEIGHT if query_words(query) <= NAME_WORDS else SENTENCE_LEXICAL_WEIGHT


def order(
    ranking: Ranking,
    query: str,
    dense: Sequence[int],
    lexical: Sequence[int],
    limit: int,
) -> list[int]:
    """The best ``limit`` rows for ``query`` under ``ranking``, given the model's ranked rows
    (``dense``) and BM25's (``lexical``), each at least ``limit`` deep where it can be."""
    weight = lexical_weight(ranking, query)
    if weight == 0.0 or not lexical:
        return list(dense[:limit])
    return fuse([dense, lexical], limit, [1.0, weight])[0]
