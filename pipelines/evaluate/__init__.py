"""The evaluate stage: candidate and base model on the held-out queries, scored by metrics_rs."""
