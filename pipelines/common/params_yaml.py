"""Reading ``params.yaml``: YAML with repeated keys refused and floats read as YAML 1.2
(and DVC) read them, every error one line naming the file. The sections it is read into
are :mod:`pipelines.common.config`.

Why YAML 1.2's numbers: ``dvc exp run -S train.learning_rate=2e-5`` writes ``2e-05``, a
float to DVC and YAML 1.2 but a string to PyYAML's YAML 1.1 rules, which want a dot in the
mantissa (``2.0e-05``).
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import yaml

from pipelines.common.redact import redact


class ConfigError(ValueError):
    """params.yaml (or a section of it) does not describe a valid configuration.

    The message is printed and logged, and may quote a knob's value: a URL in it loses its
    credentials here (:func:`~pipelines.common.redact.redact`), whichever check raised it.
    """

    def __init__(self, message: str) -> None:
        super().__init__(redact(message))


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


# YAML 1.2's float (core schema) where YAML 1.1 wants a dot: `2e-05`, `1E5`, `-3.5e+2`.
# DVC (ruamel.yaml, YAML 1.2) writes and reads floats this way; without this, PyYAML reads
# the `2e-05` that `dvc exp run -S train.learning_rate=2e-5` writes as the string "2e-05".
# A quoted "2e-05" stays a string: the author asked for one.
_YAML_12_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+$")
_UniqueKeyLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", _YAML_12_FLOAT, list("-+.0123456789")
)


def read_yaml(path: Path) -> Any:
    """``path`` parsed with repeated keys refused; errors as one line naming the file."""
    text = path.read_text(encoding="utf-8")
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader)
    except _DuplicateKeyError as error:
        raise ConfigError(f"{path}: {error}") from error
    except yaml.YAMLError as error:
        raise ConfigError(f"{path} is not valid YAML: {_yaml_problem(error)}") from error


def _yaml_problem(error: yaml.YAMLError) -> str:
    """What PyYAML found wrong and where, in one line, without its snippet of the file: the
    snippet may quote a password cut off from its URL's scheme, past hiding."""
    if not isinstance(error, yaml.MarkedYAMLError):
        return " ".join(str(error).split())
    parts = []
    for what, mark in ((error.context, error.context_mark), (error.problem, error.problem_mark)):
        if what is None:
            continue
        where = "" if mark is None else f" (line {mark.line + 1}, column {mark.column + 1})"
        parts.append(f"{what}{where}")
    return ": ".join(parts) or type(error).__name__
