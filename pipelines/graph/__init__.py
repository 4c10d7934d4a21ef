"""The graph stage: concepts and typed relations extracted from the prepared passages."""
