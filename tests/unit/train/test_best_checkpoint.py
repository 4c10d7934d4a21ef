"""The candidate is the checkpoint that retrieved best on the validation queries, not the
last one: the validation set, the step kept, and a run whose score peaks before the end
(killed and resumed on the way) keeping that step's weights."""

from __future__ import annotations

import logging
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch
from test_train import STEPS_PER_EPOCH, make_root, toy_params
from transformers import TrainerCallback

import metrics_rs
from pipelines.common import io
from pipelines.common.windows import plain_windows
from pipelines.retrieval.models import model_fingerprint
from pipelines.train.card import kept_checkpoint_note
from pipelines.train.ir_evaluator import ir_means
from pipelines.train.stage import run_train
from pipelines.train.validation import (
    PASSAGES,
    WINDOWS,
    ValidationSet,
    format_key,
    ir_curve,
    ir_scores,
    kept_checkpoint,
    trainer_key,
    validation_set,
    window_validation_set,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PEAK = STEPS_PER_EPOCH  # the first evaluation: the weights are scrambled after it


# --------------------------------------------------------------------------- pure parts


def test_the_validation_set_is_its_anchors_positives_and_seeded_distractors() -> None:
    validation = pd.DataFrame(
        {
            "anchor": ["ring", "ring", "field"],
            "positive": ["a ring is ...", "rings again", "a field is ..."],
        }
    )
    train = pd.DataFrame(
        {
            "anchor": [f"t{i}" for i in range(20)],
            "positive": [f"passage {i}" for i in range(20)],
            "negative": [f"other {i}" for i in range(19)] + ["rings again"],
        }
    )
    task = validation_set(validation, train, max_corpus=10, seed=3)

    assert sorted(task.queries.values()) == ["field", "ring"]
    by_text = {text: doc_id for doc_id, text in task.corpus.items()}
    ring = next(qid for qid, text in task.queries.items() if text == "ring")
    assert task.relevant[ring] == {by_text["a ring is ..."], by_text["rings again"]}
    # Capped: every validation positive, then distractors up to 10 passages, none repeated
    # (a training passage equal to a validation positive is that positive, still relevant).
    assert len(task.corpus) == 10 and task.n_distractors == 7
    assert len(set(task.corpus.values())) == 10
    distractors = set(task.corpus.values()) - set(validation["positive"])
    assert distractors <= set(train["positive"]) | set(train["negative"])
    # The same seed draws the same corpus; another seed another one.
    assert validation_set(validation, train, max_corpus=10, seed=3) == task
    assert validation_set(validation, train, max_corpus=10, seed=4).corpus != task.corpus
    # More room than passages: all of them. Less room than positives: positives only.
    assert validation_set(validation, train, max_corpus=999, seed=3).n_distractors == 39
    assert validation_set(validation, train, max_corpus=1, seed=3).n_distractors == 0


def test_the_validation_scores_are_metrics_rs_cosine_top_10() -> None:
    # Two queries over three passages (under 10: ranked whole, the cut-off stays @10).
    queries = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    corpus = np.array([[2.0, 0.1], [0.6, 0.8], [0.1, 3.0]], dtype=np.float32)
    # Query 0's passage comes first (cosine, not dot: passage 2 is longer); query 1's
    # relevant passage 1 is second, behind passage 2.
    means = ir_means(queries, corpus, [{0: 1}, {1: 1}])
    assert means == {
        "mrr@10": pytest.approx((1 + 1 / 2) / 2, abs=1e-12),
        "ndcg@10": pytest.approx((1 + 1 / np.log2(3)) / 2, abs=1e-12),
    }
    ranked, _ = metrics_rs.knn(queries, corpus, 3, metric="cosine")
    expected = metrics_rs.evaluate(ranked, [{0: 1}, {1: 1}], [3])["means"]
    assert means["mrr@10"] == expected["mrr@3"] and means["ndcg@10"] == expected["ndcg@3"]


def test_the_step_kept_is_the_trainers_best_and_the_card_says_why() -> None:
    history = [
        {"loss": 2.0, "step": 1, "epoch": 0.1},
        {"eval_loss": 1.0, trainer_key("mrr@10"): 0.6, trainer_key("ndcg@10"): 0.5, "step": 5}
        | {"epoch": 1.0},
        {"eval_loss": 1.2, trainer_key("mrr@10"): 0.4, trainer_key("ndcg@10"): 0.3, "step": 10}
        | {"epoch": 2.0},
    ]
    curve = ir_curve(history)
    assert curve == [
        {"step": 5, "epoch": 1.0, "mrr@10": 0.6, "ndcg@10": 0.5},
        {"step": 10, "epoch": 2.0, "mrr@10": 0.4, "ndcg@10": 0.3},
    ]
    kept = kept_checkpoint(curve, "mrr@10", best_step=5)
    assert kept is not None
    assert (kept["step"], kept["score"], kept["last_step"], kept["last_score"]) == (5, 0.6, 10, 0.4)
    passages = sized_task(16, 40)
    note = kept_checkpoint_note(kept, {PASSAGES: passages})
    assert "Step 5, by validation MRR@10 0.6000" in note
    assert "the last step, 10, scored 0.4000" in note
    assert "16 queries" in note and "40 passages" in note and "windows" not in note
    both = kept_checkpoint_note(kept, {PASSAGES: passages, WINDOWS: sized_task(15, 30)})
    assert "15 of them over 30 plain windows" in both and "the mean over both" in both

    assert kept_checkpoint([], "mrr@10", best_step=None) is None
    assert "last training step" in kept_checkpoint_note(None, {PASSAGES: sized_task(0, 0)})


def sized_task(n_queries: int, n_corpus: int) -> ValidationSet:
    """A validation task of that many queries and corpus texts (what a card counts)."""
    return ValidationSet(
        queries={f"q{i}": f"query {i}" for i in range(n_queries)},
        corpus={f"d{i}": f"passage {i}" for i in range(n_corpus)},
        relevant={f"q{i}": {"d0"} for i in range(n_queries)},
        n_distractors=max(0, n_corpus - n_queries),
    )


def test_the_window_task_asks_the_same_anchors_over_the_windows_holding_their_positives() -> None:
    # p1: two passages in one window; p2: a passage long enough for two windows; p3: filler.
    chunks = pd.DataFrame(
        {
            "chunk_id": ["p1#c0", "p1#c1", "p2#c0", "p3#c0", "p3#c1"],
            "paper_id": ["p1", "p1", "p2", "p3", "p3"],
            "chunk_index": [0, 1, 0, 0, 1],
            "text": ["a ring is", "a field is", "sheaf " * 30, "group " * 12, "scheme " * 12],
        }
    )
    windows = plain_windows(chunks, size=100)
    validation = pd.DataFrame(
        {
            "anchor": ["ring", "sheaf", "ring", "lost"],
            "positive": ["a ring is", "sheaf text", "a field is", "nowhere"],
        }
    )
    passage_of = {"a ring is": "p1#c0", "a field is": "p1#c1", "sheaf text": "p2#c0"}
    task = window_validation_set(validation, passage_of, windows, max_corpus=4, seed=3)

    by_anchor = {text: task.relevant[query_id] for query_id, text in task.queries.items()}
    # "lost" names no passage: not asked. "ring"'s two positives share p1's one window;
    # "sheaf"'s passage spans both of p2's.
    assert by_anchor == {"ring": {"p1#w0000"}, "sheaf": {"p2#w0000", "p2#w0001"}}
    # The relevant windows, then distractors up to 4: one of p3's two windows.
    assert set(task.corpus) >= {"p1#w0000", "p2#w0000", "p2#w0001"} and len(task.corpus) == 4
    assert task.n_distractors == 1 and set(task.corpus) - {"p1#w0000", "p2#w0000", "p2#w0001"} <= {
        "p3#w0000",
        "p3#w0001",
    }
    assert all(task.corpus[i] == windows.texts[windows.ids.index(i)] for i in task.corpus)
    assert window_validation_set(validation, passage_of, windows, max_corpus=4, seed=3) == task
    # Nothing to ask: no corpus either.
    nothing = window_validation_set(validation.iloc[3:], passage_of, windows, max_corpus=4, seed=3)
    assert (nothing.queries, nothing.corpus) == ({}, {})


def test_each_formats_score_is_read_from_the_log_beside_the_mean() -> None:
    entry = {
        trainer_key("mrr@10"): 0.5,
        trainer_key("ndcg@10"): 0.4,
        trainer_key(format_key(PASSAGES, "mrr@10")): 0.6,
        trainer_key(format_key(WINDOWS, "mrr@10")): 0.4,
        "step": 5,
        "epoch": 1.0,
    }
    assert ir_scores(entry) == {
        "mrr@10": 0.5,
        "ndcg@10": 0.4,
        "passages_mrr@10": 0.6,
        "windows_mrr@10": 0.4,
    }
    assert ir_scores({"loss": 1.0, "step": 1}) == {}


# --------------------------------------------------------------------------- a run


class ScrambleAfterPeak(TrainerCallback):
    """Noise for weights after every step past :data:`PEAK`: every later evaluation scores
    an unusable model, so the first evaluation's checkpoint is the best one."""

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.global_step > PEAK:
            generator = torch.Generator().manual_seed(state.global_step)
            with torch.no_grad():
                for parameter in kwargs["model"].parameters():
                    parameter.copy_(torch.randn(parameter.shape, generator=generator))


class KeepCheckpoints(TrainerCallback):
    """Copies each checkpoint as it is saved (the run deletes them when it finishes) and
    notes which checkpoints existed then."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.present: dict[int, list[str]] = {}

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        step = state.global_step
        shutil.copytree(Path(args.output_dir) / f"checkpoint-{step}", self.folder / str(step))
        self.present[step] = sorted(
            path.name for path in Path(args.output_dir).glob("checkpoint-*")
        )


class Killed(Exception):
    """Stands in for the process being killed."""


class KillAt(TrainerCallback):
    def __init__(self, step: int) -> None:
        self.step = step

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.global_step == self.step:
            raise Killed


def test_a_score_that_peaks_early_keeps_that_steps_weights_across_a_resume(
    tiny_bert_dir: Path, tmp_path: Path
) -> None:
    paths = make_root(tmp_path)
    params = toy_params(tiny_bert_dir, epochs=3, save_total_limit=1)
    copies = KeepCheckpoints(tmp_path / "copies")
    last = 3 * STEPS_PER_EPOCH
    with pytest.raises(Killed):
        run_train(
            params, paths, progress=False, callbacks=[ScrambleAfterPeak(), copies, KillAt(2 * PEAK)]
        )
    report = run_train(params, paths, progress=False, callbacks=[ScrambleAfterPeak(), copies])
    assert report.resumed_from_step == 2 * PEAK

    metrics = io.read_json(paths.metric_file("train"))
    scores = {point["step"]: point["mrr@10"] for point in metrics["validation_ir"]}
    assert list(scores) == [PEAK, 2 * PEAK, last]  # every eval_steps, across the resume
    assert scores[PEAK] > max(scores[2 * PEAK], scores[last])  # the set-up did its job
    assert metrics["kept_checkpoint"] == {
        "step": PEAK,
        "metric": "mrr@10",
        "score": scores[PEAK],
        "last_step": last,
        "last_score": scores[last],
        "evaluations": 3,
        "best_of": "validation IR",
    }
    # The candidate is the peak's checkpoint, weight for weight, not the last step's.
    assert report.fingerprint == model_fingerprint(copies.folder / str(PEAK))
    assert report.fingerprint != model_fingerprint(copies.folder / str(last))
    # save_total_limit=1 kept the newest checkpoint (to resume from) and spared the best.
    assert copies.present[2 * PEAK] == [f"checkpoint-{2 * PEAK}", f"checkpoint-{PEAK}"]
    assert copies.present[last] == [f"checkpoint-{last}", f"checkpoint-{PEAK}"]
    assert not list(paths.checkpoints.glob("checkpoint-*"))

    readme = (paths.candidate / "README.md").read_text(encoding="utf-8")
    assert f"Step {PEAK}, by validation MRR@10 {scores[PEAK]:.4f}" in readme
    assert f"the last step, {last}, scored {scores[last]:.4f}" in readme


def test_a_score_that_stops_improving_stops_the_run_and_keeps_the_best_step(
    tiny_bert_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pipelines")
    paths = make_root(tmp_path)
    params = toy_params(tiny_bert_dir, epochs=4, early_stopping_patience=1)
    report = run_train(params, paths, progress=False, callbacks=[ScrambleAfterPeak()])
    metrics = report.metrics
    # The peak, then one evaluation no better: stopped there, 2 of 4 epochs in.
    assert [point["step"] for point in metrics["validation_ir"]] == [PEAK, 2 * PEAK]
    assert metrics["steps"] == 2 * PEAK and metrics["planned_steps"] == 4 * PEAK
    assert metrics["stopped_early"] is True
    assert metrics["kept_checkpoint"]["step"] == PEAK
    assert f"stopped early at step {2 * PEAK} of {4 * PEAK}" in caplog.text

    # Patience 0: the whole budget.
    whole = run_train(
        replace(params, early_stopping_patience=0),
        make_root(tmp_path / "whole"),
        progress=False,
        callbacks=[ScrambleAfterPeak()],
    )
    assert whole.metrics["steps"] == 4 * PEAK and whole.metrics["stopped_early"] is False


def test_without_validation_pairs_nothing_stops_early_and_a_line_says_so(
    tiny_bert_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from test_train import toy_pairs

    paths = make_root(tmp_path, toy_pairs().query("split == 'train'"))
    params = toy_params(tiny_bert_dir, max_steps=3, early_stopping_patience=1)
    report = run_train(params, paths, progress=False)
    assert report.metrics["steps"] == 3 and report.metrics["stopped_early"] is False
    assert "train.early_stopping_patience=1 cannot apply" in caplog.text


def test_without_validation_pairs_the_last_step_is_kept(
    tiny_bert_dir: Path, tmp_path: Path
) -> None:
    from test_train import toy_pairs

    paths = make_root(tmp_path, toy_pairs().query("split == 'train'"))
    report = run_train(toy_params(tiny_bert_dir, max_steps=2), paths, progress=False)
    assert report.metrics["kept_checkpoint"] is None
    assert report.metrics["validation_ir"] == []
    nothing = {"queries": 0, "corpus": 0, "distractors": 0}
    assert report.metrics["validation_set"] == {PASSAGES: nothing}
    readme = (paths.candidate / "README.md").read_text(encoding="utf-8")
    assert "no validation queries, so the last step was kept" in readme
