"""Masking a name out of a text: what is left must be found by its meaning, not its words.

The ``masked`` evaluation set asks each held-out name again against its relevant passages
with the name masked out, and the ``masked_name`` training pairs teach the model to find
a definition whose term it cannot see. Both mask the same way, here: every surface form
of the name (singular and plural head, as :func:`pipelines.mathtext.names.surface_forms`
knows them), in any case, whatever joins its words (space, hyphen, dash), becomes
:data:`MASK`. Pure functions.
"""

from __future__ import annotations

import functools
import re

from pipelines.mathtext.names import surface_forms

#: What stands in the text where the name was: a pronoun keeps the sentence readable.
MASK = "it"
_JOINER = r"[\s\-\u2010-\u2015'\u2019]+"


@functools.lru_cache(maxsize=4096)
def name_pattern(name: str) -> re.Pattern[str] | None:
    """A pattern matching every surface form of ``name`` in running text (None if it has
    no words)."""
    forms = sorted(surface_forms(name), key=len, reverse=True)
    if not forms:
        return None
    alternatives = [_JOINER.join(re.escape(word) for word in form.split()) for form in forms]
    return re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")(?:'s)?(?!\w)", re.IGNORECASE)


def mask_name(text: str, name: str) -> str:
    """``text`` with every surface form of ``name`` replaced by :data:`MASK`."""
    pattern = name_pattern(name)
    return text if pattern is None else pattern.sub(MASK, text)


def names_in(text: str, name: str) -> bool:
    """Whether ``text`` holds a surface form of ``name``."""
    pattern = name_pattern(name)
    return pattern is not None and pattern.search(text) is not None
