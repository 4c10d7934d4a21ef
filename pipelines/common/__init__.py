"""The kernel every part shares: configuration, paths, the table contract, I/O, locks, the
command line's contract, offline switches, redaction, and the parts' order
(:mod:`pipelines.common.parts`). It imports no other part of the project."""
