"""``mathembed search``: the top passages for a query, ranked by the registry's champion.

This is how a researcher uses what the pipeline produced. :func:`search` loads
``models:/math-embed@champion`` (the ``sentence_transformers`` flavour; the alias is
resolved to a version once, so the model and its cache key cannot disagree if a promotion
moves the alias meanwhile), embeds the validated corpus
(``data/validated/chunks.parquet``; ``data/processed/`` before validation has run) once
per model and corpus — through :class:`pipelines.common.embeddings.EmbeddingCache`, keyed
by the version's model fingerprint and the corpus texts, the same entries the evaluate
stage fills — and ranks it with ``metrics_rs.knn`` (cosine). Titles come from the papers
table beside the chunks.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

import metrics_rs
from pipelines.common import io
from pipelines.common.config import PromoteParams
from pipelines.common.embeddings import EmbeddingCache, embed_cached, embed_texts
from pipelines.common.paths import Paths
from pipelines.common.redact import redact
from pipelines.common.tables import TABLES
from pipelines.promote.errors import NoChampionError
from pipelines.promote.store import CHAMPION, connect, load_registered_model, version_fingerprint

#: Texts per encode batch when the corpus is not cached yet.
BATCH_SIZE = 64


@dataclass(frozen=True)
class Hit:
    """One ranked passage: cosine ``score`` between the query and the passage."""

    chunk_id: str
    paper_id: str
    title: str
    score: float
    text: str


def corpus_dir(paths: Paths) -> Path:
    """The validated tables when validation has run, else the processed ones."""
    validated = TABLES["chunks"].validated_path(paths)
    return paths.validated if validated.is_file() else paths.processed


def search(query: str, k: int, paths: Paths, promote: PromoteParams | None = None) -> list[Hit]:
    """The ``k`` passages most similar to ``query`` under the champion model, best first.

    Raises :class:`~pipelines.promote.errors.NoChampionError` when nothing has been promoted,
    ``FileNotFoundError`` when there is no corpus, ``ValueError`` for an empty query or
    ``k < 1``.
    """
    if not query.strip():
        raise ValueError("the query is empty; pass some text, e.g. mathembed search 'prime gaps'")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as error:  # e.g. a lone surrogate: argv bytes that were not UTF-8
        raise ValueError(
            f"the query is not valid UTF-8 text (character {error.start + 1} cannot be "
            "encoded); pass it in a UTF-8 terminal or locale, e.g. LANG=C.UTF-8"
        ) from None
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    promote = promote or PromoteParams()
    chunks, titles = _read_corpus(paths)

    registry = connect(paths, promote, create=False)
    champion = registry.version_by_alias(CHAMPION) if registry is not None else None
    if registry is None or champion is None:
        where = redact(registry.uri) if registry is not None else str(paths.mlflow_store)
        raise NoChampionError(
            f"no @{CHAMPION} version of {promote.registered_model} in the registry ({where}); "
            "run the pipeline (`make repro` / `dvc repro`) and `mathembed promote` first"
        )
    model = load_registered_model(registry, champion)
    texts = chunks["text"].astype(str).tolist()
    fingerprint = version_fingerprint(registry, champion)
    corpus = embed_cached(
        model,
        texts,
        model_fingerprint=fingerprint,
        cache=EmbeddingCache(paths.embedding_cache, keep=[fingerprint]),
        batch_size=BATCH_SIZE,
        progress=sys.stderr.isatty(),
    )
    query_embedding = embed_texts(model, [query], batch_size=1, dim=None, normalize=False)
    ids, scores = metrics_rs.knn(query_embedding, corpus, min(k, len(texts)))
    hits = []
    for row, score in zip(ids[0].tolist(), scores[0].tolist(), strict=True):
        chunk = chunks.iloc[row]
        paper_id = str(chunk["paper_id"])
        hits.append(
            Hit(
                chunk_id=str(chunk["chunk_id"]),
                paper_id=paper_id,
                title=titles.get(paper_id, ""),
                score=float(score),
                text=str(chunk["text"]),
            )
        )
    return hits


def _read_corpus(paths: Paths) -> tuple[pd.DataFrame, dict[str, str]]:
    folder = corpus_dir(paths)
    chunks_path = folder / TABLES["chunks"].file_name
    papers_path = folder / TABLES["papers"].file_name
    if not chunks_path.is_file():
        raise FileNotFoundError(
            f"no corpus to search: {chunks_path} not found; run the pipeline (`make repro`)"
        )
    chunks = io.read_parquet(chunks_path)
    missing = [c for c in ("chunk_id", "paper_id", "text") if c not in chunks.columns]
    if missing:
        raise ValueError(f"{chunks_path}: missing column(s) {missing}; rerun `make repro`")
    if chunks.empty:
        raise FileNotFoundError(f"no corpus to search: {chunks_path} has no passages")
    titles: dict[str, str] = {}
    if papers_path.is_file():
        papers = io.read_parquet(papers_path)
        titles = dict(zip(papers["paper_id"].astype(str), papers["title"].astype(str), strict=True))
    return chunks.reset_index(drop=True), titles


def format_hits(hits: list[Hit], *, width: int = 160) -> str:
    """Hits as the CLI prints them: rank, score, paper id, title, then the passage start."""
    lines = []
    for rank, hit in enumerate(hits, 1):
        passage = " ".join(hit.text.split())
        if len(passage) > width:
            passage = passage[: width - 1] + "…"
        lines.append(f"{rank:>2}. {hit.score:.4f}  {hit.paper_id}  {hit.title}")
        lines.append(f"    [{hit.chunk_id}] {passage}")
    return "\n".join(lines)
