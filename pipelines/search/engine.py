"""A registered model, loaded once, and its passage index: what answers a search.

:func:`open_engine` resolves the alias (or version number) to one model version once, so
the model and its index key cannot disagree if a promotion moves the alias meanwhile;
loads it (``mlflow.sentence_transformers``); opens the search index of the corpus for that
version's fingerprint (:mod:`pipelines.search.index`: from the per-passage embedding store
that evaluate and promote fill, so a just-promoted model costs no embedding at all; exact
below ``search.ann_threshold`` passages, approximate above); loads the BM25 index of the
same passages that evaluate saved (:mod:`pipelines.retrieval.lexical`; built and saved when
none matches them); and warms the model up with one query.
:meth:`SearchEngine.search` then costs one short encode, one index lookup (a matrix-vector
product when exact) and, when hybrid, one BM25 scoring and a reciprocal-rank fusion.
:func:`search` is the one-shot form: open, answer one query.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from pipelines.common.config import PromoteParams, SearchParams
from pipelines.common.paths import Paths
from pipelines.common.redact import redact
from pipelines.registry.mlflow_registry import (
    CHAMPION,
    NoChampionError,
    PromotionError,
    Registry,
    connect,
    load_registered_model,
    version_fingerprint,
)
from pipelines.retrieval.embeddings import TextEncoder, embed_texts
from pipelines.retrieval.lexical import (
    DEFAULT_RANKING,
    FUSION_DEPTH,
    LexicalIndex,
    Ranking,
    check_ranking,
    fuse,
    open_lexical_index,
)
from pipelines.retrieval.vector_store import open_store
from pipelines.search.index import SearchIndex, open_search_index
from pipelines.search.query import Corpus, Hit, check_request, read_corpus

if TYPE_CHECKING:
    from mlflow.entities.model_registry import ModelVersion

#: Texts per encode batch when passages are embedded.
BATCH_SIZE = 64


@dataclass(frozen=True)
class ModelRef:
    """The version that answers, and how it was asked for (``alias`` ``None``: by number)."""

    name: str
    version: str
    alias: str | None
    fingerprint: str

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "alias": self.alias}


class SearchEngine:
    """One model and its indexes of one corpus, in memory; safe to share between threads.

    ``ranking`` is the default of :meth:`search`: ``hybrid`` (the model's ranking fused
    with BM25's) or ``dense`` (the model's alone).
    """

    def __init__(
        self,
        model: TextEncoder,
        ref: ModelRef,
        corpus: Corpus,
        index: SearchIndex,
        lexical: LexicalIndex,
        ranking: Ranking = DEFAULT_RANKING,
    ) -> None:
        self.model = model
        self.ref = ref
        self.corpus = corpus
        self.index = index
        self.lexical = lexical
        self.ranking = check_ranking(ranking)
        # One encode at a time: torch already uses every core for one query, and two
        # concurrent forward passes only slow each other down.
        self._encode_lock = threading.Lock()

    def encode_query(self, query: str) -> npt.NDArray[np.float32]:
        with self._encode_lock:
            return embed_texts(self.model, [query], batch_size=1, dim=None, normalize=True)

    def search(self, query: str, k: int, ranking: str | None = None) -> list[Hit]:
        """The best ``k`` passages, best first; each hit's score is the ranking's own: the
        cosine when dense, the reciprocal-rank fusion score when hybrid."""
        check_request(query, k)
        how = check_ranking(ranking or self.ranking)
        query_vector = self.encode_query(query)
        if how == "dense":
            rows, scores = self.index.top(query_vector, k)
        else:
            depth = max(k, FUSION_DEPTH)
            dense_rows, _ = self.index.top(query_vector, depth)
            lexical_rows, _ = self.lexical.top(query, depth)
            rows, scores = fuse([dense_rows, lexical_rows], k)
        return [self.corpus.hit(row, score) for row, score in zip(rows, scores, strict=True)]

    def answer(
        self, query: str, k: int, *, ranking: str | None = None, max_chars: int | None = None
    ) -> dict[str, Any]:
        """The JSON the API and ``search --json`` give: query, model, ranking, time, hits."""
        how = ranking or self.ranking
        started = time.perf_counter()
        hits = self.search(query, k, how)  # refuses an unknown ranking
        took_ms = (time.perf_counter() - started) * 1000
        return {
            "query": query,
            "model": self.ref.as_json(),
            "ranking": how,
            "took_ms": round(took_ms, 2),
            "hits": [hit.as_json(rank, max_chars=max_chars) for rank, hit in enumerate(hits, 1)],
        }


def resolve_version(
    registry: Registry | None,
    where: str,
    model_name: str,
    *,
    alias: str | None,
    version: str | None,
) -> tuple[ModelVersion, str | None]:
    """The model version asked for (default ``@champion``) and the alias it was asked by."""
    if alias is not None and version is not None:
        raise ValueError("pass --alias or --version, not both")
    if version is not None:
        if not version.isdigit() or int(version) < 1:
            raise ValueError(f"--version must be a version number such as 3, got {version!r}")
        if registry is None:
            raise PromotionError(f"no registry at {where}; run the pipeline and promote first")
        from mlflow.exceptions import MlflowException

        try:
            return registry.version(str(int(version))), None
        except MlflowException as error:
            raise PromotionError(
                f"{model_name} has no version {version} in the registry ({where}); "
                "`mathembed status` lists the versions the aliases point at"
            ) from error
    alias = alias or CHAMPION
    found = registry.version_by_alias(alias) if registry is not None else None
    if found is None:
        hint = (
            "run the pipeline (`make repro` / `dvc repro`) and `mathembed promote` first"
            if alias == CHAMPION
            else "`mathembed status` lists the aliases that are set"
        )
        raise NoChampionError(
            f"no @{alias} version of {model_name} in the registry ({where}); {hint}"
        )
    return found, alias


def open_engine(
    paths: Paths,
    promote: PromoteParams,
    *,
    alias: str | None = None,
    version: str | None = None,
    ranking: str = DEFAULT_RANKING,
    search: SearchParams | None = None,
) -> SearchEngine:
    """Load the asked-for version, open its indexes of the corpus, warm the model up."""
    search = search or SearchParams()
    ranking = check_ranking(ranking)  # a typo fails before the model loads
    corpus = read_corpus(paths)  # no corpus: say so before loading
    registry = connect(paths, promote, create=False)
    where = redact(registry.uri) if registry is not None else str(paths.mlflow_store)
    model_version, asked_alias = resolve_version(
        registry, where, promote.registered_model, alias=alias, version=version
    )
    assert registry is not None  # resolve_version raised otherwise
    fingerprint = version_fingerprint(registry, model_version)
    model = load_registered_model(registry, model_version)
    ref = ModelRef(promote.registered_model, str(model_version.version), asked_alias, fingerprint)
    texts = corpus.chunks["text"].astype(str).tolist()
    store = open_store(paths, keep=[fingerprint])
    update = open_search_index(
        store, model, fingerprint, texts, params=search, batch_size=BATCH_SIZE
    )
    lexical = open_lexical_index(paths.lexical_index, texts)
    engine = SearchEngine(model, ref, corpus, update.index, lexical, ranking)
    engine.encode_query("warm-up")  # the first forward pass allocates; users should not wait
    return engine


def search(
    query: str,
    k: int,
    paths: Paths,
    promote: PromoteParams | None = None,
    *,
    alias: str | None = None,
    version: str | None = None,
    ranking: str = DEFAULT_RANKING,
) -> list[Hit]:
    """The ``k`` passages most similar to ``query``, best first, under the ``alias`` (or
    ``version``; default ``@champion``) model: one model load, the stored vectors;
    ``ranking`` ``hybrid`` (default) fuses the model's ranking with BM25's.

    Raises :class:`~pipelines.registry.mlflow_registry.NoChampionError` when the alias is unset,
    ``FileNotFoundError`` when there is no corpus, ``ValueError`` for a bad request.
    """
    check_request(query, k)
    engine = open_engine(
        paths,
        promote or PromoteParams(),
        alias=alias,
        version=version,
        ranking=ranking,
    )
    return engine.search(query, k)
