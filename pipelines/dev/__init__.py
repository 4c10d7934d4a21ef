"""Developer tools: local services (moto S3, MLflow, Prefect) and the run summary."""
