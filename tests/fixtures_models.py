"""Tiny, offline models for tests: a 1-layer BERT built from a config, never downloaded.

:func:`build_tiny_bert` writes a plain Hugging Face model folder (``config.json``, weights,
a WordPiece tokenizer built locally from :data:`TINY_VOCAB`) — what ``train.base_model``
may point at. :func:`build_tiny_sentence_transformer` wraps it with a pooling layer and
saves it in the sentence-transformers format — what ``models/candidate/`` holds and what
evaluate, promote and search load.

Use the session fixtures (built once per test session, read-only for tests: copy before
changing): ``tiny_bert_dir`` and ``tiny_model_dir``. ``tests/`` is not a package, but
pytest puts it on ``sys.path``, so a test module imports them with::

    from fixtures_models import tiny_bert_dir, tiny_model_dir  # noqa: F401  (fixtures)

(or ``tests/conftest.py`` re-exports them the same way for every test module).
"""

from __future__ import annotations

import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest

# Whole words the toy data sets use, then single characters and ``##`` continuations, so
# any lower-case ASCII text tokenizes (unknown words fall back to characters).
_WORDS = """
the a of and in is to for with on by that this are be as an at from it we our
group ring field graph prime number theorem lemma proof space map function set
algebra matrix polynomial integer series partition identity sum product order
vertex edge color tree path cycle module ideal curve surface manifold measure
topology homology category functor sheaf lattice code hash random walk
"""
TINY_WORDS = tuple(_WORDS.split())
TINY_VOCAB = list(
    dict.fromkeys(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        + list(TINY_WORDS)
        + list(string.ascii_lowercase + string.digits + string.punctuation)
        + [f"##{char}" for char in string.ascii_lowercase + string.digits]
    )
)

TINY_HIDDEN_SIZE = 32


def build_tiny_bert(folder: Path, *, seed: int = 0) -> Path:
    """Write a randomly initialised 1-layer BERT (hidden size 32) and its tokenizer to ``folder``.

    Deterministic for a given ``seed``. Returns ``folder``.
    """
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    # transformers 5 builds the WordPiece tokenizer from an in-memory vocabulary (a
    # ``vocab_file`` argument is silently ignored there, mapping every word to [UNK]).
    tokenizer = BertTokenizer(
        vocab={token: index for index, token in enumerate(TINY_VOCAB)}, do_lower_case=True
    )
    config = BertConfig(
        vocab_size=len(TINY_VOCAB),
        hidden_size=TINY_HIDDEN_SIZE,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=128,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    torch.manual_seed(seed)
    model = BertModel(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_tiny_sentence_transformer(
    folder: Path, *, pooling: Literal["cls", "mean"] = "mean", seed: int = 0
) -> Path:
    """Write a sentence-transformers model (tiny BERT + ``pooling``) to ``folder``; return it."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    bert_dir = build_tiny_bert(folder.with_name(folder.name + "-bert"), seed=seed)
    transformer = Transformer(str(bert_dir), max_seq_length=64)
    pooling_layer = Pooling(transformer.get_embedding_dimension(), pooling_mode=pooling)
    model = SentenceTransformer(modules=[transformer, pooling_layer], device="cpu")
    model.save(str(folder))
    return folder


class RecordingEncoder:
    """``SentenceTransformer.encode``'s stand-in: a text's vector depends on the text alone."""

    def __init__(self, dim: int = 6, poison: int | None = None) -> None:
        self.dim = dim
        self.poison = poison
        self.embedded: list[str] = []

    def encode(self, inputs: list[str], **kwargs: Any) -> np.ndarray:
        self.embedded.extend(inputs)
        rows = [np.random.default_rng(sum(t.encode())).normal(size=self.dim) for t in inputs]
        matrix = np.asarray(rows, dtype=np.float64)
        if self.poison is not None:
            matrix[self.poison, 0] = np.nan
        return matrix


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """Tiny models run fastest on one thread: OpenMP's thread hand-offs cost more than the
    maths, and far more on a busy 2-core machine. Modules opt in with
    ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``."""
    import torch  # here, not at import time: conftest imports this module for every session

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A plain Hugging Face tiny BERT folder (no sentence-transformers files)."""
    return build_tiny_bert(tmp_path_factory.mktemp("tiny-bert") / "model")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny sentence-transformers model folder (mean pooling, 32 dimensions)."""
    return build_tiny_sentence_transformer(tmp_path_factory.mktemp("tiny-st") / "model")
