"""Promotion worlds for the registry and search tests: tiny bag-of-words models and a
project root with evaluation data and an MLflow SQLite store.

The models are tiny BERTs whose weights are set by hand so that they are bag-of-words
encoders: a model "knows" a topic word when the word has its own embedding dimension,
and confuses it with every other unknown word otherwise. Knowing more topics retrieves
strictly better, so a test can choose a better, a worse or an equally good candidate
and the real scoring (embeddings, ``metrics_rs``) confirms it. ``tests/conftest.py``
registers the fixtures (``bow_models``, ``empty_mlflow_db``, ``world``) for every test.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from pipelines.common.config import EvaluateParams, Params, PromoteParams
from pipelines.common.io import write_json, write_parquet
from pipelines.common.paths import Paths
from pipelines.common.tables import STATEMENTS_SCHEMA
from pipelines.promote.aliases import status
from pipelines.promote.promotion import PromotionResult, promote_candidate
from pipelines.promote.scoring import eval_data_hash
from pipelines.registry.mlflow_registry import tracking_uri
from pipelines.retrieval.models import data_hash, model_fingerprint

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
#: Cosine of the query "lattice" and the passage "lattice alpha" under a model that knows
#: "lattice": bags ([CLS]+[SEP], lattice) = (2, 1) and (2, 1, alpha's junk 1) -> 5 / sqrt(30).
LATTICE_COSINE = 5 / math.sqrt(30)


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
    write_parquet(validated / "statements.parquet", STATEMENTS_SCHEMA.empty_table().to_pandas())
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
        "schema: '2.0'\nstages:\n  validate:\n    cmd: mathembed validate\n"
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
            "url": "",  # sample ids: no link, as ingest records for the synthetic sample
        }
    )
    return chunks, queries, qrels, papers


def link_papers(world: World, urls: dict[str, str]) -> None:
    """Give papers the links ingest records when it harvests them from arXiv
    (``papers.url``: their abstract pages)."""
    path = world.paths.validated / "papers.parquet"
    papers = pd.read_parquet(path)
    papers["url"] = [urls.get(str(paper_id), "") for paper_id in papers["paper_id"]]
    write_parquet(path, papers)


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
    return eval_data_hash(world.paths)


def make_world(root: Path, base_model: Path, empty_db: Path | None) -> World:
    write_tables(root, *topic_tables())
    if empty_db is not None:
        (root / "mlruns").mkdir(parents=True)
        shutil.copy(empty_db, root / "mlruns" / "mlflow.db")
    params = Params(
        evaluate=EvaluateParams(ks=(1, 5, 10), foreign_corpora=()),  # no foreign corpus here
        # The worlds' few topic queries can never reach p < promote.alpha: these worlds test
        # the registry's moves on the metric rule; the significance gate has its own tests,
        # and so does the gate on meaning (their bag-of-words models know the topic words, so
        # they are told apart on the named set).
        promote=PromoteParams(
            lock_timeout_seconds=60.0,
            server_timeout_seconds=5.0,
            significance=False,
            gate="named",
        ),
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

    uri = tracking_uri(world.paths)
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
