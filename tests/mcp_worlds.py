"""A promotion world for the MCP server's tests: a champion (the bag-of-words model that
knows seven topics) and, beside the world's twenty topic passages, one planted passage of a
paper of its own with a statement in it, so a search has one right first hit and that hit
names a statement to fetch.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from promotion_worlds import Models, World, make_world

from pipelines.common.io import write_parquet

#: The query, and the passage closest to it: search reads a passage headed by its statement
#: ("Theorem (Lattice prime theorem). Main results." before the text), and the
#: bag-of-words champion (16 tokens, most of them the header) ranks the planted passage
#: first for its name and section (a cosine of 0.95 against at most 0.91 for any other
#: passage), as does BM25. The statement is the passage's whole text (20 characters at
#: least, or no passage is looked for).
QUERY = "lattice prime theorem main results"
PLANTED_PAPER = "2402.00001"
PLANTED_TITLE = "Primes in lattices"
PLANTED_PASSAGE = "2402.00001v1#c0000"
PLANTED_STATEMENT = "2402.00001v1#s000"
PLANTED_TEXT = "lattice prime lattice prime"


def plant(world: World) -> None:
    """Add the planted paper, passage and statement to the world's validated tables."""
    validated = world.paths.validated
    chunks = pd.read_parquet(validated / "chunks.parquet")
    planted = {
        "chunk_id": PLANTED_PASSAGE,
        "paper_id": PLANTED_PAPER,
        "version": 1,
        "chunk_index": 0,
        "section": "Main results",
        "text": PLANTED_TEXT,
    }
    write_parquet(
        validated / "chunks.parquet",
        pd.concat([chunks, pd.DataFrame([planted])], ignore_index=True),
    )
    papers = pd.read_parquet(validated / "papers.parquet")
    paper = {"paper_id": PLANTED_PAPER, "title": PLANTED_TITLE, "url": ""}
    write_parquet(
        validated / "papers.parquet", pd.concat([papers, pd.DataFrame([paper])], ignore_index=True)
    )
    statement = {
        "statement_id": PLANTED_STATEMENT,
        "paper_id": PLANTED_PAPER,
        "version": 1,
        "kind": "theorem",
        "name": "Lattice prime theorem",
        "label": "theorem-lattice-prime",
        "text": PLANTED_TEXT,
        "proof": "",
        "slogan": "Lattices hold primes.",
    }
    write_parquet(validated / "statements.parquet", pd.DataFrame([statement]))


def searchable_world(root: Path, models: Models, empty_db: Path) -> World:
    """A world under ``root`` with a champion and the planted passage (MLflow's environment
    variables unset while it is made, as the ``world`` fixture has them)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("MLFLOW_TRACKING_URI", raising=False)
        patch.delenv("MLFLOW_REGISTRY_URI", raising=False)
        world = make_world(root, models.base, empty_db)
        assert world.promote(world.install_candidate(models.knows_7)).promoted
    plant(world)
    return world
