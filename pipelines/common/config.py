"""Typed configuration: ``params.yaml`` read once into frozen dataclasses, plus the data layout.

Each stage takes the one section it needs (``params.prepare``, ...). Unknown keys, missing
keys and wrong types are errors that name the key and the file, so a typo in
``params.yaml`` fails loudly instead of silently falling back to a default.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml

PARAMS_FILE = Path("params.yaml")


class ConfigError(ValueError):
    """params.yaml (or a section of it) does not describe a valid configuration."""


@dataclass(frozen=True)
class SampleParams:
    n_papers: int = 96
    seed: int = 7
    start_date: str = "2024-01-01"
    end_date: str = "2024-03-31"


@dataclass(frozen=True)
class IngestParams:
    source: Literal["sample", "arxiv"] = "sample"
    base_url: str = "https://export.arxiv.org"
    categories: tuple[str, ...] = ("math.CO", "math.NT")
    from_date: str = "2024-01-01"
    max_papers: int = 500
    page_size: int = 100
    delay_seconds: float = 3.0
    timeout_seconds: float = 30.0
    max_retries: int = 5
    backoff_seconds: float = 2.0
    max_archive_files: int = 500
    max_file_bytes: int = 10_000_000
    max_archive_bytes: int = 50_000_000


@dataclass(frozen=True)
class PrepareParams:
    chunk_chars: int = 1500
    overlap_chars: int = 200
    min_chunk_chars: int = 50


@dataclass(frozen=True)
class GraphParams:
    extractor: Literal["rules", "llm"] = "rules"
    llm_url: str = ""
    llm_model: str = ""
    llm_api_key_env: str = "MATHEMBED_LLM_API_KEY"
    llm_max_retries: int = 2
    llm_timeout_seconds: float = 60.0
    llm_backoff_seconds: float = 1.0
    cooccurrence_min_papers: int = 2


@dataclass(frozen=True)
class PairsParams:
    max_chunks_per_concept: int = 8
    max_edge_pairs: int = 4
    held_out_fraction: float = 0.2
    min_degree: int = 2
    unseen_paper_fraction: float = 0.1
    validation_fraction: float = 0.1
    seed: int = 13
    qrels_scope: Literal["unnamed", "papers", "mentions"] = "unnamed"


@dataclass(frozen=True)
class ValidateParams:
    min_passage_chars: int = 50
    max_passage_chars: int = 4000
    max_latex_markup_share: float = 0.02
    max_row_failure_fraction: float = 0.05


@dataclass(frozen=True)
class TrainParams:
    base_model: str = "allenai/specter2_base"
    pooling: Literal["cls", "mean"] = "cls"
    loss: Literal["mnrl", "cached_mnrl"] = "mnrl"
    mini_batch_size: int = 32
    matryoshka_dims: tuple[int, ...] = ()
    learning_rate: float = 2e-5
    warmup_ratio: float = 0.1
    epochs: int = 3
    batch_size: int = 32
    max_seq_length: int = 256
    seed: int = 42
    max_steps: int = -1
    device: Literal["auto", "cpu", "cuda"] = "auto"
    logging_steps: int = 10
    save_total_limit: int = 2


@dataclass(frozen=True)
class EvaluateParams:
    ks: tuple[int, ...] = (1, 5, 10, 100)
    dims: tuple[int, ...] = ()
    batch_size: int = 64
    cache: bool = True


@dataclass(frozen=True)
class PromoteParams:
    registered_model: str = "math-embed"
    experiment: str = "mathembed"
    metrics: tuple[str, ...] = ("mrr@10", "ndcg@10")
    min_margin: float = 0.0
    significance: bool = False
    significance_metric: str = "mrr@10"
    alpha: float = 0.05
    test_method: Literal["randomization", "bootstrap", "t"] = "randomization"
    n_resamples: int = 10000
    seed: int = 0
    lock_timeout_seconds: float = 600.0
    server_timeout_seconds: float = 10.0


@dataclass(frozen=True)
class FlowParams:
    schedule: str = "0 2 * * *"
    timezone: str = "UTC"
    gpu_deployment: str = ""
    dvc_remote: str = ""
    network_retries: int = 3
    network_retry_delay_seconds: float = 10.0
    webhook_env: str = "MATHEMBED_WEBHOOK_URL"
    promotion_concurrency_limit: str = "mathembed-promotion"


@dataclass(frozen=True)
class Params:
    sample: SampleParams = SampleParams()
    ingest: IngestParams = IngestParams()
    prepare: PrepareParams = PrepareParams()
    graph: GraphParams = GraphParams()
    pairs: PairsParams = PairsParams()
    validate: ValidateParams = ValidateParams()
    train: TrainParams = TrainParams()
    evaluate: EvaluateParams = EvaluateParams()
    promote: PromoteParams = PromoteParams()
    flow: FlowParams = FlowParams()


T = TypeVar("T")


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every stage command shares: which params.yaml, and which data root."""
    parser.add_argument(
        "--params",
        type=Path,
        default=PARAMS_FILE,
        help="params.yaml to read; default: %(default)s",
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=Path("."),
        help="root the data/, models/, metrics/ and reports/ folders live in; default: %(default)s",
    )


def load_params(path: Path = PARAMS_FILE) -> Params:
    """Read ``path`` into :class:`Params`; every section and key is optional."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise ConfigError(f"{path} not found; run from the repository root") from error
    except yaml.YAMLError as error:
        raise ConfigError(f"{path} is not valid YAML: {error}") from error
    return params_from_mapping(raw or {}, where=str(path))


def params_from_mapping(raw: Mapping[str, Any], where: str = "params") -> Params:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected a mapping of sections, got {type(raw).__name__}")
    return _build(Params, raw, where)


def _build(cls: type[T], raw: Mapping[str, Any], where: str) -> T:
    assert dataclasses.is_dataclass(cls)
    hints = typing.get_type_hints(cls)
    names = [field.name for field in dataclasses.fields(cls)]
    unknown = sorted(set(raw) - set(names))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; known keys are {names}")
    values = {name: _coerce(hints[name], raw[name], f"{where}.{name}") for name in raw}
    return cls(**values)


def _coerce(hint: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, Mapping):
            raise ConfigError(f"{where}: expected a section (mapping), got {value!r}")
        return _build(hint, value, where)  # type: ignore[arg-type]
    if origin is Literal:
        allowed = typing.get_args(hint)
        if value not in allowed:
            raise ConfigError(f"{where}: {value!r} is not one of {list(allowed)}")
        return value
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        (item_type, _ellipsis) = typing.get_args(hint)
        return tuple(_coerce(item_type, item, f"{where}[{i}]") for i, item in enumerate(value))
    if origin in (typing.Union, types.UnionType):
        raise ConfigError(f"{where}: unions are not supported in params")  # pragma: no cover
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if hint in (int, float) and isinstance(value, bool):
        raise ConfigError(f"{where}: expected {hint.__name__}, got {value!r}")
    if not isinstance(value, hint):
        raise ConfigError(f"{where}: expected {hint.__name__}, got {value!r}")
    return value
