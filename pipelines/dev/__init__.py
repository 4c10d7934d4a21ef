"""Developer tools: local services (moto S3, MLflow, Prefect), the run summary and the
synthetic sample (:mod:`.synthetic`)."""
