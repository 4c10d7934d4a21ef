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

With ``train.validation_windows`` the same anchors are asked a second time in another format
(:func:`window_validation_set`): over the papers' text cut into plain windows
(:mod:`pipelines.common.windows`), the windows holding a positive relevant, as the transfer
sets ask the held-out queries. The score the checkpoint and the mixing weight are chosen by
is then the mean over every query of both formats, so a step that only learned the
passages' shape is not preferred; each format's own score is logged beside it
(:func:`format_key`). Off by default: on the blueprints it chose a mixture that did worse
on the held-out transfer queries (``benchmarks/results/mixing.md``).

The names of the score are here once: what the evaluator returns, what the trainer logs
(``eval_`` + that), what MLflow shows (:data:`MLFLOW_NAMES`) and what ``metrics/train.json``
records (:func:`ir_curve`, :func:`kept_checkpoint`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from pipelines.common.windows import Windows
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
#: The formats a validation anchor is asked in: among passages (always) and among plain
#: windows (``train.validation_windows``).
PASSAGES, WINDOWS = VALIDATION_FORMATS = ("passages", "windows")


def format_key(validation_format: str, metric: IrMetric) -> str:
    """The name of one format's own score (``windows_mrr@10``), beside the mean over all."""
    return f"{validation_format}_{metric}"


#: Every score an evaluation may log: the mean over the formats, then each format's.
SCORE_NAMES = (
    *IR_METRICS,
    *(format_key(fmt, metric) for fmt in VALIDATION_FORMATS for metric in IR_METRICS),
)
MLFLOW_NAMES = {name: f"train.{IR_CURVE}.{mlflow_name(name)}" for name in SCORE_NAMES}


@dataclass(frozen=True)
class ValidationSet:
    """An IR task in the evaluator's terms: ids -> texts, and each query's relevant ids."""

    queries: dict[str, str]
    corpus: dict[str, str]
    relevant: dict[str, set[str]]
    n_distractors: int


# -- pure helpers -------------------------------------------------------------------------


def trainer_key(metric: str) -> str:
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


def window_validation_set(
    validation: pd.DataFrame,
    passage_of: Mapping[str, str],
    windows: Windows,
    *,
    max_corpus: int,
    seed: int,
) -> ValidationSet:
    """The validation anchors asked over plain ``windows``: each anchor's relevant windows
    are those holding its positives' passages (``passage_of``: positive text -> passage id),
    the corpus those windows plus others sampled with ``seed`` until ``max_corpus`` (the
    relevant ones are all kept). An anchor none of whose passages is in a window is not
    asked."""
    relevant_rows: dict[str, set[int]] = {}
    for anchor, positive in zip(validation["anchor"], validation["positive"], strict=True):
        rows = windows.of_chunk.get(passage_of.get(positive, ""), [])
        relevant_rows.setdefault(anchor, set()).update(rows)
    asked = {anchor: rows for anchor, rows in relevant_rows.items() if rows}
    judged = sorted(set().union(*asked.values())) if asked else []
    others = pd.Series(sorted(set(range(len(windows.ids))) - set(judged)), dtype="int64")
    room = max(0, max_corpus - len(judged)) if judged else 0
    distractors = others.sample(n=min(room, len(others)), random_state=seed).tolist()
    query_ids = {anchor: f"q{index}" for index, anchor in enumerate(asked)}
    return ValidationSet(
        queries={query_id: anchor for anchor, query_id in query_ids.items()},
        corpus={windows.ids[row]: windows.texts[row] for row in [*judged, *distractors]},
        relevant={
            query_ids[anchor]: {windows.ids[row] for row in rows} for anchor, rows in asked.items()
        },
        n_distractors=len(distractors),
    )


def ir_scores(logs: Mapping[str, Any]) -> dict[str, float]:
    """The IR scores in one trainer log entry (``{}`` for other entries): the mean over
    every format (:data:`IR_METRICS`) and, when more than one was asked, each format's."""
    scores = {
        name: float(logs[trainer_key(name)])
        for name in SCORE_NAMES
        if isinstance(logs.get(trainer_key(name)), int | float)
    }
    return scores if any(metric in scores for metric in IR_METRICS) else {}


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
