"""The three sides of a promotion decision — candidate, base model, ``@champion`` — scored
on the validated evaluation set in one run, with the evaluate stage's scoring
(:mod:`pipelines.evaluate.scoring`): the numbers are the ones ``metrics/eval.json``
reports for the same data. Embeddings come from the shared cache keyed by model
fingerprint and texts, so a champion already scored on this data (it was, as a
candidate) is not even loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pipelines.common.config import Params
from pipelines.common.embeddings import EmbeddingCache, TextEncoder
from pipelines.common.models import ModelLoadError, data_hash
from pipelines.common.paths import MODEL_METADATA_FILE, Paths
from pipelines.common.tables import TABLES
from pipelines.evaluate.eval_set import EVAL_TABLES, EvalSet, load_eval_set
from pipelines.evaluate.scoring import embed_eval_set, score_model
from pipelines.evaluate.sources import (
    CANDIDATE,
    ModelSource,
    base_model_source,
    base_spec_from_metadata,
    local_model_source,
)
from pipelines.promote.candidate import Candidate
from pipelines.promote.decision import Scores
from pipelines.promote.errors import PromotionRefusedError
from pipelines.promote.store import CHAMPION, Registry, load_registered_model, version_fingerprint

if TYPE_CHECKING:
    from mlflow.entities.model_registry import ModelVersion


@dataclass(frozen=True)
class ScoredModels:
    """The three sides of a decision, scored on one evaluation set in one run."""

    candidate: Scores
    base: Scores
    champion: Scores | None
    eval_data_hash: str


def score_for_promotion(
    params: Params,
    paths: Paths,
    candidate: Candidate,
    champion: ModelSource | None,
) -> ScoredModels:
    """Score candidate, base and champion on the validated queries, at each one's full dim."""
    eval_set = load_eval_set(paths)
    base_spec = base_spec_from_metadata(candidate.metadata)
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
    cache = EmbeddingCache(paths.embedding_cache, keep=keep) if params.evaluate.cache else None
    scores = {
        side: _score_source(
            source, eval_set, params, cache=cache, batch_size=params.evaluate.batch_size
        )
        for side, source in sources.items()
    }
    return ScoredModels(
        scores["candidate"], scores["base"], scores.get("champion"), eval_data_hash(paths)
    )


def eval_data_hash(paths: Paths) -> str:
    """The hash of the validated evaluation data: passages, queries and relevance judgments."""
    try:
        return data_hash(*(TABLES[table].validated_path(paths) for table in EVAL_TABLES))
    except FileNotFoundError as error:
        raise PromotionRefusedError(
            f"{error}: promotion decides on the validated evaluation data (chunks, queries, "
            "qrels in data/validated/); run `dvc repro`, then `mathembed promote`"
        ) from error


def _score_source(
    source: ModelSource,
    eval_set: EvalSet,
    params: Params,
    *,
    cache: EmbeddingCache | None,
    batch_size: int,
) -> Scores:
    """One model's per-query scores on ``eval_set`` at its full dimension."""
    try:
        queries, corpus = embed_eval_set(source, eval_set, cache=cache, batch_size=batch_size)
    except ValueError as error:  # already names the model
        raise PromotionRefusedError(str(error)) from error
    except ModelLoadError as error:
        raise PromotionRefusedError(f"{source.name} model: {error}") from error
    full_dim = int(corpus.shape[1])
    scored = score_model(
        queries, corpus, [eval_set.subset("all")], ks=params.evaluate.ks, dims=[full_dim]
    )["all"]
    return Scores(
        tuple(eval_set.query_ids), dict(scored.means[full_dim]), dict(scored.per_query[full_dim])
    )


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
