"""pipelines.retrieval.models: base models (pooling knob, offline errors), fingerprints, hashes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from fixtures_models import build_tiny_sentence_transformer

from pipelines.retrieval.models import (
    OFFLINE_MINILM,
    ModelLoadError,
    attention_dropout_override,
    data_hash,
    load_base_model,
    model_fingerprint,
    resolve_model_source,
)

TEXTS = ["the group of a ring", "prime number theorem", "a random walk on a graph"]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Mean pooling over the same seed-0 BERT as ``tiny_bert_dir``."""
    return build_tiny_sentence_transformer(tmp_path_factory.mktemp("tiny-st") / "model")


def _hidden_states(model_dir: Path, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """The plain transformer's last hidden states and attention mask, for reference pooling."""
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModel.from_pretrained(str(model_dir)).eval()
    batch = tokenizer(texts, padding=True, truncation=True, max_length=32, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    return hidden, batch["attention_mask"]


def test_pooling_knob_selects_cls_or_mean_of_the_plain_transformer(tiny_bert_dir: Path) -> None:
    hidden, mask = _hidden_states(tiny_bert_dir, TEXTS)
    expected_cls = hidden[:, 0].numpy()
    weights = mask.unsqueeze(-1).float()
    expected_mean = ((hidden * weights).sum(1) / weights.sum(1)).numpy()

    cls_model = load_base_model(str(tiny_bert_dir), pooling="cls", max_seq_length=32, device="cpu")
    mean_model = load_base_model(
        str(tiny_bert_dir), pooling="mean", max_seq_length=32, device="cpu"
    )
    cls_embeddings = cls_model.encode(TEXTS, convert_to_numpy=True)
    mean_embeddings = mean_model.encode(TEXTS, convert_to_numpy=True)

    np.testing.assert_allclose(cls_embeddings, expected_cls, atol=1e-5)
    np.testing.assert_allclose(mean_embeddings, expected_mean, atol=1e-5)
    assert not np.allclose(cls_embeddings, mean_embeddings, atol=1e-3)
    assert cls_model.max_seq_length == 32


def test_pooling_knob_overrides_a_sentence_transformers_folder(
    tiny_model_dir: Path, tiny_bert_dir: Path
) -> None:
    from sentence_transformers.sentence_transformer.modules import Pooling

    model = load_base_model(str(tiny_model_dir), pooling="cls", max_seq_length=32, device="cpu")
    pooling_layers = [module for module in model if isinstance(module, Pooling)]
    assert [layer.pooling_mode for layer in pooling_layers] == ["cls"]
    hidden, _mask = _hidden_states(tiny_bert_dir, TEXTS)
    np.testing.assert_allclose(model.encode(TEXTS), hidden[:, 0].numpy(), atol=1e-5)


def test_uncached_hub_id_offline_names_the_model_the_cache_and_the_fix() -> None:
    from huggingface_hub import constants

    assert constants.HF_HUB_OFFLINE, "tests/conftest.py must switch the Hub off"
    name = "mathembed-tests/no-such-model"
    with pytest.raises(ModelLoadError) as caught:
        load_base_model(name, pooling="cls", max_seq_length=32, device="cpu")
    message = str(caught.value)
    assert repr(name) in message
    assert str(constants.HF_HUB_CACHE) in message
    assert "HF_HUB_OFFLINE=0" in message and "snapshot_download" in message
    assert "train.base_model" in message and OFFLINE_MINILM in message


def test_missing_local_folder_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "model"
    with pytest.raises(ModelLoadError, match="does not exist") as caught:
        load_base_model(str(missing), pooling="mean", max_seq_length=32)
    assert str(missing) in str(caught.value)


def test_unloadable_local_folder_is_named(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ModelLoadError) as caught:
        load_base_model(str(broken), pooling="mean", max_seq_length=32)
    assert f"from folder {broken}" in str(caught.value)


def test_offline_minilm_resolves_to_the_bundled_sentence_transformer() -> None:
    source = Path(resolve_model_source(OFFLINE_MINILM))
    assert (source / "modules.json").is_file()
    model = load_base_model(OFFLINE_MINILM, pooling="mean", max_seq_length=64, device="cpu")
    assert model.get_embedding_dimension() == 384
    assert model.max_seq_length == 64
    assert resolve_model_source("allenai/specter2_base") == "allenai/specter2_base"


def test_fingerprint_is_stable_across_saves_and_sees_weights_and_pooling(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    model = load_base_model(str(tiny_model_dir), pooling="mean", max_seq_length=32, device="cpu")
    first, second = tmp_path / "first", tmp_path / "second"
    model.save(str(first))
    model.save(str(second))
    (second / "README.md").write_text("a different model card", encoding="utf-8")
    (second / "mathembed.json").write_text("{}", encoding="utf-8")
    assert model_fingerprint(first) == model_fingerprint(second) == model_fingerprint(first)
    assert len(model_fingerprint(first)) == 64

    # A library upgrade rewrites version stamps, not the model.
    config = second / "config_sentence_transformers.json"
    stamped = json.loads(config.read_text(encoding="utf-8"))
    stamped["__version__"] = {"sentence_transformers": "99.0"}
    config.write_text(json.dumps(stamped), encoding="utf-8")
    assert model_fingerprint(second) == model_fingerprint(first)

    with torch.no_grad():
        next(model.parameters()).add_(1e-3)
    changed = tmp_path / "changed"
    model.save(str(changed))
    assert model_fingerprint(changed) != model_fingerprint(first)

    cls_pooled = tmp_path / "cls"
    shutil.copytree(first, cls_pooled)
    pooling_config = cls_pooled / "1_Pooling" / "config.json"
    pooling = json.loads(pooling_config.read_text(encoding="utf-8"))
    pooling["pooling_mode"] = "cls"
    pooling_config.write_text(json.dumps(pooling), encoding="utf-8")
    assert model_fingerprint(cls_pooled) != model_fingerprint(first)


def test_fingerprint_of_a_missing_or_empty_folder_fails(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        model_fingerprint(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no model files"):
        model_fingerprint(tmp_path / "empty")


def test_data_hash_depends_on_content_names_and_order_not_folder(tmp_path: Path) -> None:
    one, other = tmp_path / "a", tmp_path / "b"
    one.mkdir()
    other.mkdir()
    for folder in (one, other):
        (folder / "pairs.parquet").write_bytes(b"same bytes")
        (folder / "qrels.parquet").write_bytes(b"other bytes")
    pairs, qrels = one / "pairs.parquet", one / "qrels.parquet"
    assert data_hash(pairs, qrels) == data_hash(other / "pairs.parquet", other / "qrels.parquet")
    assert data_hash(pairs, qrels) != data_hash(qrels, pairs)
    assert data_hash(pairs) != data_hash(qrels)
    renamed = one / "renamed.parquet"
    renamed.write_bytes(b"same bytes")
    assert data_hash(renamed) != data_hash(pairs)
    (other / "pairs.parquet").write_bytes(b"same bytes, changed")
    assert data_hash(other / "pairs.parquet") != data_hash(pairs)
    with pytest.raises(FileNotFoundError, match="missing.parquet"):
        data_hash(one / "missing.parquet")
    with pytest.raises(ValueError, match="at least one"):
        data_hash()


def _dropouts(model: Any, part: str) -> set[float]:
    """The dropout rates of the modules whose path ends in ``part``."""
    return {
        module.p
        for name, module in model[0].auto_model.named_modules()
        if name.endswith(part) and isinstance(module, torch.nn.Dropout)
    }


@pytest.mark.parametrize("folder", ["tiny_bert_dir", "tiny_model_dir"])
def test_attention_dropout_replaces_the_configs_rate_on_attention_weights_alone(
    folder: str, request: pytest.FixtureRequest
) -> None:
    model_dir = request.getfixturevalue(folder)  # built with every dropout at 0
    tuned = load_base_model(
        str(model_dir), pooling="mean", max_seq_length=32, device="cpu", attention_dropout=0.3
    )
    plain = load_base_model(str(model_dir), pooling="mean", max_seq_length=32, device="cpu")

    assert _dropouts(tuned, "attention.self.dropout") == {0.3}
    assert _dropouts(tuned, "attention.output.dropout") == {0.0}  # the hidden states' own
    assert _dropouts(plain, "attention.self.dropout") == {0.0}
    # Inference has no dropout: the same weights embed the same.
    np.testing.assert_allclose(
        tuned.encode(TEXTS, convert_to_numpy=True),
        plain.encode(TEXTS, convert_to_numpy=True),
        atol=1e-6,
    )


def test_attention_dropout_override_uses_the_name_the_architecture_reads() -> None:
    from transformers import BertConfig, DistilBertConfig

    assert attention_dropout_override(BertConfig(), 0.0) == {"attention_probs_dropout_prob": 0.0}
    assert attention_dropout_override(DistilBertConfig(), 0.2) == {"attention_dropout": 0.2}
    assert attention_dropout_override(object(), 0.0) == {}  # none: the model's own is kept
