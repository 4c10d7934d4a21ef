"""prepare's outputs: the three tables built from the cleaned papers, written tagged with
a fingerprint and a run token, and read back as the next run's cache.

The fingerprint is that of the cleaner version and the chunking knobs; the run token (a
hash of the papers written) is the same in all three files only when they come from one
run. Outputs are reused only when both match.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type information
import pyarrow.compute as pc  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from pipelines.common.config import PrepareParams
from pipelines.common.tables import (
    CHUNKS_SCHEMA,
    PAPERS_SCHEMA,
    STATEMENTS_SCHEMA,
    TABLES,
    write_table,
)
from pipelines.prepare.cleaner import CLEANER_VERSION
from pipelines.prepare.cleaning import PaperOutput

FINGERPRINT_KEY = b"mathembed.prepare.fingerprint"
RUN_KEY = b"mathembed.prepare.run"


def fingerprint(params: PrepareParams) -> str:
    """What the outputs depend on besides the input: the cleaner and the chunking knobs."""
    text = (
        f"cleaner={CLEANER_VERSION};chunk_chars={params.chunk_chars};"
        f"overlap_chars={params.overlap_chars};min_chunk_chars={params.min_chunk_chars};"
        f"pack_chars={params.pack_chars}"
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def chunk_id(paper_id: str, version: int, index: int) -> str:
    return f"{paper_id}v{version}#c{index:04d}"


def statement_id(paper_id: str, version: int, index: int) -> str:
    return f"{paper_id}v{version}#s{index:03d}"


@dataclass
class PreviousOutputs:
    """The last run's outputs, usable as a cache when written under the same fingerprint.

    Only the small papers table is read up front; the passages and statements are read
    when some of them are needed (not at all when nothing changed).
    """

    papers: pa.Table
    chunks_path: Path
    statements_path: Path
    hashes: dict[str, tuple[int, str]]  # paper_id → (version, content_hash)

    def tables(self) -> tuple[pa.Table, pa.Table, pa.Table]:
        chunks = pq.read_table(self.chunks_path)
        statements = pq.read_table(self.statements_path)
        if not (
            chunks.schema.remove_metadata().equals(CHUNKS_SCHEMA)
            and statements.schema.remove_metadata().equals(STATEMENTS_SCHEMA)
        ):
            raise pa.ArrowInvalid(f"{self.chunks_path.parent}: unexpected schema")
        return self.papers, chunks, statements


#: prepare's tables, in the order load_previous reads them.
OUTPUT_TABLES = ("papers", "chunks", "statements")


def load_previous(processed: Path, expected_fingerprint: str) -> PreviousOutputs | None:
    """The previous outputs if all three are there, from one run, with this fingerprint."""
    paths = [processed / TABLES[name].file_name for name in OUTPUT_TABLES]
    if not all(path.is_file() for path in paths):
        return None
    try:
        metadata = [pq.read_schema(path).metadata or {} for path in paths]
        runs = {meta.get(RUN_KEY) for meta in metadata}
        fingerprints = {meta.get(FINGERPRINT_KEY) for meta in metadata}
        if len(runs) != 1 or None in runs or fingerprints != {expected_fingerprint.encode()}:
            return None  # another cleaner/knobs, or a run that died between two files
        papers = pq.read_table(paths[0])
        if not papers.schema.remove_metadata().equals(PAPERS_SCHEMA):
            return None
    except (OSError, pa.ArrowException):
        return None
    hashes = {
        paper_id: (version, digest)
        for paper_id, version, digest in zip(
            papers["paper_id"].to_pylist(),
            papers["version"].to_pylist(),
            papers["content_hash"].to_pylist(),
            strict=True,
        )
    }
    return PreviousOutputs(papers, paths[1], paths[2], hashes)


class Rows:
    """Rows of the three tables, collected column by column and turned into Arrow in batches.

    Batches keep the peak memory near the size of the Arrow data, not that of millions of
    Python strings.
    """

    BATCH_PAPERS = 500

    def __init__(self) -> None:
        self._parts: list[tuple[pa.Table, pa.Table, pa.Table]] = []
        self._reset()

    def _reset(self) -> None:
        self.papers: dict[str, list[Any]] = {name: [] for name in PAPERS_SCHEMA.names}
        self.chunks: dict[str, list[Any]] = {name: [] for name in CHUNKS_SCHEMA.names}
        self.statements: dict[str, list[Any]] = {name: [] for name in STATEMENTS_SCHEMA.names}

    def add(self, output: PaperOutput) -> None:
        row = output.paper
        paper_id, version = row["paper_id"], row["version"]
        for name, value in row.items():
            self.papers[name].append(value)
        for index, chunk in enumerate(output.chunks):
            self.chunks["chunk_id"].append(chunk_id(paper_id, version, index))
            self.chunks["paper_id"].append(paper_id)
            self.chunks["version"].append(version)
            self.chunks["chunk_index"].append(index)
            self.chunks["section"].append(chunk.section)
            self.chunks["text"].append(chunk.text)
        for index, statement in enumerate(output.statements):
            self.statements["statement_id"].append(statement_id(paper_id, version, index))
            self.statements["paper_id"].append(paper_id)
            self.statements["version"].append(version)
            self.statements["kind"].append(statement.kind)
            self.statements["name"].append(statement.name)
            self.statements["label"].append(statement.label)
            self.statements["text"].append(statement.text)
            self.statements["terms"].append(list(statement.terms))
            self.statements["refs"].append(list(statement.refs))
            self.statements["proof"].append(statement.proof)
            self.statements["slogan"].append(statement.slogan)
        if len(self.papers["paper_id"]) >= self.BATCH_PAPERS:
            self._flush()

    def _flush(self) -> None:
        self._parts.append(
            (
                pa.table(self.papers, schema=PAPERS_SCHEMA),
                pa.table(self.chunks, schema=CHUNKS_SCHEMA),
                pa.table(self.statements, schema=STATEMENTS_SCHEMA),
            )
        )
        self._reset()

    def tables(self) -> tuple[pa.Table, pa.Table, pa.Table]:
        self._flush()
        papers, chunks, statements = zip(*self._parts, strict=True)
        return (
            pa.concat_tables(papers),
            pa.concat_tables(chunks),
            pa.concat_tables(statements),
        )


def reused_rows(previous: PreviousOutputs, paper_ids: list[str]) -> tuple[pa.Table, ...]:
    """The previous run's rows of ``paper_ids``, in all three tables."""
    tables = previous.tables()
    if len(paper_ids) == previous.papers.num_rows:
        return tables  # every previous paper is kept: no filtering copy
    value_set = pa.array(paper_ids, type=pa.string())
    return tuple(table.filter(pc.is_in(table["paper_id"], value_set=value_set)) for table in tables)


def by_paper(table: pa.Table, keys: list[tuple[str, str]]) -> pa.Table:
    """``table`` ordered by paper id (rows of one paper keep their order).

    Reused rows and new rows are each in order already, and new papers usually sort
    after the old ones, so the (copying) sort is skipped when the order already holds.
    """
    ids = table["paper_id"]
    if table.num_rows < 2 or pc.all(pc.less_equal(ids[:-1], ids[1:])).as_py():
        return table
    return table.sort_by(keys)


def write_outputs(
    processed: Path, papers: pa.Table, chunks: pa.Table, statements: pa.Table, fingerprint: str
) -> None:
    """Write the three tables, each atomically, tagged with the fingerprint and a run token.

    The run token (a hash of the papers written) is the same in all three files only when
    they come from one run, so outputs of a run killed between two writes are not reused.
    """
    run_token = hashlib.sha256(
        "\n".join(
            f"{paper_id}v{version}:{digest}"
            for paper_id, version, digest in zip(
                papers["paper_id"].to_pylist(),
                papers["version"].to_pylist(),
                papers["content_hash"].to_pylist(),
                strict=True,
            )
        ).encode()
    ).hexdigest()
    metadata = {FINGERPRINT_KEY: fingerprint.encode(), RUN_KEY: run_token.encode()}
    for name, table in (("chunks", chunks), ("statements", statements), ("papers", papers)):
        contract = TABLES[name]
        write_table(processed / contract.file_name, table, contract.schema, metadata)
