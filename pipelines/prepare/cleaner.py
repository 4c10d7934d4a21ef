"""The cleaner: LaTeX source → clean text, passages for embedding and the statements a paper
proves.

Pure functions, no I/O. :func:`prepare_document` is what the ``prepare`` stage calls on
one ``source.tex``; it runs, in order:

1. **sanitise**: CRLF → LF, control characters removed (and counted: a source with
   more than :data:`BINARY_FRACTION` control characters or U+FFFD is binary, not
   LaTeX, and is reported *fatal*);
2. **comments**: ``%`` to the end of the line, the newline and the next line's leading
   blanks (TeX's own rule), but not ``\\%``;
3. **preamble**: everything before ``\\begin{document}`` is dropped, after collecting
   from it the macro definitions, ``\\newtheorem`` declarations and ``\\keywords`` /
   ``\\subjclass`` (kept as "Keywords: …" / "Mathematics Subject Classification: …"
   paragraphs at the top, for the graph stage); everything after ``\\end{document}``
   is dropped too;
4. **macros**: user macros and environments, defined in the preamble or the body, are
   expanded everywhere, math included (:mod:`pipelines.prepare.latex.macros`); an expansion
   that would grow the text past its limit (a macro bomb) is *fatal*, and so is more
   cleaned text than :data:`MAX_CLEANED_CHARS`;
5. **conversion**: one linear pass over the body turns math into ``$…$``, drops
   formatting, layout and references, splits sections and collects statements
   (:mod:`pipelines.prepare.latex.converter`); passages begin where theorem-like blocks begin
   (:func:`~pipelines.prepare.chunker.block_spans`);
6. **whitespace**: paragraphs are separated by exactly one blank line; inside a
   paragraph every whitespace run is one space.

The cleaned text keeps one invariant the chunker and later stages rely on: ``$`` only
ever delimits math (a literal dollar in the text is written ``\\$``).

Malformed input never raises: unbalanced braces (an argument that never closes runs to
the end of its paragraph, as TeX's "Runaway argument" does), unterminated math or
environments, a missing ``\\begin{document}``, unknown environments. Each such repair
is listed in ``problems``; a source with nothing usable left has ``fatal`` set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipelines.prepare.chunker import Chunk, block_spans
from pipelines.prepare.citations import Citation
from pipelines.prepare.latex.converter import Converter, Section
from pipelines.prepare.latex.macros import (
    Definitions,
    ExpansionLimitError,
    collect_definitions,
    expand_macros,
)
from pipelines.prepare.latex.source import Problems, arg_span_end, sanitise, strip_comments
from pipelines.prepare.statements import Statement

# Bump when the cleaner's output changes, so that cached per-paper outputs are redone.
# 2: macro bombs and over-long papers are fatal (quarantined); 3: statements carry their
# defined terms, cited labels and proof, and passages begin at theorem-like blocks
# 4: statements carry their slogan (out of the text), papers their citing sentences
CLEANER_VERSION = "4"
BINARY_FRACTION = 0.01  # more control/replacement characters than this → not LaTeX
# Cleaned text per paper, at most: ~1,500 pages of prose, more than any real e-print (a long
# monograph cleans to ~1M characters). More is a macro bomb or not a paper; kept, it would
# flood the corpus with one paper's passages (finding: 260,002 chunks from a 187-byte gzip).
MAX_CLEANED_CHARS = 5_000_000
_BEGIN_DOCUMENT = re.compile(r"\\begin\s*\{document\}")
_END_DOCUMENT = re.compile(r"\\end\s*\{document\}")
_FRONT_MATTER = re.compile(r"\\(keywords|subjclass)(?![A-Za-z@])")


@dataclass(frozen=True)
class CleanedDocument:
    sections: tuple[Section, ...]
    statements: tuple[Statement, ...]
    problems: tuple[str, ...]
    fatal: str | None = None
    citations: tuple[Citation, ...] = ()

    @property
    def text(self) -> str:
        return "\n\n".join(section.text for section in self.sections if section.text)


@dataclass(frozen=True)
class PreparedDocument:
    """What ``prepare`` keeps of one paper: passages, statements and what went wrong.

    ``fatal`` is set when nothing usable is left (the stage quarantines the paper);
    ``problems`` lists the repairs made on malformed input (informational).
    """

    chunks: tuple[Chunk, ...]
    statements: tuple[Statement, ...]
    problems: tuple[str, ...]
    fatal: str | None
    dropped_short: int = 0
    citations: tuple[Citation, ...] = ()


def prepare_document(
    source: str,
    *,
    chunk_chars: int,
    overlap_chars: int,
    min_chunk_chars: int,
    pack_chars: int | None = None,
) -> PreparedDocument:
    """Clean ``source`` (a whole ``.tex`` file) and cut each section into passages."""
    cleaned = clean_latex(source)
    if cleaned.fatal is not None:
        return PreparedDocument((), (), cleaned.problems, cleaned.fatal)
    cleaned_chars = sum(len(section.text) for section in cleaned.sections)
    if cleaned_chars > MAX_CLEANED_CHARS:
        too_long = (
            f"{cleaned_chars:,} characters after cleaning, more than the {MAX_CLEANED_CHARS:,} "
            "a paper may have (a macro bomb or not a paper); the paper is left out"
        )
        return PreparedDocument((), (), cleaned.problems, too_long)
    chunks: list[Chunk] = []
    dropped = 0
    for section in cleaned.sections:
        spans = block_spans(
            section.text, section.starts, chunk_chars, overlap_chars, min_chunk_chars, pack_chars
        )
        for start, end in spans:
            if end - start >= min_chunk_chars:
                chunks.append(Chunk(section.title, section.text[start:end]))
            else:
                dropped += 1
    fatal = None
    if not chunks:
        fatal = f"no passage of at least {min_chunk_chars} characters after cleaning"
    return PreparedDocument(
        tuple(chunks), cleaned.statements, cleaned.problems, fatal, dropped, cleaned.citations
    )


def clean_latex(source: str) -> CleanedDocument:
    """Clean a whole LaTeX document (see the module docstring for the rules)."""
    problems = Problems()
    text, bad_chars = sanitise(source)
    if text.strip() == "":
        return CleanedDocument((), (), problems.items(), "empty source")
    if bad_chars > BINARY_FRACTION * len(source) and bad_chars > 8:
        share = bad_chars / max(len(source), 1)
        return CleanedDocument(
            (), (), problems.items(), f"not LaTeX: {share:.0%} control or undecodable characters"
        )
    text = strip_comments(text)
    begin = _BEGIN_DOCUMENT.search(text)
    if begin is None:
        problems.add("no \\begin{document}: the whole file is read as the body")
        preamble, body = "", text
    else:
        preamble, body = text[: begin.start()], text[begin.end() :]
    end = _END_DOCUMENT.search(body)
    if end is not None:
        body = body[: end.start()]
    elif begin is not None:
        problems.add("no \\end{document}: read to the end of the file")

    definitions = Definitions()
    preamble = collect_definitions(preamble, definitions, problems)
    body = collect_definitions(body, definitions, problems)
    front_matter = "".join(
        f"\\{match.group(1)}" + preamble[match.end() : arg_span_end(preamble, match.end())]
        for match in _FRONT_MATTER.finditer(preamble)
    )
    try:
        body = expand_macros(front_matter + "\n\n" + body, definitions, problems)
    except ExpansionLimitError as error:
        return CleanedDocument((), (), problems.items(), str(error))

    converter = Converter(definitions.theorems, problems)
    converter.convert(body)
    sections = converter.sections()
    statements = converter.statements()
    fatal = None if any(section.text for section in sections) else "no text left after cleaning"
    return CleanedDocument(sections, statements, problems.items(), fatal, converter.citations())
