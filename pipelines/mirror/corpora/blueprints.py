"""Research-level LaTeX as an arXiv-protocol mirror: one paper per chapter of the Lean
blueprint projects in ``sample.blueprints_dir`` (``sample.corpus: blueprints``).

A blueprint project (``OWNER-REPO/``, the ``blueprint/src/`` folder of a Lean formalisation,
described in that folder's ``README.md``) is one LaTeX book: ``print.tex`` holds the
preamble, ``\\input``s the project's macro files and then a content file that ``\\input``s
one file per chapter. A chapter is the paper-sized unit: 1-70 kB of research mathematics
with its own topic and title (the whole FLT blueprint, 324 kB over 14 chapters, is a
monograph, not a paper), and the Carleson blueprint, which is one 431 kB file written as a
single ``amsart`` paper, stays one paper. So a project's papers are the leaves of its
document's include tree that hold a ``\\chapter`` or ``\\section`` (a bibliography-only
file is not one), in document order; files no main file reaches (FLT's replaced chapters)
are left out, as their authors left them out.

Each paper's e-print is a gzip'd tar of, under their own paths, the project's macro files
(what ``print.tex``'s preamble ``\\input``s), the chapter, the project's ``LICENSE``
(Apache-2.0, which asks that it travel with the files) and one generated file,
:data:`MAIN_FILE`: ``print.tex``'s preamble byte for byte, then a document body that
``\\input``s only that chapter. Ingest therefore picks ``paper.tex`` as the main file and
resolves every ``\\input``, so the macros reach prepare as a real paper's would. The
files taken from the corpus are unchanged; byte-stable like the Stacks mirror
(:mod:`.stacks`), whose date spreading and summaries it shares, and written by the same
writer (:func:`pipelines.mirror.writer.write_mirror`).

Paper ids are ``blueprint/2608PCC``: project ``P`` (1-9, folder-name order), chapter ``CC``
(01-99, document order), in an archive arXiv does not have (2608: the newest corpus
commit's month). Categories are per project (:data:`CATEGORIES`): two projects are outside
the default ``ingest.categories``, and ``mathembed sample`` says so.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

from pipelines.mirror.corpora.stacks import latex_to_plain, plain_summary, spread_times
from pipelines.mirror.layout import CONTENT_TYPE_TAR, MirrorEntry, format_time, tar_gz
from pipelines.mirror.manifest import Manifest, Origin, PaperRecord
from pipelines.mirror.writer import Eprint, PaperVersion, write_mirror

CORPUS = "blueprints"
KNOB = "sample.blueprints_dir"  # named in every error about the corpus folder
PROJECT_MAIN = "print.tex"  # the LaTeX build's main file (web.tex is plasTeX's)
MAIN_FILE = "paper.tex"  # generated: print.tex's preamble + one chapter
LICENSE = "LICENSE"
LICENCE = "Apache-2.0"
README = "README.md"
ID_ARCHIVE = "blueprint"  # no such arXiv archive: these ids cannot clash with real papers
ID_YYMM = "2608"
MAX_PROJECTS = 9
MAX_CHAPTERS = 99
MIN_SUMMARY_CHARS = 80  # a shorter first paragraph ("See Lemma 3.") is no abstract

#: Project folder → arXiv categories, primary first (what the project's own arXiv papers
#: use, where it has them). Only these decide whether ``ingest.categories`` harvests it.
CATEGORIES: Mapping[str, tuple[str, ...]] = {
    "ImperialCollegeLondon-FLT": ("math.NT",),
    "fpvandoorn-carleson": ("math.CA",),
    "leanprover-community-sphere-eversion": ("math.DG", "math.GT"),
    "teorth-equational_theories": ("math.RA", "math.LO"),
    "teorth-expdb": ("math.NT",),
    "teorth-pfr": ("math.NT", "math.CO"),
}
OTHER_CATEGORIES = ("math.GM",)  # a project added to the folder later


# -- reading one project (pure: texts in, structure out) ------------------------------


@dataclass(frozen=True)
class Project:
    """One blueprint project, read from its folder."""

    folder: str  # "teorth-pfr"
    title: str
    authors: tuple[str, ...]
    preamble: str  # print.tex up to \begin{document}
    macro_files: tuple[str, ...]  # what the preamble \inputs (transitively), in order
    chapters: tuple[str, ...]  # the papers: chapter files, in document order
    repository: str  # "github.com/teorth/pfr" ("" when the README does not say)
    commit: str


_INPUT = re.compile(r"\\(?:input|include)\s*\{\s*([^{}]+?)\s*\}")
_BEGIN_DOCUMENT = re.compile(r"\\begin\s*\{document\}")
_END_DOCUMENT = re.compile(r"\\end\s*\{document\}")
_SECTIONING = re.compile(r"\\(?:chapter|section)\*?\s*[\[{]")
_ARGUMENT = r"\{(?P<text>[^{}]*(?:\{[^{}]*\}[^{}]*)*)\}"  # one level of inner braces
_CHAPTER = re.compile(rf"\\chapter\*?\s*(?:\[[^\]]*\])?\s*{_ARGUMENT}")
_TITLE = re.compile(rf"\\title\s*(?:\[[^\]]*\])?\s*{_ARGUMENT}")
_HEADINGS = re.compile(rf"\\(?:(?:sub)*section|chapter)\*?\s*(?:\[[^\]]*\])?\s*{_ARGUMENT}")
_AUTHOR = re.compile(rf"\\author\s*(?:\[[^\]]*\])?\s*{_ARGUMENT}")
_TEXORPDFSTRING = re.compile(r"\\texorpdfstring\s*\{([^{}]*)\}\s*\{[^{}]*\}")
_ABSTRACT = re.compile(r"\\begin\s*\{abstract\}(?P<text>.*?)\\end\s*\{abstract\}", re.DOTALL)
_LABEL = re.compile(r"\\label\s*\{[^{}]*\}")
_BEGIN = re.compile(r"\\begin\s*\{(?P<name>[^{}]*)\}")
_DISPLAY_MATH = re.compile(
    r"\\begin\s*\{(?P<name>(?:equation|align|gather|multline|displaymath)\*?)\}"
    r"(?P<body>.*?)\\end\s*\{(?P=name)\}",
    re.DOTALL,
)
#: Environments that may sit in an introduction; any other one begins the statements.
NOT_STATEMENTS = frozenset(
    {"itemize", "enumerate", "description", "center", "quote", "quotation", "figure", "table"}
)
# A comment starts at a % that no backslash escapes (an even run of them before it), the
# rule ingest reads archives by (pipelines.ingest.arxiv.archive.strip_comment).
_COMMENT = re.compile(r"(?<!\\)(?:\\\\)*%")
_README_ROW = re.compile(
    r"^\|\s*`(?P<folder>[^`/]+)/?`\s*\|\s*(?P<repository>[\w.\-]+/[\w.\-]+/[\w.\-]+)\s*\|"
    r"\s*`(?P<commit>[0-9a-f]{40})`",
    re.MULTILINE,
)


def strip_comment(line: str) -> str:
    """``line`` up to its first unescaped ``%``."""
    match = _COMMENT.search(line)
    return line if match is None else line[: match.end() - 1]


def uncommented(tex: str) -> str:
    """``tex`` without ``%`` comments, as ingest reads it."""
    return "\n".join(strip_comment(line) for line in tex.splitlines())


def input_targets(tex: str) -> list[str]:
    """The ``\\input``/``\\include`` targets of ``tex``, in order, comments ignored."""
    return [match[1] for match in _INPUT.finditer(uncommented(tex))]


def resolve_input(target: str, files: Mapping[str, str]) -> str | None:
    """The file of ``files`` an ``\\input{target}`` names (paths relative to the main file's
    folder, where LaTeX runs; ``.tex`` added when missing), or ``None``."""
    name = posixpath.normpath(target.strip().strip('"'))
    for candidate in (name, f"{name}.tex"):
        if candidate in files and candidate.endswith(".tex"):
            return candidate
    return None


def included_files(
    tex: str, files: Mapping[str, str], seen: frozenset[str] = frozenset()
) -> list[str]:
    """Every file ``tex`` pulls in, depth first in document order (each once; a cycle or a
    missing target stops there)."""
    found: list[str] = []
    for target in input_targets(tex):
        name = resolve_input(target, files)
        if name is None or name in seen or name in found:
            continue
        found.append(name)
        found.extend(
            inner
            for inner in included_files(files[name], files, seen | {name, *found})
            if inner not in found
        )
    return found


def chapter_files(body: str, files: Mapping[str, str]) -> list[str]:
    """The papers of a document body: the leaves of its include tree that hold a
    ``\\chapter`` or ``\\section`` (a file that only ``\\input``s others is a table of
    contents; one without sectioning, a bibliography), in document order."""
    chapters = []
    for name in included_files(body, files):
        text = uncommented(files[name])
        leaf = all(resolve_input(target, files) is None for target in input_targets(text))
        if leaf and _SECTIONING.search(text):
            chapters.append(name)
    return chapters


def heading_plain(latex: str) -> str:
    """A ``\\chapter``/``\\title`` argument as plain text (``\\texorpdfstring`` → its TeX)."""
    return latex_to_plain(_TEXORPDFSTRING.sub(r"\1", latex))


def chapter_title(tex: str, fallback: str) -> str:
    """The chapter's ``\\chapter{…}``, else its ``\\title{…}`` (a one-file paper), else
    ``fallback``."""
    text = uncommented(tex)
    for pattern in (_CHAPTER, _TITLE):
        match = pattern.search(text)
        if match and (title := heading_plain(match["text"])):
            return title
    return fallback


def document_authors(tex: str) -> tuple[str, ...]:
    """The ``\\author{…}`` names (``\\and`` and commas separate them), in order."""
    names: list[str] = []
    for match in _AUTHOR.finditer(uncommented(tex)):
        for name in re.split(r"\\and\b|,", match["text"]):
            plain = latex_to_plain(name)
            if plain and plain not in names:
                names.append(plain)
    return tuple(names)


def chapter_summary(tex: str) -> str:
    """A plain-text abstract: the chapter's ``abstract`` environment, else its first
    paragraph of prose before its first statement (headings and labels dropped, displayed
    math kept as ``$$…$$``, a paragraph read up to a list), else ``""``. Sentences that
    cite by ``\\ref`` are left out (:func:`plain_summary`): without it they would not read."""
    text = uncommented(tex)
    abstract = _ABSTRACT.search(text)
    if abstract is not None:
        return plain_summary(abstract["text"])
    for paragraph in re.split(r"\n\s*\n", _DISPLAY_MATH.sub(_display, text)):
        other = _BEGIN.search(paragraph)
        prose = paragraph if other is None else paragraph[: other.start()]
        summary = plain_summary(_HEADINGS.sub(" ", prose))
        if len(summary) >= MIN_SUMMARY_CHARS:
            return summary
        if other is not None and other["name"] not in NOT_STATEMENTS:
            return ""  # statements and proofs follow: there is no introduction
    return ""


def _display(match: re.Match[str]) -> str:
    return f"$${_LABEL.sub('', match['body'])}$$"  # kept as an abstract writes it


def readme_origins(readme: str) -> dict[str, tuple[str, str]]:
    """Project folder → (repository, commit) from the corpus README's table of projects."""
    return {
        match["folder"]: (match["repository"], match["commit"])
        for match in _README_ROW.finditer(readme)
    }


def paper_main(preamble: str, chapter: str) -> str:
    """The generated main file of ``chapter``'s e-print: the project's preamble unchanged,
    then a body that inputs only that chapter."""
    return (
        f"% Generated by mathembed: {PROJECT_MAIN}'s preamble, then only {chapter}.\n"
        f"{preamble}\\begin{{document}}\n\\input{{{chapter.removesuffix('.tex')}}}\n"
        "\\end{document}\n"
    )


def paper_id(project_position: int, chapter_position: int) -> str:
    """``blueprint/2608PCC``: project ``P`` (from 1), chapter ``CC`` (from 1)."""
    if not 1 <= project_position <= MAX_PROJECTS:
        raise ValueError(f"project position {project_position} is outside 1..{MAX_PROJECTS}")
    if not 1 <= chapter_position <= MAX_CHAPTERS:
        raise ValueError(f"chapter position {chapter_position} is outside 1..{MAX_CHAPTERS}")
    return f"{ID_ARCHIVE}/{ID_YYMM}{project_position}{chapter_position:02d}"


def read_project(folder: str, files: Mapping[str, str], readme: str = "") -> Project:
    """A project from its ``.tex`` files (path relative to the project folder → text)."""
    if PROJECT_MAIN not in files:
        raise FileNotFoundError(
            f"{folder}/ has no {PROJECT_MAIN} (the blueprint's LaTeX main file)"
        )
    main = files[PROJECT_MAIN]
    begin = _BEGIN_DOCUMENT.search(uncommented(main))
    if begin is None:
        raise ValueError(f"{folder}/{PROJECT_MAIN} has no \\begin{{document}}")
    # Offsets of the uncommented text differ from the file's: find the line in the file.
    line = uncommented(main)[: begin.start()].count("\n")
    lines = main.splitlines(keepends=True)
    preamble, body = "".join(lines[:line]), "".join(lines[line:])
    end = _END_DOCUMENT.search(body)
    body = body[: end.start()] if end else body
    chapters = chapter_files(body, files)
    if not chapters:
        raise ValueError(f"{folder}/{PROJECT_MAIN} reaches no chapter (a .tex with \\chapter)")
    title_match = _TITLE.search(uncommented(main))
    title = heading_plain(title_match["text"]) if title_match else ""
    if not title:  # an amsart paper sets its title in the text (the Carleson blueprint)
        title = next(
            (chapter_title(files[name], "") for name in chapters if _TITLE.search(files[name])),
            folder,
        )
    repository, commit = readme_origins(readme).get(folder, ("", ""))
    return Project(
        folder=folder,
        title=title,
        authors=document_authors(main) or document_authors(files[chapters[0]]),
        preamble=preamble,
        macro_files=tuple(included_files(preamble, files)),
        chapters=tuple(chapters),
        repository=repository,
        commit=commit,
    )


# -- the mirror on disk ---------------------------------------------------------------


def project_folders(corpus_dir: Path) -> tuple[str, ...]:
    """The project folders of ``corpus_dir`` (those with a ``print.tex``), by name."""
    if not corpus_dir.is_dir():
        raise FileNotFoundError(
            f"{KNOB}: {corpus_dir} not found; point {KNOB} at a copy of the Lean blueprint "
            "corpus (shared/corpora/blueprints; a relative path is read from --root), or "
            "set sample.corpus: stacks-project"
        )
    folders = tuple(
        sorted(path.name for path in corpus_dir.iterdir() if (path / PROJECT_MAIN).is_file())
    )
    if not folders:
        raise FileNotFoundError(
            f"{KNOB}: {corpus_dir} holds no blueprint project (a folder with {PROJECT_MAIN})"
        )
    if len(folders) > MAX_PROJECTS:
        raise ValueError(
            f"{KNOB}: {corpus_dir} holds {len(folders)} projects; at most {MAX_PROJECTS}"
        )
    return folders


def load_project(corpus_dir: Path, folder: str) -> Project:
    """:func:`read_project` on ``corpus_dir/folder`` (its ``.tex`` files, the README's origin)."""
    project_dir = corpus_dir / folder
    if not (project_dir / LICENSE).is_file():
        raise FileNotFoundError(f"{project_dir / LICENSE} not found: it must travel with the files")
    files = {
        path.relative_to(project_dir).as_posix(): path.read_text(encoding="utf-8", errors="replace")
        for path in sorted(project_dir.rglob("*.tex"))
    }
    readme = corpus_dir / README
    return read_project(
        folder, files, readme.read_text(encoding="utf-8") if readme.is_file() else ""
    )


def build_blueprint_mirror(out_dir: Path, corpus_dir: Path, *, start: date, end: date) -> Manifest:
    """Write the blueprints mirror to ``out_dir`` (replacing it) and return its manifest."""
    projects = [load_project(corpus_dir, folder) for folder in project_folders(corpus_dir)]
    papers = [
        (paper_id(p_position, c_position), project, chapter)
        for p_position, project in enumerate(projects, 1)
        for c_position, chapter in enumerate(project.chapters, 1)
    ]
    times = spread_times(len(papers), start, end)

    def describe(records: tuple[PaperRecord, ...]) -> Manifest:
        counts = {
            "papers": len(records),
            "projects": len({record.project for record in records}),
        }
        return Manifest(CORPUS, start.isoformat(), end.isoformat(), records, counts)

    return write_mirror(out_dir, _papers(corpus_dir, papers, times), describe)


def _papers(
    corpus_dir: Path,
    papers: Sequence[tuple[str, Project, str]],
    times: Sequence[datetime],
) -> Iterator[PaperVersion]:
    for (identifier, project, chapter), moment in zip(papers, times, strict=True):
        project_dir = corpus_dir / project.folder
        raw = (project_dir / chapter).read_bytes()
        tex = raw.decode("utf-8", errors="replace")
        title = chapter_title(tex, fallback=posixpath.basename(chapter).removesuffix(".tex"))
        members = [
            (MAIN_FILE, paper_main(project.preamble, chapter).encode("utf-8")),
            *((name, (project_dir / name).read_bytes()) for name in project.macro_files),
            (chapter, raw),
            (LICENSE, (project_dir / LICENSE).read_bytes()),
        ]
        categories = CATEGORIES.get(project.folder, OTHER_CATEGORIES)
        origin = f"https://{project.repository}" if project.repository else project.folder
        at = f" at commit {project.commit[:12]}" if project.commit else ""
        entry = MirrorEntry(
            paper_id=identifier,
            version=1,
            title=title,
            # An abstract is prose; a chapter that opens with a definition has none to give,
            # and its title says what it is about.
            summary=chapter_summary(tex) or f"{title}.",
            authors=project.authors or (project.folder,),
            categories=categories,
            primary_category=categories[0],
            published=format_time(moment),
            updated=format_time(moment),
            comment=f"{chapter} of the blueprint {project.title!r} ({origin}{at}), {LICENCE}",
            withdrawn=False,
        )
        eprint = Eprint(
            tar_gz(members, int(moment.timestamp())),
            CONTENT_TYPE_TAR,
            "gzip",
            main_file=MAIN_FILE,  # ingest must pick it
            files=tuple(member for member, _ in members),
        )
        yield PaperVersion(
            entry,
            eprint,
            Origin(
                title=title,
                chapter=chapter,
                chapter_sha256=hashlib.sha256(raw).hexdigest(),
                project=project.folder,
                repository=project.repository,
                commit=project.commit,
                licence=LICENCE,
            ),
        )


def categories_outside(
    manifest: Manifest, harvested: Sequence[str]
) -> dict[str, tuple[int, tuple[str, ...]]]:
    """Project folder → (its papers, its categories) for each project none of whose
    categories is in ``harvested`` (``ingest.categories``): ingest will not list them."""
    missed: dict[str, tuple[int, tuple[str, ...]]] = {}
    for record in manifest.versions:
        project = record.project or ""
        categories = CATEGORIES.get(project, OTHER_CATEGORIES)
        if not set(categories) & set(harvested):
            count = missed.get(project, (0, categories))[0]
            missed[project] = (count + 1, categories)
    return missed
