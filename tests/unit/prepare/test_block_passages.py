"""Passages begin where theorem-like blocks begin (so a definition opens its passage), and
no text is lost to it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pipelines.prepare.chunker import block_spans, chunk_spans
from pipelines.prepare.cleaner import prepare_document

INTRO = "We recall what we need about schemes and their morphisms here. " * 3
DEFINITION = (
    "Definition. A scheme is quasi-compact if every open covering has a finite subcovering. "
)
LEMMA = "Lemma. An affine scheme is quasi-compact. Proof. A spectrum is quasi-compact. " * 2


def test_each_block_opens_a_passage_and_short_ones_pack_together() -> None:
    text = INTRO + DEFINITION + LEMMA
    starts = (len(INTRO), len(INTRO) + len(DEFINITION))
    spans = block_spans(text, starts, chunk_chars=200, overlap_chars=20, min_chunk_chars=20)
    assert [text[a:b].split(".")[0] for a, b in spans][1:] == ["Definition", "Lemma"]
    packed = block_spans(text, starts, chunk_chars=2000, overlap_chars=20, min_chunk_chars=20)
    assert packed == [(0, len(text.rstrip()))]


def test_pack_chars_bounds_how_many_blocks_share_a_passage() -> None:
    text = INTRO + DEFINITION + LEMMA
    starts = (len(INTRO), len(INTRO) + len(DEFINITION))
    # Within chunk_chars, packing stops at pack_chars: the lemma opens a passage of its own.
    spans = block_spans(
        text, starts, chunk_chars=2000, overlap_chars=20, min_chunk_chars=20, pack_chars=300
    )
    assert [text[a:b].split(".")[0] for a, b in spans] == [INTRO.split(".")[0], "Lemma"]
    alone = block_spans(
        text, starts, chunk_chars=2000, overlap_chars=20, min_chunk_chars=20, pack_chars=0
    )
    assert [a for a, _b in alone] == [0, *starts]
    # pack_chars above chunk_chars packs no more than chunk_chars allows.
    assert block_spans(text, starts, 200, 20, 20, pack_chars=5000) == block_spans(
        text, starts, 200, 20, 20
    )


def test_without_blocks_it_is_the_plain_chunker() -> None:
    text = INTRO * 10
    assert block_spans(text, (), 300, 50, 40) == chunk_spans(text, 300, 50, 40)


def test_a_block_too_short_for_a_passage_joins_its_neighbour() -> None:
    text = INTRO * 4 + "Remark. Short."
    spans = block_spans(
        text, (len(INTRO) * 4,), chunk_chars=150, overlap_chars=20, min_chunk_chars=30
    )
    assert text[spans[-1][0] : spans[-1][1]].endswith("Remark. Short.")
    assert all(b - a >= 30 for a, b in spans)


@given(
    st.lists(st.integers(min_value=1, max_value=600), min_size=1, max_size=8),
    st.integers(min_value=100, max_value=700),
    st.integers(min_value=0, max_value=800),
)
def test_no_word_is_lost(block_lengths: list[int], chunk_chars: int, pack_chars: int) -> None:
    words = iter(f"w{index}" for index in range(10_000))
    blocks = [
        " ".join(next(words) for _ in range(max(1, length // 6))) + " " for length in block_lengths
    ]
    text = "".join(blocks)
    starts = tuple(sum(len(block) for block in blocks[:index]) for index in range(1, len(blocks)))
    spans = block_spans(
        text, starts, chunk_chars, chunk_chars // 5, min_chunk_chars=10, pack_chars=pack_chars
    )
    kept = {word for a, b in spans for word in text[a:b].split()}
    assert kept == set(text.split())


def test_a_definition_opens_its_passage_in_a_prepared_paper() -> None:
    source = (
        "\\documentclass{amsart}\\newtheorem{definition}{Definition}\\begin{document}"
        f"\\section{{Schemes}}{INTRO * 6}"
        "\\begin{definition}A scheme is {\\it quasi-compact} if every open covering has a "
        "finite subcovering.\\end{definition}\\end{document}"
    )
    prepared = prepare_document(source, chunk_chars=500, overlap_chars=50, min_chunk_chars=40)
    assert prepared.chunks[-1].text.startswith("Definition. A scheme is quasi-compact")
    assert prepared.statements[0].terms == ("quasi-compact",)
