"""The synthetic sample: a deterministic generator of an offline mirror (an arXiv
look-alike on disk) about the hand-written concepts of :mod:`.ontology`.

Test and scale data, not the demo's: ``sample.corpus: synthetic`` (the end-to-end DVC and
flow tests), the fault tests and the 10,000-paper performance runs (``benchmarks/``) use
it, so it ships in the package rather than under ``tests/``. Ingest sees only the mirror
it writes, in the layout every mirror shares (:mod:`pipelines.mirror.layout`), through the
mirror's server.

``generate_mirror(out_dir, n_papers, seed)`` writes, under ``out_dir``:

``entries.jsonl``
    One arXiv listing entry per line and per paper version, sorted by paper id then
    version: ``paper_id, version, title, summary, authors, categories, primary_category,
    published, updated, comment, withdrawn`` (times ISO 8601 UTC, ``2024-01-03T10:00:00Z``;
    ``published`` is the first version's date, ``updated`` this version's).
``e-print/<safe_name(paper_id)>v<version>``
    The raw bytes arXiv's ``/e-print/`` would send, and beside each a sidecar
    ``<same name>.json``: ``{"content_type": ..., "encoding": "gzip" | null}``.
    A withdrawn version has neither (the server answers 404 for it).
``manifest.json``
    The ground truth, for tests: per paper version its ``kind`` (see
    :data:`.kinds.KINDS`), its true ``concepts`` (display names from :mod:`.ontology`),
    the e-print's path, content type, main file and member list; plus counts.

Every paper is about a focus concept and one to three related ones, and its LaTeX is
realistic: preamble, ``\\newcommand`` macros used in the body, comments (and an escaped
``\\%``), named theorem environments with labels, definitions with ``\\emph`` and
"we call ... a ..." phrasing, inline and display math, citations, ``\\keywords`` and
``\\subjclass``. Concepts are mentioned by name, alias, notation and description, so
that retrieval is not a string match. Same ``seed`` and ``n_papers`` → byte-identical
files (tar members have fixed metadata, gzip headers carry no time stamp).

The mirror's writer (:func:`pipelines.mirror.writer.write_mirror`) builds it in a
temporary sibling folder and swaps it in with renames, so a run killed at any point leaves
the previous mirror (or nothing), never half of a new one.

The steps, one module each: :mod:`.plan` (papers, versions, dates, kinds), :mod:`.writer`
and :mod:`.vocabulary` (prose), :mod:`.sections` and :mod:`.paper` (the LaTeX of a version),
:mod:`.packaging` (the e-print bytes), :mod:`.build` (the versions given to the writer)
and :mod:`.kinds` (the kinds and the ground truth).
"""

from pipelines.mirror.corpora.synthetic.build import generate_mirror

__all__ = ["generate_mirror"]
