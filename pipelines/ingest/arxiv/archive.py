"""Safe extraction of an untrusted arXiv e-print: bytes in, one LaTeX document (or a refusal) out.

An e-print is a gzip'd tar, a gzip'd single ``.tex``, a bare tar or ``.tex``, or no source
at all (a PDF or PostScript file). arXiv's Content-Type is not reliable, so the format is
read from the magic bytes. Nothing is written to disk: the archive is read in memory and
only text sources are kept. Every cap is enforced while streaming — gzip is inflated in
slices and stops one byte past ``max_total_bytes``, tar members are sized from their
headers before they are read — so a compression bomb is refused without ever being
inflated in full. Path traversal (``..``, absolute paths), links and device files make
the whole archive hostile and it is rejected, not partly used.

The main file is found through the include graph: a root (a ``.tex`` that no other file of
the archive ``\\input``s or ``\\include``s) that holds ``\\begin{document}`` directly or
through its includes — so a chapter that starts with ``\\input{preamble}``, where
``preamble.tex`` holds ``\\documentclass``, is the main file, not its preamble; failing
that, the ``.tex`` with ``\\documentclass`` (or LaTeX 2.09's ``\\documentstyle``), else
the largest ``.tex`` (see :func:`choose_main_file`). ``\\input``/``\\include`` are inlined
from files inside the archive only, and the expansion is capped (inclusions and size), so
an include fan-out is refused as fast as a compression bomb. Text is UTF-8, else latin-1
(which decodes any byte string), and the fallback is recorded. NUL bytes are dropped from
every text source wherever they are, as TeX itself ignores them (catcode 9), so where a
stray NUL sits never decides whether the paper is kept. A single-file body that is a
server's error page (HTML, JSON, plain text without LaTeX; :mod:`.sniff`) is refused as
retryable: the request failed, not the paper.
"""

from __future__ import annotations

import io
import posixpath
import re
import tarfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pipelines.ingest.arxiv.sniff import error_page_kind

Format = Literal["gzip", "tar", "pdf", "postscript", "html", "text", "empty", "unknown"]
Encoding = Literal["utf-8", "latin-1"]

# Files worth keeping: TeX sources and what they pull in as text. Figures and PDFs are
# skipped without being read.
TEXT_SUFFIXES = frozenset(
    {".tex", ".ltx", ".latex", ".sty", ".cls", ".clo", ".def", ".cfg", ".fd", ".bbl", ".bib"}
    | {".bst", ".txt", ".dtx", ".ins", ".tikz", ".pgf"}
)
TEX_SUFFIXES = frozenset({".tex", ".ltx", ".latex"})
MAX_INCLUDE_DEPTH = 8
# Real papers inline tens of files; thousands means an \input fan-out (each file
# including the next several times grows exponentially with depth).
MAX_INCLUSIONS = 2000
_GZIP_SLICE = 64 * 1024
_SNIFF_BYTES = 8192

_DOCUMENTCLASS = re.compile(r"\\document(?:class|style)\b")
_BEGIN_DOCUMENT = re.compile(r"\\begin\s*\{document\}")
# \input{file}, \input file, \include{file}; not \inputencoding or \includegraphics.
_INCLUDE = re.compile(
    r"\\(?P<command>input|include)"
    r"(?:\s*\{(?P<braced>[^{}]*)\}|[ \t]+(?P<bare>[^\s{}%\\]+))"
)
_COMMENT = re.compile(r"(?<!\\)(?:\\\\)*%")


@dataclass(frozen=True)
class ArchiveLimits:
    max_files: int
    max_file_bytes: int
    max_total_bytes: int


@dataclass(frozen=True)
class Source:
    """The paper's LaTeX: ``text`` is ``main_file`` with its includes inlined."""

    main_file: str
    text: str
    encoding: Encoding  # "latin-1" when any inlined file was not valid UTF-8
    files: tuple[str, ...]  # every text source kept from the archive, sorted
    unresolved: tuple[str, ...] = ()  # \input targets not found (or refused) in the archive


@dataclass(frozen=True)
class AbstractOnly:
    """The e-print has no source (the author uploaded only a PDF or PostScript file)."""

    reason: str


@dataclass(frozen=True)
class Rejected:
    """The e-print is malformed or hostile; ``reason`` says which, for the quarantine.

    ``limit`` names the configured cap (an ``ArchiveLimits`` field) that refused it, if
    one did: a run with a larger cap may accept the paper, so the refusal is not final.
    ``retryable`` says the bytes were not the e-print at all (an error page served with
    HTTP 200): fetching it again later may give the paper.
    """

    reason: str
    limit: str | None = None
    retryable: bool = False


ExtractResult = Source | AbstractOnly | Rejected


class _Refused(Exception):
    """Internal: stop reading the archive; the message becomes the rejection reason."""

    def __init__(self, reason: str, limit: str | None = None, *, retryable: bool = False) -> None:
        super().__init__(reason)
        self.limit = limit
        self.retryable = retryable


class IncludeLimitError(ValueError):
    """:func:`resolve_includes` crossed a cap on the inlined document."""

    def __init__(self, reason: str, limit: str | None = None) -> None:
        super().__init__(reason)
        self.limit = limit


def detect_format(data: bytes) -> Format:
    """What ``data`` is, judged from its first bytes."""
    if not data:
        return "empty"
    if data[:2] == b"\x1f\x8b":
        return "gzip"
    if data[257:262] == b"ustar":
        return "tar"
    if data[:5] == b"%PDF-":
        return "pdf"
    if data[:4] == b"%!PS":
        return "postscript"
    head = data[:_SNIFF_BYTES]
    if head.lstrip()[:15].lower().startswith((b"<!doctype html", b"<html")):
        return "html"
    if b"\x00" in head:
        # Old tar formats have no "ustar" magic; a NUL-padded header is still a tar.
        if _is_tar(data):
            return "tar"
        # Stray NULs in a source file are dropped later (as anywhere else in the file);
        # other control bytes mean a binary file.
        return "text" if _looks_like_text(head.replace(b"\x00", b"")) else "unknown"
    return "text"


_CONTROL_BYTES = frozenset(range(32)) - {0x09, 0x0A, 0x0C, 0x0D, 0x1A}


def _looks_like_text(head: bytes) -> bool:
    return bool(head) and not any(byte in _CONTROL_BYTES for byte in head)


def extract_source(data: bytes, limits: ArchiveLimits) -> ExtractResult:
    """Turn the bytes of an e-print into a :class:`Source`, :class:`AbstractOnly` or refusal."""
    try:
        files = _read_text_files(data, limits, allow_gzip=True)
    except _AbstractOnly as no_source:
        return AbstractOnly(str(no_source))
    except _Refused as refusal:
        return Rejected(str(refusal), refusal.limit, refusal.retryable)
    decoded = {name: _decode(raw) for name, raw in files.items()}
    main_file = choose_main_file({name: text for name, (text, _) in decoded.items()})
    if main_file is None:
        names = ", ".join(sorted(files)) or "none"
        return Rejected(f"no .tex file in the e-print (text files: {names})")
    texts = {name: text for name, (text, _) in decoded.items()}
    try:
        text, used, unresolved = resolve_includes(
            main_file, texts, max_chars=limits.max_total_bytes
        )
    except IncludeLimitError as refusal:
        return Rejected(f"{main_file}: {refusal}", refusal.limit)
    encoding: Encoding = (
        "latin-1" if any(decoded[name][1] == "latin-1" for name in used) else "utf-8"
    )
    return Source(main_file, text, encoding, tuple(sorted(files)), tuple(unresolved))


class _AbstractOnly(Exception):
    """Internal: the e-print is a PDF or PostScript file."""


def _read_text_files(data: bytes, limits: ArchiveLimits, *, allow_gzip: bool) -> dict[str, bytes]:
    kind = detect_format(data)
    if kind == "gzip" and allow_gzip:
        # arXiv gzips single files and tars alike; what is inside decides, one level deep.
        return _read_text_files(_gunzip(data, limits.max_total_bytes), limits, allow_gzip=False)
    if kind == "tar":
        return _read_tar(data, limits)
    if kind in ("pdf", "postscript"):
        raise _AbstractOnly(f"{'PDF' if kind == 'pdf' else 'PostScript'} only, no TeX source")
    if kind in ("text", "html"):
        page = "an HTML page" if kind == "html" else error_page_kind(data)
        if page is not None:
            raise _Refused(
                f"{page} instead of an e-print (an error page served with HTTP 200?); "
                "fetched again on a later run",
                retryable=True,
            )
        if len(data) > limits.max_file_bytes:
            raise _Refused(
                f"single source file of {len(data)} bytes exceeds max_file_bytes "
                f"({limits.max_file_bytes})",
                "max_file_bytes",
            )
        return {"main.tex": data}
    if kind == "empty":
        raise _Refused("empty e-print")
    raise _Refused(f"unrecognised e-print format ({kind}; first bytes {data[:8]!r})")


def _gunzip(data: bytes, max_total_bytes: int) -> bytes:
    """Inflate ``data`` (one or more gzip members), refusing past ``max_total_bytes``."""
    output = bytearray()
    position = 0  # where the current member starts in ``data``
    while position < len(data):
        inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        fed_to = position
        try:
            while fed_to < len(data) and not inflater.eof:
                pending = data[fed_to : fed_to + _GZIP_SLICE]
                fed_to += len(pending)
                while pending and not inflater.eof:
                    # max_length bounds what one call may produce; 0 would mean no bound.
                    room = max_total_bytes + 1 - len(output)
                    output += inflater.decompress(pending, room)
                    if len(output) > max_total_bytes:
                        raise _Refused(
                            f"decompresses to more than max_archive_bytes ({max_total_bytes}):"
                            " compression bomb or oversized source",
                            "max_total_bytes",
                        )
                    pending = inflater.unconsumed_tail
        except zlib.error as error:
            raise _Refused(f"corrupt gzip data: {error}") from error
        if not inflater.eof:
            raise _Refused("truncated gzip: the stream ends before its end marker")
        # Further gzip members are concatenated; other trailing bytes are ignored, as gzip does.
        position = fed_to - len(inflater.unused_data)
        if data[position : position + 2] != b"\x1f\x8b":
            break
    return bytes(output)


def _is_tar(data: bytes) -> bool:
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
            return archive.next() is not None
    except (tarfile.TarError, EOFError, OSError):
        return False


def _read_tar(data: bytes, limits: ArchiveLimits) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    total = 0
    members = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
            for member in archive:
                members += 1
                if members > limits.max_files:
                    raise _Refused(
                        f"more than max_archive_files ({limits.max_files}) entries", "max_files"
                    )
                name = _safe_member_name(member.name)
                if member.issym() or member.islnk():
                    kind = "symlink" if member.issym() else "hard link"
                    raise _Refused(f"archive contains a {kind}: {name} -> {member.linkname}")
                if member.ischr() or member.isblk() or member.isfifo():
                    raise _Refused(f"archive contains a device or FIFO: {name}")
                if not member.isfile() or posixpath.splitext(name)[1].lower() not in TEXT_SUFFIXES:
                    continue  # directories, figures, PDFs: never read
                if member.size > limits.max_file_bytes:
                    raise _Refused(
                        f"{name} is {member.size} bytes, over max_file_bytes "
                        f"({limits.max_file_bytes})",
                        "max_file_bytes",
                    )
                total += member.size
                if total > limits.max_total_bytes:
                    raise _Refused(
                        f"text sources exceed max_archive_bytes ({limits.max_total_bytes})",
                        "max_total_bytes",
                    )
                handle = archive.extractfile(member)
                content = handle.read() if handle is not None else b""
                if len(content) != member.size:
                    raise _Refused(f"truncated tar: {name} is shorter than its header says")
                files[name] = content
    except (tarfile.TarError, EOFError) as error:
        raise _Refused(f"corrupt tar: {error}") from error
    return files


def _safe_member_name(name: str) -> str:
    """The member's path, normalised; refuse anything that could land outside the archive."""
    if not name or name.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", name):
        raise _Refused(f"absolute path in archive: {name!r}")
    parts = re.split(r"[/\\]", name)
    if ".." in parts:
        raise _Refused(f"path traversal in archive: {name!r}")
    normalised = posixpath.normpath(name.replace("\\", "/"))
    return normalised.removeprefix("./")


def _decode(raw: bytes) -> tuple[str, Encoding]:
    raw = raw.replace(b"\x00", b"")  # TeX ignores NUL; see the module docstring
    try:
        return raw.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError:
        # latin-1 maps every byte, so the text survives; which is recorded in meta.json.
        return raw.decode("latin-1"), "latin-1"


def strip_comment(line: str) -> str:
    """``line`` up to its first unescaped ``%``."""
    match = _COMMENT.search(line)
    if match is None:
        return line
    return line[: match.end() - 1]


def _without_comments(text: str) -> str:
    return "\n".join(strip_comment(line) for line in text.splitlines())


def choose_main_file(texts: Mapping[str, str]) -> str | None:
    """The main ``.tex`` of an archive, or ``None`` when there is no ``.tex`` at all.

    Ranked through the include graph: among the roots (files no other file of the archive
    includes) that hold ``\\begin{document}`` directly or through their includes, the one
    with ``\\documentclass`` (same reach), then the largest document (its own size plus
    what it includes), then the first name. With no such root (a cycle, a fragment-only
    archive), the ``.tex`` with ``\\documentclass``, then ``\\begin{document}``, then the
    largest, then the first name.
    """
    tex_files = sorted(
        name for name in texts if posixpath.splitext(name)[1].lower() in TEX_SUFFIXES
    )
    if not tex_files:
        return None
    uncommented = {name: _without_comments(texts[name]) for name in tex_files}
    includes = {name: _included_files(name, uncommented[name], texts) for name in tex_files}
    included = {target for targets in includes.values() for target in targets}

    def reach(name: str) -> set[str]:
        # The file and everything it pulls in, transitively (cycles stop where they close).
        seen = {name}
        pending = [name]
        while pending:
            for target in includes.get(pending.pop(), ()):
                if target not in seen:
                    seen.add(target)
                    pending.append(target)
        return seen

    def holds(pattern: re.Pattern[str], files: set[str]) -> bool:
        for name in files:
            if name not in uncommented:  # an included .bbl or .txt
                uncommented[name] = _without_comments(texts[name])
            if pattern.search(uncommented[name]):
                return True
        return False

    roots = [name for name in tex_files if name not in included]
    documents = {name: reach(name) for name in roots}
    complete = [name for name in roots if holds(_BEGIN_DOCUMENT, documents[name])]
    if complete:

        def document_rank(name: str) -> tuple[bool, int, str]:
            files = documents[name]
            return (
                not holds(_DOCUMENTCLASS, files),
                -sum(len(texts[file]) for file in files),
                name,
            )

        return min(complete, key=document_rank)

    def rank(name: str) -> tuple[bool, bool, int, str]:
        body = uncommented[name]
        return (
            not _DOCUMENTCLASS.search(body),
            not _BEGIN_DOCUMENT.search(body),
            -len(texts[name]),
            name,
        )

    return min(tex_files, key=rank)


def _included_files(name: str, uncommented: str, texts: Mapping[str, str]) -> list[str]:
    """The files of ``texts`` that ``name`` includes (its comments already stripped).

    Targets are looked up as :func:`resolve_includes` does, from the including file's folder
    and from the archive's top folder (the main file's folder is not known yet).
    """
    found: list[str] = []
    for match in _INCLUDE.finditer(uncommented):
        target = match["braced"] if match["braced"] is not None else match["bare"]
        path = _find_include(target, ("", posixpath.dirname(name)), texts)
        if path is not None and path != name and path not in found:
            found.append(path)
    return found


def _find_include(target: str, folders: tuple[str, ...], texts: Mapping[str, str]) -> str | None:
    """The archive file an ``\\input{target}`` names, tried from each of ``folders``, with
    ``.tex`` added when the name has no TeX suffix; ``None`` when it is outside the archive
    or missing."""
    target = target.strip().strip('"')
    if not target or target.startswith("/") or re.match(r"[A-Za-z]:", target):
        return None
    suffix = posixpath.splitext(target)[1].lower()
    candidates = [target + ".tex", target] if suffix not in TEXT_SUFFIXES else [target]
    for folder in dict.fromkeys(folders):
        for candidate in candidates:
            path = posixpath.normpath(posixpath.join(folder, candidate))
            if path == ".." or path.startswith("../"):
                return None
            if path in texts:
                return path
    return None


def resolve_includes(
    main_file: str,
    texts: Mapping[str, str],
    max_depth: int = MAX_INCLUDE_DEPTH,
    *,
    max_chars: int | None = None,
    max_inclusions: int = MAX_INCLUSIONS,
) -> tuple[str, list[str], list[str]]:
    """Inline ``\\input``/``\\include`` targets found in ``texts`` into ``main_file``.

    Paths are tried relative to the main file's folder (where LaTeX runs) and then to
    the including file's, with ``.tex`` added when the name has no TeX suffix. Targets
    outside the archive, missing, cyclic or deeper than ``max_depth`` are left as written.
    Returns (text, files used in order, unresolved targets).

    Raises :class:`IncludeLimitError` the moment more than ``max_inclusions`` files have
    been inlined or the document could exceed ``max_chars`` (when given): the count grows
    by each inlined file's size before it is expanded, so a fan-out stops before it is built.
    """
    root = posixpath.dirname(main_file)
    used: list[str] = [main_file]
    unresolved: list[str] = []
    inclusions = 0
    chars = len(texts[main_file])  # an upper bound of the document's size so far

    def find(target: str, including: str) -> str | None:
        return _find_include(target, (root, posixpath.dirname(including)), texts)

    def expand(name: str, stack: tuple[str, ...]) -> str:
        def replace(match: re.Match[str]) -> str:
            nonlocal inclusions, chars
            target = match["braced"] if match["braced"] is not None else match["bare"]
            path = find(target, name)
            if path is None or path in stack or len(stack) >= max_depth:
                unresolved.append(target.strip())
                return match.group(0)
            inclusions += 1
            chars += len(texts[path])
            if inclusions > max_inclusions:
                raise IncludeLimitError(
                    f"more than {max_inclusions} \\input/\\include inclusions (an include fan-out)"
                )
            if max_chars is not None and chars > max_chars:
                raise IncludeLimitError(
                    f"inlined \\input/\\include files exceed max_archive_bytes ({max_chars})",
                    "max_total_bytes",
                )
            if path not in used:
                used.append(path)
            return expand(path, (*stack, path))

        lines = texts[name].splitlines(keepends=True)
        out: list[str] = []
        for line in lines:
            code = strip_comment(line.rstrip("\r\n"))
            comment_and_end = line[len(code) :]
            out.append(_INCLUDE.sub(replace, code) + comment_and_end)
        return "".join(out)

    text = expand(main_file, (main_file,))
    return text, used, unresolved
