"""What the project's modules import, read from their code: each DVC stage's code
dependencies are derived from it (``dvc.yaml`` lists them, tests/unit/test_stage_deps.py
checks the list).

Imports are read with :mod:`ast`, wherever they sit (a command imports its stage inside
the function, after the offline switches are set), except under ``if TYPE_CHECKING:``,
which never runs (``type_checking=True`` counts those too: the layering test does, since
a type is a dependency of the design even when it costs nothing at run time).
``from pipelines.validate import formats`` imports the module
``pipelines.validate.formats``; importing a module also runs its packages' ``__init__``.
Only first-party code counts (``pipelines``, ``flows``); the compiled ``metrics_rs`` is
named by its sources.

``python -m tooling.imports`` prints each stage's code dependencies in ``dvc.yaml``'s
form.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from pipelines.common.parts import STAGES

REPO = Path(__file__).resolve().parents[1]
FIRST_PARTY = ("pipelines", "flows")
#: Where the compiled extension's code lives: a stage importing ``metrics_rs`` depends on it.
EXTENSION_SOURCES = {"metrics_rs": ("metrics_rs/src", "metrics_rs/Cargo.toml")}

#: The module that defines each DVC stage's command (``cmd: mathembed <stage>``), from the
#: one stage sequence. The root ``pipelines/cli.py`` only dispatches to it, so it is no
#: dependency of any stage.
STAGE_ENTRIES: Mapping[str, str] = {
    stage.name: stage.commands for stage in STAGES if stage.versioned
}


def module_file(module: str, repo: Path = REPO) -> Path | None:
    """``pipelines.a.b`` -> ``pipelines/a/b.py`` or ``pipelines/a/b/__init__.py``; ``None``
    when it is no first-party module (a third-party one, or a name inside a module)."""
    if module.split(".")[0] not in FIRST_PARTY:
        return None
    base = repo.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(
    tree: ast.AST, type_checking: bool = False
) -> Iterable[ast.Import | ast.ImportFrom]:
    """Every import statement that can run (``type_checking``: and those under ``if
    TYPE_CHECKING:``, which are skipped otherwise)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if not type_checking and isinstance(node, ast.If) and _type_checking_only(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _from_base(node: ast.ImportFrom, module: str) -> str:
    """The absolute module of ``from <base> import ...`` in ``module``'s code (a package's
    ``__init__`` is named ``<package>.__init__`` here, so ``.`` is the package itself)."""
    base = node.module or ""
    if not node.level:
        return base
    package = module.rsplit(".", 1)[0] if "." in module else module
    parts = package.split(".")
    anchor = ".".join(parts[: len(parts) - node.level + 1])
    return f"{anchor}.{base}" if base else anchor


def imported_names(source: str, module: str, *, type_checking: bool = False) -> set[str]:
    """The absolute names ``source`` (the code of ``module``) imports: a module, or for
    ``from m import x`` both ``m`` and ``m.x`` (which of them is a module is the caller's
    to decide). Relative imports are resolved against ``module``."""
    names: set[str] = set()
    for node in _import_nodes(ast.parse(source), type_checking):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
            continue
        base = _from_base(node, module)
        names.add(base)
        names.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return names


def bound_names(source: str, module: str) -> dict[str, str]:
    """The names ``source``'s imports bind in ``module`` -> the absolute name each stands
    for: ``from m import x as y`` binds ``y`` -> ``m.x``, ``import a.b as c`` binds ``c`` ->
    ``a.b``, ``import a.b`` binds ``a``. What a package's ``__init__`` re-exports, so that
    ``from package import x`` can be followed to the module that defines ``x``. Every
    import counts (under ``if TYPE_CHECKING:`` too); ``*`` binds nothing it can name."""
    bound: dict[str, str] = {}
    for node in _import_nodes(ast.parse(source), type_checking=True):
        for alias in node.names:
            if isinstance(node, ast.Import):
                local = alias.asname or alias.name.split(".")[0]
                bound[local] = alias.name if alias.asname else local
            elif alias.name != "*":
                bound[alias.asname or alias.name] = f"{_from_base(node, module)}.{alias.name}"
    return bound


def _with_packages(module: str) -> list[str]:
    """``a.b.c`` -> ``a``, ``a.b``, ``a.b.c``: importing it runs each package's ``__init__``."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


@functools.cache
def _imports_of(module: str, repo: Path) -> frozenset[str]:
    path = module_file(module, repo)
    if path is None:
        return frozenset()
    return frozenset(imported_names(path.read_text(encoding="utf-8"), module))


def first_party_imports(module: str, repo: Path = REPO) -> set[str]:
    """The first-party modules ``module`` imports directly (packages' ``__init__`` aside)."""
    return {name for name in _imports_of(module, repo) if module_file(name, repo) is not None}


def closure(entries: Iterable[str], repo: Path = REPO) -> tuple[set[str], set[str]]:
    """The first-party modules that importing ``entries`` can run, and the other top-level
    packages they import (``numpy``, ``metrics_rs`` ...)."""
    seen: set[str] = set()
    external: set[str] = set()
    todo = [name for entry in entries for name in _with_packages(entry)]
    while todo:
        module = todo.pop()
        if module in seen or module_file(module, repo) is None:
            continue
        seen.add(module)
        for name in _imports_of(module, repo):
            if module_file(name, repo) is not None:
                todo.extend(_with_packages(name))
            elif name.split(".")[0] not in FIRST_PARTY:
                external.add(name.split(".")[0])
    return seen, external


def collapse(files: Iterable[Path], repo: Path = REPO) -> list[str]:
    """Repo-relative paths of ``files``, a folder standing for its files when every ``.py``
    file under it is among them."""
    wanted = {path.resolve() for path in files}

    def whole(folder: Path) -> bool:
        return all(path.resolve() in wanted for path in folder.rglob("*.py"))

    listed: set[str] = set()
    for path in sorted(wanted):
        top = path
        while top.parent != repo and whole(top.parent):
            top = top.parent
        listed.add(top.relative_to(repo).as_posix())
    return sorted(listed)


def stage_code_deps(stage: str, repo: Path = REPO) -> list[str]:
    """What ``dvc.yaml`` lists as ``stage``'s code: its command's module and everything
    first-party it can import, folders collapsed, plus the extension's sources it uses."""
    modules, external = closure([STAGE_ENTRIES[stage]], repo)
    files = [path for module in modules if (path := module_file(module, repo)) is not None]
    extension = [src for name in sorted(external) for src in EXTENSION_SOURCES.get(name, ())]
    return [*collapse(files, repo), *extension]


def main() -> None:
    for stage in STAGE_ENTRIES:
        print(f"{stage}:")
        for path in stage_code_deps(stage):
            print(f"  - {path}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
