"""The search page's static files (``pipelines/search/static/``: KaTeX and the page's own
script and style sheet), read once and served from memory under ``/static/``.

Only files of the types in :data:`CONTENT_TYPES` are served, and only those found when the
service started: a request names one of them or gets a 404, so no path from a client ever
reaches the file system. Each answer carries a strong ``ETag`` (its content's hash) and a
``Cache-Control`` lifetime; a browser that revalidates with ``If-None-Match`` gets a 304.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

#: The folder served, shipped inside the package (hatch packages the whole folder).
STATIC_DIR = Path(__file__).parent / "static"
CONTENT_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".woff2": "font/woff2",
}
#: A day: KaTeX's files change only with the package, and the ETag revalidates after.
CACHE_CONTROL = "public, max-age=86400"


@dataclass(frozen=True)
class Asset:
    content_type: str
    body: bytes
    etag: str  # quoted, as the header carries it


def load_assets(folder: Path = STATIC_DIR) -> dict[str, Asset]:
    """Every servable file under ``folder``, by its path relative to it ("katex/katex.min.js")."""
    if not folder.is_dir():
        raise FileNotFoundError(
            f"the search page's static files are missing: {folder} not found; reinstall "
            "mathembed (`make build`)"
        )
    assets = {}
    for path in sorted(folder.rglob("*")):
        content_type = CONTENT_TYPES.get(path.suffix)
        if content_type is None or not path.is_file():
            continue
        body = path.read_bytes()
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        assets[path.relative_to(folder).as_posix()] = Asset(content_type, body, etag)
    return assets


def not_modified(asset: Asset, if_none_match: str | None) -> bool:
    """Whether a request's ``If-None-Match`` names ``asset``'s current version."""
    if not if_none_match:
        return False
    tags = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
    return "*" in tags or asset.etag in tags
