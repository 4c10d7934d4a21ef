"""Developer tools: local services (moto S3, MLflow, Prefect, and the work pools its
deployments run on), the run summary and the synthetic sample (:mod:`.synthetic`)."""
