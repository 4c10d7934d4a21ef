"""A paper's text as plain fixed windows: its passages joined in order and cut at a space,
with no statement headers and no block boundaries: a format unlike the passages a model is
trained on, asked by the transfer sets (:mod:`pipelines.evaluate.transfer`) and by
training's window validation (:mod:`pipelines.train.validation`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

#: Characters per window: the independent check's 1,500 (issue 27), near prepare's
#: passage length, so only the format differs.
WINDOW_CHARS = 1500


@dataclass(frozen=True)
class Windows:
    """Every paper's text as plain windows: ``ids[i]`` (``<paper>#w0003``), ``texts[i]``,
    ``papers[i]``; ``of_chunk`` maps a passage id to the windows its text falls in."""

    ids: list[str]
    texts: list[str]
    papers: list[str]
    of_chunk: dict[str, list[int]] = field(default_factory=dict)


def cut_spans(text: str, size: int) -> list[tuple[int, int]]:
    """``(start, end)`` of consecutive windows of at most ``size`` characters, each ending
    at the last space of its second half (a word is cut only when it has none)."""
    spans = []
    start = 0
    while start < len(text):
        end = min(start + size, len(text))
        if end < len(text):
            space = text.rfind(" ", start + size // 2, end)
            end = space if space > start else end
        spans.append((start, end))
        start = end
    return spans


def plain_windows(chunks: pd.DataFrame, size: int = WINDOW_CHARS) -> Windows:
    """Each paper's passages joined in order (``chunk_index``, else the table's) and cut
    into windows of ``size`` characters."""
    ids: list[str] = []
    texts: list[str] = []
    papers: list[str] = []
    of_chunk: dict[str, list[int]] = {}
    order = ["paper_id", "chunk_index"] if "chunk_index" in chunks else ["paper_id"]
    ordered = chunks.sort_values(order, kind="stable")
    for paper_id, passages in ordered.groupby("paper_id", sort=True):
        offsets: list[tuple[str, int, int]] = []
        parts: list[str] = []
        position = 0
        for chunk_id, text in zip(passages["chunk_id"], passages["text"], strict=True):
            offsets.append((str(chunk_id), position, position + len(text)))
            parts.append(str(text))
            position += len(text) + 1
        joined = " ".join(parts)
        spans = cut_spans(joined, size)
        first = len(ids)
        for number, (start, end) in enumerate(spans):
            ids.append(f"{paper_id}#w{number:04d}")
            texts.append(joined[start:end].strip())
            papers.append(str(paper_id))
        for chunk_id, start, end in offsets:
            of_chunk[chunk_id] = [
                first + number
                for number, (w_start, w_end) in enumerate(spans)
                if w_start < end and start < w_end
            ]
    return Windows(ids, texts, papers, of_chunk)
