"""The offline mirror ingest harvests like arXiv: the real corpus or a generated sample.

* :mod:`.corpus` — ``build_corpus_mirror()`` writes ``data/mirror`` from the embedded real
  chapters (``corpora/stacks-project/``, the demo's default, ``sample.corpus``);
* :mod:`.ontology` — hand-written mathematical concepts and relations;
* :mod:`.generator` — ``generate_mirror()`` writes ``data/mirror`` from the synthetic
  generator (fault tests, performance runs);
* :mod:`.manifest` — the mirror's files and its ground truth (``load_manifest()``);
* :mod:`.listing` and :mod:`.server` — ``MirrorServer`` serves it over HTTP like arXiv;
* :mod:`.cli` — ``mathembed sample`` builds the mirror, ``mathembed sample-serve``
  serves it.

Nothing is imported here: the ``mathembed`` command line loads :mod:`.cli` for ``--help``,
and that must stay quick.
"""
