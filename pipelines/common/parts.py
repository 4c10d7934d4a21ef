"""The parts of ``pipelines/`` and their order, declared once: the shared wings, lowest
first, and the stages in the order a night runs them.

The wings are what stages share. Each imports only the wings before it:

- ``common/``, the kernel: configuration, paths, I/O, the table contract, locks, the
  command line's contract, offline switches, redaction, and this declaration;
- ``mathtext/``: the rules of mathematical text (concept names, the phrases that name a
  concept, masking, cross-references, where a statement sits among the passages, the
  statement a passage is shown as and the text retrieval reads for it);
- ``retrieval/``: the engine (models, embeddings, the embedding store, lexical ranking);
- ``registry/``: what is recorded about models (the MLflow registry, the candidate's
  record, the metric files and how results are written).

A stage imports the wings, never another stage but for the imports
``tests/unit/test_layering.py`` allows by name. The stage sequence below is read by the
command line (each stage's commands in this order), the nightly flow (its data stages),
the code-dependency lists of ``dvc.yaml`` and the benchmarks; ``dvc.yaml`` stays the file
DVC reads, and a test checks that its stages are :data:`DVC_STAGES`, in this order.
"""

from __future__ import annotations

from typing import NamedTuple

#: The shared wings of ``pipelines/``, lowest first: each may import only those before it.
WINGS = ("common", "mathtext", "retrieval", "registry")


class Stage(NamedTuple):
    """One stage: its command, the package that holds it, and the night's step that runs it."""

    #: ``mathembed <name>``, and the stage's name in ``dvc.yaml`` when it is a DVC stage.
    name: str
    #: The package with the stage's code; its commands are registered by ``<package>.cli``.
    package: str
    #: The nightly flow's task that runs it (``data-stages`` runs several in one ``dvc repro``);
    #: ``None`` for search, which serves the champion and is no part of the night.
    step: str | None
    #: Whether ``dvc.yaml`` runs it (its outputs versioned by DVC); promotion writes the
    #: registry, search reads it.
    versioned: bool = True

    @property
    def commands(self) -> str:
        """The module whose ``register(app)`` adds the stage's commands."""
        return f"{self.package}.cli"


#: Every stage, in the order a night runs them.
STAGES: tuple[Stage, ...] = (
    Stage("sample", "pipelines.mirror", step="ingest"),
    Stage("ingest", "pipelines.ingest", step="ingest"),
    Stage("prepare", "pipelines.prepare", step="data-stages"),
    Stage("graph", "pipelines.graph", step="data-stages"),
    Stage("pairs", "pipelines.pairs", step="data-stages"),
    Stage("validate", "pipelines.validate", step="validate"),
    Stage("train", "pipelines.train", step="train"),
    Stage("evaluate", "pipelines.evaluate", step="evaluate"),
    Stage("promote", "pipelines.promote", step="promote", versioned=False),
    Stage("search", "pipelines.search", step=None, versioned=False),
)

#: The stages of ``dvc.yaml``, in order.
DVC_STAGES = tuple(stage.name for stage in STAGES if stage.versioned)


def stage_names(step: str) -> tuple[str, ...]:
    """The stages the night's ``step`` runs, in order (``data-stages``: prepare, graph, pairs)."""
    names = tuple(stage.name for stage in STAGES if stage.step == step)
    if not names:
        raise KeyError(f"no stage is run by the step {step!r}")
    return names


def stages_from(first: str, last: str) -> tuple[str, ...]:
    """The stages from ``first`` to ``last``, both included, in the night's order."""
    names = [stage.name for stage in STAGES]
    return tuple(names[names.index(first) : names.index(last) + 1])
