"""mathembed's Python package: one sub-package per pipeline stage, and the ``mathembed`` CLI.

``ingest/``, ``prepare/``, ``graph/``, ``pairs/``, ``validate/``, ``train/``, ``evaluate/``,
``promote/`` and ``search/`` each hold a stage's pure core, its I/O shell (``stage.py``)
and its Typer commands (``cli.py``, registered on the root app in ``pipelines.cli``);
``common/`` holds what they share (configuration, paths, the table contract, I/O, models,
embeddings, offline switches) and ``dev/`` the developer's tools. Stages import
``common``, never each other. Retrieval metrics are not defined here: they live in the
Rust crate ``metrics_rs``.

Importing this package has no side effects; the offline switches are applied by the
CLI at startup (see ``pipelines.common.offline``).
"""
