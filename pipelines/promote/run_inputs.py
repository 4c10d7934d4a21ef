"""What a promotion run records besides numbers: its inputs as MLflow datasets (the pairs it
was trained on, the evaluation queries and judgments, each with its DVC hash) and the
model's signature.

MLflow is imported inside the functions: importing this module stays cheap.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pipelines.common.paths import Paths
from pipelines.common.tables import TABLES

if TYPE_CHECKING:
    from mlflow.models import ModelSignature

#: The validated tables a promotion run logs as inputs, with the context of each.
DATASET_CONTEXTS = {"pairs": "training", "queries": "evaluation", "qrels": "evaluation"}
#: MLflow keeps a dataset digest in 36 characters (an md5 plus DVC's ".dir").
DIGEST_LENGTH = 36


def dvc_md5_of(relative_path: str, hashes: Mapping[str, str]) -> str | None:
    """The ``dvc.lock`` md5 covering a file: its own, or its closest tracked folder's."""
    covering = [
        path
        for path in hashes
        if relative_path == path or relative_path.startswith(path.rstrip("/") + "/")
    ]
    return hashes[max(covering, key=len)] if covering else None


def log_datasets(paths: Paths, hashes: Mapping[str, str]) -> dict[str, str]:
    """Log the validated pairs, queries and qrels as the active run's inputs; name → digest.

    The digest is the DVC md5 of the file (or of the folder DVC tracks it in), so the
    dataset in MLflow names the same version ``dvc checkout`` restores. A missing table
    is skipped: promotion already refused what it cannot do without.
    """
    import mlflow
    import pandas as pd
    from mlflow.data.pandas_dataset import from_pandas

    logged = {}
    for table, context in DATASET_CONTEXTS.items():
        path = TABLES[table].validated_path(paths)
        if not path.is_file():
            continue
        relative = path.relative_to(paths.root).as_posix()
        md5 = dvc_md5_of(relative, hashes)
        with warnings.catch_warnings():
            # MLflow registers its local-file source twice and warns that a path "can be
            # interpreted in multiple ways" (both are the same class).
            warnings.filterwarnings("ignore", "The specified dataset source", UserWarning)
            # ... and, when it infers the schema (at log_input), that integer columns cannot
            # hold missing values: advice for model inputs, and these are tables.
            warnings.filterwarnings("ignore", "Hint: Inferred schema contains integer", UserWarning)
            dataset = from_pandas(
                pd.read_parquet(path),
                source=relative,
                name=table,
                digest=md5[:DIGEST_LENGTH] if md5 else None,
            )
            mlflow.log_input(dataset, context=context)
        logged[table] = dataset.digest
    return logged


def embedding_signature(dimension: int | None) -> ModelSignature:
    """Input: one string column; output: float32 embeddings, one row per text.

    MLflow's default for the flavour says float64, which is not what ``encode`` returns.
    """
    import numpy as np
    from mlflow.models import ModelSignature
    from mlflow.types.schema import ColSpec, Schema, TensorSpec

    shape = (-1, dimension) if dimension else (-1, -1)
    return ModelSignature(
        inputs=Schema([ColSpec("string")]),
        outputs=Schema([TensorSpec(np.dtype(np.float32), shape)]),
    )
