"""Which file of a multi-file source is the paper: found through the include graph.

The Stacks Project layout (a chapter that ``\\input``s the preamble holding
``\\documentclass``) and the classic layouts (a main file with section files, a stray
file with its own ``\\documentclass``, two complete documents side by side).
"""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

from repo import REPO

from pipelines.ingest.arxiv.archive import (
    ArchiveLimits,
    Source,
    choose_main_file,
    extract_source,
)

CORPUS = REPO / "corpora" / "stacks-project"
LIMITS = ArchiveLimits(max_files=50, max_file_bytes=10_000_000, max_total_bytes=50_000_000)

PREAMBLE = "\\documentclass{amsart}\n\\usepackage{amssymb}\n\\newcommand{\\Sh}{\\mathit{Sh}}\n"
CHAPTER = (
    "\\input{preamble}\n\\begin{document}\n\\title{Sheaves}\n\\maketitle\n"
    "\\section{Introduction}\nA sheaf is ...\n\\input{chapters}\n\\end{document}\n"
)


def tar_gz(files: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, text in files.items():
            data = text.encode("utf-8") if isinstance(text, str) else text
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return gzip.compress(buffer.getvalue(), mtime=0)


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


# -- the Stacks Project layout --------------------------------------------------------


def test_a_chapter_that_inputs_its_preamble_is_the_main_file() -> None:
    # preamble.tex has \documentclass and is bigger, but it is included: not a root.
    texts = {"preamble.tex": PREAMBLE + "%" * 5000, "sheaves.tex": CHAPTER}
    assert choose_main_file(texts) == "sheaves.tex"


def test_a_real_chapter_and_preamble_give_the_chapter_with_the_preamble_inlined() -> None:
    chapter = read(CORPUS / "schemes.tex")
    preamble = read(CORPUS / "preamble.tex")
    assert chapter.startswith("\\input{preamble}")
    result = extract_source(tar_gz({"schemes.tex": chapter, "preamble.tex": preamble}), LIMITS)
    assert isinstance(result, Source)
    assert result.main_file == "schemes.tex"
    assert result.files == ("preamble.tex", "schemes.tex")
    # The preamble first, then the whole chapter after its \input line, as written.
    assert result.text == preamble + chapter.removeprefix("\\input{preamble}")
    assert result.unresolved == ("chapters",)  # the book's chapter list is not in the e-print
    assert result.encoding == "utf-8"


def test_the_chapter_wins_whatever_the_member_order() -> None:
    first = extract_source(tar_gz({"preamble.tex": PREAMBLE, "a.tex": CHAPTER}), LIMITS)
    second = extract_source(tar_gz({"z.tex": CHAPTER, "preamble.tex": PREAMBLE}), LIMITS)
    assert isinstance(first, Source) and first.main_file == "a.tex"
    assert isinstance(second, Source) and second.main_file == "z.tex"


def test_an_include_in_a_comment_does_not_make_an_edge() -> None:
    texts = {
        "draft.tex": "\\begin{document}\nan old draft\n",
        "paper.tex": "\\documentclass{amsart}\n\\begin{document}\nthe paper\n",
        "notes.tex": "% \\input{paper}\nnotes\n",
    }
    # Were the comment an include, paper.tex would not be a root and draft.tex would win.
    assert choose_main_file(texts) == "paper.tex"


# -- classic layouts ------------------------------------------------------------------


def test_main_with_section_files_in_folders() -> None:
    texts = {
        "paper/main.tex": (
            "\\documentclass{article}\n\\begin{document}\n"
            "\\input{sections/intro}\n\\include{sections/proofs}\n\\end{document}\n"
        ),
        # Bigger than main, and one holds its own \begin{document} (a leftover test
        # harness): being included, neither can be the main file.
        "paper/sections/intro.tex": "Intro.\n" * 500,
        "paper/sections/proofs.tex": "\\begin{document}\nProofs.\n" * 300,
    }
    assert choose_main_file(texts) == "paper/main.tex"


def test_a_stray_unused_file_with_documentclass_loses_to_the_document() -> None:
    texts = {
        "main.tex": "\\input{head}\n\\begin{document}\n\\input{body}\n\\end{document}\n",
        "head.tex": "\\documentclass{amsart}\n",
        "body.tex": "Text.\n" * 100,
        # A template the author left in the upload: a root with \documentclass, no document.
        "template.tex": "\\documentclass{article}\n\\usepackage{amsmath}\n" + "%" * 9000,
    }
    assert choose_main_file(texts) == "main.tex"


def test_two_complete_roots_prefer_documentclass_then_the_larger_document() -> None:
    texts = {
        "paper.tex": "\\documentclass{amsart}\n\\begin{document}\n\\input{long}\n",
        "long.tex": "Long text.\n" * 400,
        "supplement.tex": "\\documentclass{amsart}\n\\begin{document}\n" + "S.\n" * 100,
    }
    # Both are complete documents: the one with the larger inlined text wins...
    assert choose_main_file(texts) == "paper.tex"
    # ... unless only the other one has a \documentclass (directly or via an include).
    texts["paper.tex"] = texts["paper.tex"].replace("\\documentclass{amsart}\n", "")
    assert choose_main_file(texts) == "supplement.tex"
    # Equal in every way: the first name.
    same = "\\documentclass{x}\n\\begin{document}\nsame\n"
    assert choose_main_file({"b.tex": same, "a.tex": same}) == "a.tex"


def test_without_a_complete_root_the_old_rule_applies() -> None:
    # A cycle leaves no root; fragments without \begin{document} leave no complete one.
    cycle = {"a.tex": "\\input{b}\n", "b.tex": "\\documentclass{x}\\input{a}\n" + "b" * 10}
    assert choose_main_file(cycle) == "b.tex"
    fragments = {"big.tex": "x" * 900, "small.tex": "\\documentclass{article}\n"}
    assert choose_main_file(fragments) == "small.tex"
    assert choose_main_file({"one.tex": "x", "two.tex": "xx"}) == "two.tex"
