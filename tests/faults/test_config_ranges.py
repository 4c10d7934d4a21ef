"""Hostile params.yaml values: every out-of-range knob, a repeated key, a bad schedule or time
zone is a ConfigError naming ``section.key`` (exit 2 at the command line), never a run that
quietly does the wrong thing."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Annotated, Any

import pytest
import yaml
from repo import REPO
from typer.testing import CliRunner

from pipelines import cli
from pipelines.common.config import (
    ConfigError,
    Params,
    load_params,
    params_from_mapping,
)

# Sections whose knobs their stage checks together (pipelines/train/setup.py check_params,
# pipelines/prepare/stage.py): the loader does not repeat those checks.
CHECKED_BY_STAGE = {"train", "prepare"}

# (section, key, an out-of-range value).
OUT_OF_RANGE: list[tuple[str, str, Any]] = [
    ("sample", "n_papers", 0),
    ("sample", "seed", -1),
    ("sample", "start_date", "2024-13-01"),
    ("sample", "end_date", "31/03/2024"),
    ("sample", "blueprints_dir", ""),
    ("ingest", "base_url", "export.arxiv.org"),
    ("ingest", "categories", []),
    ("ingest", "from_date", "yesterday"),
    ("ingest", "max_papers", 0),
    ("ingest", "page_size", 0),
    ("ingest", "delay_seconds", -1.0),
    ("ingest", "timeout_seconds", 0.0),
    ("ingest", "timeout_seconds", float("inf")),  # a hang, not a timeout
    ("ingest", "max_retries", -1),
    ("ingest", "backoff_seconds", -2.0),
    ("ingest", "max_archive_files", 0),
    ("ingest", "max_file_bytes", 0),
    ("ingest", "max_archive_bytes", -1),
    ("prepare", "paper_timeout_seconds", 0.0),
    ("prepare", "paper_timeout_seconds", 7200.0),
    ("prepare", "stage_budget_seconds", 0.0),
    ("prepare", "stage_budget_seconds", 7200.0),
    ("prepare", "pack_chars", -1),
    ("prepare", "pack_chars", 1_000_000),
    ("search", "ann_threshold", 0),
    ("search", "ann_nprobes", 0),
    ("search", "miss_threshold", 1.5),
    ("search", "engine_url", "127.0.0.1:6333"),
    ("graph", "llm_max_retries", -1),
    ("graph", "llm_timeout_seconds", 0.0),
    ("graph", "llm_backoff_seconds", -1.0),
    ("graph", "cooccurrence_min_papers", 0),
    ("graph", "paper_timeout_seconds", 0.5),
    ("graph", "paper_timeout_seconds", float("inf")),
    ("graph", "stage_budget_seconds", 0.5),
    ("graph", "stage_budget_seconds", float("inf")),
    ("graph", "max_paper_retries", -1),
    ("graph", "max_paper_retries", 11),
    ("pairs", "max_chunks_per_concept", 0),
    ("pairs", "max_edge_pairs", -1),
    ("pairs", "held_out_fraction", 1.5),
    ("pairs", "held_out_fraction", -0.2),
    ("pairs", "held_out_fraction", 0.0),
    ("pairs", "held_out_fraction", 1.0),
    ("pairs", "held_out_fraction", float("nan")),
    ("pairs", "min_degree", 0),
    ("pairs", "unseen_paper_fraction", 1.0),
    ("pairs", "unseen_paper_fraction", -0.1),
    ("pairs", "validation_fraction", 1.0),
    ("pairs", "validation_fraction", -0.1),
    ("pairs", "seed", -1),
    ("pairs", "max_relevant_share", 0.0),
    ("pairs", "max_relevant_share", 1.5),
    ("pairs", "max_relevant_share", float("nan")),
    ("pairs", "max_structure_pairs", -1),
    ("pairs", "held_out_statement_fraction", 1.0),
    ("pairs", "held_out_statement_fraction", -0.1),
    ("pairs", "max_citing_pairs", -1),
    ("pairs", "max_cited_statements", 0),
    ("pairs", "max_description_chars", 10),
    ("pairs", "described_per_statement", 0),
    ("validate", "min_passage_chars", -1),
    ("validate", "max_passage_chars", 0),
    ("validate", "max_latex_markup_share", 1.5),
    ("validate", "max_latex_markup_share", -0.1),
    ("validate", "max_row_failure_fraction", 2.0),
    ("validate", "max_row_failure_fraction", -0.1),
    ("validate", "max_paper_row_failure_fraction", 1.5),
    ("validate", "max_paper_row_failure_fraction", -0.1),
    ("validate", "min_queries", 0),
    ("validate", "min_described_queries", -1),
    ("validate", "max_query_relevant_share", 0.0),
    ("validate", "max_query_relevant_share", 1.01),
    ("validate", "max_query_relevant_share", float("inf")),
    ("train", "seed", -1),
    ("train", "max_validation_pairs", 0),
    ("train", "eval_steps", 0),
    ("train", "max_validation_corpus", 0),
    ("train", "mined_negative_margin", 1.0),
    ("train", "mined_negative_margin", -0.1),
    ("train", "processes", 0),
    ("train", "processes", 65),
    ("train", "mixing_weights", [0.0]),  # the base alone: the training thrown away
    ("train", "replay_ratio", -0.5),
    ("train", "replay_ratio", 101.0),
    ("train", "attention_dropout", -0.1),
    ("train", "attention_dropout", 1.0),  # every attention weight dropped
    ("train", "early_stopping_patience", -1),
    ("train", "mixing_weights", [0.5, 1.5]),
    ("train", "mixing_weights", []),
    ("evaluate", "ks", []),
    ("evaluate", "ks", [0, 10]),
    ("evaluate", "foreign_corpora", [""]),  # a folder with no name: the project root
    ("evaluate", "dims", [-8]),
    ("evaluate", "batch_size", 0),
    ("promote", "registered_model", ""),
    ("promote", "experiment", " "),
    ("promote", "metrics", []),
    ("promote", "metrics", ["accuracy"]),
    ("promote", "metrics", ["mrr@0"]),
    ("promote", "min_margin", -1.0),
    ("promote", "min_margin", 1.0),
    ("promote", "significance_metric", "mrr"),
    ("promote", "alpha", 5),
    ("promote", "alpha", 0.0),
    ("promote", "alpha", 1.0),
    ("promote", "n_resamples", 0),
    ("promote", "seed", -1),
    ("promote", "min_transfer_queries", 0),
    ("promote", "lock_timeout_seconds", 0.0),
    ("promote", "server_timeout_seconds", -1.0),
    ("flow", "schedule", "every night"),
    ("flow", "schedule", "61 2 * * *"),
    ("flow", "schedule", "0 2 * * * *"),
    ("flow", "timezone", "Mars/Olympus"),
    ("flow", "timezone", "../etc/passwd"),
    ("flow", "timezone", ""),
    ("flow", "network_retries", -1),
    ("flow", "network_retry_delay_seconds", -1.0),
    ("flow", "webhook_env", ""),
    ("flow", "promotion_concurrency_limit", ""),
    ("flow", "task_timeout_seconds", 0.0),
    ("flow", "task_timeout_seconds", float("inf")),
    ("flow", "train_timeout_seconds", -1.0),
]


@pytest.mark.parametrize(("section", "key", "value"), OUT_OF_RANGE)
def test_an_out_of_range_value_names_the_key_and_what_is_allowed(
    section: str, key: str, value: Any
) -> None:
    with pytest.raises(ConfigError, match=rf"{section}\.{key}\b.*allowed: ") as raised:
        params_from_mapping({section: {key: value}})
    assert "\n" not in str(raised.value)


def _declares_allowed_values(hint: Any) -> bool:
    """On the knob itself or on a list's items."""
    from pipelines.common.allowed import Allowed

    if typing.get_origin(hint) is tuple:
        return _declares_allowed_values(typing.get_args(hint)[0])
    if typing.get_origin(hint) is not Annotated:
        return False
    (base, *rules) = typing.get_args(hint)
    return any(isinstance(rule, Allowed) for rule in rules) or _declares_allowed_values(base)


def _is_numeric(hint: Any) -> bool:
    if typing.get_origin(hint) is Annotated:
        return _is_numeric(typing.get_args(hint)[0])
    if typing.get_origin(hint) is tuple:
        return _is_numeric(typing.get_args(hint)[0])
    return hint in (int, float)


def test_every_numeric_knob_declares_its_range_and_is_tried_here() -> None:
    # A new numeric knob needs a range (or a check in its stage) and a line in OUT_OF_RANGE.
    tried = {(section, key) for section, key, _value in OUT_OF_RANGE}
    for section_field in dataclasses.fields(Params):
        section_type = type(getattr(Params(), section_field.name))
        hints = typing.get_type_hints(section_type, include_extras=True)
        for knob in dataclasses.fields(section_type):
            name = (section_field.name, knob.name)
            declared = _declares_allowed_values(hints[knob.name])
            if not declared and (
                not _is_numeric(hints[knob.name]) or section_field.name in CHECKED_BY_STAGE
            ):
                continue
            assert declared, f"{name} has no range"
            assert name in tried, f"{name} has no out-of-range case here"


def test_the_project_params_yaml_passes_every_range() -> None:
    load_params(REPO / "params.yaml")


@pytest.mark.parametrize(
    "text",
    [
        "train:\n  epochs: 1\nevaluate:\n  batch_size: 8\ntrain:\n  seed: 3\n",
        "pairs:\n  seed: 1\n  min_degree: 2\n  seed: 2\n",
    ],
)
def test_a_repeated_key_is_refused_naming_key_and_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "params.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"duplicate key '(train|seed)' at line (5|4)") as raised:
        load_params(path)
    assert str(path) in str(raised.value)
    assert "\n" not in str(raised.value)


def test_yaml_merge_keys_are_not_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "params.yaml"
    text = "pairs:\n  <<: {seed: 1, min_degree: 3}\n  seed: 2\n"
    path.write_text(text, encoding="utf-8")
    params = load_params(path)
    assert (params.pairs.seed, params.pairs.min_degree) == (2, 3)


def test_a_bad_value_exits_2_naming_the_key_at_the_command_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"pairs": {"held_out_fraction": 1.5}}), encoding="utf-8")
    result = CliRunner().invoke(cli.app, ["pairs", "--params", str(bad), "--root", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "pairs.held_out_fraction" in result.stderr
    assert "1.5" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
