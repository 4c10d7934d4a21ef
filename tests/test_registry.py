"""Promotion in a real MLflow registry (pipelines.registry): SQLite stores in tmp_path, and
one test against a real ``mlflow server`` process on 127.0.0.1.

The models are tiny BERTs whose weights are set by hand so that they are bag-of-words
encoders: a model "knows" a topic word when the word has its own embedding dimension,
and confuses it with every other unknown word otherwise. Knowing more topics retrieves
strictly better, so a test can choose a better, a worse or an equally good candidate
and the real scoring (embeddings, ``metrics_rs``) confirms it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import requests

from pipelines import registry
from pipelines.config import EvaluateParams, Params, Paths, PromoteParams
from pipelines.io import write_json, write_parquet
from pipelines.models import data_hash, model_fingerprint
from pipelines.promote import format_promotion
from pipelines.registry import (
    PromotionLockedError,
    PromotionRefusedError,
    PromotionResult,
    RegistryError,
    promote_candidate,
    promotion_lock,
    rollback,
    status,
)
from pipelines.services import free_port

MODEL_NAME = "math-embed"

# ----------------------------------------------------------------------------- tiny models

TOPICS = [
    "prime",
    "graph",
    "matrix",
    "ring",
    "group",
    "field",
    "lattice",
    "manifold",
    "polynomial",
    "series",
]
FILLERS = ["alpha", "beta"]
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
BOW_VOCAB = SPECIAL + TOPICS + FILLERS
HIDDEN = 16
JUNK_DIM, SPECIAL_DIM = 0, 1


def build_bow_bert(folder: Path, known_topics: int, *, variant: int = 0) -> Path:
    """A plain Hugging Face BERT folder that embeds a text as its bag of words.

    Every layer is zeroed except the word embeddings (one-hot: [CLS]/[SEP] share one
    dimension, each of the first ``known_topics`` topics has its own, everything else
    shares the junk dimension) and the LayerNorms, whose bias cancels the mean they
    subtract, so each token leaves the encoder as its one-hot row (scaled) and mean
    pooling gives the bag of words. ``variant`` changes an unused row ([MASK]): new
    weights and fingerprint, identical embeddings.
    """
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = BertTokenizer(
        vocab={token: index for index, token in enumerate(BOW_VOCAB)}, do_lower_case=True
    )
    config = BertConfig(
        vocab_size=len(BOW_VOCAB),
        hidden_size=HIDDEN,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=4,
        max_position_embeddings=32,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    model = BertModel(config, add_pooling_layer=False)
    sigma = math.sqrt((1 / HIDDEN) * (1 - 1 / HIDDEN) + config.layer_norm_eps)
    known = set(TOPICS[:known_topics])
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.zero_()
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.fill_(1.0)
                module.bias.fill_((1 / HIDDEN) / sigma)
        words = model.embeddings.word_embeddings.weight
        for index, token in enumerate(BOW_VOCAB):
            if token in ("[CLS]", "[SEP]"):
                words[index, SPECIAL_DIM] = 1.0
            elif token in known:
                words[index, 2 + TOPICS.index(token)] = 1.0
            else:
                words[index, JUNK_DIM] = 1.0
        words[BOW_VOCAB.index("[MASK]"), HIDDEN - 1] = float(variant)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_bow_model(folder: Path, known_topics: int, *, variant: int = 0) -> Path:
    """The same encoder saved in the sentence-transformers format (mean pooling)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    bert = build_bow_bert(folder.with_name(folder.name + "-bert"), known_topics, variant=variant)
    transformer = Transformer(str(bert), max_seq_length=16)
    model = SentenceTransformer(
        modules=[transformer, Pooling(HIDDEN, pooling_mode="mean")], device="cpu"
    )
    model.save(str(folder))
    return folder


@dataclass(frozen=True)
class Models:
    base: Path  # plain BERT, knows no topic
    knows_2: Path
    knows_4: Path
    knows_4_variant: Path  # as good as knows_4, another fingerprint
    knows_7: Path


@pytest.fixture(scope="session")
def bow_models(tmp_path_factory: pytest.TempPathFactory) -> Models:
    folder = tmp_path_factory.mktemp("bow-models")
    return Models(
        base=build_bow_bert(folder / "base", 0),
        knows_2=build_bow_model(folder / "knows-2", 2),
        knows_4=build_bow_model(folder / "knows-4", 4),
        knows_4_variant=build_bow_model(folder / "knows-4-variant", 4, variant=1),
        knows_7=build_bow_model(folder / "knows-7", 7),
    )


@pytest.fixture(scope="session")
def empty_mlflow_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An MLflow SQLite store with its schema migrated once; tests copy it (seconds saved)."""
    from mlflow import MlflowClient

    db = tmp_path_factory.mktemp("mlflow-template") / "mlflow.db"
    MlflowClient(tracking_uri=f"sqlite:///{db}").search_experiments()
    return db


# ----------------------------------------------------------------------------- the world


@dataclass(frozen=True)
class World:
    """A project root with validated data, the reports promote logs, and a base model."""

    root: Path
    params: Params
    base_model: Path

    @property
    def paths(self) -> Paths:
        return Paths(self.root)

    def install_candidate(self, model_dir: Path, name: str = "candidate") -> Path:
        """Copy a saved model into ``models/<name>`` with train's ``mathembed.json``."""
        target = self.root / "models" / name
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(model_dir, target)
        write_json(
            target / "mathembed.json",
            {
                "fingerprint": model_fingerprint(target),
                "base_model": str(self.base_model),
                "pooling": "mean",
                "max_seq_length": 16,
                "params": {"pooling": "mean", "max_seq_length": 16, "epochs": 1},
                "data_hash": data_hash(self.paths.validated / "pairs.parquet"),
            },
        )
        return target

    def promote(self, model_dir: Path | None = None, **promote: Any) -> PromotionResult:
        params = dataclasses.replace(
            self.params, promote=dataclasses.replace(self.params.promote, **promote)
        )
        return promote_candidate(params, self.paths, candidate_dir=model_dir)


def write_tables(
    root: Path,
    chunks: pd.DataFrame,
    queries: pd.DataFrame,
    qrels: pd.DataFrame,
    papers: pd.DataFrame,
) -> None:
    """The validated tables promote and search read, the records and reports they log."""
    validated = root / "data" / "validated"
    write_parquet(validated / "chunks.parquet", chunks)
    write_parquet(validated / "queries.parquet", queries)
    write_parquet(validated / "qrels.parquet", qrels)
    write_parquet(validated / "papers.parquet", papers)
    pairs = pd.DataFrame(
        {
            "anchor": ["prime", "graph"],
            "positive": ["prime alpha", "graph alpha"],
            "kind": ["name", "name"],
            "concept": ["prime", "graph"],
            "positive_id": ["x#c0000", "y#c0000"],
            "split": ["train", "train"],
        }
    )
    write_parquet(validated / "pairs.parquet", pairs)
    metrics = root / "metrics"
    write_json(metrics / "data_quality.json", {"passed": True, "totals": {"rows_in": 42}})
    write_json(metrics / "data.json", {"chunks": len(chunks), "pairs": {"by_split": {"train": 2}}})
    curve = [{"step": 5, "epoch": 0.5, "loss": 0.75}, {"step": 10, "epoch": 1.0, "loss": 0.25}]
    write_json(
        metrics / "train.json",
        {"wall_seconds": 1.5, "final_loss": 0.25, "device": "cpu", "loss_curve": curve},
    )
    write_json(metrics / "eval.json", {"candidate": {"dim_16": {"mrr@10": 0.5}}, "n_queries": 10})
    (root / "reports" / "eval").mkdir(parents=True, exist_ok=True)
    (root / "reports" / "eval" / "compare.csv").write_text("metric,candidate\nmrr@10,0.5\n")
    (root / "reports" / "data_quality").mkdir(parents=True, exist_ok=True)
    (root / "reports" / "data_quality" / "index.html").write_text("<html>data docs</html>")
    (root / "dvc.lock").write_text(
        "schema: '2.0'\nstages:\n  validate:\n    cmd: python -m pipelines.validate\n"
        "    outs:\n    - path: data/validated\n      hash: md5\n"
        "      md5: 0123456789abcdef0123456789abcdef.dir\n"
        "    - path: metrics/data_quality.json\n      md5: ffff\n"
    )


def topic_tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Two passages per topic; one query per topic, its two passages relevant."""
    chunk_rows = [
        {
            "chunk_id": f"2401.{index + 1:05d}v1#c{part:04d}",
            "paper_id": f"2401.{index + 1:05d}",
            "version": 1,
            "chunk_index": part,
            "section": "",
            "text": f"{topic} {filler}",
        }
        for index, topic in enumerate(TOPICS)
        for part, filler in enumerate(FILLERS)
    ]
    chunks = pd.DataFrame(chunk_rows)
    queries = pd.DataFrame(
        {
            "query_id": [f"q-{topic}" for topic in TOPICS],
            "concept": TOPICS,
            "text": TOPICS,
        }
    )
    qrels = pd.DataFrame(
        {
            "query_id": [f"q-{str(row['text']).split()[0]}" for row in chunk_rows],
            "chunk_id": [row["chunk_id"] for row in chunk_rows],
            "grade": 1,
            "unseen": False,
        }
    )
    papers = pd.DataFrame(
        {
            "paper_id": [f"2401.{index + 1:05d}" for index in range(len(TOPICS))],
            "title": [f"On the {topic}" for topic in TOPICS],
        }
    )
    return chunks, queries, qrels, papers


def write_eval_data(world: World, topics: list[str]) -> str:
    """New evaluation data: only the queries (and their judgments) about ``topics``.

    The passages and the training pairs stay as they are, so a candidate remains valid;
    returns the new evaluation-data hash.
    """
    _, queries, qrels, _ = topic_tables()
    kept = {f"q-{topic}" for topic in topics}
    validated = world.paths.validated
    write_parquet(
        validated / "queries.parquet",
        queries[queries["query_id"].isin(kept)].reset_index(drop=True),
    )
    write_parquet(
        validated / "qrels.parquet", qrels[qrels["query_id"].isin(kept)].reset_index(drop=True)
    )
    return registry.eval_data_hash(world.paths)


def make_world(root: Path, base_model: Path, empty_db: Path | None) -> World:
    write_tables(root, *topic_tables())
    if empty_db is not None:
        (root / "mlruns").mkdir(parents=True)
        shutil.copy(empty_db, root / "mlruns" / "mlflow.db")
    params = Params(
        evaluate=EvaluateParams(ks=(1, 5, 10)),
        promote=PromoteParams(lock_timeout_seconds=60.0, server_timeout_seconds=5.0),
    )
    return World(root, params, base_model)


@pytest.fixture
def world(
    tmp_path: Path,
    bow_models: Models,
    empty_mlflow_db: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> World:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_REGISTRY_URI", raising=False)
    return make_world(tmp_path / "project", bow_models.base, empty_mlflow_db)


def client_of(world: World):  # type: ignore[no-untyped-def]
    from mlflow import MlflowClient

    uri = registry.tracking_uri(world.paths)
    return MlflowClient(tracking_uri=uri, registry_uri=uri)


def aliases(world: World) -> dict[str, str | None]:
    return {entry.alias: entry.version for entry in status(world.paths, world.params.promote)}


def folder_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        digest.update(path.relative_to(folder).as_posix().encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


# ----------------------------------------------------------------------------- tests


def test_the_tiny_models_rank_by_what_they_know(world: World, bow_models: Models) -> None:
    """The premise of the other tests, checked with the real scoring."""
    from pipelines.registry import load_candidate, score_for_promotion

    means = {}
    for name in ("knows_2", "knows_4", "knows_4_variant", "knows_7"):
        candidate = load_candidate(world.install_candidate(getattr(bow_models, name), name))
        scored = score_for_promotion(world.params, world.paths, candidate, None)
        means[name] = (scored.candidate.means["mrr@10"], scored.candidate.means["ndcg@10"])
    base = (scored.base.means["mrr@10"], scored.base.means["ndcg@10"])
    for metric in (0, 1):
        assert base[metric] < means["knows_2"][metric] < means["knows_4"][metric]
        assert means["knows_4"][metric] < means["knows_7"][metric]
        assert means["knows_4"][metric] == means["knows_4_variant"][metric]
    assert model_fingerprint(world.root / "models" / "knows_4") != model_fingerprint(
        world.root / "models" / "knows_4_variant"
    )


def test_first_promotion_beats_the_base_and_becomes_champion(
    world: World, bow_models: Models
) -> None:
    subprocess.run(["git", "init", "-q"], cwd=world.root, check=True)
    subprocess.run(
        [
            "git",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
        cwd=world.root,
        check=True,
    )
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=world.root, capture_output=True, text=True, check=True
    ).stdout.strip()
    candidate_dir = world.install_candidate(bow_models.knows_4)
    before = folder_digest(candidate_dir)

    result = world.promote()

    assert result.promoted and not result.already_registered
    assert result.decision.compared_against == "base"
    assert result.version == "1"
    assert result.aliases == {"champion": "1", "challenger": None, "previous": None}
    assert folder_digest(candidate_dir) == before  # promotion never touches the candidate

    recorded = json.loads((world.root / "metrics" / "promotion.json").read_text())
    assert recorded["promoted"] is True
    assert recorded["version"] == "1"
    assert recorded["compared_against"] == "base"
    assert recorded["candidate"]["mrr@10"] > recorded["base"]["mrr@10"]
    assert recorded["fingerprint"] == model_fingerprint(candidate_dir)

    client = client_of(world)
    version = client.get_model_version(MODEL_NAME, "1")
    tags = version.tags
    assert tags["decision"] == "promoted"
    assert tags["compared_against"] == "base"
    assert tags["reason"].startswith("promoted over the base")
    assert float(tags["candidate.mrr_at_10"]) == pytest.approx(result.decision.candidate["mrr@10"])
    assert float(tags["base.ndcg_at_10"]) == pytest.approx(result.decision.other["ndcg@10"])
    assert float(tags["delta.mrr_at_10"]) > 0
    assert 0 < float(tags["p_value"]) <= 1
    assert tags["data_version"] == data_hash(world.paths.validated / "pairs.parquet")
    assert tags["fingerprint"] == result.fingerprint
    assert tags["git_commit"] == commit
    assert tags["settled"] == "true"

    run = client.get_run(result.run_id)
    assert run.data.tags["git_commit"] == commit
    assert run.data.tags["dvc.data/validated"] == "0123456789abcdef0123456789abcdef.dir"
    assert "dvc.metrics/data_quality.json" not in run.data.tags  # data hashes only
    assert run.data.tags["counts.chunks"] == "20"
    assert run.data.tags["counts.pairs.by_split.train"] == "2"
    assert run.data.params["promote.metrics"] == '["mrr@10", "ndcg@10"]'
    assert run.data.params["evaluate.ks"] == "[1, 5, 10]"
    assert run.data.metrics["train.final_loss"] == 0.25
    assert run.data.metrics["eval.candidate.dim_16.mrr_at_10"] == 0.5
    history = client.get_metric_history(run.info.run_id, "train.loss_curve.loss")
    assert [(point.step, point.value) for point in history] == [(5, 0.75), (10, 0.25)]
    assert run.data.metrics["promotion.candidate.mrr_at_10"] == pytest.approx(
        result.decision.candidate["mrr@10"]
    )
    artifacts = world.root / "mlruns" / "artifacts"
    run_artifacts = {p.relative_to(artifacts).as_posix() for p in artifacts.rglob("*")}
    prefix = f"{run.info.run_id}/artifacts"
    for expected in (
        "model_card.md",
        "eval_report/compare.csv",
        "data_quality_report/index.html",
        "mathembed.json",
        "data_quality.json",
    ):
        assert any(path.endswith(f"{prefix}/{expected}") for path in run_artifacts), expected
    card = next(artifacts.rglob("model_card.md")).read_text()
    assert "Promoted to champion" in card and result.fingerprint[:12] in card
    requirements = next(artifacts.rglob("requirements.txt")).read_text().split()
    # Exactly the pinned list we passed, plus the mlflow pin MLflow always adds.
    assert sorted(requirements) == sorted(
        [*registry.pip_requirements(), f"mlflow=={importlib.metadata.version('mlflow')}"]
    )
    assert all("==" in line for line in requirements)


def test_worse_candidate_is_challenger_better_one_takes_over_and_rollback_restores(
    world: World, bow_models: Models
) -> None:
    assert world.promote(world.install_candidate(bow_models.knows_4)).promoted

    worse = world.promote(world.install_candidate(bow_models.knows_2))
    assert not worse.promoted
    assert worse.decision.compared_against == "champion"
    assert worse.compared_version == "1"
    assert "is not higher than the champion's" in worse.decision.reason
    assert worse.aliases == {"champion": "1", "challenger": "2", "previous": None}
    client = client_of(world)
    worse_tags = client.get_model_version(MODEL_NAME, "2").tags
    assert worse_tags["decision"] == "rejected"
    assert float(worse_tags["champion.mrr_at_10"]) > float(worse_tags["candidate.mrr_at_10"])
    assert worse_tags["compared_version"] == "1"

    better = world.promote(world.install_candidate(bow_models.knows_7))
    assert better.promoted
    assert better.decision.compared_against == "champion"
    assert better.aliases == {"champion": "3", "challenger": "2", "previous": "1"}
    assert "promoted over the champion" in better.decision.reason

    entries = {entry.alias: entry for entry in status(world.paths, world.params.promote)}
    assert entries["champion"].metrics["mrr@10"] == pytest.approx(
        better.decision.candidate["mrr@10"]
    )
    assert entries["previous"].metrics["mrr@10"] < entries["champion"].metrics["mrr@10"]
    assert entries["challenger"].version == "2"

    undone = rollback(world.paths, world.params.promote, reason="bad answers", actor="alice")
    assert (undone.restored, undone.demoted) == ("1", "3")
    assert aliases(world) == {"champion": "1", "challenger": "2", "previous": None}
    demoted = client.get_model_version(MODEL_NAME, "3").tags
    assert demoted["rolled_back_by"] == "alice"
    assert demoted["rolled_back_reason"] == "bad answers"
    assert demoted["rolled_back_at"] == undone.at
    assert client.get_model_version(MODEL_NAME, "1").tags["restored_by"] == "alice"

    with pytest.raises(registry.PromotionError, match="no @previous version"):
        rollback(world.paths, world.params.promote)
    assert aliases(world)["champion"] == "1"


def test_an_equally_good_candidate_is_not_promoted(world: World, bow_models: Models) -> None:
    world.promote(world.install_candidate(bow_models.knows_4))
    tie = world.promote(world.install_candidate(bow_models.knows_4_variant))
    assert not tie.promoted
    assert tie.decision.deltas == {"mrr@10": 0.0, "ndcg@10": 0.0}
    assert tie.aliases == {"champion": "1", "challenger": "2", "previous": None}


def test_the_significance_gate_from_params_can_hold_back_a_better_candidate(
    world: World, bow_models: Models
) -> None:
    world.promote(world.install_candidate(bow_models.knows_4))
    # knows_7 is better on a few of the 10 queries and ties on the rest: too few to be
    # significant at 0.05 (the exact sign-flip test gives 2/2^5 with 5 differing queries).
    gated = world.promote(world.install_candidate(bow_models.knows_7), significance=True)
    assert not gated.promoted
    assert gated.decision.deltas["mrr@10"] > 0 and gated.decision.deltas["ndcg@10"] > 0
    assert gated.decision.p_value is not None and gated.decision.p_value > 0.05
    assert "not significant" in gated.decision.reason
    tags = client_of(world).get_model_version(MODEL_NAME, "2").tags
    assert float(tags["p_value"]) == gated.decision.p_value
    assert tags["test_method"] == "randomization"
    assert gated.aliases == {"champion": "1", "challenger": "2", "previous": None}


def test_promoting_the_same_candidate_twice_registers_it_once(
    world: World, bow_models: Models
) -> None:
    candidate = world.install_candidate(bow_models.knows_4)
    first = world.promote()
    (world.root / "metrics" / "promotion.json").unlink()
    again = world.promote()
    assert again.already_registered and not again.redecided
    assert (again.version, again.run_id, again.promoted) == (first.version, first.run_id, True)
    assert again.decision.reason == first.decision.reason
    assert again.decision.candidate == pytest.approx(first.decision.candidate)
    assert json.loads((world.root / "metrics" / "promotion.json").read_text())["already_registered"]
    # The same weights copied elsewhere are the same candidate.
    copy = world.install_candidate(candidate, "copy")
    assert world.promote(copy).version == first.version
    client = client_of(world)
    assert len(client.search_model_versions(f"name = '{MODEL_NAME}'")) == 1
    experiment = client.get_experiment_by_name("mathembed")
    assert len(client.search_runs([experiment.experiment_id])) == 1


def test_a_rerun_after_a_crash_finishes_the_promotion_without_a_second_version(
    world: World, bow_models: Models, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.promote(world.install_candidate(bow_models.knows_4))
    world.install_candidate(bow_models.knows_7)
    real_move = registry._move_aliases

    def crash(*args: object) -> None:
        raise KeyboardInterrupt("killed between registering and moving the aliases")

    monkeypatch.setattr(registry, "_move_aliases", crash)
    with pytest.raises(KeyboardInterrupt):
        world.promote()
    # Registered but not settled; the aliases are untouched: still a valid registry.
    assert aliases(world) == {"champion": "1", "challenger": None, "previous": None}
    client = client_of(world)
    assert "settled" not in client.get_model_version(MODEL_NAME, "2").tags

    monkeypatch.setattr(registry, "_move_aliases", real_move)
    finished = world.promote()
    assert finished.promoted and finished.version == "2" and not finished.already_registered
    assert aliases(world) == {"champion": "2", "challenger": None, "previous": "1"}
    assert len(client.search_model_versions(f"name = '{MODEL_NAME}'")) == 2
    assert client.get_model_version(MODEL_NAME, "2").tags["settled"] == "true"


def history_of(world: World, version: str) -> list[dict[str, str]]:
    history = client_of(world).get_model_version(MODEL_NAME, version).tags.get("decision_history")
    return json.loads(history) if history else []


def test_a_version_is_decided_again_when_the_eval_data_changes_and_registered_once(
    world: World, bow_models: Models
) -> None:
    # On the first four topics knows_4 and knows_7 both rank perfectly: a tie.
    first_data = write_eval_data(world, TOPICS[:4])
    assert world.promote(world.install_candidate(bow_models.knows_4)).promoted
    tied = world.promote(world.install_candidate(bow_models.knows_7))
    assert not tied.promoted and tied.version == "2"
    same = world.promote()
    assert same.already_registered and not same.redecided  # same data: recorded decision
    assert same.decision.reason == tied.decision.reason

    # All ten topics: knows_7 now knows more of them than the champion.
    new_data = write_eval_data(world, TOPICS)
    assert new_data != first_data
    again = world.promote()
    assert again.redecided and not again.already_registered
    assert "decided again on new evaluation data" in format_promotion(again)
    assert "recorded decision" in format_promotion(same)
    assert again.promoted and again.version == "2" and again.run_id == tied.run_id
    assert again.decision.compared_against == "champion" and again.compared_version == "1"
    assert again.decision.deltas["mrr@10"] > 0
    # Promoted out of @challenger: the alias does not stay on the champion.
    assert again.aliases == {"champion": "2", "challenger": None, "previous": "1"}
    client = client_of(world)
    assert len(client.search_model_versions(f"name = '{MODEL_NAME}'")) == 2
    experiment = client.get_experiment_by_name("mathembed")
    assert len(client.search_runs([experiment.experiment_id])) == 2  # no new run either
    tags = client.get_model_version(MODEL_NAME, "2").tags
    assert tags["decision"] == "promoted" and tags["settled"] == "true"
    assert tags["eval_data_hash"] == new_data
    assert float(tags["candidate.mrr_at_10"]) == pytest.approx(again.decision.candidate["mrr@10"])
    [superseded] = history_of(world, "2")
    assert superseded["decision"] == "rejected"
    assert superseded["eval_data_hash"] == first_data
    assert superseded["decided_at"] == tied.decided_at
    recorded = json.loads((world.root / "metrics" / "promotion.json").read_text())
    assert recorded["redecided"] is True and recorded["promoted"] is True

    settled = world.promote()  # and on this data it is recorded again
    assert settled.already_registered and settled.promoted and not settled.redecided
    assert len(history_of(world, "2")) == 1


def test_the_champion_on_new_eval_data_stays_champion_and_is_not_compared_with_itself(
    world: World, bow_models: Models, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_eval_data(world, TOPICS[:4])
    first = world.promote(world.install_candidate(bow_models.knows_4))
    assert first.promoted and first.decision.candidate["mrr@10"] == pytest.approx(1.0)
    loads: list[object] = []
    monkeypatch.setattr(registry, "load_registered_model", lambda *args: loads.append(args))
    shutil.rmtree(world.root / "data" / "cache" / "embeddings")  # would force a champion load

    new_data = write_eval_data(world, TOPICS)
    kept = world.promote()
    assert loads == []  # the champion was not scored as its own opponent
    assert kept.redecided and kept.promoted and kept.version == "1"
    assert kept.decision.compared_against == "base" and kept.compared_version is None
    assert "not compared with itself" in kept.decision.reason
    assert "still beats the base model" in kept.decision.reason
    # knows_4 misses six of the ten topics: its scores on the new data are recorded.
    assert kept.decision.candidate["mrr@10"] < first.decision.candidate["mrr@10"]
    assert kept.aliases == {"champion": "1", "challenger": None, "previous": None}
    tags = client_of(world).get_model_version(MODEL_NAME, "1").tags
    assert tags["eval_data_hash"] == new_data and tags["settled"] == "true"
    assert float(tags["candidate.mrr_at_10"]) == pytest.approx(kept.decision.candidate["mrr@10"])
    assert [entry["decision"] for entry in history_of(world, "1")] == ["promoted"]
    assert world.promote().already_registered
    assert len(client_of(world).search_model_versions(f"name = '{MODEL_NAME}'")) == 1


def test_a_crash_during_a_redecision_is_finished_by_the_rerun(
    world: World, bow_models: Models, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_eval_data(world, TOPICS[:4])
    world.promote(world.install_candidate(bow_models.knows_4))
    assert not world.promote(world.install_candidate(bow_models.knows_7)).promoted
    new_data = write_eval_data(world, TOPICS)
    real_move = registry._move_aliases

    def crash(*args: object) -> None:
        raise KeyboardInterrupt("killed between rewriting the decision and moving the aliases")

    monkeypatch.setattr(registry, "_move_aliases", crash)
    with pytest.raises(KeyboardInterrupt):
        world.promote()
    client = client_of(world)
    tags = client.get_model_version(MODEL_NAME, "2").tags
    assert tags["settled"] == "false"  # not mistaken for a recorded decision on this data
    assert aliases(world) == {"champion": "1", "challenger": "2", "previous": None}

    monkeypatch.setattr(registry, "_move_aliases", real_move)
    finished = world.promote()
    assert finished.redecided and finished.promoted and finished.version == "2"
    assert aliases(world) == {"champion": "2", "challenger": None, "previous": "1"}
    assert client.get_model_version(MODEL_NAME, "2").tags["settled"] == "true"
    assert len(history_of(world, "2")) == 1  # the superseded decision recorded once
    assert len(client.search_model_versions(f"name = '{MODEL_NAME}'")) == 2

    # The champion's own re-decision killed after its tags were rewritten: settled by the rerun.
    write_eval_data(world, TOPICS[2:])
    real_rewrite = registry._rewrite_decision

    def rewrite_then_crash(*args: object) -> None:
        real_rewrite(*args)  # type: ignore[arg-type]
        raise KeyboardInterrupt("killed before settling")

    monkeypatch.setattr(registry, "_rewrite_decision", rewrite_then_crash)
    with pytest.raises(KeyboardInterrupt):
        world.promote()
    monkeypatch.setattr(registry, "_rewrite_decision", real_rewrite)
    resumed = world.promote()
    assert resumed.redecided and resumed.version == "2" and resumed.promoted
    assert resumed.decision.compared_against == "base"
    tags = client.get_model_version(MODEL_NAME, "2").tags
    assert tags["settled"] == "true" and tags["eval_data_hash"] != new_data
    assert aliases(world) == {"champion": "2", "challenger": None, "previous": "1"}
    # Compared with the base now: the champion-side numbers of the last decision are gone.
    assert not any(key.startswith("champion.") for key in tags)


def test_concurrent_redecisions_of_one_version_decide_once(
    world: World, bow_models: Models
) -> None:
    write_eval_data(world, TOPICS[:4])
    world.promote(world.install_candidate(bow_models.knows_4))
    world.promote(world.install_candidate(bow_models.knows_7))
    write_eval_data(world, TOPICS)
    results: list[PromotionResult] = []
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def promote() -> None:
        try:
            start.wait()
            results.append(world.promote())
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=promote) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted((r.redecided, r.already_registered) for r in results) == [
        (False, True),
        (True, False),
    ]
    assert {(r.version, r.promoted) for r in results} == {("2", True)}
    assert len(history_of(world, "2")) == 1
    assert aliases(world) == {"champion": "2", "challenger": None, "previous": "1"}


def test_a_rolled_back_version_is_not_given_an_alias_back_on_new_eval_data(
    world: World, bow_models: Models
) -> None:
    world.promote(world.install_candidate(bow_models.knows_4))
    assert world.promote(world.install_candidate(bow_models.knows_7)).promoted
    rollback(world.paths, world.params.promote, reason="bad answers", actor="alice")
    assert aliases(world) == {"champion": "1", "challenger": None, "previous": None}

    write_eval_data(world, TOPICS[1:])  # knows_7 would still beat the champion here
    held = world.promote()
    assert held.redecided and not held.promoted
    assert held.decision.deltas["mrr@10"] > 0
    assert "withdrawn by rollback" in held.decision.reason and "alice" in held.decision.reason
    assert aliases(world) == {"champion": "1", "challenger": None, "previous": None}
    assert client_of(world).get_model_version(MODEL_NAME, "2").tags["decision"] == "rejected"


def test_the_champion_is_rescored_from_the_registry_when_its_embeddings_are_not_cached(
    world: World, bow_models: Models, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = world.promote(world.install_candidate(bow_models.knows_4))
    loads: list[str] = []
    real_load = registry.load_registered_model

    def counting_load(reg: registry.Registry, version: object) -> object:
        loads.append(str(getattr(version, "version", "")))
        return real_load(reg, version)  # type: ignore[arg-type]

    monkeypatch.setattr(registry, "load_registered_model", counting_load)
    world.promote(world.install_candidate(bow_models.knows_2))
    assert loads == []  # the champion's embeddings were cached when it was the candidate

    shutil.rmtree(world.root / "data" / "cache" / "embeddings")
    third = world.promote(world.install_candidate(bow_models.knows_7))
    assert loads == ["1"]  # loaded from models:/math-embed/1, scored in this run
    assert third.decision.other == pytest.approx(first.decision.candidate)


def test_concurrent_promotions_are_serialised(world: World, bow_models: Models) -> None:
    candidates = {
        "weaker": world.install_candidate(bow_models.knows_2, "weaker"),
        "stronger": world.install_candidate(bow_models.knows_4, "stronger"),
    }
    results: dict[str, PromotionResult] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(len(candidates))

    def promote(name: str) -> None:
        try:
            start.wait()
            results[name] = world.promote(candidates[name])
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=promote, args=(name,)) for name in candidates]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    # Whichever went first was compared with the base; the second saw its outcome.
    sides = sorted(result.decision.compared_against for result in results.values())
    assert sides == ["base", "champion"]
    assert sorted(result.version for result in results.values()) == ["1", "2"]
    final = aliases(world)
    assert final["champion"] == results["stronger"].version
    weaker = results["weaker"]
    if weaker.decision.compared_against == "base":  # weaker first: promoted, then replaced
        assert final == {
            "champion": results["stronger"].version,
            "challenger": None,
            "previous": weaker.version,
        }
    else:
        assert final == {
            "champion": results["stronger"].version,
            "challenger": weaker.version,
            "previous": None,
        }


def test_a_promotion_waits_for_the_lock_and_gives_up_with_a_clear_message(
    world: World, bow_models: Models
) -> None:
    world.install_candidate(bow_models.knows_4)
    expected = r"another promotion holds .*promote\.lock \(pid \d+ since .*\).*lock_timeout_seconds"
    with promotion_lock(world.paths, 1.0), pytest.raises(PromotionLockedError, match=expected):
        world.promote(lock_timeout_seconds=0.2)
    assert aliases(world) == {"champion": None, "challenger": None, "previous": None}
    assert world.promote().promoted  # the lock is free again


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (None, r"data_quality.json not found: the candidate's data was never validated"),
        ({"passed": False}, r"did not pass validation \(passed = False\)"),
        ({"tables": {}}, r"did not pass validation \(passed = None\)"),
        ({"passed": "true"}, r"did not pass validation \(passed = 'true'\)"),
        ({"passed": True, "data_hash": "f" * 64}, r"the validated data \(.*data_quality.json\)"),
    ],
)
def test_a_candidate_whose_data_failed_validation_is_never_promoted(
    world: World, bow_models: Models, record: dict[str, object] | None, message: str
) -> None:
    shutil.rmtree(world.root / "mlruns")
    world.install_candidate(bow_models.knows_7)
    quality = world.root / "metrics" / "data_quality.json"
    if record is None:
        quality.unlink()
    else:
        write_json(quality, record)
    with pytest.raises(PromotionRefusedError, match=message):
        world.promote()
    assert not (world.root / "mlruns").exists()  # refused before MLflow was touched
    assert not (world.root / "metrics" / "promotion.json").exists()


def test_a_candidate_trained_on_other_data_than_the_validated_is_refused(
    world: World, bow_models: Models
) -> None:
    world.install_candidate(bow_models.knows_7)
    pairs = world.paths.validated / "pairs.parquet"
    write_parquet(pairs, pd.read_parquet(pairs).head(1))  # validation rewrote the data since
    with pytest.raises(PromotionRefusedError, match=r"trained on data .* validated data \(.*pairs"):
        world.promote()
    assert aliases(world)["champion"] is None


def test_a_candidate_changed_after_training_or_without_metadata_is_refused(
    world: World, bow_models: Models
) -> None:
    candidate = world.install_candidate(bow_models.knows_4)
    config = candidate / "config_sentence_transformers.json"
    config.write_text(config.read_text().replace("{", '{"tampered": 1, ', 1))
    with pytest.raises(PromotionRefusedError, match="was changed after training"):
        world.promote()
    (candidate / "mathembed.json").unlink()
    with pytest.raises(PromotionRefusedError, match=r"mathembed.json not found"):
        world.promote()
    shutil.rmtree(candidate)
    with pytest.raises(PromotionRefusedError, match="no candidate model in"):
        world.promote()


def test_missing_evaluation_data_is_refused_with_the_fix_even_for_a_registered_version(
    world: World, bow_models: Models
) -> None:
    world.promote(world.install_candidate(bow_models.knows_4))
    (world.paths.validated / "qrels.parquet").unlink()
    with pytest.raises(
        PromotionRefusedError, match=r"qrels.parquet does not exist.*run `dvc repro`"
    ):
        world.promote()
    assert aliases(world) == {"champion": "1", "challenger": None, "previous": None}


def test_status_and_rollback_on_a_registry_that_does_not_exist_yet(world: World) -> None:
    shutil.rmtree(world.root / "mlruns")
    assert aliases(world) == {"champion": None, "challenger": None, "previous": None}
    assert not (world.root / "mlruns" / "mlflow.db").exists()  # status creates nothing
    with pytest.raises(registry.PromotionError, match="nothing has been promoted yet"):
        rollback(world.paths, world.params.promote)


def test_rollback_needs_a_previous_champion(world: World, bow_models: Models) -> None:
    world.promote(world.install_candidate(bow_models.knows_4))
    with pytest.raises(registry.PromotionError, match="no @previous version"):
        rollback(world.paths, world.params.promote)
    assert aliases(world)["champion"] == "1"


def test_the_default_store_is_sqlite_under_the_root_and_the_env_selects_a_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    uri = registry.tracking_uri(Paths(tmp_path))
    assert uri == f"sqlite:///{tmp_path.resolve()}/mlruns/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000")
    assert registry.tracking_uri(Paths(tmp_path)) == "http://127.0.0.1:5000"


# ----------------------------------------------------------------------------- real server


@contextmanager
def mlflow_server(folder: Path, port: int, template_db: Path) -> Iterator[str]:
    """A real ``mlflow server`` (SQLite backend, proxied artifacts) on 127.0.0.1:``port``."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(template_db, folder / "mlflow.db")
    command = [
        str(Path(sys.executable).with_name("mlflow")),
        "server",
        "--backend-store-uri",
        f"sqlite:///{folder / 'mlflow.db'}",
        "--artifacts-destination",
        str(folder / "artifacts"),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_TRACKING")}
    log_path = folder / "server.log"
    with log_path.open("wb") as log:
        # Its own process group: the server forks uvicorn, and both must stop with the test.
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:  # readiness: poll the health endpoint until the server answers
            if process.poll() is not None:
                raise RuntimeError(f"mlflow server exited early:\n{log_path.read_text()}")
            try:
                if requests.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"mlflow server not ready in time:\n{log_path.read_text()}")
            time.sleep(0.25)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def test_with_a_real_mlflow_server_unreachable_first_then_rerun_once_it_is_up(
    world: World,
    bow_models: Models,
    empty_mlflow_db: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    candidate = world.install_candidate(bow_models.knows_4)
    before = folder_digest(candidate)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", url)

    with pytest.raises(
        RegistryError,
        match=rf"tracking server at {url} is unreachable .*candidate left as it is on disk"
        r".*rerun `mathembed promote`",
    ):
        world.promote()
    assert folder_digest(candidate) == before
    assert not (world.root / "metrics" / "promotion.json").exists()

    with mlflow_server(tmp_path / "server", port, empty_mlflow_db):
        first = world.promote()
        assert first.promoted and first.version == "1" and first.tracking_uri == url
        worse = world.promote(world.install_candidate(bow_models.knows_2, "second"))
        assert not worse.promoted
        assert aliases(world) == {"champion": "1", "challenger": "2", "previous": None}

        from mlflow import MlflowClient

        client = MlflowClient(tracking_uri=url, registry_uri=url)
        assert client.get_model_version(MODEL_NAME, "2").tags["decision"] == "rejected"
        connected = registry.connect(world.paths, world.params.promote, create=False)
        assert connected is not None
        champion = connected.version_by_alias("champion")
        assert champion is not None
        loaded = registry.load_registered_model(connected, champion)
        from sentence_transformers import SentenceTransformer

        original = SentenceTransformer(str(bow_models.knows_4), device="cpu")
        texts = ["prime alpha", "graph", "lattice beta"]
        np.testing.assert_allclose(loaded.encode(texts), original.encode(texts), atol=1e-6)
    assert folder_digest(candidate) == before

    # The registry lived on the server: the local store saw nothing.
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    assert aliases(world) == {"champion": None, "challenger": None, "previous": None}


def test_the_command_line_shell_prints_decisions_status_and_refusals(
    world: World, bow_models: Models, capsys: pytest.CaptureFixture[str]
) -> None:
    from pipelines import promote as promote_module

    params_file = world.root / "params.yaml"
    params_file.write_text("evaluate:\n  ks: [1, 5, 10]\n")
    common = ["--root", str(world.root), "--params", str(params_file)]

    assert promote_module.main(["status", *common]) == 0
    assert capsys.readouterr().out.split() == ["champion", "-", "challenger", "-", "previous", "-"]

    world.install_candidate(bow_models.knows_4)
    assert promote_module.main(["promote", *common]) == 0
    out = capsys.readouterr().out
    assert out.startswith("math-embed v1 PROMOTED to @champion")
    assert "compared with the base model" in out and "@champion v1" in out

    assert promote_module.main(["promote", *common]) == 0
    assert "already registered; recorded decision" in capsys.readouterr().out

    world.install_candidate(bow_models.knows_7)
    assert promote_module.main([*common]) == 0  # promote is the default command
    assert promote_module.main(["status", *common]) == 0
    lines = capsys.readouterr().out.splitlines()[-3:]
    assert lines[0].startswith("champion   v2") and "mrr@10" in lines[0]
    assert lines[1].split() == ["challenger", "-"]
    assert lines[2].startswith("previous   v1")

    assert promote_module.main(["rollback", *common, "--reason", "regression"]) == 0
    assert "moved back to v1 (v2 demoted)" in capsys.readouterr().out
    assert promote_module.main(["status", *common]) == 0
    after = capsys.readouterr().out.splitlines()
    assert after[0].startswith("champion   v1") and "(restored " in after[0]
    assert after[2].split() == ["previous", "-"]

    (world.root / "metrics" / "data_quality.json").unlink()
    assert promote_module.main(["promote", *common]) == 1
    assert "promote: " in capsys.readouterr().err
