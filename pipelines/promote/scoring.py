"""The three sides of a promotion decision — candidate, base model, ``@champion`` — scored
on the validated evaluation set in one run, with the evaluate stage's scoring
(:mod:`pipelines.evaluate.scoring`): the numbers are the ones ``metrics/eval.json``
reports for the same data.

Every set is scored (``named``, ``masked``, ``described``, the transfer sets), and one
more is made of two:
``meaning``, the ``masked`` and ``described`` queries pooled (their ids prefixed by their
set), the scores the record shows for a decision on meaning. The gate itself
(``promote.gate: meaning``, :func:`pipelines.promote.decision.decide_on_meaning`) decides
set by set: a significant win on at least one meaning set, at ``alpha`` split between
them, no significant loss on any set, and none on a transfer set against the base either.

Embeddings come from the per-passage store keyed by model fingerprint and text
(:mod:`pipelines.retrieval.vector_store`), so a champion already scored on this data (it was,
as a candidate) is not even loaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from pipelines.common.config import Params
from pipelines.common.paths import MODEL_METADATA_FILE, Paths
from pipelines.common.tables import MEANING_SETS, QUERY_SETS, TABLES
from pipelines.evaluate.eval_set import EVAL_TABLES, EvalSet, load_eval_set
from pipelines.evaluate.foreign import FIX_HINT, folder_files
from pipelines.evaluate.scoring import embed_eval_set, score_eval_set
from pipelines.evaluate.sources import (
    CANDIDATE,
    ModelSource,
    base_model_source,
    local_model_source,
)
from pipelines.promote.candidate import Candidate
from pipelines.promote.decision import Scores
from pipelines.registry.mlflow_registry import (
    CHAMPION,
    PromotionRefusedError,
    Registry,
    load_registered_model,
    version_fingerprint,
)
from pipelines.retrieval.embeddings import TextEncoder
from pipelines.retrieval.models import ModelLoadError, data_hash
from pipelines.retrieval.vector_store import EmbeddingStore, open_store

if TYPE_CHECKING:
    from mlflow.entities.model_registry import ModelVersion


MEANING = "meaning"
#: Every set a promotion scores, the gate's included.
SCORED_SETS = (*QUERY_SETS, MEANING)
SetScores = dict[str, Scores]  # set name -> one model's scores on it


@dataclass(frozen=True)
class ScoredModels:
    """The three sides of a decision, scored on one evaluation set in one run:
    ``candidate``, ``base`` and ``champion`` on the gate's set, ``sets`` on every set."""

    candidate: Scores
    base: Scores
    champion: Scores | None
    eval_data_hash: str
    gate: str = MEANING
    sets: dict[str, dict[str, Scores]] | None = None  # side -> set -> scores


def score_for_promotion(
    params: Params,
    paths: Paths,
    candidate: Candidate,
    champion: ModelSource | None,
) -> ScoredModels:
    """Score candidate, base and champion on the validated queries, at each one's full dim."""
    eval_set = load_eval_set(paths, params.evaluate.foreign_corpora)
    base_spec = candidate.metadata.base_spec
    if base_spec is None:
        raise PromotionRefusedError(
            f"{candidate.directory / MODEL_METADATA_FILE} does not name its base model "
            "(base_model, params.pooling, params.max_seq_length); retrain it with `dvc repro`"
        )
    sources = {
        "candidate": local_model_source(CANDIDATE, candidate.directory),
        "base": base_model_source(base_spec),
    }
    if champion is not None:
        sources["champion"] = champion
    # The three sides' embeddings are the ones the next runs need: never evict them here.
    keep = [source.fingerprint for source in sources.values()]
    store = open_store(paths, keep=keep) if params.evaluate.cache else None
    scores = {
        side: score_source(
            source, eval_set, params, store=store, batch_size=params.evaluate.batch_size
        )
        for side, source in sources.items()
    }
    gate = params.promote.gate
    return ScoredModels(
        scores["candidate"][gate],
        scores["base"][gate],
        scores["champion"][gate] if "champion" in scores else None,
        eval_data_hash(paths, params.evaluate.foreign_corpora),
        gate=gate,
        sets=scores,
    )


def eval_data_hash(paths: Paths, foreign_corpora: Sequence[str] = ()) -> str:
    """The hash of the validated evaluation data: passages, queries and relevance judgments,
    and the foreign corpora's tables (``evaluate.foreign_corpora``)."""
    foreign = [file for folder in foreign_corpora for file in folder_files(paths.root / folder)]
    missing = [str(file) for file in foreign if not file.is_file()]
    if missing:
        raise PromotionRefusedError(f"foreign corpus file {missing[0]} not found; {FIX_HINT}")
    try:
        return data_hash(*(TABLES[table].validated_path(paths) for table in EVAL_TABLES), *foreign)
    except FileNotFoundError as error:
        raise PromotionRefusedError(
            f"{error}: promotion decides on the validated evaluation data (chunks, queries, "
            "qrels in data/validated/); run `dvc repro`, then `mathembed promote`"
        ) from error


def score_source(
    source: ModelSource,
    eval_set: EvalSet,
    params: Params,
    *,
    store: EmbeddingStore | None,
    batch_size: int,
    sets: Sequence[str] = QUERY_SETS,
) -> SetScores:
    """One model's per-query scores on ``sets`` of ``eval_set`` (every set by default;
    the passage sets alone for an eval set without its transfer corpus) at its full
    dimension, and the meaning sets pooled."""
    try:
        embeddings = embed_eval_set(source, eval_set, store=store, batch_size=batch_size)
    except ValueError as error:  # already names the model
        raise PromotionRefusedError(str(error)) from error
    except ModelLoadError as error:
        raise PromotionRefusedError(f"{source.name} model: {error}") from error
    full_dim = int(embeddings.corpus.shape[1])
    scored = score_eval_set(embeddings, eval_set, ks=params.evaluate.ks, dims=[full_dim])
    by_set: SetScores = {}
    for query_set in sets:
        holding = eval_set.holding(query_set)
        ids = tuple(holding.query_ids[row] for row in holding.rows_of(query_set))
        found = scored[query_set]
        by_set[query_set] = Scores(
            ids,
            dict(found.means.get(full_dim, {})),
            dict(found.per_query.get(full_dim, {})),
        )
    by_set[MEANING] = pooled([(name, by_set[name]) for name in MEANING_SETS])
    return by_set


def pooled(parts: list[tuple[str, Scores]]) -> Scores:
    """Several sets' queries as one (ids prefixed by their set), the means over all of them."""
    ids = tuple(f"{name}:{query}" for name, scores in parts for query in scores.query_ids)
    answered = [scores for _name, scores in parts if scores.query_ids]
    if not answered:
        return Scores((), {}, {})
    metrics = set.intersection(*(set(scores.per_query) for scores in answered))
    per_query = {
        metric: np.concatenate([scores.per_query[metric] for scores in answered])
        for metric in metrics
    }
    means = {metric: float(np.nanmean(values)) for metric, values in per_query.items()}
    return Scores(ids, means, per_query)


def champion_source(registry: Registry, version: ModelVersion) -> ModelSource:
    """The registered champion as something evaluate's scoring can embed with, lazily."""

    def load() -> TextEncoder:
        return load_registered_model(registry, version)

    return ModelSource(
        CHAMPION,
        version_fingerprint(registry, version),
        load,
        {"source": f"models:/{registry.model_name}/{version.version}"},
    )
