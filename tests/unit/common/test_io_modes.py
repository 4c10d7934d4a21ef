"""Atomic writes give a file the mode a plain write would (issue 13, item 7)."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pipelines.common import io
from pipelines.mirror.writer import built_in_staging


@contextmanager
def umask(value: int) -> Iterator[None]:
    previous = os.umask(value)
    try:
        yield
    finally:
        os.umask(previous)


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(("mask", "expected"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_atomic_write_follows_the_umask(tmp_path: Path, mask: int, expected: int) -> None:
    atomic = tmp_path / "atomic.json"
    plain = tmp_path / "plain.json"
    with umask(mask):
        io.write_json(atomic, {"a": 1})
        plain.write_text("{}\n", encoding="utf-8")
    assert mode_of(atomic) == expected
    assert mode_of(atomic) == mode_of(plain)


def test_umask_is_read_without_changing_it() -> None:
    with umask(0o027):
        assert io.current_umask() == 0o027
        assert io.current_umask() == 0o027  # reading it left it as it was
        assert io.plain_file_mode() == 0o640


def test_umask_from_status_text() -> None:
    status = "Name:\tpython\nUmask:\t0077\nState:\tR (running)\n"
    assert io.umask_from_status(status) == 0o077
    assert io.umask_from_status("Name:\tpython\n") is None


def test_staged_folder_gets_the_umask_mode(tmp_path: Path) -> None:
    out_dir = tmp_path / "mirror"
    with umask(0o022):
        built_in_staging(out_dir, lambda staging: (staging / "x.txt").write_text("x"))
    assert mode_of(out_dir) == 0o755


def test_weights_a_library_wrote_privately_get_the_plain_mode(tmp_path: Path) -> None:
    import torch
    from safetensors.torch import save_file

    model_dir = tmp_path / "model"
    (model_dir / "1_Pooling").mkdir(parents=True)
    with umask(0o022):
        save_file({"weight": torch.zeros(2, 2)}, str(model_dir / "model.safetensors"))
        (model_dir / "config.json").write_text("{}", encoding="utf-8")
        assert mode_of(model_dir / "model.safetensors") == 0o600  # what safetensors does
        changed = io.restore_plain_modes(model_dir)
    assert changed == [model_dir / "model.safetensors"]
    assert mode_of(model_dir / "model.safetensors") == mode_of(model_dir / "config.json") == 0o644


def test_a_metric_file_keeps_the_order_its_reader_sees(tmp_path: Path) -> None:
    # dvc exp show lists a metric file's columns in file order: the headline first.
    io.write_json(tmp_path / "m.json", {"decision": "promoted", "aliases": {}}, sort_keys=False)
    io.write_json(tmp_path / "s.json", {"decision": "promoted", "aliases": {}})
    assert list(json.loads((tmp_path / "m.json").read_text())) == ["decision", "aliases"]
    assert list(json.loads((tmp_path / "s.json").read_text())) == ["aliases", "decision"]
