"""Secrets out of what mathembed prints, stores, logs or sends.

A URL can carry a password (``http://user:pw@host``, ``MLFLOW_TRACKING_URI``) or be a
secret itself (a webhook's path and query are its key). :func:`redact_url` keeps what
says where a thing is (scheme, host, port) and hides the rest; :func:`redact` does that
for every URL inside a longer text (an error message, a log line).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

HIDDEN = "***"

# scheme://[userinfo@]host[:port][/path][?query][#fragment], up to white space or a quote.
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s'\"<>]+")


def redact_url(url: str, *, keep_path: bool = True) -> str:
    """``url`` without its credentials; without its path and query too unless ``keep_path``.

    ``keep_path=False`` is for URLs whose path is the secret (webhooks).
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return HIDDEN  # not parseable: show nothing of it
    has_credentials = parts.username is not None or parts.password is not None
    if keep_path and not has_credentials and not parts.query:
        return url  # nothing secret in it (rebuilding would also drop sqlite:////'s slashes)
    netloc = host if port is None else f"{host}:{port}"
    if has_credentials:
        netloc = f"{HIDDEN}@{netloc}"
    if keep_path:
        query = HIDDEN if parts.query else ""
        return urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    path = f"/{HIDDEN}" if parts.path.strip("/") or parts.query else ""
    return urlunsplit((parts.scheme, netloc, path, "", ""))


def redact(text: str) -> str:
    """``text`` with the credentials of every URL in it hidden (paths kept)."""
    return _URL.sub(lambda match: redact_url(match.group(0)), text)
