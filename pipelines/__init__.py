"""mathembed's Python package: one sub-package per pipeline stage, and their command line.

``mirror/`` (the ``sample`` stage: the offline arXiv look-alike), ``ingest/``, ``prepare/``,
``graph/``, ``pairs/``, ``validate/``, ``train/``, ``evaluate/``, ``promote/`` and ``search/``
each hold a stage's pure core, its I/O shell (``stage.py``) and its Typer commands
(``cli.py``, registered on the app of ``pipelines.cli``, which ``mathembed.cli`` extends
with the flows' commands). Below them, the shared wings, lowest first: ``common/`` (the
kernel: configuration, paths, I/O, the table contract), ``mathtext/`` (the rules of
mathematical text), ``retrieval/`` (models, embeddings, the store, lexical ranking) and
``registry/`` (the MLflow registry, the candidate's record, the metric files); their order
and the stage sequence are declared in :mod:`pipelines.common.parts`. Stages import the
wings, never each other, but for the few imports ``tests/unit/test_layering.py`` allows by
name; nothing here imports ``flows`` or ``mathembed``. Retrieval metrics are not defined
here: they live in the Rust crate ``metrics_rs``.

Importing this package has no side effects; the offline switches are applied by the
CLI at startup (see ``pipelines.common.offline``).
"""
