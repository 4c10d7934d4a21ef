"""train.init: a warm start from the registry's champion (pipelines/train/warm_start.py):
which pairs are new, the replay draw, refusals in one line, and a run started from a model
other than the base."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pandas as pd
import pytest
import torch
from promotion_worlds import Models, World
from test_train import make_root, toy_pairs, toy_params

from pipelines.common import io
from pipelines.common.config import ConfigError, TrainParams, load_params
from pipelines.registry.candidate_metadata import CandidateMetadata, read_candidate_metadata
from pipelines.retrieval.models import load_base_model
from pipelines.train.setup import TrainError
from pipelines.train.stage import run_train
from pipelines.train.warm_start import (
    Start,
    WarmSplit,
    base_mismatch,
    paper_of,
    positive_papers,
    resolve_start,
    trained_papers,
    warm_split,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def pairs_of(papers: list[str]) -> pd.DataFrame:
    """A validated pairs table: one training pair per paper named (and one validation pair)."""
    return pd.DataFrame(
        {
            "anchor": [f"a{i}" for i in range(len(papers) + 1)],
            "positive": [f"p{i}" for i in range(len(papers) + 1)],
            "positive_id": [f"{paper}#c{i:04d}" for i, paper in enumerate([*papers, "v1"])],
            "split": ["train"] * len(papers) + ["validation"],
        }
    )


def split_of(papers: list[str], known: set[str], **changes: object) -> WarmSplit:
    table = pairs_of(papers)
    train = table[table["split"] == "train"].reset_index(drop=True)
    return warm_split(train, positive_papers(table), frozenset(known), params_with(**changes))


def params_with(**changes: object) -> TrainParams:
    return dataclasses.replace(TrainParams(), **changes)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ pure parts


def test_a_passage_belongs_to_its_paper_and_version() -> None:
    assert paper_of("2401.00001v2#c0003") == "2401.00001v2"
    assert paper_of("stacks/2607001v1#c0024") == "stacks/2607001v1"
    papers = positive_papers(pairs_of(["p1v1", "p2v1", "p1v1", "p1v2"]))
    assert papers.tolist() == ["p1v1", "p2v1", "p1v1", "p1v2"]  # the training split's rows
    assert trained_papers(papers) == ("p1v1", "p1v2", "p2v1")
    no_ids = pairs_of(["p1v1"]).drop(columns="positive_id")
    assert trained_papers(positive_papers(no_ids)) == ()


def test_new_pairs_and_a_stable_replay_draw_of_the_old() -> None:
    papers = ["new1"] * 10 + ["old1"] * 30 + ["old2"] * 30
    changes = {"batch_size": 4, "replay_ratio": 2.0, "seed": 3}
    split = split_of(papers, {"old1", "old2"}, **changes)
    assert (split.new, split.replayed, split.old) == (10, 20, 60)
    rows = split.pairs.index
    assert (rows < 10).sum() == 10 and (rows >= 10).sum() == 20  # the new ones first, all
    again = split_of(papers, {"old1", "old2"}, **changes)
    assert again.pairs.index.tolist() == rows.tolist()  # the same draw
    assert "10 new pairs" in split.note and "20 of the 60 old ones replayed" in split.note


def test_replay_fills_at_least_a_batch_and_never_invents_pairs() -> None:
    none_asked = split_of(["new"] * 2 + ["old"] * 50, {"old"}, batch_size=16, replay_ratio=0)
    assert (none_asked.new, none_asked.replayed) == (2, 16)  # a batch, so a step can run
    capped = split_of(["new"] * 20 + ["old"] * 3, {"old"}, batch_size=4, replay_ratio=1)
    assert (capped.new, capped.replayed) == (20, 3)


def test_with_no_new_paper_every_pair_is_trained_on() -> None:
    split = split_of(["old"] * 12, {"old"}, batch_size=4)
    assert split.new == 0 and len(split.pairs) == 12
    assert "no pair from a paper the champion did not train on" in split.note


def test_a_champion_from_another_base_model_is_refused_in_one_line() -> None:
    params = params_with(base_model="allenai/specter2_base", pooling="cls", max_seq_length=256)
    same = CandidateMetadata(
        base_model="allenai/specter2_base",
        train_params={"pooling": "cls", "max_seq_length": 256},
    )
    assert base_mismatch(same, params, "math-embed v3 (@champion)") is None
    other = dataclasses.replace(same, base_model="offline-minilm")
    refusal = base_mismatch(other, params, "math-embed v3 (@champion)")
    assert refusal is not None and "\n" not in refusal
    assert "math-embed v3 (@champion) was trained from 'offline-minilm'" in refusal
    assert "set train.init: base" in refusal
    shorter = dataclasses.replace(same, train_params={"pooling": "cls", "max_seq_length": 128})
    assert "max_seq_length 128" in (base_mismatch(shorter, params, "v3") or "")
    unrecorded = base_mismatch(CandidateMetadata(), params, "math-embed v3 (@champion)")
    assert unrecorded is not None and "does not record its base model" in unrecorded


def test_train_init_and_replay_ratio_are_checked_where_declared(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="train.init"):
        TrainParams(init="yesterday")  # type: ignore[arg-type]
    params_file = tmp_path / "params.yaml"
    params_file.write_text("train:\n  replay_ratio: -1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="train.replay_ratio"):
        load_params(params_file)
    assert TrainParams().init == "champion" and TrainParams().replay_ratio == 1.0


def test_trained_papers_survive_the_metadata_file_and_bad_ones_are_named() -> None:
    record = CandidateMetadata(trained_papers=("a", "b")).as_json()
    assert CandidateMetadata.from_json(record).trained_papers == ("a", "b")
    assert CandidateMetadata.from_json({}).trained_papers == ()
    with pytest.raises(ValueError, match="trained_papers must be a list of strings"):
        CandidateMetadata.from_json({"trained_papers": "a"})


# ---------------------------------------------------------------- the registry's champion


def champion_params(world: World, **changes: object) -> TrainParams:
    base = {"base_model": str(world.base_model), "pooling": "mean", "max_seq_length": 16}
    return params_with(init="champion", **{**base, **changes})


def test_no_champion_yet_starts_from_the_base_and_says_so(world: World) -> None:
    start = resolve_start(champion_params(world), world.params.promote, world.paths)
    assert not start.is_warm and start.asked == "champion"
    assert "has no @champion yet: starting from the base model" in start.note
    no_store = resolve_start(
        champion_params(world), world.params.promote, world.paths.__class__(world.root / "none")
    )
    assert not no_store.is_warm
    assert resolve_start(params_with(init="base"), world.params.promote, world.paths).note == (
        "train.init: base"
    )


def test_the_champion_is_copied_once_and_starts_the_run(world: World, bow_models: Models) -> None:
    installed = world.install_candidate(bow_models.knows_4)
    metadata = io.read_json(installed / "mathembed.json")
    io.write_json(installed / "mathembed.json", {**metadata, "trained_papers": ["2401.1v1"]})
    assert world.promote(installed).promoted
    params = champion_params(world)
    start = resolve_start(params, world.params.promote, world.paths)
    assert start.is_warm and start.version == "1" and start.model_dir is not None
    assert start.known_papers == frozenset({"2401.1v1"})
    assert start.note == "train.init: champion: starting from math-embed v1 (@champion)"
    assert start.record()["started_from"] == "champion"
    # The copy holds the champion's weights.
    loaded = start.load(params, "cpu").state_dict()
    champion = load_base_model(str(installed), pooling="mean", max_seq_length=16).state_dict()
    assert all(torch.equal(loaded[key], champion[key]) for key in champion)
    # A second run finds the copy complete and does not copy again.
    stamp = (start.model_dir / "model.safetensors").stat().st_mtime_ns
    again = resolve_start(params, world.params.promote, world.paths)
    assert again.model_dir == start.model_dir
    assert (start.model_dir / "model.safetensors").stat().st_mtime_ns == stamp
    # A damaged copy is caught by its files' fingerprint and made again.
    with (start.model_dir / "model.safetensors").open("r+b") as weights:
        weights.seek(-4, 2)
        weights.write(b"\x00\x00\x00\x00")
    mended = resolve_start(params, world.params.promote, world.paths)
    assert (start.model_dir / "model.safetensors").stat().st_mtime_ns != stamp
    reloaded = mended.load(params, "cpu").state_dict()
    assert all(torch.equal(reloaded[key], champion[key]) for key in champion)
    # The copy is checked against train's knobs every time, not only when it is made.
    with pytest.raises(TrainError, match="max_seq_length 16\\), not train.base_model"):
        resolve_start(champion_params(world, max_seq_length=32), world.params.promote, world.paths)


def test_a_champion_of_another_base_or_without_files_is_refused(
    world: World, bow_models: Models
) -> None:
    installed = world.install_candidate(bow_models.knows_4)
    assert world.promote(installed).promoted
    other_base = champion_params(world, base_model="offline-minilm")
    with pytest.raises(TrainError, match="was trained from .* not train.base_model"):
        resolve_start(other_base, world.params.promote, world.paths)
    assert not (world.paths.models / "start").exists()  # nothing copied for a refusal
    for logged in list((world.root / "mlruns" / "artifacts").rglob("MLmodel")):
        shutil.rmtree(logged.parent)
    with pytest.raises(TrainError) as refused:
        resolve_start(champion_params(world), world.params.promote, world.paths)
    assert "math-embed v1 is registered but its files are gone" in str(refused.value)
    assert "\n" not in str(refused.value)


# ------------------------------------------------------------------------------------ a run


def test_a_warm_run_trains_the_new_pairs_and_a_replay_and_records_it(
    tiny_bert_dir: Path, tmp_path: Path
) -> None:
    # Yesterday's model: the tiny base trained on the first half of the papers.
    pairs = toy_pairs()
    first_half = pairs[(pairs["split"] == "validation") | (pairs.index < 20)]
    yesterday = run_train(
        toy_params(tiny_bert_dir, max_steps=2), make_root(tmp_path / "night1", first_half)
    )
    recorded = read_candidate_metadata(yesterday.candidate_dir)
    assert recorded is not None and len(recorded.trained_papers) == 20
    # Tonight: every pair, from yesterday's model.
    paths = make_root(tmp_path / "night2")
    params = toy_params(tiny_bert_dir, init="champion", replay_ratio=0.5, max_steps=-1, epochs=1)
    start = Start(
        "champion",
        "from night 1",
        yesterday.candidate_dir,
        "1",
        recorded.fingerprint,
        frozenset(recorded.trained_papers),
    )
    report = run_train(params, paths, progress=False, start=start)
    metrics = report.metrics
    assert metrics["init"] == {
        "asked": "champion",
        "started_from": "champion",
        "version": "1",
        "fingerprint": recorded.fingerprint,
        "note": "from night 1",
        "new_pairs": 20,
        "replayed_pairs": 10,
        "old_pairs": 20,
    }
    assert metrics["n_pairs"]["train"] == 30 and metrics["steps"] == 30 // 8  # one epoch
    tonight = read_candidate_metadata(paths.candidate)
    assert tonight is not None and len(tonight.trained_papers) == 40  # old and new
    card = (paths.candidate / "README.md").read_text(encoding="utf-8")
    assert "## Warm start" in card and "20 new pairs" in card


def test_an_unreachable_registry_starts_from_the_base_and_says_why(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://user:secret@127.0.0.1:9")  # nobody there
    start = resolve_start(champion_params(world), world.params.promote, world.paths)
    assert not start.is_warm
    assert start.note.startswith("train.init: champion, but the MLflow tracking server at")
    assert start.note.endswith(": starting from the base model")
    assert "secret" not in start.note
