"""A registered model, loaded once, and its passage index: what answers a search.

:func:`open_engine` resolves the alias (or version number) to one model version once, so
the model and its index key cannot disagree if a promotion moves the alias meanwhile;
loads it (``mlflow.sentence_transformers``); opens the search index of the corpus's search
texts (each passage headed by the statement it holds, its name, label words and section:
:func:`pipelines.mathtext.headings.search_texts`, the text evaluate scores) for that
version's fingerprint (:mod:`pipelines.search.index`: from the per-passage embedding store
that evaluate and promote fill, so a just-promoted model costs no embedding at all; exact
below ``search.ann_threshold`` passages, approximate above); loads the BM25 index of the
same passages that evaluate saved (:mod:`pipelines.retrieval.lexical`; built and saved when
none matches them); and warms the model up with one query.
:meth:`SearchEngine.search` then costs one short encode, one index lookup (a matrix-vector
product when exact) and, when fused (``hybrid``, ``adaptive``), one BM25 scoring and a
reciprocal-rank fusion (:func:`pipelines.retrieval.lexical.order`). Every hit's score is the
cosine between query and passage, whichever ranking ordered it: a number a person can read.
:meth:`SearchEngine.answer` says beside the hits whether the corpus holds a close match: not
when the best passage's cosine is below ``search.miss_threshold`` (calibrated by
``benchmarks/bench_search_quality.py``).
:func:`search` is the one-shot form: open, answer one query.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from pipelines.common.config import PromoteParams, Ranking, SearchParams
from pipelines.common.paths import Paths
from pipelines.common.redact import redact
from pipelines.mathtext.headings import search_texts
from pipelines.registry.mlflow_registry import (
    CHAMPION,
    NoChampionError,
    PromotionError,
    Registry,
    connect,
    load_registered_model,
    version_fingerprint,
)
from pipelines.retrieval.embeddings import TextEncoder, embed_texts, matryoshka
from pipelines.retrieval.lexical import (
    FUSION_DEPTH,
    LexicalIndex,
    check_ranking,
    lexical_weight,
    open_lexical_index,
    order,
)
from pipelines.retrieval.vector_store import EmbeddingStore, embed_stored, open_store
from pipelines.search.index import PassageIndex, SearchIndex, open_search_index
from pipelines.search.query import Corpus, Hit, check_request, one_per_statement, read_corpus

if TYPE_CHECKING:
    from mlflow.entities.model_registry import ModelVersion

#: Texts per encode batch when passages are embedded.
BATCH_SIZE = 64

#: Corpus rows -> their passages' unit vectors (row ``i`` of the answer is ``rows[i]``'s).
PassageVectors = Callable[[Sequence[int]], npt.NDArray[np.float32]]


@dataclass(frozen=True)
class ModelRef:
    """The version that answers, and how it was asked for (``alias`` ``None``: by number)."""

    name: str
    version: str
    alias: str | None
    fingerprint: str

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "alias": self.alias}


@dataclass(frozen=True)
class Results:
    """A search's hits, best first, and the best cosine of any passage (the model's first,
    whichever ranking ordered the hits) against the threshold below which the corpus is
    said to hold no close match."""

    hits: list[Hit]
    best_cosine: float
    miss_threshold: float

    @property
    def no_close_match(self) -> bool:
        return self.best_cosine < self.miss_threshold

    @property
    def note(self) -> str:
        """What a search says beside the hits: ``""`` when the corpus holds a close match."""
        return miss_note(self.best_cosine, self.miss_threshold) if self.no_close_match else ""


class SearchEngine:
    """One model and its indexes of one corpus, in memory; safe to share between threads.

    ``ranking`` is the default of :meth:`search` (:data:`~pipelines.common.config.Ranking`);
    ``miss_threshold`` the best cosine below which :meth:`answer` says there is no close
    match; ``passage_vectors`` gives the unit vectors of passages the model did not rank
    among its best but BM25 brought into the hits, for their cosine (default: read from
    ``index`` when it is exact).
    """

    def __init__(
        self,
        model: TextEncoder,
        ref: ModelRef,
        corpus: Corpus,
        index: SearchIndex,
        lexical: LexicalIndex,
        ranking: str,
        *,
        miss_threshold: float,
        passage_vectors: PassageVectors | None = None,
    ) -> None:
        self.model = model
        self.ref = ref
        self.corpus = corpus
        self.index = index
        self.lexical = lexical
        self.ranking: Ranking = check_ranking(ranking)
        self.miss_threshold = miss_threshold
        if passage_vectors is None:
            if not isinstance(index, PassageIndex):
                raise ValueError("an approximate or remote index needs passage_vectors")
            passage_vectors = index.vectors.__getitem__
        self._passage_vectors = passage_vectors
        # One encode at a time: torch already uses every core for one query, and two
        # concurrent forward passes only slow each other down.
        self._encode_lock = threading.Lock()

    def encode_query(self, query: str) -> npt.NDArray[np.float32]:
        with self._encode_lock:
            return embed_texts(self.model, [query], batch_size=1, dim=None, normalize=True)

    def search(self, query: str, k: int, ranking: str | None = None) -> list[Hit]:
        """The best ``k`` passages, best first, ordered by ``ranking`` (default the
        engine's), one per statement (:func:`pipelines.search.query.one_per_statement`: a
        statement is shown once, where it starts when that passage is ranked); each hit's
        score is the cosine between query and passage."""
        return self.results(query, k, ranking).hits

    def results(self, query: str, k: int, ranking: str | None = None) -> Results:
        """The hits of :meth:`search`, and whether the corpus holds a close match."""
        check_request(query, k)
        how = check_ranking(ranking or self.ranking)
        query_vector = self.encode_query(query)
        fused = lexical_weight(how, query) > 0
        # Deeper than k: passages of a statement already shown give their place to others.
        depth = max(k, FUSION_DEPTH)
        dense_rows, dense_scores = self.index.top(query_vector, depth)
        cosine = dict(zip(dense_rows, dense_scores, strict=True))
        lexical_rows = self.lexical.top(query, depth)[0] if fused else []
        ranked = order(how, query, dense_rows, lexical_rows, depth)
        rows = one_per_statement(ranked, self.corpus.statement_of, k)
        unscored = [row for row in rows if row not in cosine]
        if unscored:  # BM25 brought them in from beyond the model's list
            scores = self._passage_vectors(unscored) @ query_vector.reshape(-1)
            cosine.update(zip(unscored, scores.tolist(), strict=True))
        hits = [self.corpus.hit(row, cosine[row]) for row in rows]
        best = dense_scores[0] if dense_scores else float("-inf")
        return Results(hits, best, self.miss_threshold)

    def answer(
        self, query: str, k: int, *, ranking: str | None = None, max_chars: int | None = None
    ) -> dict[str, Any]:
        """The JSON the API and ``search --json`` give: query, model, ranking, time, whether
        the corpus holds a close match (``no_close_match``; ``note`` says why, ``""`` when
        it does), hits."""
        how = ranking or self.ranking
        started = time.perf_counter()
        results = self.results(query, k, how)  # refuses an unknown ranking
        took_ms = (time.perf_counter() - started) * 1000
        return {
            "query": query,
            "model": self.ref.as_json(),
            "ranking": how,
            "took_ms": round(took_ms, 2),
            "no_close_match": results.no_close_match,
            "note": results.note,
            "hits": [
                hit.as_json(rank, max_chars=max_chars) for rank, hit in enumerate(results.hits, 1)
            ],
        }


def miss_note(best: float, threshold: float) -> str:
    """What a search says when the corpus holds no close match."""
    return (
        f"No close match in this corpus: the best passage's similarity {best:.2f} is below "
        f"{threshold:.2f}; the hits below are the nearest there are."
    )


def stored_vectors(
    store: EmbeddingStore, model: TextEncoder, fingerprint: str, texts: Sequence[str]
) -> PassageVectors:
    """Passage unit vectors read from the embedding store (the index holds them in a form
    it cannot give back: quantised, or on a server)."""

    def vectors(rows: Sequence[int]) -> npt.NDArray[np.float32]:
        found = embed_stored(
            model,
            [texts[row] for row in rows],
            model_fingerprint=fingerprint,
            store=store,
            batch_size=BATCH_SIZE,
        )
        return matryoshka(found, None, normalize=True)

    return vectors


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
    ranking: str | None = None,
    search: SearchParams | None = None,
) -> SearchEngine:
    """Load the asked-for version, open its indexes of the corpus, warm the model up;
    ``ranking`` ``None``: ``search.ranking``."""
    search = search or SearchParams()
    ranking = check_ranking(ranking or search.ranking)  # a typo fails before the model loads
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
    # What evaluate scored: each passage headed by the statement it holds (name, label, section).
    texts = search_texts(corpus.chunks, corpus.statements)
    store = open_store(paths, keep=[fingerprint])
    update = open_search_index(
        store, model, fingerprint, texts, params=search, batch_size=BATCH_SIZE
    )
    lexical = open_lexical_index(paths.lexical_index, texts)
    engine = SearchEngine(
        model,
        ref,
        corpus,
        update.index,
        lexical,
        ranking,
        miss_threshold=search.miss_threshold,
        passage_vectors=None
        if isinstance(update.index, PassageIndex)
        else stored_vectors(store, model, fingerprint, texts),
    )
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
    ranking: str | None = None,
    search: SearchParams | None = None,
) -> list[Hit]:
    """The ``k`` passages most similar to ``query``, best first, under the ``alias`` (or
    ``version``; default ``@champion``) model: one model load, the stored vectors;
    ``ranking`` orders them (default ``search.ranking``: :mod:`pipelines.retrieval.lexical`).

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
        search=search,
    )
    return engine.search(query, k)
