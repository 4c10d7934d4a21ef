"""Masking a name out of a text (the masked eval set and the masked-name pairs)."""

from __future__ import annotations

import pytest

from pipelines.mathtext.masking import MASK, mask_name, names_in


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A Zariski covering of $X$ is a family.", f"A {MASK} of $X$ is a family."),
        ("Zariski coverings form a site.", f"{MASK} form a site."),
        ("every zariski-covering's refinement", f"every {MASK} refinement"),
        ("Zariski\ncovering", MASK),
        ("A Zariski coveringly thing", "A Zariski coveringly thing"),  # whole words only
        ("the étale covering", "the étale covering"),
    ],
)
def test_every_surface_form_is_masked_and_nothing_else(text: str, expected: str) -> None:
    assert mask_name(text, "Zariski covering") == expected
    assert names_in(text, "Zariski covering") == (expected != text)


def test_a_name_without_words_masks_nothing() -> None:
    assert mask_name("some text", "$$") == "some text"
    assert not names_in("some text", "$$")
