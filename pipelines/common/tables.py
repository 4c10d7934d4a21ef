"""The data contract: every table the pipeline writes, defined once.

A table has a name, the folder it lives in (a :class:`~pipelines.common.paths.Paths`
property), an Arrow schema that fixes its Parquet column types (even of an empty table:
no aliases anywhere is still ``list<string>``, not ``list<null>``) and the allowed values
of its categorical columns. Stages import this module, never each other; the pandera
models that say what the *values* must be live in :mod:`pipelines.validate.schemas` and
take their allowed values from here. :func:`write_table` is the one Parquet writer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import pandas as pd
import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type information
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from pipelines.common.io import atomic_output
from pipelines.common.paths import Paths

# -- allowed values -----------------------------------------------------------------------

#: Theorem-like environments prepare keeps as statements.
STATEMENT_KINDS = ("theorem", "lemma", "proposition", "corollary", "definition", "conjecture")

#: ``source_kind`` of a paper as prepare reads it; validated papers never carry
#: ``withdrawn`` (prepare leaves withdrawn papers out).
SOURCE_KINDS = ("tex", "abstract_only", "withdrawn")
PAPER_SOURCE_KINDS = ("tex", "abstract_only")

ConceptType = Literal[
    "object", "theorem", "definition", "technique", "identity", "conjecture", "other"
]
Relation = Literal["generalizes", "uses", "is_instance_of", "implies", "related_to"]
Evidence = Literal["definition", "statement", "keyword", "text"]
CONCEPT_TYPES: tuple[str, ...] = get_args(ConceptType)
RELATIONS: tuple[str, ...] = get_args(Relation)
EVIDENCE_ORDER: tuple[str, ...] = get_args(Evidence)  # strongest first

PAIR_KINDS = (
    "name",
    "description",
    "masked_name",  # a name -> its defining passage with the name masked out
    "edge",
    "statement",
    "proof",
    "citation",
    "slogan",  # a statement's slogan -> the passage where the statement starts
    "citing",  # a sentence citing a statement -> the passage where it starts
)
#: Pair kinds whose positive is a statement (or its proof), not a passage.
STATEMENT_PAIR_KINDS = ("statement", "proof", "citation")
#: The evaluation sets the pairs stage writes (queries' ``set``): a held-out concept's
#: name -> its defining passage; a description people wrote (a slogan, a citing sentence)
#: -> the held-out statement it describes. evaluate derives a third, ``masked``: the named
#: queries against their relevant passages with the name masked out.
STORED_QUERY_SETS = ("named", "described")
#: The sets that search the passages (masked: the passages with the names masked out).
PASSAGE_SETS = ("named", "masked", "described")
#: Retrieval the model was not tuned for, in a format unlike its training passages
#: (:mod:`pipelines.evaluate.transfer`): a paper's title or abstract sentence -> that
#: paper's plain fixed windows; the named queries over the same windows; another corpus's
#: held-out queries -> its passages, searched among them and the passages together
#: (:mod:`pipelines.evaluate.foreign`).
TRANSFER_SETS = ("transfer_papers", "transfer_named", "transfer_corpus")
QUERY_SETS = (*PASSAGE_SETS, *TRANSFER_SETS)
#: The sets the promotion gate is about: found from words other than their own.
MEANING_SETS = ("masked", "described")
SPLITS = ("train", "validation")

# -- Arrow schemas ------------------------------------------------------------------------

PAPERS_SCHEMA = pa.schema(
    [
        ("paper_id", pa.string()),
        ("version", pa.int64()),
        ("title", pa.string()),
        ("abstract", pa.string()),
        ("authors", pa.list_(pa.string())),
        ("categories", pa.list_(pa.string())),
        ("primary_category", pa.string()),
        ("published", pa.string()),
        ("updated", pa.string()),
        ("source_kind", pa.string()),
        ("content_hash", pa.string()),
        ("n_chunks", pa.int64()),
        ("n_statements", pa.int64()),
        # the sentences that cite a label by \ref, cleaned (pipelines.prepare.citations),
        # and the labels each one cites, comma-separated (\cref{a,b} splits at commas, so
        # a label never holds one): a paper's own descriptions of the statements it uses
        ("citing_sentences", pa.list_(pa.string())),
        ("citing_labels", pa.list_(pa.string())),
        # where a reader finds the paper, as ingest recorded it (its abstract page on arXiv,
        # a Stacks chapter's source); "" when no true link is known (the synthetic sample)
        ("url", pa.string()),
    ]
)
#: The link of a paper from arXiv in ``papers.url``: its abstract page, unversioned (the
#: latest); ingest writes it, search knows an arXiv paper by it.
ARXIV_ABS = "https://arxiv.org/abs/"
CHUNKS_SCHEMA = pa.schema(
    [
        ("chunk_id", pa.string()),
        ("paper_id", pa.string()),
        ("version", pa.int64()),
        ("chunk_index", pa.int64()),
        ("section", pa.string()),
        ("text", pa.string()),
    ]
)
STATEMENTS_SCHEMA = pa.schema(
    [
        ("statement_id", pa.string()),
        ("paper_id", pa.string()),
        ("version", pa.int64()),
        ("kind", pa.string()),
        ("name", pa.string()),
        ("label", pa.string()),
        ("text", pa.string()),
        # a definition's emphasised (defined) terms; the labels it and its proof \ref
        ("terms", pa.list_(pa.string())),
        ("refs", pa.list_(pa.string())),
        ("proof", pa.string()),  # the proof that follows it, cleaned; "" when none
        ("slogan", pa.string()),  # a one-line summary its authors wrote beside it; "" when none
    ]
)
CONCEPTS_SCHEMA = pa.schema(
    [
        ("name", pa.string()),
        ("display_name", pa.string()),
        ("type", pa.string()),
        ("description", pa.string()),
        ("aliases", pa.list_(pa.string())),
        ("papers", pa.list_(pa.string())),
        ("statements", pa.list_(pa.string())),  # the statements that define or state it
    ]
)
EDGES_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("target", pa.string()),
        ("relation", pa.string()),
        ("papers", pa.list_(pa.string())),
    ]
)
MENTIONS_SCHEMA = pa.schema(
    [
        ("concept", pa.string()),
        ("chunk_id", pa.string()),
        ("paper_id", pa.string()),
        ("evidence", pa.string()),
    ]
)
PAIRS_SCHEMA = pa.schema(
    [
        ("anchor", pa.string()),
        ("positive", pa.string()),
        ("kind", pa.string()),
        ("concept", pa.string()),
        ("positive_id", pa.string()),
        # a passage the anchor must rank below the positive; "" with pairs.hard_negatives off
        ("negative", pa.string()),
        ("negative_id", pa.string()),
        ("split", pa.string()),
    ]
)
QUERIES_SCHEMA = pa.schema(
    [
        ("query_id", pa.string()),
        ("concept", pa.string()),  # named: the concept's key; described: the statement's id
        ("text", pa.string()),
        ("set", pa.string()),  # one of STORED_QUERY_SETS
        # passages not ranked for this query: a citing sentence's own passage (it holds
        # the query's words but is not what the query asks for)
        ("exclude", pa.list_(pa.string())),
    ]
)
QRELS_SCHEMA = pa.schema(
    [
        ("query_id", pa.string()),
        ("chunk_id", pa.string()),
        ("grade", pa.int64()),
        ("unseen", pa.bool_()),
    ]
)

# -- the tables ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Table:
    """One table of the contract: where the stage that makes it writes it, and its columns."""

    name: str
    #: the :class:`Paths` property of the folder the producing stage writes it to
    folder: str
    #: the stage that writes it (named in "run the … stage first" messages)
    stage: str
    schema: Any

    @property
    def file_name(self) -> str:
        return f"{self.name}.parquet"

    @property
    def columns(self) -> list[str]:
        return list(self.schema.names)

    def path(self, paths: Paths) -> Path:
        """Where the producing stage writes it under ``paths``."""
        folder: Path = getattr(paths, self.folder)
        return folder / self.file_name

    def read(self, paths: Paths, columns: Sequence[str] = ()) -> pd.DataFrame:
        """The table as its stage wrote it under ``paths``, with at least ``columns``.

        A missing file or column is an error that names the stage to run.
        """
        path = self.path(paths)
        if not path.is_file():
            raise FileNotFoundError(
                f"{path} not found; run the {self.stage} stage first "
                f"(mathembed {self.stage}, or make repro)"
            )
        frame = pd.read_parquet(path)
        missing = [column for column in columns if column not in frame.columns]
        if missing:
            raise ValueError(
                f"{path} lacks column(s) {missing}; it was written by an older {self.stage} "
                f"stage: rerun {self.stage}"
            )
        return frame

    def validated_path(self, paths: Paths) -> Path:
        """Its copy that passed validation: what training, evaluation and search read."""
        return paths.validated / self.file_name


#: The tables, in pipeline order.
TABLES: dict[str, Table] = {
    table.name: table
    for table in (
        Table("papers", "processed", "prepare", PAPERS_SCHEMA),
        Table("chunks", "processed", "prepare", CHUNKS_SCHEMA),
        Table("statements", "processed", "prepare", STATEMENTS_SCHEMA),
        Table("concepts", "graph", "graph", CONCEPTS_SCHEMA),
        Table("edges", "graph", "graph", EDGES_SCHEMA),
        Table("mentions", "graph", "graph", MENTIONS_SCHEMA),
        Table("pairs", "training", "pairs", PAIRS_SCHEMA),
        Table("queries", "eval", "pairs", QUERIES_SCHEMA),
        Table("qrels", "eval", "pairs", QRELS_SCHEMA),
    )
}


# -- writing ------------------------------------------------------------------------------


def to_arrow(frame: pd.DataFrame, schema: Any) -> Any:
    """``frame``'s columns of ``schema``, with exactly its types.

    From plain lists, not ``from_pandas``: an empty frame's columns are float64 in pandas,
    and list cells read from Parquet are numpy arrays; the schema decides the types either way.
    """
    columns = {name: [_plain(value) for value in frame[name].tolist()] for name in schema.names}
    return pa.Table.from_pydict(columns, schema=schema)


def write_table(
    path: Path,
    data: pd.DataFrame | Any,
    schema: Any,
    metadata: dict[bytes, bytes] | None = None,
) -> None:
    """Write ``data`` (a DataFrame or an Arrow table) to ``path`` atomically as ``schema``."""
    table = to_arrow(data, schema) if isinstance(data, pd.DataFrame) else data
    if metadata is not None:
        table = table.replace_schema_metadata(metadata)
    with atomic_output(path, "wb") as handle:
        pq.write_table(table, handle)


def _plain(value: Any) -> Any:
    return value.tolist() if hasattr(value, "tolist") else value
