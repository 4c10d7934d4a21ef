"""``python -m pipelines`` runs the ``mathembed`` command line."""

from pipelines.cli import app

app(prog_name="mathembed")
