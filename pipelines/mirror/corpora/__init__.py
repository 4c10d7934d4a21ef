"""The corpora a mirror is built from, one module each, all written by the one writer
(:func:`pipelines.mirror.writer.write_mirror`):

* :mod:`.stacks` — the demo's real corpus: one paper per Stacks Project chapter of
  ``corpora/stacks-project/`` (``sample.corpus: stacks-project``, the default);
* :mod:`.blueprints` — research-level LaTeX: one paper per chapter of the Lean blueprint
  projects in ``sample.blueprints_dir`` (``sample.corpus: blueprints``);
* :mod:`.synthetic` — the generated sample about the hand-written concepts of its
  ontology, malformed e-prints included (``sample.corpus: synthetic``: fault tests,
  performance runs).
"""
