"""Prefect flows and tasks for mathembed: orchestration only, no domain logic.

``nightly.py`` (``nightly_retrain``: ingest -> ``dvc repro`` -> promote -> ``dvc push``),
``train_gpu.py`` (training on the GPU work pool), ``hooks.py`` (step names, the failure
hook and webhook) and ``orchestration.py`` (the flow's pure decisions, the ``dvc`` calls
and the run lock). They call functions from ``pipelines``, never re-implement them.
"""
