"""The repository root, for tests that read its files (params.yaml, dvc.yaml, infra/, ...)."""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
