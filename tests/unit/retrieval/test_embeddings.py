"""pipelines.retrieval.embeddings: Matryoshka truncation, embedding, progress lines (the store
they are kept in: test_vector_store.py)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fixtures_models import tiny_model_dir  # noqa: F401  (session fixture)

from pipelines.retrieval.embeddings import (
    BATCHES_PER_CHUNK,
    EmbeddingProgress,
    chunk_bounds,
    embed_texts,
    embedding_progress_line,
    format_duration,
    length_order,
    matryoshka,
    progress_due,
)


class FakeEncoder:
    """A deterministic stand-in for SentenceTransformer.encode that counts its calls."""

    def __init__(self, dim: int = 6, poison: int | None = None) -> None:
        self.dim = dim
        self.poison = poison
        self.calls: list[dict[str, Any]] = []

    def encode(self, inputs: list[str], **kwargs: Any) -> np.ndarray:
        self.calls.append({"n": len(inputs), **kwargs})
        rows = []
        for text in inputs:
            rng = np.random.default_rng(sum(text.encode()))
            rows.append(rng.normal(size=self.dim))
        matrix = np.asarray(rows, dtype=np.float64)  # float64 on purpose: must come back f32
        if self.poison is not None:
            matrix[self.poison, 0] = np.nan
        return matrix


TEXTS = ["a group ring", "prime number theorem", "graph colouring", "random walk on a tree"]


# --------------------------------------------------------------------------- matryoshka


def test_matryoshka_truncates_then_normalises() -> None:
    matrix = np.array([[3.0, 4.0, 12.0], [1.0, 0.0, 0.0]], dtype=np.float32)
    cut = matryoshka(matrix, 2, normalize=True)
    assert cut.dtype == np.float32 and cut.shape == (2, 2)
    np.testing.assert_allclose(cut, [[0.6, 0.8], [1.0, 0.0]], rtol=1e-6)
    # Normalising first and truncating after would give a shorter-than-unit vector.
    np.testing.assert_allclose(np.linalg.norm(cut, axis=1), [1.0, 1.0], rtol=1e-6)


def test_matryoshka_without_dim_or_normalisation_is_identity() -> None:
    matrix = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(matryoshka(matrix, None, normalize=False), matrix)
    np.testing.assert_array_equal(matryoshka(matrix, 2, normalize=False), matrix[:, :2])


def test_matryoshka_keeps_zero_rows_zero() -> None:
    cut = matryoshka(np.array([[0.0, 0.0, 5.0], [2.0, 0.0, 0.0]]), 2, normalize=True)
    np.testing.assert_array_equal(cut, [[0.0, 0.0], [1.0, 0.0]])
    assert np.isfinite(cut).all()


@pytest.mark.parametrize("dim", [0, 4, -1])
def test_matryoshka_refuses_a_dim_outside_the_model(dim: int) -> None:
    with pytest.raises(ValueError, match="outside 1..3"):
        matryoshka(np.ones((2, 3)), dim, normalize=True)


def test_matryoshka_refuses_a_vector() -> None:
    with pytest.raises(ValueError, match="2-D"):
        matryoshka(np.ones(3), None, normalize=True)


# --------------------------------------------------------------------------- embed_texts


def test_embed_texts_returns_float32_rows_cut_and_normalised() -> None:
    encoder = FakeEncoder(dim=6)
    full = embed_texts(encoder, TEXTS, batch_size=3, dim=None, normalize=False)
    cut = embed_texts(encoder, TEXTS, batch_size=3, dim=4, normalize=True)
    assert full.dtype == np.float32 and full.shape == (4, 6)
    expected = full[:, :4] / np.linalg.norm(full[:, :4], axis=1, keepdims=True)
    np.testing.assert_allclose(cut, expected, rtol=1e-6)
    assert encoder.calls[0]["batch_size"] == 3
    # The model itself must not normalise: that would happen before truncation.
    assert encoder.calls[0]["normalize_embeddings"] is False


def test_embed_texts_refuses_non_finite_embeddings() -> None:
    with pytest.raises(ValueError, match=r"NaN or infinite embeddings for 1 of 4 texts.*retrain"):
        embed_texts(FakeEncoder(poison=2), TEXTS, batch_size=8, dim=None, normalize=True)


def test_embed_texts_refuses_a_bad_batch_size() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        embed_texts(FakeEncoder(), TEXTS, batch_size=0, dim=None, normalize=True)


def test_embed_texts_of_nothing_calls_no_model() -> None:
    encoder = FakeEncoder()
    assert embed_texts(encoder, [], batch_size=4, dim=3, normalize=True).shape == (0, 3)
    assert encoder.calls == []


def test_embed_texts_with_a_real_model_matches_encode(tiny_model_dir: Path) -> None:  # noqa: F811
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(tiny_model_dir), device="cpu")
    raw = model.encode(TEXTS, convert_to_numpy=True)
    cut = embed_texts(model, TEXTS, batch_size=2, dim=16, normalize=True)
    assert cut.shape == (len(TEXTS), 16)
    expected = raw[:, :16] / np.linalg.norm(raw[:, :16], axis=1, keepdims=True)
    np.testing.assert_allclose(cut, expected, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- progress


def many_texts(count: int) -> list[str]:
    """Distinct texts of varied lengths (so the longest-first order is not the input order)."""
    return [f"passage {index} " + "word " * (index * 7 % 13) for index in range(count)]


def test_a_large_set_is_embedded_in_chunks_with_progress_logged(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.INFO, logger="pipelines")
    texts = many_texts(100)
    chunked = FakeEncoder()
    matrix = embed_texts(
        chunked, texts, batch_size=2, dim=None, normalize=False, progress=True, label="passages"
    )
    assert capsys.readouterr().err == ""  # asked for a bar, but stderr is no terminal here

    whole = FakeEncoder().encode(texts)  # one call, in input order
    np.testing.assert_array_equal(matrix, whole.astype(np.float32))
    chunk = 2 * BATCHES_PER_CHUNK
    assert [call["n"] for call in chunked.calls] == [chunk] * 6 + [100 - 6 * chunk]
    assert all(call["show_progress_bar"] is False for call in chunked.calls)
    lines = caplog.messages
    assert lines[0].startswith(f"embedded {chunk}/100 passages ({chunk} %)")
    assert "s left" in lines[0]
    assert lines[-1].startswith("embedded 100 passages in ")
    assert len(lines) == 7  # every chunk is more than a tenth of the set


def test_chunked_embedding_with_a_real_model_matches_one_encode(
    tiny_model_dir: Path,  # noqa: F811
) -> None:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(tiny_model_dir), device="cpu")
    texts = many_texts(40)
    whole = model.encode(texts, batch_size=2, convert_to_numpy=True)
    chunked = embed_texts(model, texts, batch_size=2, dim=None, normalize=False)
    np.testing.assert_allclose(chunked, whole, rtol=1e-5, atol=1e-6)


def test_a_small_set_is_one_call_and_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="pipelines")
    encoder = FakeEncoder()
    embed_texts(encoder, TEXTS, batch_size=1, dim=None, normalize=False)
    assert [call["n"] for call in encoder.calls] == [len(TEXTS)]
    assert caplog.messages == []


def test_progress_is_due_every_tenth_or_ten_seconds() -> None:
    assert progress_due(done=100, total=1000, last_done=0, seconds_since_last=0.1)
    assert not progress_due(done=99, total=1000, last_done=0, seconds_since_last=9.9)
    assert progress_due(done=99, total=1000, last_done=0, seconds_since_last=10.0)
    assert progress_due(done=1000, total=1000, last_done=990, seconds_since_last=0.0)

    now = [0.0]
    tracker = EmbeddingProgress(3393, "passages", clock=lambda: now[0])
    now[0] = 4.0
    assert tracker.advance(50) is None  # 1.5 %, 4 s: not yet
    now[0] = 11.0
    assert tracker.advance(50) == "embedded 100/3,393 passages (2 %), ~6 min 02 s left"
    now[0] = 12.0
    assert tracker.advance(924) == "embedded 1,024/3,393 passages (30 %), ~28 s left"
    now[0] = 40.0
    assert tracker.advance(2369) == "embedded 3,393 passages in 40 s, 85 per second"


def test_progress_words() -> None:
    assert format_duration(0.4) == "0 s"
    assert format_duration(59.6) == "1 min 00 s"
    assert format_duration(3725) == "1 h 02 min"
    assert embedding_progress_line(0, 10, 0.0, "texts") == "embedded 0/10 texts (0 %)"
    assert chunk_bounds(5, 2) == [(0, 2), (2, 4), (4, 5)]
    assert list(length_order(["ab", "abcd", "x", "wxyz"])) == [1, 3, 0, 2]
