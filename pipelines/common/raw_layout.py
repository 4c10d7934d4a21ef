"""The raw store's layout: where ingest writes a paper version and prepare finds it.

``data/raw/<safe_name(paper_id)>/v<version>/`` holds, written in this order and each
atomically, ``eprint.bin`` (the e-print as downloaded), ``source.tex`` (the flattened
LaTeX, when there is one) and ``meta.json`` (the version's metadata). ``meta.json`` comes
last, so a folder without it is still being written, or was interrupted: it is not stored
yet, and the next ingest redoes it. ``data/raw/watermark.json`` says how far the harvest
has come. What ``meta.json`` holds is checked by prepare
(:func:`pipelines.prepare.raw_store.validate_meta`).
"""

from __future__ import annotations

from pathlib import Path

from pipelines.common.io import safe_name

RAW_META_FILE = "meta.json"
RAW_SOURCE_FILE = "source.tex"
RAW_EPRINT_FILE = "eprint.bin"
WATERMARK_FILE = "watermark.json"
VERSION_PREFIX = "v"


def folder_names(paper_id: str, version: int) -> tuple[str, str]:
    """The names of a version's paper folder and version folder: ``("math_0501001", "v2")``."""
    return safe_name(paper_id), f"{VERSION_PREFIX}{version}"


def version_folder(raw_dir: Path, paper_id: str, version: int) -> Path:
    """Where ``paper_id`` version ``version`` lives in the raw store ``raw_dir``."""
    paper_folder, version_name = folder_names(paper_id, version)
    return raw_dir / paper_folder / version_name


def is_version_folder(name: str) -> bool:
    """Whether a folder named ``name`` inside a paper's folder holds a version."""
    return name.startswith(VERSION_PREFIX)


def is_stored(raw_dir: Path, paper_id: str, version: int) -> bool:
    """A version is stored once its ``meta.json`` exists (it is written last)."""
    return (version_folder(raw_dir, paper_id, version) / RAW_META_FILE).is_file()
