"""Where a reader finds each paper of a mirror, as its corpus knows it: a link is given
only when it is true. The server puts it in each listed entry (:mod:`.listing`), so ingest
stores it without reading the mirror's files.
"""

from __future__ import annotations

from pathlib import Path

from pipelines.mirror.corpora import stacks
from pipelines.mirror.manifest import read_manifest


def source_links(mirror_dir: Path) -> dict[str, str]:
    """Paper id -> where a reader finds the paper, for the mirror in ``mirror_dir``: a
    Stacks chapter's source at the copied commit. Empty for any other mirror or none: the
    synthetic sample's ids look like arXiv ids but name no real paper, and the blueprints
    mirror gives no link."""
    try:
        manifest = read_manifest(mirror_dir, stacks.CORPUS)
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return {}
    return {
        record.paper_id: link
        for record in manifest.versions
        if (link := stacks.source_link(record)) is not None
    }
