"""The ``mathembed`` command line (the console script): the pipelines' app
(:func:`pipelines.cli.new_app`: the tool commands and every stage's) with the flows'
commands added (``nightly``, ``serve``, ``pools``: :mod:`flows.cli`)."""

from __future__ import annotations

from flows import cli as flows_cli
from pipelines.cli import new_app

app = new_app()
flows_cli.register(app)


if __name__ == "__main__":
    app()
