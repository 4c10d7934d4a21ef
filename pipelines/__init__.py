"""mathembed's Python package: one sub-package per pipeline stage, and their command line.

``ingest/``, ``prepare/``, ``graph/``, ``pairs/``, ``validate/``, ``train/``, ``evaluate/``,
``promote/`` and ``search/`` each hold a stage's pure core, its I/O shell (``stage.py``)
and its Typer commands (``cli.py``, registered on the app of ``pipelines.cli``, which
``mathembed.cli`` extends with the flows' commands); ``common/`` holds what they share
(configuration, paths, the table contract, I/O, models, embeddings, the registry, the
candidate's record, how results are written, offline switches) and ``dev/`` the
developer's tools. Stages import ``common``, never each other, but for the few imports
``tests/unit/test_layering.py`` allows by name (promote scores with evaluate's public
scoring); nothing here imports ``flows`` or ``mathembed``. Retrieval metrics are not
defined here: they live in the Rust crate ``metrics_rs``.

Importing this package has no side effects; the offline switches are applied by the
CLI at startup (see ``pipelines.common.offline``).
"""
