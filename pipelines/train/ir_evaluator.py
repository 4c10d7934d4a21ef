"""The validation task's IR scores during training, computed as evaluate and promotion
compute the held-out sets': normalised embeddings at the full dimension, ``metrics_rs.knn``
(cosine, its documented tie-breaking) and ``metrics_rs.evaluate`` (trec_eval's
definitions), so the checkpoint kept is chosen by the metrics that later decide on it.
Imported only when training (it needs sentence-transformers), by
:mod:`pipelines.train.stage`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
from sentence_transformers.base.evaluation.evaluator import BaseEvaluator

from pipelines.train.validation import (
    EVALUATOR_NAME,
    IR_METRICS,
    SCORE_FUNCTION,
    IrMetric,
    ValidationSet,
    format_key,
)

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

#: The cut-off of the IR scores.
CUTOFF = 10


def ir_means(
    query_vectors: npt.NDArray[np.float32],
    corpus_vectors: npt.NDArray[np.float32],
    qrels: Sequence[Mapping[int, int]],
) -> dict[str, float]:
    """:data:`IR_METRICS` of the queries' cosine top ``CUTOFF`` corpus rows, by
    ``metrics_rs`` (pure). A corpus under ``CUTOFF`` passages is ranked whole, its ranking
    padded with passages judged for no query, so the cut-off stays ``CUTOFF``."""
    import metrics_rs

    depth = min(CUTOFF, len(corpus_vectors))
    ranked, _ = metrics_rs.knn(query_vectors, corpus_vectors, depth, metric="cosine")
    n_docs = len(corpus_vectors)
    if depth < CUTOFF:  # ids past the corpus: never relevant, never a duplicate
        padding = np.arange(n_docs, n_docs + CUTOFF - depth, dtype=np.int64)
        ranked = np.hstack([ranked, np.tile(padding, (len(ranked), 1))])
        n_docs += CUTOFF - depth
    result = metrics_rs.evaluate(ranked, qrels, [CUTOFF], n_docs=n_docs)
    return {metric: float(result["means"][metric]) for metric in IR_METRICS}


class MetricsRsEvaluator(BaseEvaluator):
    """The validation task's IR scores for the trainer, by :func:`ir_means`: logged as
    ``eval_validation_cosine_mrr@10`` (:func:`trainer_key`), the primary score
    ``train.best_checkpoint_metric``'s. ``tasks``: the task in each format asked
    (:data:`~pipelines.train.validation.VALIDATION_FORMATS`); the scores are the mean over
    every query of every format, and with more than one format each format's own beside
    them (``validation_cosine_windows_mrr@10``)."""

    def __init__(
        self, tasks: Mapping[str, ValidationSet], *, batch_size: int, metric: IrMetric
    ) -> None:
        super().__init__()
        self.name = EVALUATOR_NAME
        self.batch_size = batch_size
        self.primary_metric = f"{SCORE_FUNCTION}_{metric}"
        self.tasks = {name: task for name, task in tasks.items() if task.queries}
        self.qrels = {name: _qrels(task) for name, task in self.tasks.items()}

    def __call__(
        self,
        model: SentenceTransformer,  # type: ignore[override]  # the base takes any model
        output_path: str | None = None,
        epoch: int = -1,
        steps: int = -1,
    ) -> dict[str, float]:
        metrics = self.named(self.means(model))
        self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics

    def means(self, model: SentenceTransformer) -> dict[str, float]:
        """``model``'s :func:`ir_means` on the tasks (``{"mrr@10": ..}``, and per format
        when there are several), recorded nowhere: a call of the evaluator also writes them
        into the model card's training log."""

        def embed(texts: list[str]) -> npt.NDArray[np.float32]:
            vectors = model.encode(
                texts,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
            return np.ascontiguousarray(vectors, dtype=np.float32)

        # The formats ask the same anchors: each distinct query text is embedded once.
        texts = list(
            dict.fromkeys(t for task in self.tasks.values() for t in task.queries.values())
        )
        row_of = {text: row for row, text in enumerate(texts)}
        query_vectors = embed(texts)
        by_format = {
            name: ir_means(
                query_vectors[[row_of[text] for text in task.queries.values()]],
                embed(list(task.corpus.values())),
                self.qrels[name],
            )
            for name, task in self.tasks.items()
        }
        counts = {name: len(task.queries) for name, task in self.tasks.items()}
        pooled: dict[str, float] = {
            metric: sum(by_format[name][metric] * counts[name] for name in by_format)
            / sum(counts.values())
            for metric in IR_METRICS
        }
        if len(by_format) == 1:
            return pooled
        return pooled | {
            format_key(name, metric): means[metric]
            for name, means in by_format.items()
            for metric in IR_METRICS
        }

    def named(self, means: Mapping[str, float]) -> dict[str, float]:
        """:meth:`means` under the names the evaluator reports (``validation_cosine_mrr@10``)."""
        return self.prefix_name_to_metrics(
            {f"{SCORE_FUNCTION}_{metric}": value for metric, value in means.items()}, self.name
        )


def _qrels(task: ValidationSet) -> list[dict[int, int]]:
    """Each query's relevant corpus rows (grade 1), in the task's query order."""
    row = {doc_id: index for index, doc_id in enumerate(task.corpus)}
    return [
        {row[doc_id]: 1 for doc_id in task.relevant.get(query_id, ())} for query_id in task.queries
    ]
