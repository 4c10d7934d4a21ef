"""arXiv access for the ``ingest`` stage: the Atom listing, the HTTP client, e-print extraction.

``atom`` and ``archive`` are pure (bytes in, values out); ``client`` is the only module
that talks to the network. :mod:`pipelines.ingest.stage` ties them to the raw store.
"""
