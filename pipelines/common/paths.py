"""Where everything lives, relative to one root (the repository by default): the one place
each location is spelled, from datasets to metric files and model folders."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: The small JSON a model folder written by train carries: fingerprint, base model, data.
MODEL_METADATA_FILE = "mathembed.json"
#: The MLflow run a training logged into (live), which promote resumes: in the model folder.
TRAINING_RUN_FILE = "mlflow_run.json"
#: The demo's real corpus, relative to the root: the Stacks Project chapters the mirror is
#: built from (dvc.yaml's sample stage depends on it) and the book's tags search links by.
STACKS_CORPUS_DIR = Path("corpora") / "stacks-project"


@dataclass(frozen=True)
class Paths:
    """Where every dataset lives, relative to one root (the repository by default)."""

    root: Path = Path(".")

    @property
    def mirror(self) -> Path:
        return self.root / "data" / "mirror"

    @property
    def raw(self) -> Path:
        return self.root / "data" / "raw"

    @property
    def quarantine(self) -> Path:
        return self.root / "data" / "quarantine"

    @property
    def processed(self) -> Path:
        return self.root / "data" / "processed"

    @property
    def graph(self) -> Path:
        return self.root / "data" / "graph"

    @property
    def training(self) -> Path:
        return self.root / "data" / "training"

    @property
    def eval(self) -> Path:
        return self.root / "data" / "eval"

    @property
    def graph_cache(self) -> Path:
        """Per-paper graph extraction and scans: kept across runs, not a DVC output."""
        return self.root / "data" / "cache" / "graph"

    @property
    def llm_cache(self) -> Path:
        """LLM replies by content hash: kept across runs, not a DVC output."""
        return self.root / "data" / "cache" / "llm"

    @property
    def negatives_cache(self) -> Path:
        """Hard negatives mined by train, per base model and pairs: kept across runs, not a
        DVC output."""
        return self.root / "data" / "cache" / "negatives"

    @property
    def validated(self) -> Path:
        """The tables downstream stages read: the inputs minus quarantined rows."""
        return self.root / "data" / "validated"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics"

    @property
    def nightly_state(self) -> Path:
        """What the last nightly run pushed, and where: not a DVC output, not in git."""
        return self.root / "metrics" / "nightly.json"

    @property
    def embedding_store(self) -> Path:
        """The per-passage embedding store (a LanceDB database): kept across runs, not a
        DVC output (:mod:`pipelines.retrieval.vector_store`)."""
        return self.root / "data" / "embeddings"

    @property
    def lexical_index(self) -> Path:
        """The corpus's saved BM25 index, beside the embedding store: written by evaluate,
        loaded by search; kept across runs, not a DVC output
        (:mod:`pipelines.retrieval.lexical`)."""
        return self.embedding_store / "bm25"

    @property
    def legacy_embedding_caches(self) -> tuple[Path, ...]:
        """Where older versions kept embeddings (``.npy`` per corpus, ``.npz`` per model):
        removed when the store is first opened."""
        return (self.root / "data" / "cache" / "embeddings", self.root / "data" / "search_index")

    @property
    def models(self) -> Path:
        return self.root / "models"

    @property
    def candidate(self) -> Path:
        """The freshly trained model (sentence-transformers format + ``mathembed.json``)."""
        return self.models / "candidate"

    @property
    def checkpoints(self) -> Path:
        """Trainer checkpoints of an unfinished run (deleted once the candidate is saved)."""
        return self.models / "checkpoints"

    @property
    def reports(self) -> Path:
        return self.root / "reports"

    @property
    def eval_reports(self) -> Path:
        return self.reports / "eval"

    @property
    def data_quality_reports(self) -> Path:
        return self.reports / "data_quality"

    @property
    def gx(self) -> Path:
        """The file-backed Great Expectations context (suites and checkpoints in git)."""
        return self.root / "gx"

    @property
    def mlflow_store(self) -> Path:
        """The local MLflow store, and the promotion lock however MLflow is reached."""
        return self.root / "mlruns"

    @property
    def dvc_lock(self) -> Path:
        return self.root / "dvc.lock"

    def metric_file(self, stage: str) -> Path:
        """``metrics/<stage>.json``: what a stage reports (``eval``, ``train``, ``data``, ...)."""
        return self.metrics / f"{stage}.json"
