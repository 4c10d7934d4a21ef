"""The train stage on a tiny BERT (CPU, seconds): candidate + metrics, resume, knobs, failures."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import torch
from fixtures_models import TINY_WORDS
from repo import REPO
from transformers import TrainerCallback
from typer.testing import CliRunner
from validated_pairs import write_validated_pairs

from pipelines import cli
from pipelines.common import io
from pipelines.common.config import ConfigError, TrainParams, load_params
from pipelines.common.paths import MODEL_METADATA_FILE as METADATA_FILE
from pipelines.common.paths import Paths
from pipelines.retrieval.models import ModelLoadError, load_base_model, model_fingerprint
from pipelines.train.checkpoints import RUN_FILE, prepare_checkpoints
from pipelines.train.setup import (
    TrainError,
    build_loss,
    check_params,
    derive_matryoshka_dims,
    resolve_matryoshka_dims,
    run_key,
    step_budget,
    validation_batch_size,
)
from pipelines.train.stage import run_train

N_TRAIN = 40
N_VALIDATION = 16
BATCH = 8
STEPS_PER_EPOCH = N_TRAIN // BATCH
EPOCHS = 4


def toy_pairs() -> pd.DataFrame:
    """An easy task: a word -> a sentence repeating it; other columns as the contract has them."""
    words = TINY_WORDS[:N_TRAIN]
    rows = [
        {"anchor": word, "positive": f"the {word} is {word} {word}", "split": "train"}
        for word in words
    ] + [
        {"anchor": f"a {word}", "positive": f"{word} and {word} of {word}", "split": "validation"}
        for word in words[:N_VALIDATION]
    ]
    frame = pd.DataFrame(rows)
    frame["kind"] = "name"
    frame["concept"] = frame["anchor"]
    frame["positive_id"] = [f"2401.{i:05d}v1#c0000" for i in range(len(frame))]
    return frame[["anchor", "positive", "kind", "concept", "positive_id", "split"]]


def make_root(root: Path, pairs: pd.DataFrame | None = None) -> Paths:
    """A project holding validated ``pairs`` (:func:`toy_pairs`) and the passages they name."""
    paths = Paths(root)
    write_validated_pairs(paths, toy_pairs() if pairs is None else pairs)
    return paths


def toy_params(model_dir: Path, **changes: Any) -> TrainParams:
    params = TrainParams(
        base_model=str(model_dir),
        pooling="mean",
        batch_size=BATCH,
        max_seq_length=16,
        learning_rate=3e-3,
        warmup_ratio=0.1,
        epochs=3,
        logging_steps=1,
        seed=1,
        device="cpu",
        eval_steps=STEPS_PER_EPOCH,
        max_validation_corpus=40,
        # The kept checkpoint as it is: mixing with the base is tested in test_mixing.py.
        mixing_weights=(1.0,),
        # The whole budget: stopping early is tested in test_best_checkpoint.py.
        early_stopping_patience=0,
    )
    return replace(params, **changes)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


class Killed(Exception):
    """Stands in for the process being killed."""


class KillAfterFirstSave(TrainerCallback):
    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        raise Killed(f"killed after saving step {state.global_step}")


class PoisonWeights(TrainerCallback):
    """Turns every weight into NaN after the first step: the next loss is NaN."""

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        with torch.no_grad():
            for parameter in kwargs["model"].parameters():
                parameter.fill_(math.nan)


def test_training_writes_candidate_and_metrics_and_learns(
    tiny_bert_dir: Path, tmp_path: Path
) -> None:
    paths = make_root(tmp_path)
    params = toy_params(tiny_bert_dir, epochs=EPOCHS)
    report = run_train(params, paths, progress=False)

    candidate = tmp_path / "models" / "candidate"
    assert report.candidate_dir == candidate
    assert (candidate / "modules.json").is_file()
    metadata = io.read_json(candidate / METADATA_FILE)
    assert metadata["fingerprint"] == report.fingerprint == model_fingerprint(candidate)
    assert metadata["base_model"] == str(tiny_bert_dir)
    assert metadata["pooling"] == "mean"
    assert metadata["matryoshka_dims"] == [32]
    assert metadata["params"]["learning_rate"] == params.learning_rate
    assert metadata["data_hash"] == report.data_hash and len(report.data_hash) == 64
    assert metadata["trained_at"].endswith("Z")

    # Training changed the weights: the candidate is not the base model re-saved.
    base = load_base_model(str(tiny_bert_dir), pooling="mean", max_seq_length=16, device="cpu")
    base.save(str(tmp_path / "base"))
    assert model_fingerprint(tmp_path / "base") != report.fingerprint

    metrics = io.read_json(paths.metrics / "train.json")
    assert metrics["steps"] == report.steps == EPOCHS * STEPS_PER_EPOCH
    assert metrics["n_pairs"] == {"train": N_TRAIN, "validation": N_VALIDATION}
    assert metrics["device"].startswith("cpu") and metrics["precision"] == "fp32"
    assert metrics["pairs_trained_this_run"] == EPOCHS * STEPS_PER_EPOCH * BATCH
    assert metrics["pairs_per_second"] > 0 and metrics["wall_seconds"] > 0
    curve = [point["loss"] for point in metrics["loss_curve"]]
    assert len(curve) == metrics["steps"]  # logging_steps=1
    assert all(math.isfinite(loss) for loss in curve)
    # The untrained model is far from solving the task (a uniform guess over a batch of 8
    # scores ln 8 = 2.08); after a few epochs of this easy task the positive always wins.
    first_epoch = sum(curve[:STEPS_PER_EPOCH]) / STEPS_PER_EPOCH
    last_epoch = sum(curve[-STEPS_PER_EPOCH:]) / STEPS_PER_EPOCH
    assert curve[0] > 0.5
    assert last_epoch < 0.05
    assert last_epoch < first_epoch / 10
    validation = [point["loss"] for point in metrics["validation_loss_curve"]]
    assert len(validation) == EPOCHS  # one per epoch
    assert all(math.isfinite(loss) for loss in validation)
    assert min(validation[1:]) < validation[0]
    assert metrics["final_loss"] == curve[-1] and metrics["validation_loss"] == validation[-1]
    # A grid of [1.0] mixes nothing: the kept checkpoint is the candidate, unscored again.
    assert metrics["mixing"]["weights"] == {"1.0": None} and metrics["mixing"]["chosen"] == 1.0
    assert metadata["mixing_weight"] == 1.0
    assert "Weight-space mixing" not in (candidate / "README.md").read_text(encoding="utf-8")

    # Finished: the checkpoints are superseded by the candidate.
    assert not list(paths.checkpoints.glob("checkpoint-*"))
    assert not (paths.checkpoints / RUN_FILE).exists()
    assert not [p for p in candidate.parent.iterdir() if p.name.startswith(".candidate")]

    from sentence_transformers import SentenceTransformer

    reloaded = SentenceTransformer(str(candidate), device="cpu")
    assert reloaded.encode(["group"]).shape == (1, 32)


def test_killed_run_resumes_from_its_last_checkpoint(tiny_bert_dir: Path, tmp_path: Path) -> None:
    paths = make_root(tmp_path)
    params = toy_params(tiny_bert_dir, epochs=2)
    with pytest.raises(Killed, match=f"step {STEPS_PER_EPOCH}"):
        run_train(params, paths, progress=False, callbacks=[KillAfterFirstSave()])
    assert (paths.checkpoints / f"checkpoint-{STEPS_PER_EPOCH}").is_dir()
    assert not (tmp_path / "models" / "candidate").exists()

    report = run_train(params, paths, progress=False)
    assert report.resumed_from_step == STEPS_PER_EPOCH
    assert "resuming from" in report.resume_note
    assert report.steps == 2 * STEPS_PER_EPOCH
    assert report.metrics["steps_this_run"] == STEPS_PER_EPOCH
    # The loss curve keeps the steps trained before the kill.
    steps = [point["step"] for point in report.metrics["loss_curve"]]
    assert steps == list(range(1, 2 * STEPS_PER_EPOCH + 1))
    assert (tmp_path / "models" / "candidate" / METADATA_FILE).is_file()

    # Resuming restores weights, optimizer, schedule, RNG and batch order: the same model
    # as a run that was never interrupted (which also shows training is deterministic).
    straight = run_train(params, make_root(tmp_path / "straight"), progress=False)
    assert straight.resumed_from_step is None
    assert straight.fingerprint == report.fingerprint
    assert straight.metrics["loss_curve"] == report.metrics["loss_curve"]


def test_prepare_checkpoints_resumes_only_matching_complete_checkpoints(tmp_path: Path) -> None:
    params = TrainParams()
    key = run_key(params, "hash-a")
    folder = tmp_path / "checkpoints"

    def checkpoint(step: int, *, complete: bool = True) -> Path:
        path = folder / f"checkpoint-{step}"
        path.mkdir(parents=True)
        if complete:
            io.write_json(path / "trainer_state.json", {"global_step": step})
        return path

    assert prepare_checkpoints(folder, key) == (None, "starting fresh: no checkpoint to resume")
    checkpoint(5)
    checkpoint(10)
    checkpoint(15, complete=False)  # killed while saving
    resume, note = prepare_checkpoints(folder, key)
    assert resume == folder / "checkpoint-10" and "step 10" in note
    assert not (folder / "checkpoint-15").exists()

    changed = run_key(
        replace(params, learning_rate=params.learning_rate * 2, epochs=params.epochs + 1), "hash-a"
    )
    resume, note = prepare_checkpoints(folder, changed)
    assert resume is None
    assert "starting fresh" in note and "epochs, learning_rate" in note
    assert not list(folder.glob("checkpoint-*"))
    assert io.read_json(folder / RUN_FILE) == changed

    checkpoint(5)
    resume, note = prepare_checkpoints(
        folder,
        run_key(
            replace(params, learning_rate=params.learning_rate * 2, epochs=params.epochs + 1),
            "hash-b",
        ),
    )
    assert resume is None and "different data" in note

    checkpoint(5)
    (folder / RUN_FILE).unlink()
    resume, note = prepare_checkpoints(folder, key)
    assert resume is None and "no run.json" in note


def test_cached_mnrl_knob_trains_and_matches_mnrl_on_one_batch(
    tiny_bert_dir: Path, tmp_path: Path
) -> None:
    from sentence_transformers.sentence_transformer.losses import (
        CachedMultipleNegativesRankingLoss,
        MultipleNegativesRankingLoss,
    )

    params = toy_params(tiny_bert_dir, loss="cached_mnrl", mini_batch_size=2, max_steps=2)
    model = load_base_model(str(tiny_bert_dir), pooling="mean", max_seq_length=16, device="cpu")
    cached = build_loss(model, params, (32, 16))
    plain = build_loss(model, replace(params, loss="mnrl"), (32, 16))
    assert isinstance(cached.loss, CachedMultipleNegativesRankingLoss)
    assert cached.loss.mini_batch_size == 2
    assert isinstance(plain.loss, MultipleNegativesRankingLoss)
    assert tuple(cached.matryoshka_dims) == (32, 16)

    # GradCache changes memory, not the objective: same batch, same loss value.
    pairs = toy_pairs().head(BATCH)
    features = [
        model.preprocess(pairs["anchor"].tolist()),
        model.preprocess(pairs["positive"].tolist()),
    ]
    model.train()
    plain_value = plain(features, None).item()
    cached_value = cached(features, None).item()
    assert cached_value == pytest.approx(plain_value, rel=1e-4)

    report = run_train(params, make_root(tmp_path), progress=False)
    assert report.metrics["loss"] == "cached_mnrl" and report.steps == 2
    assert all(math.isfinite(point["loss"]) for point in report.metrics["loss_curve"])


def test_matryoshka_dims_derivation() -> None:
    assert derive_matryoshka_dims(768) == (768, 512, 256, 128)
    assert derive_matryoshka_dims(384) == (384, 256, 128, 64)
    assert derive_matryoshka_dims(1024) == (1024, 512, 256, 128)
    assert derive_matryoshka_dims(100) == (100, 64, 32)
    assert derive_matryoshka_dims(64) == (64, 32)
    assert derive_matryoshka_dims(32) == (32,)
    assert derive_matryoshka_dims(8) == (8,)
    with pytest.raises(ValueError):
        derive_matryoshka_dims(0)
    assert resolve_matryoshka_dims((), 768) == (768, 512, 256, 128)
    assert resolve_matryoshka_dims((128, 768, 256), 768) == (768, 256, 128)
    with pytest.raises(ConfigError, match="exceed the model's embedding dimension 384"):
        resolve_matryoshka_dims((512, 256), 384)


def test_configured_dims_and_no_validation_split(tiny_bert_dir: Path, tmp_path: Path) -> None:
    train_only = toy_pairs().query("split == 'train'")
    report = run_train(
        toy_params(tiny_bert_dir, matryoshka_dims=(16, 32, 8), max_steps=1),
        make_root(tmp_path, train_only),
        progress=False,
    )
    assert report.matryoshka_dims == (32, 16, 8)
    assert io.read_json(report.candidate_dir / METADATA_FILE)["matryoshka_dims"] == [32, 16, 8]
    assert report.n_validation_pairs == 0 and report.validation_loss is None
    assert report.metrics["validation_batch_size"] == 0
    assert report.metrics["validation_loss_curve"] == []


def test_nan_loss_stops_the_run_without_a_candidate(tiny_bert_dir: Path, tmp_path: Path) -> None:
    paths = make_root(tmp_path)
    with pytest.raises(TrainError, match=r"diverged: loss is nan at step 2.*learning_rate"):
        run_train(
            toy_params(tiny_bert_dir, max_steps=4),
            paths,
            progress=False,
            callbacks=[PoisonWeights()],
        )
    assert not (tmp_path / "models" / "candidate").exists()
    assert not (paths.metrics / "train.json").exists()


def test_unusable_data_fails_with_the_file_and_the_fix(tiny_bert_dir: Path, tmp_path: Path) -> None:
    params = toy_params(tiny_bert_dir)
    with pytest.raises(TrainError, match="validated data: run dvc repro validate"):
        run_train(params, Paths(tmp_path / "nothing"), progress=False)

    only_validation = toy_pairs().assign(split="validation")
    paths = make_root(tmp_path / "empty", only_validation)
    with pytest.raises(TrainError, match=r"no training pairs \(split == 'train'\)") as caught:
        run_train(params, paths, progress=False)
    assert str(paths.validated / "pairs.parquet") in str(caught.value)

    paths = make_root(tmp_path / "few", toy_pairs().head(5))
    with pytest.raises(TrainError, match="lower train.batch_size"):
        run_train(params, paths, progress=False)

    paths = make_root(tmp_path / "columns", toy_pairs().drop(columns=["split"]))
    with pytest.raises(TrainError, match=r"lacks column\(s\) \['split'\]"):
        run_train(params, paths, progress=False)

    paths = make_root(tmp_path / "no-passages")
    (paths.validated / "chunks.parquet").unlink()
    with pytest.raises(TrainError, match="train.validation_windows") as caught:
        run_train(replace(params, validation_windows=True), paths, progress=False)
    assert "run dvc repro validate" in str(caught.value)
    assert str(paths.validated / "chunks.parquet") in str(caught.value)
    # Off, the passages alone are asked: the papers' text is not needed.
    report = run_train(replace(params, max_steps=1), paths, progress=False)
    assert list(report.metrics["validation_set"]) == ["passages"]


def test_validation_over_windows_is_logged_per_format_and_chosen_on_the_mean(
    tiny_bert_dir: Path, tmp_path: Path
) -> None:
    paths = make_root(tmp_path)
    params = toy_params(tiny_bert_dir, epochs=2, validation_windows=True)
    report = run_train(params, paths, progress=False)
    sizes = report.metrics["validation_set"]
    assert sizes["passages"]["queries"] == sizes["windows"]["queries"] == N_VALIDATION
    assert sizes["windows"]["corpus"] == 40  # max_validation_corpus: the relevant + distractors
    for point in report.metrics["validation_ir"]:
        for metric in ("mrr@10", "ndcg@10"):
            mean = (point[f"passages_{metric}"] + point[f"windows_{metric}"]) / 2
            assert point[metric] == pytest.approx(mean, abs=1e-12)
    kept = report.metrics["kept_checkpoint"]
    best = max(report.metrics["validation_ir"], key=lambda point: point["mrr@10"])
    assert kept["step"] == best["step"] and kept["score"] == best["mrr@10"]
    card = (paths.candidate / "README.md").read_text(encoding="utf-8")
    assert f"{N_VALIDATION} of them over 40 plain windows" in card

    passages_only = run_train(
        replace(params, validation_windows=False),
        make_root(tmp_path / "passages"),
        progress=False,
    )
    assert all(
        set(point) == {"step", "epoch", "mrr@10", "ndcg@10"}
        for point in passages_only.metrics["validation_ir"]
    )
    # The same weights at each step (the evaluator draws no random numbers): the passages'
    # own score is the one a passages-only run logs.
    assert [point["passages_mrr@10"] for point in report.metrics["validation_ir"]] == [
        point["mrr@10"] for point in passages_only.metrics["validation_ir"]
    ]


def test_missing_base_model_fails_before_touching_the_candidate(tmp_path: Path) -> None:
    paths = make_root(tmp_path)
    candidate = tmp_path / "models" / "candidate"
    candidate.mkdir(parents=True)
    (candidate / "marker").write_text("previous candidate", encoding="utf-8")
    params = replace(TrainParams(), base_model="mathembed-tests/not-cached", batch_size=BATCH)
    with pytest.raises(ModelLoadError, match="mathembed-tests/not-cached"):
        run_train(params, paths, progress=False)
    assert (candidate / "marker").read_text(encoding="utf-8") == "previous candidate"


def test_max_steps_only_ever_shortens_the_run() -> None:
    params = TrainParams(batch_size=8, epochs=3)
    assert step_budget(params, 40) == 15  # 5 steps per epoch
    assert step_budget(params, 47) == 15  # the short last batch is dropped
    assert step_budget(replace(params, max_steps=4), 40) == 4
    assert step_budget(replace(params, max_steps=100), 40) == 15


def test_validation_batch_fits_the_distinct_validation_texts() -> None:
    pairs = toy_pairs()
    validation = pairs[pairs["split"] == "validation"]
    assert validation_batch_size(32, validation) == N_VALIDATION // 2
    assert validation_batch_size(4, validation) == 4
    assert validation_batch_size(32, validation.head(3)) == 0
    assert validation_batch_size(32, validation.head(0)) == 0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"batch_size": 1}, "train.batch_size must be >= 2"),
        ({"learning_rate": 0.0}, "train.learning_rate must be > 0"),
        ({"warmup_ratio": 1.0}, "train.warmup_ratio"),
        ({"epochs": 0}, "train.epochs"),
        ({"max_steps": 0}, "train.max_steps"),
        ({"mini_batch_size": 0}, "train.mini_batch_size"),
        ({"matryoshka_dims": (64, 64)}, "duplicates"),
        ({"matryoshka_dims": (0,)}, "must be positive"),
        ({"base_model": " "}, "train.base_model is empty"),
        ({"max_seq_length": 2}, "train.max_seq_length"),
        ({"logging_steps": 0}, "train.logging_steps"),
        ({"save_total_limit": 0}, "train.save_total_limit"),
    ],
)
def test_bad_params_are_named(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        check_params(replace(TrainParams(), **change))


def test_params_yaml_train_section_loads() -> None:
    params = load_params(REPO / "params.yaml").train
    check_params(params)
    assert isinstance(params.learning_rate, float) and params.learning_rate == pytest.approx(1e-4)
    assert isinstance(params.matryoshka_dims, tuple)


def test_the_command_reports_missing_data_and_exits_1(tmp_path: Path) -> None:
    params_file = tmp_path / "params.yaml"
    params_file.write_text(json.dumps({"train": {"batch_size": 4}}), encoding="utf-8")
    result = CliRunner().invoke(
        cli.app, ["train", "--params", str(params_file), "--root", str(tmp_path), "--no-progress"]
    )
    assert result.exit_code == 1
    assert "pairs.parquet not found" in result.stderr
