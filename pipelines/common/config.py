"""Typed configuration: ``params.yaml`` read once into frozen pydantic dataclasses.

Each stage takes the one section it needs (``params.prepare``, ...). Pydantic checks every
value against its field: unknown keys, wrong types (``true`` is no number, ``"3"`` no int),
repeated keys and out-of-range values are errors that name the key and the file, in one
line, so a typo in ``params.yaml`` fails loudly instead of silently falling back to a
default or running with a value that quietly does the wrong thing. A knob's allowed values
are declared on its field (``Annotated[Float, Range(0, 1)]``, :mod:`pipelines.common.allowed`)
and checked when a file is read; knobs that only make sense together are checked by their
stage (``train.*`` in ``pipelines/train/setup.py``, ``prepare.*`` in
``pipelines/prepare/stage.py``).

The file is read by :mod:`pipelines.common.params_yaml` (repeated keys refused, numbers
read as YAML 1.2 and DVC read them).

The project's own ``params.yaml`` is the one place every knob's default is written: a key
left out of another params file (or of a section built in code, ``TrainParams(epochs=1)``)
takes the project file's value, never a second default written here. Sections are pydantic
*dataclasses*, so ``dataclasses.replace`` and ``dataclasses.asdict`` work on them (and
validate again).
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import typing
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import ConfigDict, TypeAdapter, ValidationError
from pydantic.dataclasses import dataclass as pydantic_dataclass
from pydantic_core import ErrorDetails

from pipelines.common.allowed import (
    FILE_CONTEXT,
    NOT_ALLOWED,
    UNION_TAGS,
    AutoOr,
    Bool,
    Count,
    CronSchedule,
    Delay,
    Float,
    HttpUrl,
    Int,
    IsoDate,
    MetricName,
    Name,
    NonEmpty,
    Range,
    Retries,
    Seconds,
    Seed,
    Str,
    TimeZoneName,
)
from pipelines.common.params_yaml import ConfigError, read_yaml

PARAMS_FILE = Path("params.yaml")


def _project_params_file() -> Path:
    """The project's params.yaml: the checkout's, or the copy an installed wheel carries."""
    checkout = Path(__file__).resolve().parents[2] / "params.yaml"
    installed = Path(sys.prefix) / "share" / "mathembed" / "params.yaml"
    return checkout if checkout.is_file() else installed


#: The project's params.yaml: the default of every knob.
PROJECT_PARAMS_FILE = _project_params_file()


# -- sections --------------------------------------------------------------------------


class _FromParamsYaml:
    """Stands for "the value in the project's params.yaml" until a section is built."""

    def __repr__(self) -> str:
        return "FROM_PARAMS_YAML"


FROM_PARAMS_YAML: Any = _FromParamsYaml()

_S = TypeVar("_S")

#: Every section: a key it does not declare is an error (pydantic's extra="forbid").
SECTION_CONFIG = ConfigDict(extra="forbid")


class _Section:
    """A ``params.yaml`` section: a field left unset takes the project file's value."""

    section: ClassVar[str]

    def __post_init__(self) -> None:
        # Pydantic leaves a default unvalidated; the project file's value is checked here.
        section_type: type = type(self)
        hints = _type_hints(section_type)
        for item in dataclasses.fields(self):  # type: ignore[arg-type]
            if getattr(self, item.name) is FROM_PARAMS_YAML:
                value = project_default(self.section, item.name, hints[item.name])
                object.__setattr__(self, item.name, value)


def _config_errors(cls: type[_S]) -> type[_S]:
    """``cls`` whose constructor (and so ``dataclasses.replace``) raises :class:`ConfigError`
    like the loader, not pydantic's ValidationError: one line naming ``section.key``."""
    validating_init = cls.__init__

    @functools.wraps(validating_init)
    def __init__(self: _S, *args: Any, **kwargs: Any) -> None:
        try:
            validating_init(self, *args, **kwargs)
        except ValidationError as error:
            section = getattr(cls, "section", None)
            prefix = (section,) if section else ()
            raise _config_error(error, f"{cls.__name__}(...)", prefix) from error

    cls.__init__ = __init__  # type: ignore[method-assign,assignment]
    return cls


@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)


@functools.cache
def _project_params() -> dict[str, Any]:
    try:
        raw = read_yaml(PROJECT_PARAMS_FILE)
    except (OSError, ConfigError) as error:
        raise ConfigError(
            f"{PROJECT_PARAMS_FILE} (the project's defaults) cannot be read: {error}"
        ) from error
    return raw if isinstance(raw, dict) else {}


@functools.cache
def _adapter(hint: Any) -> TypeAdapter[Any]:
    return TypeAdapter(hint)


def project_default(section: str, key: str, hint: Any) -> Any:
    """``section.key`` of the project's params.yaml, checked as ``hint``."""
    values = _project_params().get(section)
    if not isinstance(values, Mapping) or key not in values:
        raise ConfigError(
            f"{PROJECT_PARAMS_FILE} lacks {section}.{key}: every knob's default is written "
            "there; add it"
        )
    try:
        return _adapter(hint).validate_python(values[key], context=FILE_CONTEXT)
    except ValidationError as error:
        raise _config_error(error, str(PROJECT_PARAMS_FILE), (section, key)) from error


@_config_errors
@pydantic_dataclass(frozen=True, config=SECTION_CONFIG)
class SampleParams(_Section):
    section: ClassVar[str] = "sample"

    # "stacks-project": the embedded real chapters (corpora/stacks-project/); "synthetic":
    # the generator, for fault tests and scale runs (n_papers and seed apply to it only);
    # "blueprints": the Lean blueprint projects in blueprints_dir (a folder outside the
    # checkout, so a path: relative to the project root).
    corpus: Literal["stacks-project", "synthetic", "blueprints"] = FROM_PARAMS_YAML
    blueprints_dir: Annotated[Str, NonEmpty()] = FROM_PARAMS_YAML
    n_papers: Count = FROM_PARAMS_YAML
    seed: Seed = FROM_PARAMS_YAML
    start_date: Annotated[Str, IsoDate()] = FROM_PARAMS_YAML
    end_date: Annotated[Str, IsoDate()] = FROM_PARAMS_YAML


@_config_errors
@pydantic_dataclass(frozen=True, config=SECTION_CONFIG)
class IngestParams(_Section):
    section: ClassVar[str] = "ingest"

    source: Literal["sample", "arxiv"] = FROM_PARAMS_YAML
    base_url: Annotated[Str, HttpUrl()] = FROM_PARAMS_YAML
    categories: Annotated[tuple[Name, ...], NonEmpty()] = FROM_PARAMS_YAML
    from_date: Annotated[Str, IsoDate(time_allowed=True)] = FROM_PARAMS_YAML
    max_papers: Count = FROM_PARAMS_YAML
    page_size: Count = FROM_PARAMS_YAML
    delay_seconds: Delay = FROM_PARAMS_YAML
    timeout_seconds: Seconds = FROM_PARAMS_YAML
    max_retries: Retries = FROM_PARAMS_YAML
    backoff_seconds: Delay = FROM_PARAMS_YAML
    max_archive_files: Count = FROM_PARAMS_YAML
    max_file_bytes: Count = FROM_PARAMS_YAML
    max_archive_bytes: Count = FROM_PARAMS_YAML


@_config_errors
@pydantic_dataclass(frozen=True, config=SECTION_CONFIG)
class PrepareParams(_Section):
    section: ClassVar[str] = "prepare"

    chunk_chars: Int = FROM_PARAMS_YAML
    overlap_chars: Int = FROM_PARAMS_YAML
    min_chunk_chars: Int = FROM_PARAMS_YAML
    # Consecutive theorem-like blocks share a passage while it stays within this many
    # characters (at most chunk_chars): 0 gives every block its own passage.
    pack_chars: Annotated[Int, Range(0, 100_000)] = FROM_PARAMS_YAML
    # One paper's cleaning, in a worker process that is stopped past it (issue 23); at most
    # the flow's hour for the data stages, which it exists to protect.
    paper_timeout_seconds: Annotated[Float, Range(1, 3600)] = FROM_PARAMS_YAML
    # All papers' cleaning in one run: papers not started by then wait for the next run
    # (issue 29); with graph's, within the flow's hour for the data stages.
    stage_budget_seconds: Annotated[Float, Range(1, 3600)] = FROM_PARAMS_YAML


@_config_errors
@pydantic_dataclass(frozen=True, config=SECTION_CONFIG)
class GraphParams(_Section):
    section: ClassVar[str] = "graph"

    extractor: Literal["rules", "llm"] = FROM_PARAMS_YAML
    llm_url: Str = FROM_PARAMS_YAML
    llm_model: Str = FROM_PARAMS_YAML
    llm_api_key_env: Str = FROM_PARAMS_YAML
    llm_max_retries: Retries = FROM_PARAMS_YAML
    llm_timeout_seconds: Seconds = FROM_PARAMS_YAML
    llm_backoff_seconds: Delay = FROM_PARAMS_YAML
    cooccurrence_min_papers: Count = FROM_PARAMS_YAML
    # One paper's extraction or scan, in a worker process stopped past it (issue 23).
    paper_timeout_seconds: Annotated[Float, Range(1, 3600)] = FROM_PARAMS_YAML
    # All papers' extraction and scan in one run: papers not started by then wait for the
    # next run (issue 29); with prepare's, within the flow's hour for the data stages.
    stage_budget_seconds: Annotated[Float, Range(1, 3600)] = FROM_PARAMS_YAML
    # Retries of a paper whose work failed, 1, 2, 4, ... nights apart (pipelines/graph/
    # retries.py); then it waits for a larger budget, a code or params change (issue 29).
    max_paper_retries: Annotated[Int, Range(0, 10)] = FROM_PARAMS_YAML


@_config_errors
@pydantic_dataclass(frozen=True, config=SECTION_CONFIG)
class PairsParams(_Section):
    section: ClassVar[str] = "pairs"

    max_chunks_per_concept: Count = FROM_PARAMS_YAML
    max_edge_pairs: Annotated[Int, Range(0)] = FROM_PARAMS_YAML  # 0: no graph-edge pairs
    # 0 held out leaves no eval queries, 1 no training concepts.
    held_out_fraction: Annotated[Float, Range(0, 1, low_open=True, high_open=True)] = (
        FROM_PARAMS_YAML
    )
    min_degree: Count = FROM_PARAMS_YAML
    # 1 would keep every paper's chunks out of training.
    unseen_paper_fraction: Annotated[Float, Range(0, 1, high_open=True)] = FROM_PARAMS_YAML
    validation_fraction: Annotated[Float, Range(0, 1, high_open=True)] = FROM_PARAMS_YAML
    seed: Seed = FROM_PARAMS_YAML
    qrels_scope: Literal["defining", "unnamed", "papers", "mentions"] = FROM_PARAMS_YAML
    # A query with more of the corpus relevant than this is no test of retrieval: left out.
    max_relevant_share: Annotated[Float, Range(0, 1, low_open=True)] = FROM_PARAMS_YAML
    hard_negatives: Bool = FROM_PARAMS_YAML
    max_structure_pairs: Annotated[Int, Range(0)] = FROM_PARAMS_YAML  # 0: none
    # Descriptions written by people (pipelines.pairs.descriptions): training pairs, and
    # the ``described`` eval set from the held-out statements' slogans and citing sentences.
    # 0: no statement held out (no described set); 1: none left to train on.
    held_out_statement_fraction: Annotated[Float, Range(0, 1, high_open=True)] = FROM_PARAMS_YAML
    max_citing_pairs: Annotated[Int, Range(0)] = FROM_PARAMS_YAML  # 0: none
    slogan_pairs: Bool = FROM_PARAMS_YAML
    description_pairs: Bool = FROM_PARAMS_YAML
    masked_name_pairs: Bool = FROM_PARAMS_YAML
    max_cited_statements: Count = FROM_PARAMS_YAML
    max_description_chars: Annotated[Int, Range(40)] = FROM_PARAMS_YAML
    described_per_statement: Count = FROM_PARAMS_YAML


@_config_errors
@pydantic_dataclass(frozen=True, config=SECTION_CONFIG)
class ValidateParams(_Section):
    section: ClassVar[str] = "validate"

    min_passage_chars: Annotated[Int, Range(0)] = FROM_PARAMS_YAML
    max_passage_chars: Count = FROM_PARAMS_YAML
    max_latex_markup_share: Annotated[Float, Range(0, 1)] = FROM_PARAMS_YAML
    max_row_failure_fraction: Annotated[Float, Range(0, 1)] = FROM_PARAMS_YAML
    max_paper_row_failure_fraction: Annotated[Float, Range(0, 1)] = FROM_PARAMS_YAML
    min_queries: Count = FROM_PARAMS_YAML
    min_described_queries: Annotated[Int, Range(0)] = FROM_PARAMS_YAML  # 0: none required
    max_query_relevant_share: Annotated[Float, Range(0, 1, low_open=True)] = FROM_PARAMS_YAML


@_config_errors
@pydantic_dataclass(frozen=True, config=SECTION_CONFIG)
class TrainParams(_Section):
    section: ClassVar[str] = "train"

    base_model: Str = FROM_PARAMS_YAML
    pooling: Literal["cls", "mean"] = FROM_PARAMS_YAML
    loss: Literal["mnrl", "cached_mnrl"] = FROM_PARAMS_YAML
    mini_batch_size: Int = FROM_PARAMS_YAML
    matryoshka_dims: tuple[Int, ...] = FROM_PARAMS_YAML
    learning_rate: Float = FROM_PARAMS_YAML
    warmup_ratio: Float = FROM_PARAMS_YAML
    epochs: Int = FROM_PARAMS_YAML
    batch_size: Int = FROM_PARAMS_YAML
    max_seq_length: Int = FROM_PARAMS_YAML
    seed: Seed = FROM_PARAMS_YAML
    max_steps: Int = FROM_PARAMS_YAML
    device: Literal["auto", "cpu", "cuda"] = FROM_PARAMS_YAML
    # Data-parallel processes (pipelines/train/distributed.py): "auto" is one per visible GPU.
    processes: AutoOr[Annotated[Int, Range(1, 64)]] = FROM_PARAMS_YAML
    logging_steps: Int = FROM_PARAMS_YAML
    max_validation_pairs: Count = FROM_PARAMS_YAML
    save_total_limit: Int = FROM_PARAMS_YAML
    eval_steps: Count = FROM_PARAMS_YAML
    best_checkpoint_metric: Literal["mrr@10", "ndcg@10"] = FROM_PARAMS_YAML
    # Evaluations in a row without a better validation score before training stops; 0: never.
    early_stopping_patience: Annotated[Int, Range(0)] = FROM_PARAMS_YAML
    max_validation_corpus: Count = FROM_PARAMS_YAML
    # Also ask the validation anchors over plain windows of the papers (the transfer sets'
    # format): the checkpoint and mixing weight are chosen on both (train/validation.py).
    validation_windows: Bool = FROM_PARAMS_YAML
    mined_negatives: Bool = FROM_PARAMS_YAML
    # A candidate scoring within this share of the positive's score may be a false negative.
    mined_negative_margin: Annotated[Float, Range(0, 1, high_open=True)] = FROM_PARAMS_YAML
    # Weight-space mixing with the base model (pipelines/train/mixing.py): 1 is the kept
    # checkpoint as it is; 0, the base alone, would throw the training away.
    mixing_weights: Annotated[
        tuple[Annotated[Float, Range(0, 1, low_open=True)], ...], NonEmpty()
    ] = FROM_PARAMS_YAML
    # Where training starts (pipelines/train/warm_start.py): the base model, or the
    # registry's @champion (new papers' pairs plus replay_ratio old pairs per new one).
    init: Literal["base", "champion"] = FROM_PARAMS_YAML
    replay_ratio: Annotated[Float, Range(0, 100)] = FROM_PARAMS_YAML
    # Dropout on the attention weights while training (inference has none); at 0 the
    # attention runs its fused kernel, which dropout would send down the slow path.
    attention_dropout: Annotated[Float, Range(0, 1, high_open=True)] = FROM_PARAMS_YAML
    # The other train knobs are checked together by pipelines/train/setup.py check_params.


@_config_errors
@pydantic_dataclass(frozen=True, config=SECTION_CONFIG)
class EvaluateParams(_Section):
    section: ClassVar[str] = "evaluate"

    ks: Annotated[tuple[Count, ...], NonEmpty()] = FROM_PARAMS_YAML
    dims: tuple[Count, ...] = FROM_PARAMS_YAML  # (): the candidate's own
    batch_size: Count = FROM_PARAMS_YAML
    cache: Bool = FROM_PARAMS_YAML
    # Other corpora's held-out queries and passages (pipelines/evaluate/foreign.py), relative
    # to the project root: the transfer_corpus set asks the first this night's corpus does
    # not hold. []: none.
    foreign_corpora: tuple[Annotated[Str, NonEmpty()], ...] = FROM_PARAMS_YAML


#: How search orders passages (pipelines/retrieval/lexical.py): by the model's cosine alone,
#: fused with BM25's ranking, or fused with BM25 weighted by the query's shape.
Ranking = Literal["dense", "hybrid", "adaptive"]


@_config_errors
@pydantic_dataclass(frozen=True, config=SECTION_CONFIG)
class SearchParams(_Section):
    section: ClassVar[str] = "search"

    # Passages from which search uses an approximate index (pipelines/search/index.py);
    # exact below. An IVF index trains on the corpus: a few hundred passages at least.
    ann_threshold: Annotated[Int, Range(256, 10**10)] = FROM_PARAMS_YAML
    # IVF partitions searched per query: more is slower and closer to exact.
    ann_nprobes: Annotated[Int, Range(1, 4096)] = FROM_PARAMS_YAML
    # Who answers (pipelines/search/remote_index.py): "embedded" (the exact or faiss index
    # in this process) or "qdrant" (a Qdrant server at engine_url, infra/, at any size).
    engine: Literal["embedded", "qdrant"] = FROM_PARAMS_YAML
    engine_url: Annotated[Str, HttpUrl()] = FROM_PARAMS_YAML
    # How hits are ordered unless a request says otherwise (--ranking, ranking=); chosen by
    # benchmarks/bench_search_quality.py. A hit's score is the cosine whichever orders.
    ranking: Ranking = FROM_PARAMS_YAML
    # The best passage's cosine below which a search says there is no close match in the
    # corpus: the model's scale, calibrated by benchmarks/bench_search_quality.py.
    miss_threshold: Annotated[Float, Range(-1, 1)] = FROM_PARAMS_YAML


@_config_errors
@pydantic_dataclass(frozen=True, config=SECTION_CONFIG)
class PromoteParams(_Section):
    section: ClassVar[str] = "promote"

    registered_model: Name = FROM_PARAMS_YAML
    experiment: Name = FROM_PARAMS_YAML
    metrics: Annotated[tuple[Annotated[Str, MetricName()], ...], NonEmpty()] = FROM_PARAMS_YAML
    # Metrics lie in [0, 1]: a negative margin promotes a worse model.
    min_margin: Annotated[Float, Range(0, 1, high_open=True)] = FROM_PARAMS_YAML
    significance: Bool = FROM_PARAMS_YAML
    significance_metric: Annotated[Str, MetricName()] = FROM_PARAMS_YAML
    # p < alpha: alpha >= 1 lets every p-value through, alpha <= 0 none.
    alpha: Annotated[Float, Range(0, 1, low_open=True, high_open=True)] = FROM_PARAMS_YAML
    test_method: Literal["randomization", "bootstrap", "t"] = FROM_PARAMS_YAML
    n_resamples: Count = FROM_PARAMS_YAML
    seed: Seed = FROM_PARAMS_YAML
    # Which set decides (pipelines.promote.decision.decide_on_meaning): "meaning" (a
    # significant win on masked or described, alpha split between them, and no significant
    # loss on any set) or "named" alone.
    gate: Literal["meaning", "named"] = FROM_PARAMS_YAML
    # A transfer set with fewer queries is guarded all the same, with a caveat in the
    # decision: a loss there may be too small to show.
    min_transfer_queries: Count = FROM_PARAMS_YAML
    lock_timeout_seconds: Seconds = FROM_PARAMS_YAML
    server_timeout_seconds: Seconds = FROM_PARAMS_YAML


@_config_errors
@pydantic_dataclass(frozen=True, config=SECTION_CONFIG)
class FlowParams(_Section):
    section: ClassVar[str] = "flow"

    schedule: Annotated[Str, CronSchedule()] = FROM_PARAMS_YAML
    timezone: Annotated[Str, TimeZoneName()] = FROM_PARAMS_YAML
    gpu_deployment: Str = FROM_PARAMS_YAML
    dvc_remote: Str = FROM_PARAMS_YAML
    network_retries: Retries = FROM_PARAMS_YAML
    network_retry_delay_seconds: Delay = FROM_PARAMS_YAML
    webhook_env: Name = FROM_PARAMS_YAML
    promotion_concurrency_limit: Name = FROM_PARAMS_YAML
    task_timeout_seconds: Seconds = FROM_PARAMS_YAML
    train_timeout_seconds: Seconds = FROM_PARAMS_YAML


@_config_errors
@pydantic_dataclass(frozen=True, config=SECTION_CONFIG)
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
    search: SearchParams = field(default_factory=SearchParams)
    flow: FlowParams = field(default_factory=FlowParams)


def load_params(path: Path = PARAMS_FILE) -> Params:
    """Read ``path`` into :class:`Params`; every section and key is optional."""
    try:
        raw = read_yaml(path)
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
    """``raw`` (``{section: {key: value}}``) checked into :class:`Params`; ``where`` names it
    in errors."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected a mapping of sections, got {type(raw).__name__}")
    try:
        params: Params = _adapter(Params).validate_python(raw, context=FILE_CONTEXT)
    except ValidationError as error:
        raise _config_error(error, where) from error
    return params


# -- error messages --------------------------------------------------------------------

# What a type error expected, in the words of the YAML a person writes.
_EXPECTED = {
    "int_type": "int",
    "float_type": "float",
    "string_type": "str",
    "bool_type": "bool",
    "tuple_type": "a list",
    "dataclass_type": "a section (mapping)",
}


def _config_error(
    error: ValidationError, where: str, prefix: tuple[str | int, ...] = ()
) -> ConfigError:
    """Pydantic's errors as one line: ``where: section.key: what is wrong``."""
    problems: list[str] = []
    unknown: dict[tuple[str | int, ...], list[str]] = {}
    for detail in error.errors(include_url=False):
        loc = (*prefix, *detail["loc"])
        cause = detail.get("ctx", {}).get("error")
        if isinstance(cause, ConfigError):
            return cause  # the project file's own fault (a missing default), not ``where``'s
        if detail["type"] == "unexpected_keyword_argument":
            unknown.setdefault(loc[:-1], []).append(str(loc[-1]))
        else:
            problems.append(f"{_dotted(loc)}: {_problem(detail)}")
    for parent, keys in unknown.items():
        known = [item.name for item in dataclasses.fields(_section_type(parent))]
        head = f"{_dotted(parent)}: " if parent else ""
        problems.append(f"{head}unknown key(s) {sorted(keys)}; known keys are {known}")
    return ConfigError(f"{where}: {'; '.join(problems)}")


def _problem(detail: ErrorDetails) -> str:
    kind, value = detail["type"], detail["input"]
    if kind == NOT_ALLOWED:
        return detail["msg"]
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {value!r}"
    if kind == "literal_error":
        return f"expected {detail.get('ctx', {}).get('expected')}, got {value!r}"
    return f"{detail['msg']}, got {value!r}"


def _dotted(loc: tuple[str | int, ...]) -> str:
    """``("evaluate", "ks", 0)`` -> ``evaluate.ks[0]``."""
    text = ""
    for part in loc:
        if part in UNION_TAGS:
            continue  # a member of a union (AutoOr): the knob's own name says it
        text += f"[{part}]" if isinstance(part, int) else f"{'.' if text else ''}{part}"
    return text


def _section_type(loc: tuple[str | int, ...]) -> type:
    """The class of the section at ``loc`` (``()``: :class:`Params`)."""
    cls: type = Params
    for part in loc:
        cls = _type_hints(cls)[str(part)]
    return cls
