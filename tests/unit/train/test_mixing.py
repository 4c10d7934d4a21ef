"""Weight-space mixing of the kept checkpoint with its base model (WiSE-FT): the
interpolation, the choice of the weight, and a run whose candidate is the mixture at the
weight that scored best on the validation queries."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import torch
from test_best_checkpoint import KeepCheckpoints
from test_train import make_root, toy_pairs, toy_params

from pipelines.common import io
from pipelines.registry.candidate_metadata import read_candidate_metadata
from pipelines.retrieval.models import load_base_model
from pipelines.train.inputs import read_training_data, validation_tasks
from pipelines.train.ir_evaluator import MetricsRsEvaluator
from pipelines.train.mixing import (
    Mixing,
    choose_weight,
    interpolate_state_dict,
    mix_with_start,
    scored_mixing,
    unscored_mixing,
)
from pipelines.train.stage import run_train
from pipelines.train.warm_start import Start

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def state_dicts() -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """A base and a tuned state dict: two random weight matrices and an int buffer each."""
    generator = torch.Generator().manual_seed(0)

    def weights() -> dict[str, torch.Tensor]:
        return {
            "layer.weight": torch.randn(3, 4, generator=generator),
            "layer.bias": torch.randn(3, generator=generator),
        }

    base = {**weights(), "embeddings.position_ids": torch.arange(4)}
    tuned = {**weights(), "embeddings.position_ids": torch.arange(4) + 10}
    return base, tuned


# --------------------------------------------------------------------------- pure parts


def test_weight_one_is_the_tuned_model_zero_the_base_and_a_half_the_midpoint() -> None:
    base, tuned = state_dicts()
    for key in ("layer.weight", "layer.bias"):
        assert torch.equal(interpolate_state_dict(base, tuned, 1.0)[key], tuned[key])
        assert torch.equal(interpolate_state_dict(base, tuned, 0.0)[key], base[key])
        half = interpolate_state_dict(base, tuned, 0.5)[key]
        torch.testing.assert_close(half, (base[key] + tuned[key]) / 2)
        assert not torch.equal(half, tuned[key]) and not torch.equal(half, base[key])
        seventy = interpolate_state_dict(base, tuned, 0.7)[key]
        torch.testing.assert_close(seventy, 0.3 * base[key] + 0.7 * tuned[key])
    # An integer buffer is not mixed: the tuned model's, at every weight.
    for weight in (0.0, 0.5, 1.0):
        mixed = interpolate_state_dict(base, tuned, weight)["embeddings.position_ids"]
        assert torch.equal(mixed, tuned["embeddings.position_ids"])
        assert mixed.dtype == torch.int64


def test_the_mixture_takes_the_tuned_models_dtype() -> None:
    base, tuned = state_dicts()
    tuned = {
        key: value.double() if value.is_floating_point() else value for key, value in tuned.items()
    }
    mixed = interpolate_state_dict(base, tuned, 0.5)
    assert mixed["layer.weight"].dtype == torch.float64


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda base, tuned: tuned.update({"head.weight": torch.zeros(2)}),
            r"'head\.weight' is in the candidate but not in the base model",
        ),
        (
            lambda base, tuned: base.update({"pooler.weight": torch.zeros(2)}),
            r"'pooler\.weight' is in the base model but not in the candidate",
        ),
        (
            lambda base, tuned: tuned.update({"layer.bias": torch.zeros(5)}),
            r"'layer\.bias' has shape \(5,\) in the candidate but \(3,\) in the base model",
        ),
    ],
)
def test_another_architecture_is_an_error_naming_the_key(change: Any, message: str) -> None:
    base, tuned = state_dicts()
    change(base, tuned)
    with pytest.raises(ValueError, match=message) as raised:
        interpolate_state_dict(base, tuned, 0.5)
    assert "differ in architecture" in str(raised.value)


def mrr(scores: dict[float, float]) -> dict[float, dict[str, float]]:
    """Each weight's validation scores, MRR@10 alone."""
    return {weight: {"mrr@10": score} for weight, score in scores.items()}


def test_the_best_score_wins_and_a_tie_goes_to_the_smaller_weight() -> None:
    assert choose_weight({0.5: 0.60, 0.7: 0.65, 1.0: 0.62}) == 0.7
    assert choose_weight({0.5: 0.60, 0.7: 0.61, 1.0: 0.62}) == 1.0
    # Within 1e-9: a tie, so the weight closer to the base.
    assert choose_weight({1.0: 0.6 + 1e-12, 0.5: 0.6, 0.7: 0.6 - 1e-12}) == 0.5
    assert choose_weight({0.5: 0.6, 1.0: 0.6 + 1e-6}) == 1.0  # not a tie

    record = scored_mixing({1.0: {"ndcg@10": 0.62}, 0.5: {"ndcg@10": 0.60}}, "ndcg@10")
    assert record.as_json() == {
        "weights": {"0.5": 0.60, "1.0": 0.62},
        "chosen": 1.0,
        "metric": "ndcg@10",
        "why": record.why,
    }
    assert "best validation ndcg@10" in record.why


def test_without_scores_the_largest_weight_is_used_and_the_record_says_why() -> None:
    unscored = unscored_mixing([0.7, 0.5], "mrr@10")
    assert unscored.chosen == 0.7 and unscored.scores == {0.5: None, 0.7: None}
    assert "no validation queries" in unscored.why
    assert unscored_mixing([0.5, 1.0], "mrr@10").chosen == 1.0
    plain = unscored_mixing([1.0], "mrr@10")
    assert plain.is_plain and plain.chosen == 1.0 and not unscored.is_plain


def test_the_card_says_the_weight_chosen_and_each_weights_score() -> None:
    note = scored_mixing(mrr({0.5: 0.6, 0.7: 0.65, 1.0: 0.62}), "mrr@10").card_note()
    assert "## Weight-space mixing" in note
    assert "0.7 x the kept checkpoint's weights + 0.3 x the base model's" in note
    assert "MRR@10 by weight: 0.5: 0.6000, 0.7: 0.6500, 1: 0.6200" in note
    kept = scored_mixing(mrr({0.5: 0.6, 1.0: 0.62}), "mrr@10").card_note()
    assert "The kept checkpoint's weights as they are, mixing weight 1" in kept
    assert "no validation queries" in unscored_mixing([0.5, 0.7], "mrr@10").card_note()
    assert unscored_mixing([1.0], "mrr@10").card_note() == ""


def test_a_grid_of_one_alone_loads_no_base_model(tmp_path: Path) -> None:
    class NoBase(Start):
        def load(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("the base model was loaded")

    params = toy_params(tmp_path, mixing_weights=(1.0,))
    model: Any = object()  # neither read nor changed
    assert mix_with_start(model, params, None, NoBase("base", "train.init: base")) == Mixing(
        {1.0: None}, 1.0, "mrr@10", unscored_mixing([1.0], "mrr@10").why
    )


# --------------------------------------------------------------------------- a run


def train_keeping_checkpoints(
    model_dir: Path, tmp_path: Path, weights: tuple[float, ...]
) -> tuple[Any, Any, KeepCheckpoints, dict[str, Any]]:
    """A two-epoch run mixing at ``weights``, a copy of every checkpoint kept: its paths,
    params, the copies and its ``train.json``."""
    paths = make_root(tmp_path)
    params = toy_params(model_dir, epochs=2, mixing_weights=weights)
    copies = KeepCheckpoints(tmp_path / "copies")
    run_train(params, paths, progress=False, callbacks=[copies])
    return paths, params, copies, io.read_json(paths.metric_file("train"))


def validation_evaluator(params: Any, paths: Any) -> MetricsRsEvaluator:
    """The validation task the run scored its checkpoints and mixtures on."""
    tasks = validation_tasks(read_training_data(params, paths), params, paths)
    return MetricsRsEvaluator(tasks, batch_size=params.batch_size, metric="mrr@10")


def test_the_candidate_is_the_mixture_at_the_weight_that_scored_best(
    tiny_bert_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pipelines")
    paths, params, copies, metrics = train_keeping_checkpoints(tiny_bert_dir, tmp_path, (0.8, 0.4))
    mixing = metrics["mixing"]
    scores = {float(weight): score for weight, score in mixing["weights"].items()}
    assert list(scores) == [0.4, 0.8] and all(isinstance(s, float) for s in scores.values())
    chosen = mixing["chosen"]
    assert chosen == choose_weight(scores) and mixing["metric"] == "mrr@10"
    for weight, score in scores.items():
        assert f"train: mixing: weight {weight:g} -> validation MRR@10 {score:.4f}" in caplog.text

    # The candidate is the base and the kept checkpoint mixed at the chosen weight, exactly.
    from sentence_transformers import SentenceTransformer

    kept = SentenceTransformer(str(copies.folder / str(metrics["kept_checkpoint"]["step"])))
    base = load_base_model(str(tiny_bert_dir), pooling="mean", max_seq_length=16, device="cpu")
    candidate = SentenceTransformer(str(paths.candidate), device="cpu")
    expected = interpolate_state_dict(base.state_dict(), kept.state_dict(), chosen)
    published = candidate.state_dict()
    assert published.keys() == expected.keys()
    assert all(torch.equal(published[key], expected[key]) for key in expected)
    tuned = kept.state_dict()
    assert any(not torch.equal(published[key], tuned[key]) for key in tuned)  # mixed, not kept
    # The score recorded for the chosen weight is the published model's.
    published_score = validation_evaluator(params, paths).means(candidate)["mrr@10"]
    assert published_score == pytest.approx(scores[chosen], abs=1e-9)

    recorded = read_candidate_metadata(paths.candidate)
    assert recorded is not None and recorded.mixing_weight == chosen
    readme = (paths.candidate / "README.md").read_text(encoding="utf-8")
    assert "## Weight-space mixing" in readme and f"mixing weight {chosen:g}" in readme


def test_weight_one_takes_the_score_the_trainer_measured_for_the_kept_step(
    tiny_bert_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    measure = MetricsRsEvaluator.means

    def counted(self: MetricsRsEvaluator, model: Any) -> dict[str, float]:
        calls.append(1)
        return measure(self, model)

    monkeypatch.setattr(MetricsRsEvaluator, "means", counted)
    paths, params, copies, metrics = train_keeping_checkpoints(tiny_bert_dir, tmp_path, (0.4, 1.0))
    kept = metrics["kept_checkpoint"]
    assert metrics["mixing"]["weights"]["1.0"] == kept["score"]
    # One evaluation per trainer evaluation, one for weight 0.4: none again for 1.0.
    assert len(calls) == len(metrics["validation_ir"]) + 1
    # ... and measuring the kept checkpoint again gives the same score.
    from sentence_transformers import SentenceTransformer

    checkpoint = SentenceTransformer(str(copies.folder / str(kept["step"])), device="cpu")
    again = measure(validation_evaluator(params, paths), checkpoint)["mrr@10"]
    assert again == pytest.approx(kept["score"], abs=1e-9)


def test_with_windows_each_weight_is_scored_in_both_formats_and_chosen_on_their_mean(
    tiny_bert_dir: Path, tmp_path: Path
) -> None:
    paths = make_root(tmp_path)
    params = toy_params(tiny_bert_dir, epochs=2, mixing_weights=(0.5, 1.0), validation_windows=True)
    mixing = run_train(params, paths, progress=False).metrics["mixing"]
    assert list(mixing["by_format"]) == ["0.5", "1.0"]
    for weight, scores in mixing["by_format"].items():
        # The same number of anchors in both formats: the mean is the plain mean.
        mean = (scores["passages_mrr@10"] + scores["windows_mrr@10"]) / 2
        assert mixing["weights"][weight] == pytest.approx(mean, abs=1e-12)
    assert mixing["chosen"] == choose_weight(
        {float(weight): score for weight, score in mixing["weights"].items()}
    )


def test_without_validation_queries_the_largest_weight_is_mixed_in(
    tiny_bert_dir: Path, tmp_path: Path
) -> None:
    paths = make_root(tmp_path, toy_pairs().query("split == 'train'"))
    params = toy_params(tiny_bert_dir, max_steps=2, mixing_weights=(0.5, 0.7))
    report = run_train(params, paths, progress=False)
    assert report.metrics["mixing"] == {
        "weights": {"0.5": None, "0.7": None},
        "chosen": 0.7,
        "metric": "mrr@10",
        "why": unscored_mixing([0.5, 0.7], "mrr@10").why,
    }
    recorded = read_candidate_metadata(paths.candidate)
    assert recorded is not None and recorded.mixing_weight == 0.7
