"""``python -m pipelines.graph``: build the knowledge graph (see :mod:`pipelines.graph`)."""

from __future__ import annotations

from pipelines.graph import main

if __name__ == "__main__":
    raise SystemExit(main())
