"""The offline mirror ingest harvests like arXiv: the real corpus or a generated sample.

* :mod:`.layout` — the files every mirror holds, and how a builder writes them;
* :mod:`.corpus` — ``build_corpus_mirror()`` writes ``data/mirror`` from the embedded real
  chapters (``corpora/stacks-project/``, the demo's default, ``sample.corpus``);
* :mod:`.corpus_manifest` — what that mirror records per paper, and each paper's link;
* :mod:`.blueprints` — ``build_blueprint_mirror()`` writes it from the Lean blueprint
  projects (``sample.corpus: blueprints``);
* :mod:`.blueprints_manifest` — what that mirror records per paper;
* :mod:`.listing` and :mod:`.server` — ``MirrorServer`` serves it over HTTP like arXiv;
* :mod:`.cli` — ``mathembed sample`` builds the mirror, ``mathembed sample-serve``
  serves it.

The synthetic sample (``sample.corpus: synthetic``: fault tests, performance runs) is
written by :mod:`pipelines.dev.synthetic`, a developer tool outside the stage.

Nothing is imported here: the ``mathembed`` command line loads :mod:`.cli` for ``--help``,
and that must stay quick.
"""
