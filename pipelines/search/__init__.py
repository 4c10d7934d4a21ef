"""Search the passages with a registered model."""
