"""What is recorded about models: the MLflow registry (:mod:`.mlflow_registry`), the
candidate's own record (:mod:`.candidate_metadata`), the metric files as typed records
(:mod:`.metric_records`) and how results are written for people (:mod:`.reporting`).
Imports the kernel, :mod:`pipelines.mathtext` and :mod:`pipelines.retrieval`."""
