"""mathembed's Python package: the pipeline stages and the ``mathembed`` command line.

Each stage (ingest, prepare, graph, pairs, validate, train, evaluate, promote) will
live in its own module as a pure function plus a thin ``python -m pipelines.<stage>``
entry point; ``pipelines.cli`` gathers them under one Typer app. Retrieval metrics
are not defined here: they live in the Rust crate ``metrics_rs``.

Importing this package has no side effects; the offline switches are applied by the
CLI at startup (see ``pipelines.offline``).
"""
