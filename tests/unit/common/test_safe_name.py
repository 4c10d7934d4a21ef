"""pipelines.common.io.safe_name: file names from arbitrary ids, bounded in length."""

from __future__ import annotations

from pipelines.common.io import MAX_NAME_CHARS, safe_name


def test_short_ids_keep_their_readable_names() -> None:
    assert safe_name("math/0501001v2") == "math_0501001v2"
    assert safe_name("../..") == "unnamed"


def test_a_long_id_gets_a_bounded_name_that_keeps_ids_apart() -> None:
    first, second = safe_name("a" * 300 + "/1"), safe_name("a" * 300 + "/2")
    assert len(first) == len(second) == MAX_NAME_CHARS and first != second
    assert safe_name("a" * MAX_NAME_CHARS) == "a" * MAX_NAME_CHARS  # at the bound: as is
