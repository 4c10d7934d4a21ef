"""Packaging a paper version as arXiv sends it: tar, gzip, PDF, and the malformed e-prints."""

from __future__ import annotations

import random
import tarfile
import zlib
from functools import cache

from pipelines.mirror.corpora.synthetic.kinds import (
    ABSOLUTE_PATH,
    BOMB,
    BOMB_INFLATED_BYTES,
    LATIN1,
    NO_TEX,
    PATH_TRAVERSAL,
    PDF_ONLY,
    SYMLINK,
    TEX_GZ,
    TRUNCATED_GZIP,
)
from pipelines.mirror.corpora.synthetic.paper import Metadata, Source, ascii_text
from pipelines.mirror.layout import (
    CONTENT_TYPE_PDF,
    CONTENT_TYPE_SINGLE,
    CONTENT_TYPE_TAR,
    gzip_bytes,
    tar_gz,
)
from pipelines.mirror.writer import Eprint


def _pdf(title: str) -> bytes:
    """A minimal one-page PDF showing ``title`` (ASCII), with a correct xref table."""
    text = ascii_text(title).replace("\\", "").replace("(", "[").replace(")", "]")[:90]
    stream = f"BT /F1 14 Tf 72 720 Td ({text}) Tj ET".encode("ascii")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


@cache
def bomb_bytes() -> bytes:
    """A gzip stream of a LaTeX header followed by zeros, inflating to 200 MiB (~200 KB)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: gzip wrapper, mtime 0
    header = b"\\documentclass{article}\n% padding follows\n"
    parts = [compressor.compress(header)]
    chunk = bytes(1024 * 1024)
    remaining = BOMB_INFLATED_BYTES - len(header)
    while remaining > 0:
        piece = chunk[: min(len(chunk), remaining)]
        parts.append(compressor.compress(piece))
        remaining -= len(piece)
    parts.append(compressor.flush())
    return b"".join(parts)


_FAKE_PNG = b"\x89PNG\r\n\x1a\n" + bytes(64)


def package_eprint(
    kind: str, meta: Metadata, source: Source | None, mtime: int, rng: random.Random
) -> Eprint:
    if kind == PDF_ONLY:
        return Eprint(_pdf(meta.title), CONTENT_TYPE_PDF, None, None, ())
    if kind == BOMB:
        return Eprint(bomb_bytes(), CONTENT_TYPE_SINGLE, "gzip", None, ("main.tex",))
    if kind == NO_TEX:
        loose: list[tarfile.TarInfo | tuple[str, bytes]] = [
            ("paper.pdf", _pdf(meta.title)),
            ("figure1.png", _FAKE_PNG),
            ("README.txt", b"Source files are available from the authors on request.\n"),
        ]
        names: tuple[str, ...] = ("paper.pdf", "figure1.png", "README.txt")
        return Eprint(tar_gz(loose, mtime), CONTENT_TYPE_TAR, "gzip", None, names)
    assert source is not None
    if kind in (TEX_GZ, LATIN1):
        text = source.files[source.main_name]
        data = text.encode("latin-1") if kind == LATIN1 else text.encode("utf-8")
        return Eprint(
            gzip_bytes(data), CONTENT_TYPE_SINGLE, "gzip", source.main_name, (source.main_name,)
        )

    files = dict(source.files)
    extra: list[tarfile.TarInfo | tuple[str, bytes]] = []
    if kind == PATH_TRAVERSAL:
        files[source.main_name] = files[source.main_name].replace(
            "\\begin{document}", "\\input{../../evil}\n\\begin{document}", 1
        )
        extra.append(("../../evil.tex", b"% this file must never be written outside the folder\n"))
    elif kind == ABSOLUTE_PATH:
        files[source.main_name] = files[source.main_name].replace(
            "\\begin{document}", "\\input{/tmp/mathembed-absolute}\n\\begin{document}", 1
        )
        extra.append(("/tmp/mathembed-absolute.tex", b"% an absolute member path\n"))
    elif kind == SYMLINK:
        files[source.main_name] = files[source.main_name].replace(
            "\\begin{document}", "\\input{secret}\n\\begin{document}", 1
        )
        link = tarfile.TarInfo("secret.tex")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        extra.append(link)
    members: list[tarfile.TarInfo | tuple[str, bytes]] = [
        (name, text.encode("utf-8")) for name, text in files.items()
    ]
    if rng.random() < 0.4:
        members.append(("figures/diagram.png", _FAKE_PNG))
    rng.shuffle(members)
    members += extra
    names = tuple(m.name if isinstance(m, tarfile.TarInfo) else m[0] for m in members)
    data = tar_gz(members, mtime)
    if kind == TRUNCATED_GZIP:
        data = data[: len(data) // 2]
    return Eprint(data, CONTENT_TYPE_TAR, "gzip", source.main_name, names)
