"""A password in a URL knob of params.yaml is never printed by a config error (issue 29):
an out-of-range value is quoted with its credentials hidden, and a YAML error quotes no
text of the file; the server is still named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.common.config import ConfigError, load_params, params_from_mapping

SECRET = "s3cretPW"
# A URL the knobs refuse (not http or https) that carries a password.
URL = f"ftp://u:{SECRET}@127.0.0.1:9/"
URL_KNOBS = [("search", "engine_url"), ("ingest", "base_url")]


@pytest.mark.parametrize(("section", "key"), URL_KNOBS)
def test_a_refused_url_knob_is_quoted_without_its_password(section: str, key: str) -> None:
    with pytest.raises(ConfigError, match=rf"{section}\.{key}: .*allowed: ") as raised:
        params_from_mapping({section: {key: URL}})
    message = str(raised.value)
    assert SECRET not in message
    assert "ftp://***@127.0.0.1:9/" in message  # what was given is still said


def test_a_yaml_error_on_a_url_line_quotes_no_text_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "params.yaml"
    # PyYAML's snippet of this line starts at "u:s3cretPW@": no scheme left to redact by.
    padding = "x" * 9
    path.write_text(f"search:\n  engine_url: ftp://u:{SECRET}@127.0.0.1:9/{padding}: [\n")
    with pytest.raises(ConfigError, match=r"is not valid YAML: .*\(line 2, column \d+\)") as raised:
        load_params(path)
    assert SECRET not in str(raised.value) and "\n" not in str(raised.value)


def test_the_command_line_prints_neither_password(tmp_path: Path) -> None:
    params_file = tmp_path / "params.yaml"
    params_file.write_text(
        f"search:\n  engine_url: {URL}\ningest:\n  base_url: {URL.replace('9/', '9/oai')}\n"
    )
    finished = subprocess.run(
        [sys.executable, "-m", "mathembed", "ingest", "--root", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert finished.returncode == 2, finished.stderr
    (line,) = finished.stderr.strip().splitlines()
    assert line.startswith("ingest: ") and "search.engine_url" in line
    assert "ingest.base_url" in line and "ftp://***@127.0.0.1:9/oai" in line
    assert SECRET not in finished.stdout + finished.stderr
