"""A hit links to its paper only as ingest recorded it: search reads ``papers.url`` and
nothing else (no mirror, no ingest setting)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pipelines.common.io import write_json, write_parquet
from pipelines.common.paths import Paths
from pipelines.search.links import paper_links
from pipelines.search.query import read_corpus

ARXIV_PAGE = "https://arxiv.org/abs/2401.00007"


def test_links_are_the_recorded_ones_and_an_empty_one_is_none() -> None:
    papers = pd.DataFrame({"paper_id": ["2401.00007", "2401.00008"], "url": [ARXIV_PAGE, ""]})
    assert paper_links(papers) == {"2401.00007": ARXIV_PAGE, "2401.00008": None}
    # A table prepare wrote before papers carried links: no link rather than a guess.
    assert paper_links(papers.drop(columns="url")) == {}


def test_the_corpus_takes_links_from_the_papers_table_not_the_mirror(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    chunks = pd.DataFrame(
        {
            "chunk_id": ["2401.00007v1#c0000", "2401.00008v1#c0000", "2401.00009v1#c0000"],
            "paper_id": ["2401.00007", "2401.00008", "2401.00009"],
            "text": ["a lattice", "a graph", "a group"],
        }
    )
    papers = pd.DataFrame(
        {
            "paper_id": ["2401.00007", "2401.00008"],
            "title": ["On the lattice", "On the graph"],
            "url": [ARXIV_PAGE, ""],
        }
    )
    write_parquet(paths.processed / "chunks.parquet", chunks)
    write_parquet(paths.processed / "papers.parquet", papers)
    # A mirror whose manifest would name a link: search no longer reads it.
    write_json(paths.mirror / "manifest.json", {"corpus": "stacks-project", "versions": []})

    corpus = read_corpus(paths)
    assert [corpus.hit(row, 0.5).url for row in range(3)] == [ARXIV_PAGE, None, None]
    assert corpus.hit(0, 0.5).title == "On the lattice"
