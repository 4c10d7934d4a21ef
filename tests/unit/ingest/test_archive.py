"""Safe e-print extraction on hand-made bytes: every malformed case, and \\input resolution."""

from __future__ import annotations

import gzip
import io
import random
import tarfile
import tracemalloc
import zlib

import pytest

from pipelines.ingest.arxiv.archive import (
    AbstractOnly,
    ArchiveLimits,
    Rejected,
    Source,
    choose_main_file,
    detect_format,
    extract_source,
    resolve_includes,
    strip_comment,
)

LIMITS = ArchiveLimits(max_files=50, max_file_bytes=100_000, max_total_bytes=1_000_000)

MAIN = rb"""\documentclass{amsart}
\usepackage{macros}
% \input{commented-out}
\begin{document}
\input{sections/intro}
\include{appendix}
\includegraphics{figure}
\end{document}
"""


def tar_bytes(members: list[tarfile.TarInfo | tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                archive.addfile(member)
            else:
                name, data = member
                info = tarfile.TarInfo(name)
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def special(name: str, kind: bytes, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    return info


def paper_tar_gz() -> bytes:
    return gzip.compress(
        tar_bytes(
            [
                ("main.tex", MAIN),
                ("sections/intro.tex", b"Intro text.\n\\input{details}\n"),
                ("details.tex", b"Details from the root folder.\n"),
                ("appendix.tex", b"Appendix text.\n"),
                ("macros.sty", b"\\newcommand{\\N}{\\mathbb{N}}\n"),
                ("figure.png", b"\x89PNG\r\n\x1a\n\x00\x00binary"),
            ]
        ),
        mtime=0,
    )


def test_detect_format_by_magic_bytes() -> None:
    assert detect_format(b"") == "empty"
    assert detect_format(gzip.compress(b"x")) == "gzip"
    assert detect_format(tar_bytes([("a.tex", b"x")])) == "tar"
    assert detect_format(b"%PDF-1.5\n...") == "pdf"
    assert detect_format(b"%!PS-Adobe-3.0\n") == "postscript"
    assert detect_format(b"  <!DOCTYPE html><html>") == "html"
    assert detect_format(b"\\documentclass{article}") == "text"
    assert detect_format(b"\x00\x01\x02garbage") == "unknown"


def test_tar_gz_paper_is_resolved_into_one_document() -> None:
    result = extract_source(paper_tar_gz(), LIMITS)
    assert isinstance(result, Source)
    assert result.main_file == "main.tex"
    assert result.encoding == "utf-8"
    # figure.png is not a text source and is never kept.
    assert result.files == (
        "appendix.tex",
        "details.tex",
        "macros.sty",
        "main.tex",
        "sections/intro.tex",
    )
    assert "Intro text." in result.text
    assert "Details from the root folder." in result.text  # nested, relative to main's folder
    assert "Appendix text." in result.text
    assert "\\input{sections/intro}" not in result.text
    assert "% \\input{commented-out}" in result.text  # comments are left alone
    assert "\\includegraphics{figure}" in result.text
    assert result.unresolved == ()


def test_single_gzipped_tex_and_bare_tex_and_bare_tar() -> None:
    tex = b"\\documentclass{article}\\begin{document}Hi\\end{document}\n"
    for data in (gzip.compress(tex), tex, tar_bytes([("paper.tex", tex)])):
        result = extract_source(data, LIMITS)
        assert isinstance(result, Source), result
        assert "Hi" in result.text
    gz_result = extract_source(gzip.compress(tex), LIMITS)
    assert isinstance(gz_result, Source)
    assert gz_result.main_file == "main.tex"


def test_multi_member_gzip_is_read_whole() -> None:
    # The first member is larger than one inflation slice, so the second member's start
    # must be found across slices.
    noise = random.Random(0).randbytes(150_000).hex().encode()
    data = gzip.compress(b"\\documentclass{article}\n" + noise) + gzip.compress(b"Second.\n")
    limits = ArchiveLimits(max_files=5, max_file_bytes=1_000_000, max_total_bytes=1_000_000)
    result = extract_source(data, limits)
    assert isinstance(result, Source)
    assert result.text.endswith(noise.decode() + "Second.\n")


def test_trailing_garbage_after_gzip_is_ignored() -> None:
    result = extract_source(gzip.compress(b"\\documentclass{article}\n") + b"\x00junk", LIMITS)
    assert isinstance(result, Source)
    assert result.text == "\\documentclass{article}\n"


@pytest.mark.parametrize(
    "data",
    [b"%PDF-1.4\n%binary", gzip.compress(b"%PDF-1.4\n%binary"), b"%!PS-Adobe-2.0\n"],
    ids=["pdf", "gzipped-pdf", "postscript"],
)
def test_pdf_or_postscript_only_is_abstract_only(data: bytes) -> None:
    result = extract_source(data, LIMITS)
    assert isinstance(result, AbstractOnly)
    assert "only" in result.reason


def test_truncated_gzip_is_rejected() -> None:
    data = paper_tar_gz()
    result = extract_source(data[: len(data) // 2], LIMITS)
    assert result == Rejected("truncated gzip: the stream ends before its end marker")


def test_corrupt_gzip_is_rejected() -> None:
    data = bytearray(paper_tar_gz())
    data[20:40] = b"\xff" * 20
    result = extract_source(bytes(data), LIMITS)
    assert isinstance(result, Rejected)
    assert "corrupt gzip" in result.reason


def test_truncated_tar_is_rejected() -> None:
    data = tar_bytes([("main.tex", MAIN * 50)])
    result = extract_source(data[:700], LIMITS)
    assert isinstance(result, Rejected)
    assert "tar" in result.reason


def _bomb(inflated_bytes: int) -> bytes:
    """A gzip stream of ``inflated_bytes`` zeros, built without holding them in memory."""
    deflater = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1 << 20)
    parts = [deflater.compress(block) for _ in range(inflated_bytes // len(block))]
    return b"".join(parts) + deflater.flush()


def test_compression_bomb_is_refused_without_inflating_it() -> None:
    bomb = _bomb(256 << 20)  # 256 MiB of zeros, about 250 KiB compressed
    limits = ArchiveLimits(max_files=50, max_file_bytes=100_000, max_total_bytes=2 << 20)
    tracemalloc.start()
    try:
        result = extract_source(bomb, limits)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(result, Rejected)
    assert "compression bomb" in result.reason
    # Inflating it would take 256 MiB; the cap stops it a few MiB in.
    assert peak < 16 << 20


def test_tar_bomb_member_over_the_file_cap_is_refused() -> None:
    big = b"%" * 200_001
    result = extract_source(tar_bytes([("main.tex", MAIN), ("huge.tex", big)]), LIMITS)
    assert isinstance(result, Rejected)
    assert "huge.tex" in result.reason and "max_file_bytes" in result.reason


def test_too_many_files_is_refused() -> None:
    members: list[tarfile.TarInfo | tuple[str, bytes]] = [
        (f"f{i}.tex", b"x") for i in range(LIMITS.max_files + 1)
    ]
    result = extract_source(tar_bytes(members), LIMITS)
    assert isinstance(result, Rejected)
    assert "max_archive_files" in result.reason


def test_total_text_over_the_cap_is_refused() -> None:
    limits = ArchiveLimits(max_files=50, max_file_bytes=100_000, max_total_bytes=150_000)
    members: list[tarfile.TarInfo | tuple[str, bytes]] = [
        (f"part{i}.tex", b"a" * 60_000) for i in range(3)
    ]
    result = extract_source(tar_bytes(members), limits)
    assert isinstance(result, Rejected)
    assert "max_archive_bytes" in result.reason


@pytest.mark.parametrize(
    "name",
    ["../evil.tex", "sub/../../evil.tex", "/etc/passwd", "..\\evil.tex", "C:/evil.tex"],
)
def test_path_traversal_rejects_the_whole_archive(name: str) -> None:
    result = extract_source(gzip.compress(tar_bytes([("main.tex", MAIN), (name, b"x")])), LIMITS)
    assert isinstance(result, Rejected)
    assert "path" in result.reason
    assert repr(name) in result.reason


@pytest.mark.parametrize(
    ("member", "words"),
    [
        (special("link.tex", tarfile.SYMTYPE, "/etc/passwd"), "symlink"),
        (special("hard.tex", tarfile.LNKTYPE, "main.tex"), "hard link"),
        (special("dev", tarfile.CHRTYPE), "device"),
        (special("blk", tarfile.BLKTYPE), "device"),
        (special("pipe", tarfile.FIFOTYPE), "FIFO"),
    ],
)
def test_links_and_devices_reject_the_whole_archive(member: tarfile.TarInfo, words: str) -> None:
    result = extract_source(tar_bytes([("main.tex", MAIN), member]), LIMITS)
    assert isinstance(result, Rejected)
    assert words in result.reason


def test_latin1_source_falls_back_and_says_so() -> None:
    latin = "\\documentclass{article}\nG\u00f6del and Erd\u00e9lyi\n".encode("latin-1")
    result = extract_source(gzip.compress(latin), LIMITS)
    assert isinstance(result, Source)
    assert result.encoding == "latin-1"
    assert "G\u00f6del and Erd\u00e9lyi" in result.text


def test_an_included_latin1_file_marks_the_document_latin1() -> None:
    data = tar_bytes(
        [
            ("main.tex", b"\\documentclass{article}\n\\input{part}\n"),
            ("part.tex", "Poincar\u00e9\n".encode("latin-1")),
            ("unused.tex", "Gr\u00f6bner\n".encode("latin-1")),
        ]
    )
    result = extract_source(data, LIMITS)
    assert isinstance(result, Source)
    assert result.encoding == "latin-1"
    assert "Poincar\u00e9" in result.text


def test_unused_latin1_file_does_not_change_the_encoding() -> None:
    data = tar_bytes(
        [
            ("main.tex", "\\documentclass{article}\nCauchy\u2013Schwarz\n".encode()),
            ("old.tex", "Gr\u00f6bner\n".encode("latin-1")),
        ]
    )
    result = extract_source(data, LIMITS)
    assert isinstance(result, Source)
    assert result.encoding == "utf-8"


def test_utf8_bom_is_dropped() -> None:
    result = extract_source(b"\xef\xbb\xbf\\documentclass{article}\n", LIMITS)
    assert isinstance(result, Source)
    assert result.text.startswith("\\documentclass")


def test_no_tex_file_is_rejected() -> None:
    data = gzip.compress(tar_bytes([("refs.bib", b"@article{x}"), ("fig.png", b"\x89PNG")]))
    result = extract_source(data, LIMITS)
    assert isinstance(result, Rejected)
    assert "no .tex file" in result.reason and "refs.bib" in result.reason


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty e-print"),
        (gzip.compress(b""), "empty e-print"),
        (b"<!DOCTYPE html><html><body>Not found</body></html>", "HTML page"),
        (b"\x00\x01binary blob", "unrecognised"),
    ],
)
def test_empty_html_and_binary_are_rejected(data: bytes, reason: str) -> None:
    result = extract_source(data, LIMITS)
    assert isinstance(result, Rejected)
    assert reason in result.reason


def test_main_file_prefers_documentclass_then_begin_document_then_size() -> None:
    texts = {
        "big.tex": "no class here " * 100,
        "paper.tex": "\\documentclass{amsart}\\begin{document}x\\end{document}",
        "letter.tex": "\\documentclass{letter}" + " " * 500,
        "commented.tex": "% \\documentclass{article}\n" + "y" * 1000,
    }
    assert choose_main_file(texts) == "paper.tex"
    del texts["paper.tex"]
    assert choose_main_file(texts) == "letter.tex"
    del texts["letter.tex"]
    assert choose_main_file(texts) == "big.tex"  # the commented class does not count
    assert choose_main_file({"refs.bib": "x", "macros.sty": "y"}) is None
    assert choose_main_file({"old.tex": "\\documentstyle{article}", "z.tex": "z" * 99}) == (
        "old.tex"
    )


def test_includes_resolve_relative_paths_and_bare_form() -> None:
    texts = {
        "paper/main.tex": "\\documentclass{x}\n\\input{chapters/one}\n\\input chapters/two.tex\n",
        "paper/chapters/one.tex": "ONE \\input{three}\n",  # relative to the including file
        "paper/chapters/three.tex": "THREE\n",
        "paper/chapters/two.tex": "TWO\n",
    }
    text, used, unresolved = resolve_includes("paper/main.tex", texts)
    assert "ONE THREE" in text and "TWO" in text
    assert used == [
        "paper/main.tex",
        "paper/chapters/one.tex",
        "paper/chapters/three.tex",
        "paper/chapters/two.tex",
    ]
    assert unresolved == []


def test_includes_never_escape_the_archive_and_stop_on_cycles_and_depth() -> None:
    texts = {
        "main.tex": (
            "\\input{../../etc/passwd}\n\\input{/etc/passwd}\n\\input{missing}\n"
            "\\input{a}\n\\inputencoding{latin1}\n"
        ),
        "a.tex": "A \\input{b}\n",
        "b.tex": "B \\input{a}\n",
    }
    text, _, unresolved = resolve_includes("main.tex", texts)
    assert "\\input{../../etc/passwd}" in text
    assert "\\input{/etc/passwd}" in text
    assert "\\input{missing}" in text
    assert "A B \\input{a}" in text  # the cycle is cut where it closes
    assert "\\inputencoding{latin1}" in text
    assert unresolved == ["../../etc/passwd", "/etc/passwd", "missing", "a"]

    chain = {f"f{i}.tex": f"<{i}> \\input{{f{i + 1}}}" for i in range(20)}
    deep, _, unresolved_deep = resolve_includes("f0.tex", chain, max_depth=5)
    assert "<4>" in deep and "<5>" not in deep
    assert unresolved_deep == ["f5"]


def test_include_inside_a_comment_is_not_resolved() -> None:
    texts = {"main.tex": "text % \\input{a}\n\\%\\input{a}\n", "a.tex": "AAA"}
    text, _, _ = resolve_includes("main.tex", texts)
    assert text == "text % \\input{a}\n\\%AAA\n"


def test_strip_comment_respects_escaped_percent() -> None:
    assert strip_comment("50\\% of x % note") == "50\\% of x "
    assert strip_comment("a \\\\% comment") == "a \\\\"
    assert strip_comment("no comment") == "no comment"


@pytest.mark.parametrize("position", [10, 9000], ids=["in-the-sniffed-head", "past-the-head"])
def test_a_nul_byte_is_dropped_wherever_it_sits(position: int) -> None:
    # TeX ignores NUL (catcode 9), so one stray NUL never decides whether a paper is kept.
    text = b"\\documentclass{article}\n" + b"x" * 10_000 + b"\n"
    dirty = text[:position] + b"\x00" + text[position:]
    for data in (dirty, gzip.compress(dirty), gzip.compress(tar_bytes([("main.tex", dirty)]))):
        result = extract_source(data, LIMITS)
        assert isinstance(result, Source), result
        assert result.text == text.decode()


def test_binary_with_nul_and_other_control_bytes_stays_unrecognised() -> None:
    assert detect_format(b"\x00\x01\x02\x03" * 100) == "unknown"
    assert detect_format(b"\\documentclass{x}\x00 text") == "text"
