"""Typed configuration: ``params.yaml`` read once into frozen dataclasses.

Each stage takes the one section it needs (``params.prepare``, ...). Unknown keys, wrong
types, repeated keys and out-of-range values are errors that name the key and the file, so a
typo in ``params.yaml`` fails loudly instead of silently falling back to a default or running
with a value that quietly does the wrong thing. A knob's allowed values are declared on its
field (``Annotated[float, Range(0, 1)]``) and checked by the loader; knobs that only make
sense together are checked by their stage (``train.*`` in ``pipelines/train/setup.py``,
``prepare.*`` in ``pipelines/prepare/stage.py``).

The project's own ``params.yaml`` is the one place every knob's default is written: a key
left out of another params file (or of a section built in code, ``TrainParams(epochs=1)``)
takes the project file's value, never a second default written here.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import types
import typing
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, TypeVar

import yaml

from pipelines.common.allowed import (
    Allowed,
    Count,
    CronSchedule,
    Delay,
    HttpUrl,
    IsoDate,
    MetricName,
    Name,
    NonEmpty,
    Range,
    Retries,
    Seconds,
    Seed,
    TimeZoneName,
)

PARAMS_FILE = Path("params.yaml")


def _project_params_file() -> Path:
    """The project's params.yaml: the checkout's, or the copy an installed wheel carries."""
    checkout = Path(__file__).resolve().parents[2] / "params.yaml"
    installed = Path(sys.prefix) / "share" / "mathembed" / "params.yaml"
    return checkout if checkout.is_file() else installed


#: The project's params.yaml: the default of every knob.
PROJECT_PARAMS_FILE = _project_params_file()


class ConfigError(ValueError):
    """params.yaml (or a section of it) does not describe a valid configuration."""


# -- reading YAML ----------------------------------------------------------------------


class _DuplicateKeyError(yaml.YAMLError):
    """A mapping names one key twice (PyYAML would keep the last one silently)."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a repeated key, as DVC does for the same file: a second
    ``train:`` block would otherwise replace the first one whole."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first_line: dict[Any, int] = {}
        for key_node, _value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<:` merges defaults that later keys may override
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if not isinstance(key, Hashable):
                continue  # PyYAML itself refuses an unhashable key
            if key in first_line:
                raise _DuplicateKeyError(
                    f"duplicate key {key!r} at line {line} (first at line {first_line[key]}); "
                    "keep one and merge the two"
                )
            first_line[key] = line
        return super().construct_mapping(node, deep=deep)


def _read_yaml(path: Path) -> Any:
    """``path`` parsed with repeated keys refused; errors as one line naming the file."""
    text = path.read_text(encoding="utf-8")
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader)
    except _DuplicateKeyError as error:
        raise ConfigError(f"{path}: {error}") from error
    except yaml.YAMLError as error:
        # PyYAML's message spans lines; the command-line contract is one line.
        raise ConfigError(f"{path} is not valid YAML: {' '.join(str(error).split())}") from error


# -- sections --------------------------------------------------------------------------


class _FromParamsYaml:
    """Stands for "the value in the project's params.yaml" until a section is built."""

    def __repr__(self) -> str:
        return "FROM_PARAMS_YAML"


FROM_PARAMS_YAML: Any = _FromParamsYaml()


class _Section:
    """A ``params.yaml`` section: a field left unset takes the project file's value."""

    section: ClassVar[str]

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self), include_extras=True)
        for item in dataclasses.fields(self):  # type: ignore[arg-type]
            if getattr(self, item.name) is FROM_PARAMS_YAML:
                value = project_default(self.section, item.name, hints[item.name])
                object.__setattr__(self, item.name, value)


@functools.cache
def _project_params() -> dict[str, Any]:
    try:
        raw = _read_yaml(PROJECT_PARAMS_FILE)
    except (OSError, ConfigError) as error:
        raise ConfigError(
            f"{PROJECT_PARAMS_FILE} (the project's defaults) cannot be read: {error}"
        ) from error
    return raw if isinstance(raw, dict) else {}


def project_default(section: str, key: str, hint: Any) -> Any:
    """``section.key`` of the project's params.yaml, typed as ``hint``."""
    values = _project_params().get(section)
    if not isinstance(values, Mapping) or key not in values:
        raise ConfigError(
            f"{PROJECT_PARAMS_FILE} lacks {section}.{key}: every knob's default is written "
            "there; add it"
        )
    return _coerce(hint, values[key], f"{PROJECT_PARAMS_FILE}: {section}.{key}")


@dataclass(frozen=True)
class SampleParams(_Section):
    section: ClassVar[str] = "sample"

    # "stacks-project": the embedded real chapters (corpora/stacks-project/); "synthetic":
    # the generator, for fault tests and scale runs (n_papers and seed apply to it only).
    corpus: Literal["stacks-project", "synthetic"] = FROM_PARAMS_YAML
    n_papers: Count = FROM_PARAMS_YAML
    seed: Seed = FROM_PARAMS_YAML
    start_date: Annotated[str, IsoDate()] = FROM_PARAMS_YAML
    end_date: Annotated[str, IsoDate()] = FROM_PARAMS_YAML


@dataclass(frozen=True)
class IngestParams(_Section):
    section: ClassVar[str] = "ingest"

    source: Literal["sample", "arxiv"] = FROM_PARAMS_YAML
    base_url: Annotated[str, HttpUrl()] = FROM_PARAMS_YAML
    categories: Annotated[tuple[Name, ...], NonEmpty()] = FROM_PARAMS_YAML
    from_date: Annotated[str, IsoDate(time_allowed=True)] = FROM_PARAMS_YAML
    max_papers: Count = FROM_PARAMS_YAML
    page_size: Count = FROM_PARAMS_YAML
    delay_seconds: Delay = FROM_PARAMS_YAML
    timeout_seconds: Seconds = FROM_PARAMS_YAML
    max_retries: Retries = FROM_PARAMS_YAML
    backoff_seconds: Delay = FROM_PARAMS_YAML
    max_archive_files: Count = FROM_PARAMS_YAML
    max_file_bytes: Count = FROM_PARAMS_YAML
    max_archive_bytes: Count = FROM_PARAMS_YAML


@dataclass(frozen=True)
class PrepareParams(_Section):
    section: ClassVar[str] = "prepare"

    chunk_chars: int = FROM_PARAMS_YAML
    overlap_chars: int = FROM_PARAMS_YAML
    min_chunk_chars: int = FROM_PARAMS_YAML


@dataclass(frozen=True)
class GraphParams(_Section):
    section: ClassVar[str] = "graph"

    extractor: Literal["rules", "llm"] = FROM_PARAMS_YAML
    llm_url: str = FROM_PARAMS_YAML
    llm_model: str = FROM_PARAMS_YAML
    llm_api_key_env: str = FROM_PARAMS_YAML
    llm_max_retries: Retries = FROM_PARAMS_YAML
    llm_timeout_seconds: Seconds = FROM_PARAMS_YAML
    llm_backoff_seconds: Delay = FROM_PARAMS_YAML
    cooccurrence_min_papers: Count = FROM_PARAMS_YAML


@dataclass(frozen=True)
class PairsParams(_Section):
    section: ClassVar[str] = "pairs"

    max_chunks_per_concept: Count = FROM_PARAMS_YAML
    max_edge_pairs: Annotated[int, Range(0)] = FROM_PARAMS_YAML  # 0: no graph-edge pairs
    # 0 held out leaves no eval queries, 1 no training concepts.
    held_out_fraction: Annotated[float, Range(0, 1, low_open=True, high_open=True)] = (
        FROM_PARAMS_YAML
    )
    min_degree: Count = FROM_PARAMS_YAML
    # 1 would keep every paper's chunks out of training.
    unseen_paper_fraction: Annotated[float, Range(0, 1, high_open=True)] = FROM_PARAMS_YAML
    validation_fraction: Annotated[float, Range(0, 1, high_open=True)] = FROM_PARAMS_YAML
    seed: Seed = FROM_PARAMS_YAML
    qrels_scope: Literal["defining", "unnamed", "papers", "mentions"] = FROM_PARAMS_YAML
    # A query with more of the corpus relevant than this is no test of retrieval: left out.
    max_relevant_share: Annotated[float, Range(0, 1, low_open=True)] = FROM_PARAMS_YAML
    hard_negatives: bool = FROM_PARAMS_YAML
    max_structure_pairs: Annotated[int, Range(0)] = FROM_PARAMS_YAML  # 0: none


@dataclass(frozen=True)
class ValidateParams(_Section):
    section: ClassVar[str] = "validate"

    min_passage_chars: Annotated[int, Range(0)] = FROM_PARAMS_YAML
    max_passage_chars: Count = FROM_PARAMS_YAML
    max_latex_markup_share: Annotated[float, Range(0, 1)] = FROM_PARAMS_YAML
    max_row_failure_fraction: Annotated[float, Range(0, 1)] = FROM_PARAMS_YAML
    min_queries: Count = FROM_PARAMS_YAML
    max_query_relevant_share: Annotated[float, Range(0, 1, low_open=True)] = FROM_PARAMS_YAML


@dataclass(frozen=True)
class TrainParams(_Section):
    section: ClassVar[str] = "train"

    base_model: str = FROM_PARAMS_YAML
    pooling: Literal["cls", "mean"] = FROM_PARAMS_YAML
    loss: Literal["mnrl", "cached_mnrl"] = FROM_PARAMS_YAML
    mini_batch_size: int = FROM_PARAMS_YAML
    matryoshka_dims: tuple[int, ...] = FROM_PARAMS_YAML
    learning_rate: float = FROM_PARAMS_YAML
    warmup_ratio: float = FROM_PARAMS_YAML
    epochs: int = FROM_PARAMS_YAML
    batch_size: int = FROM_PARAMS_YAML
    max_seq_length: int = FROM_PARAMS_YAML
    seed: Seed = FROM_PARAMS_YAML
    max_steps: int = FROM_PARAMS_YAML
    device: Literal["auto", "cpu", "cuda"] = FROM_PARAMS_YAML
    logging_steps: int = FROM_PARAMS_YAML
    max_validation_pairs: Count = FROM_PARAMS_YAML
    save_total_limit: int = FROM_PARAMS_YAML
    # The other train knobs are checked together by pipelines/train/setup.py check_params.


@dataclass(frozen=True)
class EvaluateParams(_Section):
    section: ClassVar[str] = "evaluate"

    ks: Annotated[tuple[Count, ...], NonEmpty()] = FROM_PARAMS_YAML
    dims: tuple[Count, ...] = FROM_PARAMS_YAML  # (): the candidate's own
    batch_size: Count = FROM_PARAMS_YAML
    cache: bool = FROM_PARAMS_YAML


@dataclass(frozen=True)
class PromoteParams(_Section):
    section: ClassVar[str] = "promote"

    registered_model: Name = FROM_PARAMS_YAML
    experiment: Name = FROM_PARAMS_YAML
    metrics: Annotated[tuple[Annotated[str, MetricName()], ...], NonEmpty()] = FROM_PARAMS_YAML
    # Metrics lie in [0, 1]: a negative margin promotes a worse model.
    min_margin: Annotated[float, Range(0, 1, high_open=True)] = FROM_PARAMS_YAML
    significance: bool = FROM_PARAMS_YAML
    significance_metric: Annotated[str, MetricName()] = FROM_PARAMS_YAML
    # p < alpha: alpha >= 1 lets every p-value through, alpha <= 0 none.
    alpha: Annotated[float, Range(0, 1, low_open=True, high_open=True)] = FROM_PARAMS_YAML
    test_method: Literal["randomization", "bootstrap", "t"] = FROM_PARAMS_YAML
    n_resamples: Count = FROM_PARAMS_YAML
    seed: Seed = FROM_PARAMS_YAML
    lock_timeout_seconds: Seconds = FROM_PARAMS_YAML
    server_timeout_seconds: Seconds = FROM_PARAMS_YAML


@dataclass(frozen=True)
class FlowParams(_Section):
    section: ClassVar[str] = "flow"

    schedule: Annotated[str, CronSchedule()] = FROM_PARAMS_YAML
    timezone: Annotated[str, TimeZoneName()] = FROM_PARAMS_YAML
    gpu_deployment: str = FROM_PARAMS_YAML
    dvc_remote: str = FROM_PARAMS_YAML
    network_retries: Retries = FROM_PARAMS_YAML
    network_retry_delay_seconds: Delay = FROM_PARAMS_YAML
    webhook_env: Name = FROM_PARAMS_YAML
    promotion_concurrency_limit: Name = FROM_PARAMS_YAML
    task_timeout_seconds: Seconds = FROM_PARAMS_YAML
    train_timeout_seconds: Seconds = FROM_PARAMS_YAML


@dataclass(frozen=True)
class Params:
    sample: SampleParams = field(default_factory=SampleParams)
    ingest: IngestParams = field(default_factory=IngestParams)
    prepare: PrepareParams = field(default_factory=PrepareParams)
    graph: GraphParams = field(default_factory=GraphParams)
    pairs: PairsParams = field(default_factory=PairsParams)
    validate: ValidateParams = field(default_factory=ValidateParams)
    train: TrainParams = field(default_factory=TrainParams)
    evaluate: EvaluateParams = field(default_factory=EvaluateParams)
    promote: PromoteParams = field(default_factory=PromoteParams)
    flow: FlowParams = field(default_factory=FlowParams)


T = TypeVar("T")


def load_params(path: Path = PARAMS_FILE) -> Params:
    """Read ``path`` into :class:`Params`; every section and key is optional."""
    try:
        raw = _read_yaml(path)
    except FileNotFoundError as error:
        raise ConfigError(
            f"{path} not found; check --root and --params (a relative --params is read from --root)"
        ) from error
    except OSError as error:  # a folder, no permission: configuration, not a crash
        message = f"{path} cannot be read ({error.strerror}); pass a params file"
        raise ConfigError(message) from error
    except UnicodeDecodeError as error:
        message = f"{path} is not UTF-8 text ({error.reason}); pass a params file"
        raise ConfigError(message) from error
    return params_from_mapping(raw or {}, where=str(path))


def params_from_mapping(raw: Mapping[str, Any], where: str = "params") -> Params:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected a mapping of sections, got {type(raw).__name__}")
    return _build(Params, raw, where)


def _build(cls: type[T], raw: Mapping[str, Any], where: str) -> T:
    assert dataclasses.is_dataclass(cls)
    hints = typing.get_type_hints(cls, include_extras=True)
    names = [field.name for field in dataclasses.fields(cls)]
    unknown = sorted(set(raw) - set(names))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; known keys are {names}")
    values = {name: _coerce(hints[name], raw[name], f"{where}.{name}") for name in raw}
    return cls(**values)


def _coerce(hint: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if origin is Annotated:
        (base, *rules) = typing.get_args(hint)
        coerced = _coerce(base, value, where)
        for rule in rules:
            if isinstance(rule, Allowed) and not rule.accepts(coerced):
                shown = list(coerced) if isinstance(coerced, tuple) else coerced
                raise ConfigError(f"{where}: got {shown!r}; allowed: {rule.describe()}")
        return coerced
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
