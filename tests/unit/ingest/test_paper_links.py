"""The rules that give a paper its link when ingest stores it: only links that are true.
From arXiv, its abstract page; from the offline mirror, what the listing says (a Stacks
chapter's source, in a ``<link title="source">``), and nothing else."""

from __future__ import annotations

import dataclasses
from datetime import date
from pathlib import Path

from hostile_arxiv import PARAMS, atom_entry, atom_feed, feed_answer, hostile_arxiv, tex_eprint
from repo import REPO

from pipelines.common.config import IngestParams
from pipelines.common.io import read_json
from pipelines.common.paths import Paths
from pipelines.common.raw_layout import RAW_META_FILE, version_folder
from pipelines.ingest.arxiv.atom import abs_page, parse_feed
from pipelines.ingest.harvest import abstract_page, listed_source, no_link
from pipelines.ingest.quarantine import _entry_from_details, cap_details
from pipelines.ingest.stage import run_from_source
from pipelines.mirror.corpora.stacks import CORPUS_DIR, STACKS_SOURCE, build_stacks_mirror
from pipelines.mirror.corpora.synthetic import generate_mirror

SOURCE = (
    '\n    <link title="source" href="https://example.org/ch.tex" rel="related" type="text/html"/>'
)


def test_arxiv_papers_link_to_their_abstract_only_when_harvested_from_arxiv() -> None:
    assert abs_page("2401.00007") == "https://arxiv.org/abs/2401.00007"
    assert abs_page("math/0501001") == "https://arxiv.org/abs/math/0501001"
    plain, linked = parse_feed(
        atom_feed([atom_entry("2401.00007v1"), atom_entry("2401.00008v1", extra=SOURCE)]).encode()
    ).entries
    assert abstract_page(plain) == "https://arxiv.org/abs/2401.00007"
    # The synthetic sample's ids look like arXiv ids but name other people's papers: its
    # listing gives no link, and none is made up.
    assert listed_source(plain) is None and no_link(plain) is None
    assert listed_source(linked) == "https://example.org/ch.tex"


def test_a_paper_harvested_from_arxiv_records_its_abstract_page(tmp_path: Path) -> None:
    answers = {
        "/api/query": feed_answer([atom_entry("2401.00001v1", extra=SOURCE)]),
        "/e-print/2401.00001v1": tex_eprint(),
    }
    paths = Paths(tmp_path)
    with hostile_arxiv(answers) as base_url:  # ingest.source arxiv, at a local address
        params = dataclasses.replace(PARAMS, base_url=base_url)
        report = run_from_source(params, paths, progress=False)
    assert report.stored == ["2401.00001v1"]
    meta = read_json(version_folder(paths.raw, "2401.00001", 1) / RAW_META_FILE)
    assert meta["url"] == "https://arxiv.org/abs/2401.00001"  # arXiv's rule, not the listing's


def test_papers_from_the_mirror_link_where_its_listing_says(tmp_path: Path) -> None:
    # params.yaml's categories and caps, the mirror's source
    params = IngestParams(source="sample", delay_seconds=0.0, timeout_seconds=20.0)
    stacks = Paths(tmp_path / "stacks")
    build_stacks_mirror(
        stacks.mirror,
        REPO / CORPUS_DIR,
        start=date(2024, 1, 1),
        end=date(2024, 1, 31),
        chapters=("categories.tex", "fields.tex"),
    )
    assert run_from_source(params, stacks, progress=False).stored == [
        "stacks/2607001v1",
        "stacks/2607002v1",
    ]
    meta = read_json(version_folder(stacks.raw, "stacks/2607002", 1) / RAW_META_FILE)
    assert meta["url"] == STACKS_SOURCE + "fields.tex"

    synthetic = Paths(tmp_path / "synthetic")
    generate_mirror(synthetic.mirror, 20, 3, start=date(2024, 1, 1), end=date(2024, 1, 31))
    report = run_from_source(params, synthetic, progress=False)
    assert report.stored
    for versioned_id in report.stored:
        paper_id, _, version = versioned_id.rpartition("v")
        meta = read_json(version_folder(synthetic.raw, paper_id, int(version)) / RAW_META_FILE)
        assert meta["url"] is None


def test_a_paper_a_cap_refused_keeps_its_listed_link_for_the_retry() -> None:
    feed = atom_feed([atom_entry("2401.00008v1", extra=SOURCE), atom_entry("2401.00009v1")])
    linked, plain = parse_feed(feed.encode()).entries
    details = cap_details(linked, "ingest.max_file_bytes", 1)
    assert details["entry"]["source_url"] == "https://example.org/ch.tex"
    assert _entry_from_details(details) == linked
    # A listing without links writes the record it always wrote.
    details = cap_details(plain, "ingest.max_file_bytes", 1)
    assert "source_url" not in details["entry"]
    assert _entry_from_details(details) == plain
