"""The formats, row keys and vectorised helpers the table models
(:mod:`pipelines.validate.schemas`) are built from, and which checks judge single rows."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

# -- formats ----------------------------------------------------------------------------

#: arXiv identifiers: new style ``2401.00001`` and old style ``math/0501001``, ``math.AG/0501001``.
ARXIV_ID = r"(?:\d{4}\.\d{4,5}|[a-z\-]+(?:\.[A-Z]{2})?/\d{7})"
VERSION = r"v[1-9]\d*"
CHUNK_ID = rf"{ARXIV_ID}{VERSION}#c\d{{4,}}"
STATEMENT_ID = rf"{ARXIV_ID}{VERSION}#s\d{{3,}}"
QUERY_ID = r"q[0-9a-f]{12}"
ISO_UTC = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z"
CATEGORY = r"[a-z][a-z\-]*(?:\.[A-Za-z][A-Za-z\-]*)?"
SHA256_HEX = r"[0-9a-f]{64}"
#: A paper's link: the search page puts it in an ``href``, so nothing but https (no
#: ``javascript:``), no spaces; or nothing at all.
LINK = r"(?:https://[^\s\"'<>]+)?"

# In text cleaned by the prepare stage ``$`` only delimits math and a literal dollar is
# ``\$``; formatting commands are gone, so a ``\command`` outside math is markup left
# behind. One pass: a literal ``\$`` (first alternative) or a whole ``$…$`` span is dropped.
_OUTSIDE_MATH = r"\\\$|\$[^$]*\$"
_COMMAND = r"\\[A-Za-z]+"

# -- rows and checks --------------------------------------------------------------------

#: What identifies a row (checked unique by each model's ``unique_id``).
KEYS: Mapping[str, tuple[str, ...]] = {
    "papers": ("paper_id",),
    "chunks": ("chunk_id",),
    "statements": ("statement_id",),
    "concepts": ("name",),
    "edges": ("source", "target", "relation"),
    "mentions": ("concept", "chunk_id"),
    "pairs": ("anchor", "positive"),
    "queries": ("query_id",),
    "qrels": ("query_id", "chunk_id"),
}

#: Checks that judge single rows; a failing row can be quarantined. Every other check is
#: structural. Names without the ``<column>:`` prefix.
ROW_LEVEL_CHECKS = frozenset(
    {
        "unique_id",
        "non_empty",
        "passage_length",
        "latex_markup_share",
        "balanced_braces",
        "balanced_dollars",
        "anchor_differs_from_positive",
    }
)


def is_row_level(check: str) -> bool:
    """Whether the check ``check`` (``column:name`` or ``name``) is a row-level one."""
    return check.rpartition(":")[2] in ROW_LEVEL_CHECKS


# -- vectorised helpers -----------------------------------------------------------------


def matches(values: pd.Series, pattern: str) -> pd.Series:
    return values.str.fullmatch(pattern).fillna(False).astype(bool)


def first_of_each_key(frame: pd.DataFrame, table: str) -> pd.Series:
    """True for the first row of each key; later rows with the same key are duplicates."""
    return ~frame.duplicated(subset=list(KEYS[table]), keep="first")


def non_blank(values: pd.Series) -> pd.Series:
    return values.str.strip().str.len() > 0


def string_lists(values: pd.Series, pattern: str | None, *, non_empty: bool) -> pd.Series:
    """Each cell is a list (Parquet lists read back as numpy arrays) of matching strings."""
    compiled = re.compile(pattern) if pattern is not None else None

    def ok(cell: Any) -> bool:
        if not isinstance(cell, list | tuple | np.ndarray) or (non_empty and len(cell) == 0):
            return False
        return all(
            isinstance(item, str) and (compiled is None or compiled.fullmatch(item) is not None)
            for item in cell
        )

    return values.map(ok).astype(bool)


def unescaped_count(values: pd.Series, char: str) -> pd.Series:
    """How often ``char`` occurs in each text, not counting ``\\char`` (a literal)."""
    escaped = re.escape(char)
    return values.str.count(escaped) - values.str.count(r"\\" + escaped)


def latex_markup_share(values: pd.Series) -> pd.Series:
    """Share of each text's characters that are ``\\command`` tokens outside ``$…$`` math."""
    outside = values.str.replace(_OUTSIDE_MATH, "", regex=True)
    markup = outside.str.len() - outside.str.replace(_COMMAND, "", regex=True).str.len()
    return markup / values.str.len().clip(lower=1)
