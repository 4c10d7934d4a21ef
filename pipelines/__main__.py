"""``python -m pipelines`` runs the pipelines' commands (every ``mathembed`` command but the
flows'; ``torchrun -m pipelines train`` launches training's ranks with it)."""

from pipelines.cli import app

app(prog_name="mathembed")
