"""The layering rule, read from the code. Every first-party module is an importer, and
each part of the code imports only the parts :data:`MAY_IMPORT` names (and its own modules):

- the shared wings of ``pipelines/``, in the order :data:`pipelines.common.parts.WINGS`
  declares (``common/``, the kernel; ``mathtext/``; ``retrieval/``; ``registry/``): each
  imports only the wings before it, never a stage;
- a stage (any other folder of ``pipelines/``: ``ingest/`` … ``search/``, and ``mirror/``,
  the ``sample`` stage) imports the wings, never another stage, but for the imports
  :data:`ALLOWED` names;
- the root of ``pipelines/`` (``pipelines/cli.py``: every stage's commands on one app)
  imports the wings and the stages;
- ``flows/`` (the night, its report, work pools and local services) imports the wings and
  the stages, never the root of ``pipelines/`` (the command line that joins both command
  sets is ``mathembed/``'s);
- ``tooling/`` (the import analyser) reads code as text: it imports the kernel only;
- ``mathembed/``, the command line above both, imports anything but ``tooling/``;

and nothing in ``pipelines/`` imports ``flows/``, ``tooling/`` or ``mathembed/``, nothing in
``flows/`` imports ``mathembed/``, no module imports itself back through others.

An import of a package counts as an import of its part (``import pipelines.evaluate`` is an
import of the stage ``evaluate``), and what a package's ``__init__`` re-exports is followed
to the module that defines it (``from pipelines.mirror.corpora.synthetic import
generate_mirror`` is an import of ``pipelines.mirror.corpora.synthetic.build``). Every
import counts, wherever it sits (inside a function, under ``if TYPE_CHECKING:``): each is
a dependency of the design (:func:`tooling.imports.imported_names`,
:func:`tooling.imports.bound_names`). A wrong import planted in a small tree of the
project's shape is reported, one per kind of wrong (the test of these tests).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from pipelines.common.parts import WINGS
from tooling.imports import REPO, bound_names, imported_names

#: The top-level packages, lowest first.
PACKAGES = ("pipelines", "flows", "tooling", "mathembed")
#: Folders of pipelines/ that are no stage: the shared wings, lowest first.
NOT_STAGES = WINGS
#: What each kind of part may import besides its own modules ("stage" stands for any stage;
#: "pipelines" for the root of pipelines/: its __init__, cli.py and __main__.py).
MAY_IMPORT: Mapping[str, frozenset[str]] = {
    # Each wing stands on those before it: the kernel on nothing, the registry on all three.
    **{wing: frozenset(WINGS[:level]) for level, wing in enumerate(WINGS)},
    # A stage stands beside the others: what two stages share belongs in a wing.
    "stage": frozenset(WINGS),
    # pipelines/cli.py puts every stage's commands on one app.
    "pipelines": frozenset({*WINGS, "stage"}),
    # Orchestration calls the stages' functions; the command line that joins both command
    # sets is mathembed/'s, not pipelines'.
    "flows": frozenset({*WINGS, "stage"}),
    # The import analyser reads code as text; it needs only the parts' declaration.
    "tooling": frozenset({"common"}),
    # The root command line, above both pipelines/ and flows/.
    "mathembed": frozenset({*WINGS, "stage", "pipelines", "flows"}),
}
#: Imports of one stage by another that the design allows, by the importing stage: any of
#: its modules may import these, each with why. Exactly these: an entry the code no longer
#: needs fails too, so the list stays the short true one.
ALLOWED: Mapping[str, Mapping[str, str]] = {
    "ingest": {
        # ingest.source: sample harvests the offline mirror like arXiv, over HTTP: it starts
        # the mirror's server for the run and reads nothing of the mirror but what it serves.
        "pipelines.mirror.server": "serving(mirror_dir): the mirror served, its URL given",
    },
    "promote": {
        # Promotion scores the candidate, the base model and the champion with evaluate's
        # public scoring, so its numbers are the ones metrics/eval.json reports.
        "pipelines.evaluate.eval_set": "the validated evaluation set, loaded as evaluate does",
        "pipelines.evaluate.scoring": "embedding, kNN scoring and the paired test",
        "pipelines.evaluate.sources": "the models to score (candidate, base, champion)",
        "pipelines.evaluate.foreign": "the foreign corpus's files, in the eval data hash",
    },
}


class Code(NamedTuple):
    """First-party code: each module's source, and which modules are a package's ``__init__``."""

    sources: Mapping[str, str]
    packages: frozenset[str]


class Arrow(NamedTuple):
    """One import: the importing module and the first-party module it imports."""

    importer: str
    imported: str

    def __str__(self) -> str:
        return f"{self.importer} -> {self.imported}"


def module_name(path: Path, root: Path = REPO) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def read_code(root: Path = REPO) -> Code:
    """Every module of :data:`PACKAGES` under ``root`` (``pipelines.promote.scoring``), its code."""
    paths = {
        module_name(path, root): path
        for package in PACKAGES
        for path in sorted((root / package).rglob("*.py"))
    }
    return Code(
        sources={name: path.read_text(encoding="utf-8") for name, path in paths.items()},
        packages=frozenset(name for name, path in paths.items() if path.name == "__init__.py"),
    )


def reexports(code: Code) -> dict[str, dict[str, str]]:
    """Package -> each name its ``__init__`` binds by an import -> the name it stands for."""
    return {
        package: bound_names(code.sources[package], f"{package}.__init__")
        for package in code.packages
    }


def resolve_prefix(name: str, known: Collection[str]) -> str | None:
    """The longest first-party module ``name`` starts with, ``None`` when there is none."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def resolve(
    name: str, known: Collection[str], exported: Mapping[str, Mapping[str, str]]
) -> str | None:
    """The first-party module that defines ``name``: ``name`` itself when it is a module;
    for ``m.x`` the module ``m``, or, when ``m``'s ``__init__`` re-exports ``x``, the module
    ``x`` comes from (followed as far as it goes); ``None`` for a third-party name."""
    seen: set[str] = set()
    while True:
        module = resolve_prefix(name, known)
        if module is None or module == name or name in seen:
            return module
        seen.add(name)
        first, _, rest = name[len(module) + 1 :].partition(".")
        source = exported.get(module, {}).get(first)
        if source is None or resolve_prefix(source, known) is None:
            return module
        name = f"{source}.{rest}" if rest else source


def import_graph(code: Code) -> dict[str, set[str]]:
    """Module -> the first-party modules it imports: a name inside a module counts as that
    module, a re-exported name as the module it comes from, a package as its ``__init__``.
    The ``m`` of ``from m import x`` is no import of its own (``m.x`` carries it)."""
    known = code.sources.keys()
    exported = reexports(code)
    graph: dict[str, set[str]] = {}
    for module, source in code.sources.items():
        # A package's __init__ is read as "<package>.__init__", so "." is the package.
        reader = f"{module}.__init__" if module in code.packages else module
        names = imported_names(source, reader, type_checking=True)
        targets = {
            resolve(name, known, exported)
            for name in names
            if not any(other.startswith(f"{name}.") for other in names)
        }
        graph[module] = {target for target in targets if target and target != module}
    return graph


def part_of(module: str, packages: Collection[str]) -> str:
    """``pipelines.promote.scoring`` and ``pipelines.promote`` -> ``promote``;
    ``pipelines.cli`` -> ``pipelines`` (the root); ``flows.nightly`` -> ``flows``."""
    parts = module.split(".")
    if parts[0] == "pipelines" and len(parts) > 1 and f"pipelines.{parts[1]}" in packages:
        return parts[1]
    return parts[0]


def kind_of(part: str) -> str:
    return part if part in (*PACKAGES, *NOT_STAGES) else "stage"


def forbidden_imports(graph: Mapping[str, Iterable[str]], packages: Collection[str]) -> list[Arrow]:
    """Every import of a part that :data:`MAY_IMPORT` does not give the importer's part."""
    found = []
    for importer, targets in graph.items():
        part = part_of(importer, packages)
        for imported in targets:
            other = part_of(imported, packages)
            if other != part and kind_of(other) not in MAY_IMPORT[kind_of(part)]:
                found.append(Arrow(importer, imported))
    return sorted(found)


def unexplained(
    arrows: Iterable[Arrow],
    packages: Collection[str],
    allowed: Mapping[str, Mapping[str, str]] = ALLOWED,
) -> list[Arrow]:
    """The forbidden imports the allow-list does not name."""
    return [
        arrow
        for arrow in arrows
        if arrow.imported not in allowed.get(part_of(arrow.importer, packages), {})
    ]


def unused_entries(
    arrows: Iterable[Arrow],
    packages: Collection[str],
    allowed: Mapping[str, Mapping[str, str]] = ALLOWED,
) -> list[str]:
    """The allow-list's entries (``part -> module``) no forbidden import uses."""
    by_part = {(part_of(arrow.importer, packages), arrow.imported) for arrow in arrows}
    return sorted(
        f"{part} -> {target}"
        for part, targets in allowed.items()
        for target in targets
        if (part, target) not in by_part
    )


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(root: str) -> None:
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


@functools.cache
def repo_code() -> Code:
    return read_code()


@functools.cache
def repo_graph() -> dict[str, set[str]]:
    return import_graph(repo_code())


def test_every_part_imports_only_what_the_rule_and_the_allow_lists_say() -> None:
    packages = repo_code().packages
    arrows = forbidden_imports(repo_graph(), packages)
    print("imports the rule forbids:\n" + "\n".join(f"  {arrow}" for arrow in arrows))
    new = unexplained(arrows, packages)
    assert new == [], "imports the layering rule forbids, on no allow-list:\n" + "\n".join(
        f"  {arrow}" for arrow in new
    )
    stale = unused_entries(arrows, packages)
    assert stale == [], "allow-list entries the code no longer needs (remove them):\n" + (
        "\n".join(f"  {entry}" for entry in stale)
    )


def test_every_module_is_an_importer_in_a_part_the_rule_knows() -> None:
    code = repo_code()
    parts = {part_of(module, code.packages) for module in repo_graph()}
    assert {*WINGS, "mirror", "ingest", "pipelines", "flows", "tooling", "mathembed"} <= parts
    assert {kind_of(part) for part in parts} == set(MAY_IMPORT)
    assert set(repo_graph()) == set(code.sources)


def test_no_import_is_hidden_from_these_checks() -> None:
    # importlib.import_module("flows.cli") is how pipelines/cli.py once reached up: an
    # import by name in a string is one no check above can see.
    dynamic = sorted(
        f"{name}:{node.lineno}"
        for name, source in repo_code().sources.items()
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
            or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__"))
        )
    )
    assert dynamic == [], "import first-party modules with import statements"


def test_no_module_imports_itself_back_through_others() -> None:
    assert cycles(repo_graph()) == []


def test_the_reader_sees_what_the_checks_look_for() -> None:
    # Imports in function bodies and under TYPE_CHECKING (or the tests above would pass on
    # nothing), and a re-export followed to the module that defines it.
    graph = repo_graph()
    assert "pipelines.evaluate.scoring" in graph["pipelines.promote.decision"]  # in a function
    assert "pipelines.promote.scoring" in graph["pipelines.promote.tags"]  # TYPE_CHECKING
    assert "flows.cli" in graph["mathembed.cli"] and "pipelines.cli" in graph["mathembed.cli"]
    synthetic = "pipelines.mirror.corpora.synthetic"
    assert f"{synthetic}.build" in graph["pipelines.mirror.cli"]  # re-export
    assert synthetic not in graph["pipelines.mirror.cli"]
    planted = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(planted) == [["a", "b", "c"]]


#: A small tree of the project's shape with one wrong import of each kind planted in it
#: (and right ones beside them, which must not be reported).
PLANTED = {
    "pipelines/__init__.py": "",
    # the root -> a stage (right); -> flows (wrong)
    "pipelines/cli.py": "from pipelines.train import loop\nfrom flows.report import render\n",
    "pipelines/common/__init__.py": "",
    # the kernel -> a wing above it
    "pipelines/common/io.py": "def read():\n    from pipelines.retrieval.store import rows\n",
    "pipelines/mathtext/__init__.py": "",
    # a wing -> a later wing (under TYPE_CHECKING: still an import of the design)
    "pipelines/mathtext/names.py": (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from pipelines.registry.records import Record\n"
    ),
    "pipelines/retrieval/__init__.py": "",
    # a wing -> an earlier wing and the kernel (right)
    "pipelines/retrieval/store.py": (
        "from pipelines.mathtext import names\nimport pipelines.common.io\n"
    ),
    "pipelines/registry/__init__.py": "",
    # a wing -> a stage
    "pipelines/registry/records.py": "def fit():\n    from pipelines.train.loop import fit\n",
    # the stage's __init__ re-exports a name of its scoring module, under another name
    "pipelines/evaluate/__init__.py": "from .scoring import score as score_queries\n",
    "pipelines/evaluate/scoring.py": "from pipelines.common.io import read\ndef score(): ...\n",
    "pipelines/train/__init__.py": "",
    # a stage -> another stage through that re-export; and the package itself, plainly
    "pipelines/train/loop.py": "from pipelines.evaluate import score_queries\ndef fit(): ...\n",
    "pipelines/train/plain.py": "import pipelines.evaluate\n",
    # allowed: promote scores with evaluate's public scoring
    "pipelines/promote/__init__.py": "",
    "pipelines/promote/scoring.py": "from pipelines.evaluate import scoring\n",
    # ingest -> the mirror's server (allowed); -> the mirror's layout (not)
    "pipelines/ingest/__init__.py": "",
    "pipelines/ingest/stage.py": (
        "from pipelines.mirror.server import serving\nfrom pipelines.mirror import layout\n"
    ),
    "pipelines/mirror/__init__.py": "",
    "pipelines/mirror/layout.py": "",
    # promote's allowance is promote's: the mirror may not use it
    "pipelines/mirror/server.py": "from pipelines.evaluate.scoring import score\n",
    "flows/__init__.py": "",
    "flows/report.py": "def render(): ...\n",
    # flows -> a stage (right); -> the tooling (wrong)
    "flows/nightly.py": "from pipelines import train\nfrom tooling.imports import REPO\n",
    # flows -> its own modules (right); -> the root of pipelines/ (wrong)
    "flows/steps.py": "from flows.report import render\nimport pipelines.cli\n",
    "tooling/__init__.py": "",
    # the tooling -> the kernel (right); -> a stage (wrong)
    "tooling/imports.py": "from pipelines.common import io\nfrom pipelines.train import plain\n",
    "mathembed/__init__.py": "",
    # the root command line -> both command sets (right); -> the tooling (wrong)
    "mathembed/cli.py": (
        "from flows import steps\nfrom pipelines import cli\nimport tooling.imports\n"
    ),
}


def test_planted_wrong_imports_are_each_reported_by_importer_and_module(tmp_path: Path) -> None:
    for relative, source in PLANTED.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(source, encoding="utf-8")
    code = read_code(tmp_path)
    graph = import_graph(code)
    # followed through evaluate/__init__'s re-export (relative, renamed) to its real module
    assert graph["pipelines.train.loop"] == {"pipelines.evaluate.scoring"}
    assert graph["pipelines.train.plain"] == {"pipelines.evaluate"}

    reported = unexplained(forbidden_imports(graph, code.packages), code.packages)
    assert [str(arrow) for arrow in reported] == [
        "flows.nightly -> tooling.imports",
        "flows.steps -> pipelines.cli",
        "mathembed.cli -> tooling.imports",
        "pipelines.cli -> flows.report",
        "pipelines.common.io -> pipelines.retrieval.store",
        "pipelines.ingest.stage -> pipelines.mirror.layout",
        "pipelines.mathtext.names -> pipelines.registry.records",
        "pipelines.mirror.server -> pipelines.evaluate.scoring",
        "pipelines.registry.records -> pipelines.train.loop",
        "pipelines.train.loop -> pipelines.evaluate.scoring",
        "pipelines.train.plain -> pipelines.evaluate",
        "tooling.imports -> pipelines.train.plain",
    ]


def test_an_allow_list_entry_the_code_no_longer_needs_is_reported() -> None:
    packages = {"pipelines.promote", "pipelines.evaluate", "pipelines.ingest", "pipelines.mirror"}
    arrows = [
        Arrow(f"pipelines.{part}.module", target)
        for part, targets in ALLOWED.items()
        for target in targets
    ]
    assert unused_entries(arrows, packages) == []
    first, *others = arrows
    assert unused_entries(others, packages) == [f"ingest -> {first.imported}"]
