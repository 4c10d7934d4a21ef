"""The metrics files as typed records, each with its one writer (``to_json``) and its one
reader (``from_json``): every stage, command and flow that reads a file reads it here.

* :class:`EvalRecord`: ``metrics/eval.json``, every score of the evaluate stage;
* :class:`SetHeadline`: ``metrics/<set>.json`` (``named``, ``masked``, ``described``),
  one query set's headline (the DVC metrics): the candidate's and the base model's scores
  on the headline metrics (``promote.metrics``) and the paired test's p, all on that set's
  queries;
* :class:`PromotionRecord`: ``metrics/promotion.json``, the last promotion decision, its
  figures one :class:`SetFigures` per query set, the deciding set first.

A figure is always a side's score on one named set; a comparison never takes its two
numbers from two sets. Scores are rounded once, by
:func:`pipelines.registry.reporting.round_score` (p-values by ``round_p_value``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines.registry.reporting import NOT_PROMOTED, PROMOTED, round_p_value, round_score

#: The set of a decision recorded before decisions named theirs.
UNRECORDED = "unrecorded"


def numeric_scores(value: object) -> dict[str, float]:
    """A ``metric -> number`` mapping from JSON (anything else is left out)."""
    if not isinstance(value, Mapping):
        return {}
    return {
        str(key): float(item)
        for key, item in value.items()
        if isinstance(item, int | float) and not isinstance(item, bool)
    }


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _rounded(scores: Mapping[str, float]) -> dict[str, float]:
    return {metric: round_score(value) for metric, value in scores.items()}


# --------------------------------------------------------------------------- eval.json


@dataclass(frozen=True)
class EvalSetBlock:
    """One query set in ``eval.json``'s ``sets``, at the candidate's full dimension: every
    row's scores (the models and BM25), the candidate's gain over each, and the paired
    test's p of candidate against each (on ``significance_metric``; None without a test)."""

    n_queries: int
    words_in_relevant: float
    scores: dict[str, dict[str, float]]
    delta: dict[str, dict[str, float]]
    p_value: dict[str, float | None]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EvalSetBlock:
        return cls(
            n_queries=int(data.get("n_queries", 0)),
            words_in_relevant=float(data.get("words_in_relevant", 0.0)),
            scores={
                str(row): numeric_scores(values) for row, values in data.get("scores", {}).items()
            },
            delta={
                str(row): numeric_scores(values) for row, values in data.get("delta", {}).items()
            },
            p_value={str(row): _number(p) for row, p in data.get("p_value", {}).items()},
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "n_queries": self.n_queries,
            "words_in_relevant": self.words_in_relevant,
            "scores": {row: _rounded(values) for row, values in self.scores.items()},
            "delta": {row: _rounded(values) for row, values in self.delta.items()},
            "p_value": {row: round_p_value(p) for row, p in self.p_value.items()},
        }

    def headline(self, query_set: str, metrics: Sequence[str], p_metric: str) -> SetHeadline:
        """This set's headline: candidate and base on ``metrics``, the p on ``p_metric``."""
        return SetHeadline(
            query_set=query_set,
            queries=self.n_queries,
            candidate={m: v for m, v in self.scores.get("candidate", {}).items() if m in metrics},
            base={m: v for m, v in self.scores.get("base", {}).items() if m in metrics},
            p_metric=p_metric,
            p_value=self.p_value.get("base"),
            metrics=tuple(metrics),
        )


#: eval.json's keys that are not a model's scores.
EVAL_KEYS = (
    "corpus_size",
    "n_queries",
    "queries_without_relevant",
    "ks",
    "dims",
    "primary_dim",
    "models",
    "delta",
    "subsets",
    "transfer",
    "embedding_store",
    "sets",
    "timing_seconds",
)


@dataclass(frozen=True)
class EvalRecord:
    """``metrics/eval.json``: each model's scores on the named set at every dimension
    (``scores``: model -> ``dim_<d>`` -> metric), the candidate's gains (``delta``), the
    seen/unseen ``subsets``, every query set side by side (``sets``), and how the run went.
    In the file the models' scores are top-level keys (``candidate``, ``base``...)."""

    corpus_size: int
    n_queries: int
    ks: list[int]
    dims: list[int]
    primary_dim: int
    models: dict[str, dict[str, Any]]
    scores: dict[str, dict[str, dict[str, float]]]
    delta: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    subsets: dict[str, dict[str, Any]] = field(default_factory=dict)
    sets: dict[str, EvalSetBlock] = field(default_factory=dict)
    #: The transfer sets' corpus (plain windows: size, count, papers), queries per set and
    #: what could not be asked (pipelines.evaluate.transfer).
    transfer: dict[str, Any] = field(default_factory=dict)
    queries_without_relevant: int = 0
    embedding_store: dict[str, Any] | None = None
    timing_seconds: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EvalRecord:
        return cls(
            corpus_size=int(data["corpus_size"]),
            n_queries=int(data["n_queries"]),
            ks=[int(k) for k in data["ks"]],
            dims=[int(dim) for dim in data["dims"]],
            primary_dim=int(data["primary_dim"]),
            models={str(name): dict(info) for name, info in data["models"].items()},
            scores={
                str(model): {str(dim): numeric_scores(means) for dim, means in data[model].items()}
                for model in data["models"]
                if isinstance(data.get(model), Mapping)
            },
            delta={
                str(model): {str(dim): numeric_scores(means) for dim, means in dims.items()}
                for model, dims in data.get("delta", {}).items()
            },
            subsets={str(name): dict(block) for name, block in data.get("subsets", {}).items()},
            sets={
                str(name): EvalSetBlock.from_json(block)
                for name, block in data.get("sets", {}).items()
            },
            queries_without_relevant=int(data.get("queries_without_relevant", 0)),
            transfer=dict(data.get("transfer") or {}),
            embedding_store=data.get("embedding_store"),
            timing_seconds=numeric_scores(data.get("timing_seconds")),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "corpus_size": self.corpus_size,
            "n_queries": self.n_queries,
            "queries_without_relevant": self.queries_without_relevant,
            "ks": self.ks,
            "dims": self.dims,
            "primary_dim": self.primary_dim,
            "models": self.models,
            **{
                model: {dim: _rounded(means) for dim, means in dims.items()}
                for model, dims in self.scores.items()
            },
            "delta": {
                model: {dim: _rounded(means) for dim, means in dims.items()}
                for model, dims in self.delta.items()
            },
            "subsets": self.subsets,
            "transfer": self.transfer,
            "embedding_store": self.embedding_store,
            "sets": {name: block.to_json() for name, block in self.sets.items()},
            "timing_seconds": self.timing_seconds,
        }

    def headlines(self, metrics: Sequence[str], p_metric: str) -> list[SetHeadline]:
        """Every set's headline (:class:`SetHeadline`), in ``sets`` order; a set without
        queries has one too (its scores null), so each set's file is always there."""
        return [block.headline(name, metrics, p_metric) for name, block in self.sets.items()]


# --------------------------------------------------------------------------- <set>.json


@dataclass(frozen=True)
class SetHeadline:
    """``metrics/<query_set>.json``: one query set's DVC metrics, every number on its
    queries. The file's keys are the same for every set (the file names the set), so
    ``dvc metrics show`` is one row per set: ``queries``, the candidate's scores under the
    metric's name (``mrr@10``, each of ``metrics``), the base model's as ``base_<metric>``,
    and ``p_<metric>``: the paired test of candidate against base on ``p_metric``. A score
    not measured (a set without queries) is null."""

    query_set: str
    queries: int
    candidate: dict[str, float]
    base: dict[str, float]
    p_metric: str
    p_value: float | None
    metrics: tuple[str, ...] = ()

    def _names(self) -> tuple[str, ...]:
        return self.metrics or tuple(self.candidate)

    def to_json(self) -> dict[str, Any]:
        def score(scores: Mapping[str, float], metric: str) -> float | None:
            return round_score(scores[metric]) if metric in scores else None

        return {
            "queries": self.queries,
            **{metric: score(self.candidate, metric) for metric in self._names()},
            **{f"base_{metric}": score(self.base, metric) for metric in self._names()},
            f"p_{self.p_metric}": round_p_value(self.p_value),
        }

    @classmethod
    def from_json(cls, query_set: str, data: Mapping[str, Any]) -> SetHeadline:
        p_keys = [key for key in data if key.startswith("p_")]
        p_metric = p_keys[0].removeprefix("p_") if p_keys else ""
        candidate: dict[str, float] = {}
        base: dict[str, float] = {}
        metrics: list[str] = []
        for key, value in data.items():
            number = _number(value)
            if key in ("queries", *p_keys):
                continue
            if key.startswith("base_"):
                if number is not None:
                    base[key.removeprefix("base_")] = number
            else:
                metrics.append(key)
                if number is not None:
                    candidate[key] = number
        return cls(
            query_set=query_set,
            queries=int(data.get("queries", 0)),
            candidate=candidate,
            base=base,
            p_metric=p_metric,
            p_value=_number(data.get(f"p_{p_metric}")),
            metrics=tuple(metrics),
        )

    @staticmethod
    def path(metrics_dir: Path, query_set: str) -> Path:
        return metrics_dir / f"{query_set}.json"

    @classmethod
    def read_all(cls, metrics_dir: Path, query_sets: Sequence[str]) -> list[SetHeadline]:
        """The headline files of ``query_sets`` that exist, in that order (a set without
        queries included)."""
        from pipelines.common import io  # pandas: only for the readers of files

        return [
            cls.from_json(query_set, io.read_json_object(path))
            for query_set in query_sets
            if (path := cls.path(metrics_dir, query_set)).is_file()
        ]


# --------------------------------------------------------------------------- promotion.json


@dataclass(frozen=True)
class SetFigures:
    """A decision's figures on one query set, every number on its queries: each side's
    scores on the rule metrics (``champion`` None when no champion was compared) and the
    paired test's p of the candidate against the side compared (None when not tested)."""

    query_set: str
    queries: int
    candidate: dict[str, float]
    base: dict[str, float]
    champion: dict[str, float] | None = None
    p_value: float | None = None

    def side(self, name: str) -> dict[str, float]:
        """``base`` or ``champion``'s scores (empty when that side was not scored)."""
        return self.base if name == "base" else (self.champion or {})

    def delta(self, metric: str, against: str) -> float | None:
        other = self.side(against)
        if metric not in self.candidate or metric not in other:
            return None
        return round_score(self.candidate[metric] - other[metric])

    def to_json(self) -> dict[str, Any]:
        return {
            "queries": self.queries,
            "candidate": _rounded(self.candidate),
            "base": _rounded(self.base),
            "champion": None if self.champion is None else _rounded(self.champion),
            "p_value": round_p_value(self.p_value),
        }

    @classmethod
    def from_json(cls, query_set: str, data: Mapping[str, Any]) -> SetFigures:
        champion = data.get("champion")
        return cls(
            query_set=query_set,
            queries=int(data.get("queries", 0)),
            candidate=numeric_scores(data.get("candidate")),
            base=numeric_scores(data.get("base")),
            champion=None if champion is None else numeric_scores(champion),
            p_value=_number(data.get("p_value")),
        )


@dataclass(frozen=True)
class PromotionRecord:
    """``metrics/promotion.json``: what ``mathembed promote`` decided, on which set
    (``decided_on``), against which side, and the figures of every set (``sets``, the
    deciding set first). The p-values are on ``significance_metric``."""

    decision: str
    reason: str
    compared_against: str
    decided_on: str
    sets: tuple[SetFigures, ...]
    significance_metric: str = ""
    registered_model: str = ""
    version: str = ""
    fingerprint: str = ""
    run_id: str = ""
    compared_version: str | None = None
    aliases: dict[str, str | None] = field(default_factory=dict)
    already_registered: bool = False
    redecided: bool = False
    tracking_uri: str = ""
    decided_at: str = ""

    @property
    def promoted(self) -> bool:
        return self.decision == PROMOTED

    @property
    def deciding(self) -> SetFigures | None:
        """The figures of the set that decided (None in a record without figures)."""
        return self.sets[0] if self.sets else None

    def to_json(self) -> dict[str, Any]:
        return {
            "decision": self.decision,
            "decided_on": self.decided_on,
            "compared_against": self.compared_against,
            "compared_version": self.compared_version,
            "significance_metric": self.significance_metric,
            "sets": {figures.query_set: figures.to_json() for figures in self.sets},
            "reason": self.reason,
            "registered_model": self.registered_model,
            "version": self.version,
            "fingerprint": self.fingerprint,
            "run_id": self.run_id,
            "aliases": self.aliases,
            "already_registered": self.already_registered,
            "redecided": self.redecided,
            "tracking_uri": self.tracking_uri,
            "decided_at": self.decided_at,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PromotionRecord:
        """The record in ``data``; a record written before ``sets`` existed gives one set
        (``unrecorded``) with the candidate and the side it was compared with, which the
        old file took from one set (its flat ``base_*`` keys did not: they are not read)."""
        decision = data.get("decision")
        if decision not in (PROMOTED, NOT_PROMOTED):
            decision = PROMOTED if data.get("promoted") else NOT_PROMOTED
        against = "champion" if data.get("compared_against") == "champion" else "base"
        sets_json = data.get("sets")
        if isinstance(sets_json, Mapping):
            sets = tuple(
                SetFigures.from_json(str(name), block)
                for name, block in sets_json.items()
                if isinstance(block, Mapping)
            )
            decided_on = str(data.get("decided_on") or (sets[0].query_set if sets else ""))
        else:
            candidate = numeric_scores(data.get("candidate"))
            other = numeric_scores(data.get(against))
            sets = (
                (
                    SetFigures(
                        UNRECORDED,
                        int(data.get("queries", 0)),
                        candidate,
                        other if against == "base" else {},
                        other if against == "champion" else None,
                        _number(data.get("p_value")),
                    ),
                )
                if candidate
                else ()
            )
            decided_on = UNRECORDED
        aliases = data.get("aliases")
        return cls(
            decision=str(decision),
            reason=str(data.get("reason", "")),
            compared_against=against,
            decided_on=decided_on,
            sets=sets,
            significance_metric=str(data.get("significance_metric", "")),
            registered_model=str(data.get("registered_model", "")),
            version=str(data.get("version", "")),
            fingerprint=str(data.get("fingerprint", "")),
            run_id=str(data.get("run_id", "")),
            compared_version=(
                None if data.get("compared_version") is None else str(data["compared_version"])
            ),
            aliases=(
                {str(k): None if v is None else str(v) for k, v in aliases.items()}
                if isinstance(aliases, Mapping)
                else {}
            ),
            already_registered=bool(data.get("already_registered", False)),
            redecided=bool(data.get("redecided", False)),
            tracking_uri=str(data.get("tracking_uri", "")),
            decided_at=str(data.get("decided_at", "")),
        )

    @classmethod
    def read(cls, path: Path) -> PromotionRecord | None:
        """The decision recorded in ``path``; None when there is none (no promotion yet)
        or it cannot be read."""
        from pipelines.common import io  # pandas: only for the readers of files

        data = io.read_json_object(path)
        return cls.from_json(data) if data else None
