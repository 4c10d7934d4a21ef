"""Offline and no-telemetry environment switches, read from ``offline.env``.

The switches are defined once, in ``pipelines/offline.env``; the Makefile exports the
same file to every recipe. ``apply`` sets each switch only where the variable is not
already set (``os.environ.setdefault`` semantics), so an explicit user setting wins.
Nothing happens at import time: the CLI calls ``apply`` at startup and
``tests/conftest.py`` calls it for the test session.
"""

from __future__ import annotations

import os
import re
from collections.abc import MutableMapping
from pathlib import Path

OFFLINE_ENV_FILE = Path(__file__).with_name("offline.env")

# Deliberately narrower than shell syntax: the Makefile reads the same file with
# plain text functions, so a value must mean the same thing to make and to Python.
_LINE = re.compile(r"(?P<key>[A-Z_][A-Z0-9_]*)=(?P<value>[^\s\"'$#=\\]*)")


def parse_env_file(path: Path = OFFLINE_ENV_FILE) -> dict[str, str]:
    """Return the ``KEY=VALUE`` pairs of ``path`` in file order.

    Blank lines and lines starting with ``#`` are skipped. Any other line that is not
    a plain ``KEY=VALUE`` (upper-case key; no quotes, spaces, ``$``, ``#``, ``=`` or
    backslash in the value) or repeats a key raises ``ValueError`` naming the file
    and line.
    """
    switches: dict[str, str] = {}
    for line_number, raw_line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw_line.strip()
        if not line or line.startswith("#"):
            continue
        match = _LINE.fullmatch(line)
        if match is None:
            raise ValueError(
                f"{path}:{line_number}: expected KEY=VALUE with an upper-case KEY and a "
                f"VALUE without quotes, spaces, '$', '#', '=' or backslashes; got {raw_line!r}"
            )
        key = match["key"]
        if key in switches:
            raise ValueError(f"{path}:{line_number}: {key} is set twice; keep one line")
        switches[key] = match["value"]
    return switches


def apply(
    environ: MutableMapping[str, str] | None = None, path: Path = OFFLINE_ENV_FILE
) -> dict[str, str]:
    """Set every switch from ``path`` in ``environ`` (default ``os.environ``) unless set.

    Returns the switches that were actually set by this call (already-set variables,
    even to an empty string, are left alone and not returned).
    """
    target = os.environ if environ is None else environ
    newly_set: dict[str, str] = {}
    for key, value in parse_env_file(path).items():
        if key not in target:
            target[key] = value
            newly_set[key] = value
    return newly_set
