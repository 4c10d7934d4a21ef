"""The offline mirror (``mathembed sample``): an arXiv look-alike that ingest harvests
through its server, built from one of three corpora.

* :mod:`.layout` — the files every mirror holds (the listing entries, the e-prints and
  their sidecars, the manifest) and the byte-stable pieces a corpus packs;
* :mod:`.manifest` — what ``manifest.json`` records: one record type for every corpus,
  its reader;
* :mod:`.writer` — the one writer: a corpus's paper versions written to a fresh folder and
  swapped in whole;
* :mod:`.corpora` — the corpora: :mod:`~.corpora.stacks` (the demo's default, the
  embedded Stacks Project chapters), :mod:`~.corpora.blueprints` (the Lean blueprint
  projects) and :mod:`~.corpora.synthetic` (the generated sample, with its ontology);
* :mod:`.listing`, :mod:`.links` and :mod:`.server` — ``MirrorServer`` serves a mirror
  over HTTP like arXiv, each paper's link in its listed entry; :func:`.server.serving` is
  the one door ingest uses;
* :mod:`.cli` — ``mathembed sample`` builds the mirror, ``mathembed sample-serve``
  serves it.

Nothing is imported here: the ``mathembed`` command line loads :mod:`.cli` for ``--help``,
and that must stay quick.
"""
