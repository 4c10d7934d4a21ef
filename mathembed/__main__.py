"""``python -m mathembed`` runs the ``mathembed`` command line."""

from mathembed.cli import app

app(prog_name="mathembed")
