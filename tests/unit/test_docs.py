"""The docs site (``mkdocs.yml``, ``docs/``) and the README, checked as CI checks code.

The site is built once, with ``mkdocs build --strict`` (every broken link, anchor or nav
entry a warning, every warning an error), into a temporary folder; the tests then read
what was built: the configuration page holds every ``params.yaml`` knob with its value and
its declared range, every relative link of every page and of the README lands on a file
and an anchor that exist, nothing is loaded from another host, and every ``mathembed …``
command the pages show exists with the options they give it (its own ``--help`` says so).
The build runs here rather than as a line of ``make test`` so that ``pytest`` alone, the
inner loop, catches a page that drifted from the code.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
import shlex
import subprocess
import sys
import typing
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from browser import render
from repo import REPO

from pipelines.common.allowed import Range
from pipelines.common.config import Params

DOCS = REPO / "docs"
MATHEMBED = Path(sys.executable).parent / "mathembed"


def _hook_module(name: str) -> ModuleType:
    """A module of ``docs/hooks/`` (they are loaded by mkdocs, not installed)."""
    spec = importlib.util.spec_from_file_location(
        f"docs_hooks_{name}", DOCS / "hooks" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)]
    built = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, f"mkdocs build --strict failed:\n{built.stderr[-4000:]}"
    return out


# -- reading the built HTML -------------------------------------------------------------


class _Page(HTMLParser):
    """Ids, links, loaded resources and the configuration tables of one built page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.resources: list[str] = []
        self.section = ""  # the id of the last <h3> (a params.yaml section on that page)
        self.rows: dict[str, dict[str, list[str]]] = {}  # section -> key -> cells
        self._cells: list[str] | None = None
        self._in_cell = False
        self._in_h3 = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.add(str(found["id"]))
        if tag == "a" and found.get("href"):
            self.links.append(str(found["href"]))
        if tag == "script" and found.get("src"):
            self.resources.append(str(found["src"]))
        if tag == "link" and found.get("rel") in ("stylesheet", "preload") and found.get("href"):
            self.resources.append(str(found["href"]))
        if tag == "img" and found.get("src"):
            self.resources.append(str(found["src"]))
        if tag == "h3":
            self.section = str(found.get("id", ""))
        if tag == "tr":
            self._cells = []
        if tag == "td" and self._cells is not None:
            self._cells.append("")
            self._in_cell = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._in_cell = False
        if tag == "tr" and self._cells:
            key = self._cells[0].strip()
            self.rows.setdefault(self.section, {})[key] = [cell.strip() for cell in self._cells]
            self._cells = None

    def handle_data(self, data: str) -> None:
        if self._in_cell and self._cells is not None:
            self._cells[-1] += data


def _read(page: Path) -> _Page:
    parsed = _Page()
    parsed.feed(page.read_text(encoding="utf-8"))
    return parsed


def _html_pages(site: Path) -> Iterator[Path]:
    yield from sorted(site.rglob("*.html"))


# -- the configuration page -------------------------------------------------------------


def _ranges(hint: object) -> list[Range]:
    """Every ``Range`` declared on a field, however deep in its type."""
    found = [item for item in getattr(hint, "__metadata__", ()) if isinstance(item, Range)]
    for argument in typing.get_args(hint):
        found += _ranges(argument)
    return found


def _shown(number: float) -> set[str]:
    return {f"{number:g}", f"{number:,.0f}"}


def test_the_configuration_page_holds_every_knob_with_its_value_and_range(site: Path) -> None:
    page = _read(site / "configuration.html")
    params = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    declared = {
        field.name: typing.get_type_hints(
            typing.get_type_hints(Params)[field.name], include_extras=True
        )
        for field in dataclasses.fields(Params)
    }
    assert set(page.rows) >= set(params), (
        f"sections without a table: {set(params) - set(page.rows)}"
    )
    for section, knobs in params.items():
        for key, value in knobs.items():
            row = page.rows[section].get(key)
            assert row is not None, f"{section}.{key} is missing from the configuration page"
            _key, shown_value, allowed, meaning = row
            assert yaml.safe_load(shown_value) == value, f"{section}.{key}: shows {shown_value!r}"
            assert meaning, f"{section}.{key} has no comment in params.yaml to explain it"
            for rule in _ranges(declared[section][key]):
                for end in (rule.low, rule.high):
                    if end is not None:
                        assert _shown(end) & {*allowed.replace("[", " ").split()} or any(
                            text in allowed for text in _shown(end)
                        ), f"{section}.{key}: range end {end} not in {allowed!r}"


def test_params_comments_are_read_as_written() -> None:
    params_page = _hook_module("params_page")
    text = (
        "# the file's header\n\n"
        "one:                 # the section\n"
        "  a: 1               # first line\n"
        "                     # second line\n"
        '  b: "x # y"         # a quoted hash is the value\n'
        "  # a note on what follows\n"
        "  c: [1, 2]\n"
    )
    parsed = params_page.read_params_file(text)
    assert parsed.header == "the file's header"
    [section] = parsed.sections
    assert section.comment == "the section"
    a, b, c = section.knobs
    assert (a.value, a.comment) == ("1", "first line second line")
    assert (b.value, b.comment) == ('"x # y"', "a quoted hash is the value")
    assert (c.value, c.comment, c.note) == ("[1, 2]", "", "a note on what follows")


def test_a_params_key_the_code_does_not_declare_stops_the_build() -> None:
    params_page = _hook_module("params_page")
    with pytest.raises(ValueError, match=r"train\.no_such_knob is not declared"):
        params_page.configuration_tables("train:\n  no_such_knob: 1\n")


# -- links ------------------------------------------------------------------------------


def test_a_record_shown_as_it_is_links_to_pages_or_names_repository_paths() -> None:
    repo_pages = _hook_module("repo_pages")
    pages = {
        "benchmarks/results/a.md": "benchmarks/results/a.md",
        "benchmarks/results/b.md": "benchmarks/results/b.md",
        "operations/infra.md": "infra/README.md",
    }
    text = (
        "[b](b.md#x), [a.json](a.json), [the job](../../infra/k8s/job.yaml), "
        "[i](../../infra/README.md)"
    )
    assert repo_pages.rewrite_links(text, "benchmarks/results/a.md", pages) == (
        "[b](b.md#x), `benchmarks/results/a.json`, the job (`infra/k8s/job.yaml`), "
        "[i](../../operations/infra.md)"
    )


def test_every_relative_link_of_the_site_lands_on_a_page_and_an_anchor(site: Path) -> None:
    pages = {page: _read(page) for page in _html_pages(site)}
    broken: list[str] = []
    for page, parsed in pages.items():
        for href in parsed.links:
            if re.match(r"^[a-z]+:", href) or href.startswith("//"):
                continue  # another site (shown as a link, never loaded)
            path, _, anchor = href.partition("#")
            base = site if path.startswith("/") else page.parent  # 404.html links from the root
            target = (base / path.lstrip("/")).resolve() if path else page
            if not target.exists():
                broken.append(f"{page.relative_to(site)}: {href}")
            elif anchor and target.suffix == ".html" and anchor not in pages[target].ids:
                broken.append(f"{page.relative_to(site)}: {href} (no such anchor)")
    assert not broken, "\n".join(broken)


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub and Python-Markdown's toc both spell ours."""
    text = re.sub(r"[^\w\s-]", "", heading.strip().lower())
    return re.sub(r"\s+", "-", text)


def test_every_relative_link_of_the_readme_resolves(site: Path) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", readme)
    assert any(link.startswith("docs/") for link in links), "the README links into the docs"
    for link in links:
        if re.match(r"^[a-z]+:", link):
            continue
        path, _, anchor = link.partition("#")
        target = REPO / path
        assert target.exists(), f"README.md links to {link}, which does not exist"
        if not anchor:
            continue
        if path.startswith("docs/") and path.endswith(".md"):
            built = site / Path(path).relative_to("docs").with_suffix(".html")
            assert anchor in _read(built).ids, f"README.md: {link}: no such anchor in the site"
        else:
            headings = re.findall(r"^#+ (.+)$", target.read_text(encoding="utf-8"), re.M)
            assert anchor in {_slug(heading) for heading in headings}, f"README.md: {link}"


def test_the_site_loads_nothing_from_another_host(site: Path) -> None:
    remote = [
        f"{page.relative_to(site)}: {resource}"
        for page in _html_pages(site)
        for resource in _read(page).resources
        if re.match(r"^([a-z]+:)?//", resource)
    ]
    assert not remote, "\n".join(remote)
    assert (site / "assets" / "katex" / "katex.min.js").is_file()


@pytest.mark.slow
def test_formulas_are_rendered_not_printed(site: Path, tmp_path: Path) -> None:
    page = site / "reference" / "metrics-rs.html"
    assert 'class="arithmatex"' in page.read_text(encoding="utf-8")
    dom = render(page.as_uri(), tmp_path / "profile", tmp_path / "metrics-rs.png")
    assert dom.count('class="katex"') >= 5, "KaTeX did not render the formulas"
    assert "katex-error" not in dom
    assert "\\mathrm{ndcg@}" not in re.sub(r"<annotation.*?</annotation>", "", dom, flags=re.S)


# -- commands ---------------------------------------------------------------------------

# A fenced block, or an inline code span (which may wrap, but not across a blank line).
_CODE = re.compile(r"```[^\n]*\n(.*?)```|`((?:[^`\n]|\n(?!\n))+)`", re.S)
# `mathembed` where a command starts: a line's start (after a `$ ` prompt), a path's end
# (`.venv/bin/mathembed`), or after `&&`, `;` or `|` (not `kubectl -n mathembed apply`).
_COMMAND = re.compile(
    r"(?:^[ \t]*(?:\$ )?|(?<=/)|(?<=&& )|(?<=; )|(?<=\| ))mathembed[ \t]+(.+)$", re.M
)
_END = re.compile(r"\s#|&&|;|\s\|\s|\)$")


def _shown_texts() -> dict[str, str]:
    """The Markdown the site and the README show, by where it is: the docs pages, the
    generated configuration tables (params.yaml's comments), the repository pages the site
    shows that describe the present (benchmark records tell what was run then: left out)."""
    texts = {
        str(path.relative_to(REPO)): path.read_text(encoding="utf-8") for path in DOCS.rglob("*.md")
    }
    for path in (
        REPO / "README.md",
        REPO / "infra" / "README.md",
        REPO / "benchmarks" / "README.md",
    ):
        texts[str(path.relative_to(REPO))] = path.read_text(encoding="utf-8")
    params_page = _hook_module("params_page")
    texts["params.yaml"] = params_page.configuration_tables((REPO / "params.yaml").read_text())
    return texts


def shown_commands() -> dict[str, dict[str, str]]:
    """``{command: {option: where}}`` of every ``mathembed <command> ...`` in code on the
    pages (the option ``""`` stands for the command itself)."""
    commands: dict[str, dict[str, str]] = {}
    for where, text in _shown_texts().items():
        for block, inline in _CODE.findall(text):
            for match in _COMMAND.finditer(block or " ".join(inline.split())):
                line = _END.split(match.group(1), maxsplit=1)[0]
                try:
                    words = shlex.split(line)
                except ValueError:
                    words = line.split()
                if not words or not re.fullmatch(r"[a-z][a-z-]*", words[0]):
                    continue  # a placeholder: `mathembed <stage>`
                shown = commands.setdefault(words[0], {"": where})
                for word in words[1:]:
                    if re.match(r"^\[?--?[a-z]", word):
                        shown.setdefault(word.strip("[]").split("=")[0], where)
    return commands


def _help(command: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [str(MATHEMBED), command, "--help"], capture_output=True, text=True, env=env, timeout=120
    )


def test_every_command_the_pages_show_exists_with_its_options() -> None:
    commands = shown_commands()
    assert {"nightly", "search", "serve-search", "promote", "services"} <= set(commands)
    with ThreadPoolExecutor(max_workers=4) as pool:
        helps = dict(zip(commands, pool.map(_help, commands), strict=True))
    problems: list[str] = []
    for command, options in sorted(commands.items()):
        shown = helps[command]
        if shown.returncode != 0:
            error = re.search(r"(No such command|Error)[^│\n]*", shown.stderr)
            said = error.group(0) if error else shown.stderr[-200:]
            problems.append(f"{options['']}: mathembed {command}: {said}")
            continue
        for option, where in sorted(options.items()):
            if option and not re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", shown.stdout):
                problems.append(f"{where}: mathembed {command} {option}: not in its --help")
    assert not problems, "\n".join(problems)


def test_the_command_check_sees_a_wrong_option() -> None:
    # The check above is only worth something if it can fail: an option no command has.
    shown = _help("search")
    assert shown.returncode == 0
    assert "--alias" in shown.stdout and "--no-such-option" not in shown.stdout


# -- paths ------------------------------------------------------------------------------

_REPO_PATH = re.compile(
    r"`((?:pipelines|flows|benchmarks|infra|tests|corpora|metrics_rs|gx|docs)/[\w./-]*)`"
)


def test_every_repository_path_the_pages_name_exists() -> None:
    # Code moves (issue 22 moves a lot): a page naming a file that is gone has drifted.
    # Git-ignored outputs (a --quick benchmark's JSON) are named without existing.
    missing = [
        f"{where}: {path}"
        for where, text in _shown_texts().items()
        for path in sorted(set(_REPO_PATH.findall(text)))
        if not (REPO / path).exists()
        and subprocess.run(["git", "check-ignore", "-q", path], cwd=REPO).returncode != 0
    ]
    assert not missing, "\n".join(missing)
