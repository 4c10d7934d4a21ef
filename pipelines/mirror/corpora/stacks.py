"""The demo's real corpus as an arXiv-protocol mirror: one paper per Stacks Project chapter.

``build_stacks_mirror(out_dir, corpus_dir)`` gives the mirror's writer
(:func:`pipelines.mirror.writer.write_mirror`) one paper per chapter, so
:class:`~pipelines.mirror.server.MirrorServer` serves it and ``mathembed ingest`` fetches
it over HTTP exactly as from arXiv:

``entries.jsonl``
    One listing entry per chapter: the title from ``\\title{...}``, a plain-text summary
    (the first sentences of the chapter's Introduction), authors ``The Stacks project
    authors``, category ``math.AG``, version 1, dates spread evenly over the window.
``e-print/<safe_name(paper_id)>v1`` (+ ``.json`` sidecar)
    A gzip'd tar of ``<chapter>.tex`` and ``preamble.tex``, as the chapters are laid out
    (a chapter starts with ``\\input{preamble}``, and ``preamble.tex`` holds
    ``\\documentclass``). Fixed member metadata and gzip headers without a time stamp, so
    the same files give the same bytes and DVC's hash of ``data/mirror`` stays put.
``manifest.json``
    ``"corpus": "stacks-project"``, and per paper its chapter file and that file's
    SHA-256, so a test can trace a stored paper back to the copied chapter; the server
    gives each paper the link :func:`source_link` makes of its chapter.

Paper ids are old-style ids in an archive arXiv does not have (``stacks/2607001``, ... in
chapter-name order; 2607 is the corpus commit's year and month): valid for every arXiv id
pattern the pipeline checks, and never mistakable for a real arXiv paper. The book's
``chapters.tex`` (a table of chapters, not mathematics) is not copied, so ingest records
each chapter's ``\\input{chapters}`` as an unresolved include.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterator, Sequence
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

from pipelines.common.paths import STACKS_CORPUS_DIR
from pipelines.mirror.layout import CONTENT_TYPE_TAR, MirrorEntry, format_time, tar_gz
from pipelines.mirror.manifest import Manifest, Origin, PaperRecord
from pipelines.mirror.writer import Eprint, PaperVersion, write_mirror

CORPUS = "stacks-project"
#: The commit ``corpora/stacks-project/`` was copied from, byte for byte (its README).
STACKS_COMMIT = "4ac4815d5a00dc2eacab7824cf4e4baafe2773ac"
#: A chapter's LaTeX source at that commit: ``STACKS_SOURCE + "categories.tex"``.
STACKS_SOURCE = f"https://github.com/stacks/stacks-project/blob/{STACKS_COMMIT}/"
CORPUS_DIR = STACKS_CORPUS_DIR
PREAMBLE = "preamble.tex"
AUTHORS = ("The Stacks project authors",)
CATEGORY = "math.AG"  # one of ingest.categories
ID_ARCHIVE = "stacks"  # no such arXiv archive: these ids cannot clash with real papers
ID_YYMM = "2607"  # the corpus commit's month (2026-07)
SUMMARY_CHARS = 600
STACKS_URL = "https://stacks.math.columbia.edu"


# -- pure parts -----------------------------------------------------------------------


def corpus_chapters(corpus_dir: Path) -> tuple[str, ...]:
    """The chapter files of ``corpus_dir``: every ``.tex`` but the preamble, by name."""
    if not corpus_dir.is_dir():
        raise FileNotFoundError(
            f"{corpus_dir} not found: the real corpus is part of the checkout "
            f"({CORPUS_DIR}); run from the project root (or pass --root), or set "
            "sample.corpus: synthetic"
        )
    if not (corpus_dir / PREAMBLE).is_file():
        raise FileNotFoundError(f"{corpus_dir / PREAMBLE} not found: every chapter inputs it")
    chapters = tuple(
        sorted(path.name for path in corpus_dir.glob("*.tex") if path.name != PREAMBLE)
    )
    if not chapters:
        raise FileNotFoundError(f"{corpus_dir} holds no chapter (.tex besides {PREAMBLE})")
    return chapters


def chapter_paper_id(position: int) -> str:
    """The paper id of the ``position``-th chapter (from 1): ``stacks/2607001``."""
    if not 1 <= position <= 999:
        raise ValueError(f"chapter position {position} is outside 1..999")
    return f"{ID_ARCHIVE}/{ID_YYMM}{position:03d}"


def spread_times(count: int, start: date, end: date) -> list[datetime]:
    """``count`` distinct times (UTC, to the minute), one in the middle of each of ``count``
    equal slots of ``start`` 00:00 .. ``end`` 24:00, so none sits on the window's edge."""
    if end < start:
        raise ValueError(f"sample.end_date {end} is before sample.start_date {start}")
    first = datetime.combine(start, time(), tzinfo=UTC)
    window = (datetime.combine(end, time(), tzinfo=UTC) + timedelta(days=1) - first).total_seconds()
    if window / 60 < count:
        raise ValueError(f"the window {start}..{end} is too short for {count} papers")
    return [
        first + timedelta(minutes=int((index + 0.5) * window / count) // 60)
        for index in range(count)
    ]


_TITLE = re.compile(r"\\title\s*\{(?P<title>[^{}]*(?:\{[^{}]*\}[^{}]*)*)\}")
_BEGIN_DOCUMENT = re.compile(r"\\begin\s*\{document\}")
_INTRODUCTION = re.compile(r"\\section\*?\s*\{Introduction\}")
_SECTIONING = re.compile(r"\\(?:sub)*section\*?\s*\{|\\begin\s*\{|\\end\s*\{document\}")
_MATH = re.compile(r"(\$\$.*?\$\$|\$[^$]*\$|\\\[.*?\\\]|\\\(.*?\\\))", re.DOTALL)
_REF_MARK = "\x00"  # where a \ref stood, until the summary drops its sentence
_ACCENTS = {"'": "\u0301", "`": "\u0300", '"': "\u0308", "^": "\u0302", "~": "\u0303"}


def chapter_title(tex: str, fallback: str) -> str:
    """The chapter's ``\\title{...}`` as plain text, else ``fallback``."""
    match = _TITLE.search(_without_comments(tex))
    title = latex_to_plain(match["title"]) if match else ""
    return title or fallback


def chapter_summary(tex: str, max_chars: int = SUMMARY_CHARS) -> str:
    """A short plain-text abstract: the first sentences of the chapter's Introduction
    (else of its text), LaTeX removed, math kept as ``$...$`` as arXiv abstracts do."""
    text = _without_comments(tex)
    introduction = _INTRODUCTION.search(text)
    begin = _BEGIN_DOCUMENT.search(text)
    if introduction is not None:
        body = text[introduction.end() :]
    else:
        body = text[begin.end() :] if begin is not None else text
    stop = _SECTIONING.search(body)
    return plain_summary(body[: stop.start()] if stop else body, max_chars)


def plain_summary(latex: str, max_chars: int = SUMMARY_CHARS) -> str:
    """Prose LaTeX → its first sentences as plain text, at most ``max_chars``; a sentence
    that cites by ``\\ref`` is left out, as it would read "see Section" without it."""
    summary = ""
    for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z])", _plain_with_refs(latex)):
        if _REF_MARK in sentence:
            continue  # "see Section 3.2" would read "see Section": leave the sentence out
        if summary and len(summary) + 1 + len(sentence) > max_chars:
            break
        summary = f"{summary} {sentence}".strip()
    return summary[:max_chars].strip()


def latex_to_plain(latex: str) -> str:
    """Prose LaTeX → plain text for metadata: markup, labels and references dropped,
    citations as ``[key]``, accents composed, inline math kept as written."""
    text = " ".join(_plain_with_refs(latex).replace(_REF_MARK, " ").split())
    return text.replace(" .", ".").replace(" ,", ",")


def _plain_with_refs(latex: str) -> str:
    # Math is kept as written (whitespace collapsed); only the prose between is cleaned.
    parts = _MATH.split(latex)
    text = "".join(part if index % 2 else _plain_prose(part) for index, part in enumerate(parts))
    return unicodedata.normalize("NFC", " ".join(text.split()).replace(" ,", ","))


def _plain_prose(text: str) -> str:
    text = re.sub(r"\\label\s*\{[^{}]*\}", "", text)
    text = re.sub(r"\\href\s*\{[^{}]*\}", "", text)  # the link's text stays, not its URL
    text = re.sub(r"\\cite\s*(?:\[[^\]]*\])?\s*\{([^{}]*)\}", r"[\1]", text)
    text = re.sub(r"\\(?:ref|eqref|[cC]ref|autoref)\s*\{[^{}]*\}", _REF_MARK, text)
    text = re.sub(
        r"\\([\'`\"^~])\s*\{?([A-Za-z])\}?",
        lambda match: match[2] + _ACCENTS[match[1]],
        text,
    )
    text = re.sub(r"\{\\(?:it|em|bf|sl|sc|rm|tt)\s+", "{", text)
    text = re.sub(r"\\(?:emph|textit|textbf|textsl|textrm|texttt|text)\s*\{", "{", text)
    text = text.replace("~", " ").replace("---", "\u2014").replace("--", "-")
    text = text.replace("``", '"').replace("''", '"')
    text = re.sub(r"\\[A-Za-z]+\*?", " ", text)  # \noindent, \S and the like
    return text.replace("\\", "").replace("{", "").replace("}", "")


def _without_comments(tex: str) -> str:
    return "\n".join(re.sub(r"(?<!\\)%.*", "", line) for line in tex.splitlines())


def package_chapter(chapter: str, chapter_bytes: bytes, preamble_bytes: bytes, mtime: int) -> bytes:
    """The chapter's e-print: a gzip'd tar of the chapter and the preamble, byte-stable."""
    return tar_gz([(chapter, chapter_bytes), (PREAMBLE, preamble_bytes)], mtime)


# -- the mirror on disk ---------------------------------------------------------------


def source_link(record: PaperRecord) -> str | None:
    """Where a reader finds a paper of this mirror: its chapter's source at the copied commit."""
    return f"{STACKS_SOURCE}{record.chapter}" if record.chapter else None


def build_stacks_mirror(
    out_dir: Path,
    corpus_dir: Path,
    *,
    start: date,
    end: date,
    chapters: Sequence[str] | None = None,
) -> Manifest:
    """Write the real-corpus mirror to ``out_dir`` (replacing it) and return its manifest.

    ``chapters`` (file names in ``corpus_dir``) default to all of them; their order sets
    the paper ids and dates.
    """
    names = tuple(chapters) if chapters is not None else corpus_chapters(corpus_dir)
    missing = [name for name in (*names, PREAMBLE) if not (corpus_dir / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{corpus_dir} lacks {', '.join(missing)}")
    times = spread_times(len(names), start, end)

    def describe(records: tuple[PaperRecord, ...]) -> Manifest:
        counts = {"papers": len(records), "versions": len(records)}
        return Manifest(CORPUS, start.isoformat(), end.isoformat(), records, counts)

    return write_mirror(out_dir, _papers(corpus_dir, names, times), describe)


def _papers(
    corpus_dir: Path, chapters: Sequence[str], times: Sequence[datetime]
) -> Iterator[PaperVersion]:
    preamble = (corpus_dir / PREAMBLE).read_bytes()
    for position, (chapter, moment) in enumerate(zip(chapters, times, strict=True), 1):
        raw = (corpus_dir / chapter).read_bytes()
        # Only the metadata is read from the text; the e-print carries the bytes unchanged,
        # so a chapter that is not UTF-8 still reaches ingest as it is.
        tex = raw.decode("utf-8", errors="replace")
        stem = chapter.removesuffix(".tex")
        title = chapter_title(tex, fallback=stem)
        entry = MirrorEntry(
            paper_id=chapter_paper_id(position),
            version=1,
            title=title,
            summary=chapter_summary(tex),
            authors=AUTHORS,
            categories=(CATEGORY,),
            primary_category=CATEGORY,
            published=format_time(moment),
            updated=format_time(moment),
            comment=f"Chapter {stem} of the Stacks Project ({STACKS_URL}), GNU FDL 1.2",
            withdrawn=False,
        )
        eprint = Eprint(
            package_chapter(chapter, raw, preamble, int(moment.timestamp())),
            CONTENT_TYPE_TAR,
            "gzip",
            main_file=chapter,  # ingest must pick it, not preamble.tex
            files=(chapter, PREAMBLE),
        )
        origin = Origin(
            title=title, chapter=chapter, chapter_sha256=hashlib.sha256(raw).hexdigest()
        )
        yield PaperVersion(entry, eprint, origin)
