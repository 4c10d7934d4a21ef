"""A write the system refuses (a read-only ``data/``, a full disk) is one line, not a traceback.

Tests run as root, whom permission bits do not stop, so the refusal is injected where a
read-only folder refuses it: at the temporary file every atomic write starts with.
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pipelines import cli
from pipelines.common import io
from pipelines.common.paths import Paths


@pytest.mark.parametrize(
    ("code", "reason"),
    [(errno.EACCES, "Permission denied"), (errno.EROFS, "Read-only file system")],
)
def test_a_refused_write_is_one_line_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, reason: str
) -> None:
    paths = Paths(tmp_path)
    paths.raw.mkdir(parents=True)  # an empty raw store: prepare has only its outputs to write

    def refuse(*args: Any, dir: str | None = None, **kwargs: Any) -> Any:  # noqa: A002
        raise OSError(code, reason, dir)

    monkeypatch.setattr(io.tempfile, "mkstemp", refuse)
    result = CliRunner().invoke(cli.app, ["prepare", "--root", str(tmp_path)])
    assert result.exit_code == 1
    assert isinstance(result.exception, SystemExit)  # handled, not a traceback
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("prepare: cannot write or read ") and reason in lines[0]
    assert str(tmp_path) in lines[0] and "writable" in lines[0]
