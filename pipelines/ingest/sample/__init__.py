"""The offline sample corpus: an ontology, a generated arXiv-like mirror and its server.

* :mod:`.ontology` — hand-written mathematical concepts and relations;
* :mod:`.generator` — ``generate_mirror()`` writes ``data/mirror``;
* :mod:`.manifest` — the mirror's files and its ground truth (``load_manifest()``);
* :mod:`.listing` and :mod:`.server` — ``MirrorServer`` serves it over HTTP like arXiv;
* :mod:`.cli` — ``mathembed sample`` generates the mirror, ``mathembed sample-serve``
  serves it.

Nothing is imported here: the ``mathembed`` command line loads :mod:`.cli` for ``--help``,
and that must stay quick.
"""
