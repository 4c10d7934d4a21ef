"""arXiv access for the ``ingest`` stage: the Atom listing, the HTTP client, e-print extraction.

``atom``, ``archive`` and ``sniff`` are pure (bytes in, values out); ``client`` (the
listing and e-print endpoints) over ``transport`` (politeness, retries, deadlines) is the
only code that talks to the network. :mod:`pipelines.ingest.harvest` ties them to the raw
store.
"""
