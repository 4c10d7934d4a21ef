"""Promotion: the decision rule, the MLflow registry side, promote/status/rollback."""
