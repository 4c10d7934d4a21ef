"""The offline sample corpus: an ontology, a generated arXiv-like mirror and its server.

* :mod:`pipelines.sample.ontology` — hand-written mathematical concepts and relations;
* :mod:`pipelines.sample.generator` — ``generate_mirror()`` writes ``data/mirror``;
* :mod:`pipelines.sample.server` — ``MirrorServer`` serves it over HTTP like arXiv.

``python -m pipelines.sample`` generates the mirror; ``python -m pipelines.sample serve``
serves it.
"""

from pipelines.ingest.sample.generator import (
    Manifest,
    VersionRecord,
    generate_mirror,
    load_manifest,
)
from pipelines.ingest.sample.server import MirrorServer

__all__ = ["Manifest", "MirrorServer", "VersionRecord", "generate_mirror", "load_manifest"]
