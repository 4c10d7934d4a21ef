"""Prefect flows and tasks for mathembed: orchestration only, no domain logic.

Empty for now; the flows (nightly ingest -> ``dvc repro`` -> promote -> ``dvc push``,
with training routed to a GPU work pool) come in the orchestration issue. They will
call functions from ``pipelines``, never re-implement them.
"""
