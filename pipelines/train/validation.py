"""Which checkpoint becomes the candidate: the one that retrieves best on a validation query
set, not the last one (on the demo the validation loss rose from epoch 1 to epoch 2).

The query set comes from the validation split of the pairs (:func:`validation_set`): each
distinct anchor is a query, its positives are relevant; the corpus is the validation
positives plus a seeded sample of training passages (positives and negatives) as
distractors, up to ``train.max_validation_corpus`` passages, so the task is neither
trivially small nor costly to embed every ``train.eval_steps``. ``MetricsRsEvaluator``
(:mod:`pipelines.train.ir_evaluator`) scores it as evaluate and promotion score the
held-out sets: normalised embeddings at the full dimension (the one a Matryoshka model is
served at by default), ``metrics_rs.knn`` (cosine, its documented tie-breaking) and
``metrics_rs.evaluate`` (trec_eval's MRR@10 and NDCG@10), so the step kept is chosen by the
same metric definitions as the promotion (not sentence-transformers' own); the trainer
keeps the checkpoint with the best ``train.best_checkpoint_metric``
(``load_best_model_at_end``).

The names of the score are here once: what the evaluator returns, what the trainer logs
(``eval_`` + that), what MLflow shows (:data:`MLFLOW_NAMES`) and what ``metrics/train.json``
records (:func:`ir_curve`, :func:`kept_checkpoint`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from pipelines.registry.reporting import mlflow_name

IrMetric = Literal["mrr@10", "ndcg@10"]
#: The scores recorded at every evaluation; ``train.best_checkpoint_metric`` is one of them.
IR_METRICS: tuple[IrMetric, ...] = ("mrr@10", "ndcg@10")
#: The evaluator's name: its scores are ``validation_cosine_mrr@10`` and so on.
EVALUATOR_NAME = "validation"
SCORE_FUNCTION = "cosine"
#: How MLflow shows them (no ``@`` in an MLflow key): ``train.validation_ir.mrr_at_10``, the
#: name promotion also gives the ``validation_ir`` curve of train.json when it logs a
#: training that had no live run, so both read alike.
IR_CURVE = "validation_ir"
MLFLOW_NAMES = {metric: f"train.{IR_CURVE}.{mlflow_name(metric)}" for metric in IR_METRICS}


@dataclass(frozen=True)
class ValidationSet:
    """An IR task in the evaluator's terms: ids -> texts, and each query's relevant ids."""

    queries: dict[str, str]
    corpus: dict[str, str]
    relevant: dict[str, set[str]]
    n_distractors: int


# -- pure helpers -------------------------------------------------------------------------


def trainer_key(metric: IrMetric) -> str:
    """The key the trainer logs ``metric`` under (``metric_for_best_model``)."""
    return f"eval_{EVALUATOR_NAME}_{SCORE_FUNCTION}_{metric}"


def validation_set(
    validation: pd.DataFrame, train: pd.DataFrame, *, max_corpus: int, seed: int
) -> ValidationSet:
    """Queries (distinct validation anchors), their relevant passages (their positives), and
    a corpus of the validation positives plus distractors: distinct training passages
    (``positive`` and ``negative`` columns) sampled with ``seed`` until ``max_corpus``
    passages (the validation positives are all kept, even past it)."""
    positives = list(dict.fromkeys(validation["positive"]))
    corpus_ids = {text: f"d{index}" for index, text in enumerate(positives)}
    training_passages = pd.Series(
        [
            text
            for column in ("positive", "negative")
            if column in train.columns
            for text in train[column]
            if text and text not in corpus_ids
        ],
        dtype=object,
    ).drop_duplicates()
    room = max(0, max_corpus - len(positives)) if positives else 0  # no queries: no task
    distractors = training_passages.sample(
        n=min(room, len(training_passages)), random_state=seed
    ).tolist()
    for text in distractors:
        corpus_ids[text] = f"d{len(corpus_ids)}"
    query_ids: dict[str, str] = {}
    relevant: dict[str, set[str]] = {}
    for anchor, positive in zip(validation["anchor"], validation["positive"], strict=True):
        query_id = query_ids.setdefault(anchor, f"q{len(query_ids)}")
        relevant.setdefault(query_id, set()).add(corpus_ids[positive])
    return ValidationSet(
        queries={query_id: anchor for anchor, query_id in query_ids.items()},
        corpus={doc_id: text for text, doc_id in corpus_ids.items()},
        relevant=relevant,
        n_distractors=len(distractors),
    )


def ir_scores(logs: Mapping[str, Any]) -> dict[str, float]:
    """The IR scores in one trainer log entry (``{}`` for other entries)."""
    return {
        metric: float(logs[trainer_key(metric)])
        for metric in IR_METRICS
        if isinstance(logs.get(trainer_key(metric)), int | float)
    }


def ir_curve(log_history: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every evaluation's IR scores, in order: ``{"step", "epoch", "mrr@10", "ndcg@10"}``."""
    return [
        {"step": int(entry["step"]), "epoch": float(entry["epoch"]), **scores}
        for entry in log_history
        if (scores := ir_scores(entry))
    ]


def kept_checkpoint(
    curve: Sequence[Mapping[str, Any]], metric: IrMetric, *, best_step: int | None
) -> dict[str, Any] | None:
    """What the candidate is: the step kept, its score on ``metric`` and the last step's
    (``None`` without evaluations). ``best_step`` is the trainer's choice (the first of
    equal scores, as the trainer compares strictly)."""
    if not curve:
        return None
    last = curve[-1]
    kept = next((point for point in curve if point["step"] == best_step), last)
    return {
        "step": int(kept["step"]),
        "metric": metric,
        "score": kept[metric],
        "last_step": int(last["step"]),
        "last_score": last[metric],
        "evaluations": len(curve),
        "best_of": "validation IR" if best_step is not None else "last step",
    }
