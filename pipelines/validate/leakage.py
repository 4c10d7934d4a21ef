"""Leakage between training and evaluation: which training pairs would let the model see
the held-out evaluation set.

Three checks, each a mask over the pairs (any hit is structural: validate stops):
``held_out_concept_anchor`` (a held-out concept, the ``concept`` of an eval query, whose
name, display name, alias or description is a training anchor, or which anchors pairs),
``pair_in_both_splits`` (an (anchor, positive) pair in both splits) and
``unseen_paper_positive`` (a positive from an unseen paper, the paper of a qrel with
``unseen``).
"""

from __future__ import annotations

import pandas as pd

from pipelines.mathtext.names import normalise_name
from pipelines.validate.references import isin

_ID_SUFFIX = r"v\d+#[cs]\d+$"  # chunk / statement id -> paper id


def leakage_masks(
    pairs: pd.DataFrame, queries: pd.DataFrame, concepts: pd.DataFrame, qrels: pd.DataFrame
) -> dict[str, pd.Series]:
    """Each leakage check's mask over ``pairs``, by check name."""
    return {
        "held_out_concept_anchor": held_out_anchor_mask(pairs, queries, concepts),
        "pair_in_both_splits": both_splits_mask(pairs),
        "unseen_paper_positive": unseen_positive_mask(pairs, qrels),
    }


def held_out_anchor_mask(
    pairs: pd.DataFrame, queries: pd.DataFrame, concepts: pd.DataFrame
) -> pd.Series:
    """Pairs anchored at a held-out concept or statement (one with an eval query): by its
    name (as normalised), display name, alias or description, by a described query's text
    (a slogan or citing sentence), or by the pair's ``concept``."""
    held_out = set(queries["concept"].tolist())
    held = concepts[concepts["name"].isin(held_out)]
    texts = set(held["display_name"].tolist()) | {
        description for description in held["description"].tolist() if description
    }
    if "set" in queries:
        texts |= set(queries.loc[queries["set"] == "described", "text"].tolist())
    keys = set(held_out)
    for aliases in held["aliases"].tolist():
        texts.update(aliases)
        keys.update(normalise_name(alias) for alias in aliases)
    keys.discard("")
    # Anchors repeat (one per positive): normalise each distinct text once.
    distinct = pd.Series(pairs["anchor"].unique())
    normalised = pd.Series(distinct.map(normalise_name).to_numpy(), index=distinct.to_numpy())
    anchor_key = pairs["anchor"].map(normalised)
    return (
        isin(pairs["anchor"], _strings(texts))
        | isin(anchor_key, _strings(keys))
        | isin(pairs["concept"], _strings(held_out))
    )


def _strings(values: set[str]) -> pd.Series:
    return pd.Series(sorted(values), dtype="str")


def both_splits_mask(pairs: pd.DataFrame) -> pd.Series:
    """Pairs whose (anchor, positive) occurs in more than one split."""
    splits = pairs.groupby(["anchor", "positive"], sort=False)["split"].transform("nunique")
    return splits > 1


def unseen_positive_mask(pairs: pd.DataFrame, qrels: pd.DataFrame) -> pd.Series:
    """Pairs whose positive comes from an unseen paper (the paper of an ``unseen`` qrel)."""
    unseen_chunks = qrels.loc[qrels["unseen"].astype(bool), "chunk_id"]
    unseen_papers = unseen_chunks.str.replace(_ID_SUFFIX, "", regex=True)
    positive_papers = pairs["positive_id"].str.replace(_ID_SUFFIX, "", regex=True)
    return isin(positive_papers, unseen_papers)
