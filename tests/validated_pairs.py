"""A project's validated training pairs as the validate stage leaves them for training: the
pairs table, and the passages table holding every passage a pair names (training asks its
validation anchors over the papers' windows: ``train.validation_windows``)."""

from __future__ import annotations

import pandas as pd

from pipelines.common import io
from pipelines.common.paths import Paths


def passages_of(pairs: pd.DataFrame) -> pd.DataFrame:
    """The passages ``pairs`` point at: one per ``positive_id``, its paper's only one."""
    passages = pairs.drop_duplicates("positive_id")
    return pd.DataFrame(
        {
            "chunk_id": passages["positive_id"].tolist(),
            "paper_id": [chunk_id.split("#")[0] for chunk_id in passages["positive_id"]],
            "chunk_index": 0,
            "text": passages["positive"].tolist(),
        }
    )


def write_validated_pairs(paths: Paths, pairs: pd.DataFrame) -> None:
    """``pairs`` and their passages, where training reads them."""
    io.write_parquet(paths.validated / "pairs.parquet", pairs)
    io.write_parquet(paths.validated / "chunks.parquet", passages_of(pairs))
