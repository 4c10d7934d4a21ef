"""The prepare stage: clean LaTeX into passages (chunks) and statements."""
