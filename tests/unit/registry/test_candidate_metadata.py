"""The candidate's ``mathembed.json`` (pipelines.registry.candidate_metadata): one record that
train writes and evaluate and promote read; a bad file fails in one line naming the field."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from pipelines.common.config import TrainParams
from pipelines.common.io import write_json
from pipelines.registry.candidate_metadata import (
    BaseModelSpec,
    CandidateMetadata,
    CandidateMetadataError,
    read_candidate_metadata,
    recorded_base_model,
)


def trained() -> CandidateMetadata:
    params = TrainParams(base_model="some/base", pooling="mean", max_seq_length=64)
    return CandidateMetadata.of_training(
        dataclasses.asdict(params),
        matryoshka_dims=[32, 16],
        embedding_dimension=32,
        data_hash="d" * 64,
        trained_at="2026-11-24T02:00:00Z",
        mixing_weight=0.7,
        trained_papers=["2401.00001v1", "2401.00002v2"],
    ).with_fingerprint("f" * 64)


def test_train_s_record_has_the_keys_readers_know_and_reads_back_the_same() -> None:
    record = trained().as_json()
    assert list(record) == sorted(record)  # the order write_json gives the file
    assert set(record) == {
        "base_model",
        "pooling",
        "matryoshka_dims",
        "embedding_dimension",
        "max_seq_length",
        "params",
        "data_hash",
        "trained_at",
        "mixing_weight",
        "trained_papers",
        "fingerprint",
    }
    # The knobs the base model was loaded with, at the top level as in train's section.
    assert (record["pooling"], record["max_seq_length"]) == ("mean", 64)
    assert record["params"]["pooling"] == "mean" and record["params"]["max_seq_length"] == 64
    assert record["matryoshka_dims"] == [32, 16]
    assert record["mixing_weight"] == 0.7
    assert record["trained_papers"] == ["2401.00001v1", "2401.00002v2"]
    as_written = json.loads(json.dumps(record))
    assert CandidateMetadata.from_json(as_written).as_json() == as_written  # read back the same
    assert trained().base_spec == BaseModelSpec("some/base", "mean", 64)


def test_a_folder_without_a_record_has_none(tmp_path: Path) -> None:
    assert read_candidate_metadata(tmp_path) is None
    assert recorded_base_model(tmp_path) is None


def test_an_incomplete_record_names_no_base_model(tmp_path: Path) -> None:
    write_json(tmp_path / "mathembed.json", {"base_model": "x", "params": {"pooling": "mean"}})
    recorded = read_candidate_metadata(tmp_path)
    assert recorded is not None and recorded.base_spec is None
    assert recorded.fingerprint is None and recorded.matryoshka_dims == ()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]", r"mathembed\.json: expected a JSON object, got list"),
        ("{not json", r"mathembed\.json is not JSON"),
        ('{"fingerprint": 7}', r"mathembed\.json: fingerprint must be a string, got 7"),
        ('{"params": "mean"}', r"mathembed\.json: params must be a mapping"),
        ('{"embedding_dimension": true}', r"embedding_dimension must be an integer, got True"),
        ('{"matryoshka_dims": [16, -8]}', r"mathembed\.json: matryoshka_dims must be positive"),
        ('{"mixing_weight": "0.7"}', r"mathembed\.json: mixing_weight must be a number, got '0.7'"),
        (
            '{"base_model": "x", "params": {"pooling": "max", "max_seq_length": 8}}',
            r"mathembed\.json: params\.pooling 'max' is not one of",
        ),
    ],
)
def test_a_bad_record_is_one_line_naming_the_file_and_the_field(
    tmp_path: Path, content: str, message: str
) -> None:
    (tmp_path / "mathembed.json").write_text(content, encoding="utf-8")
    with pytest.raises(CandidateMetadataError, match=message) as caught:
        read_candidate_metadata(tmp_path)
    assert str(tmp_path) in str(caught.value) and "\n" not in str(caught.value)
