"""The layering rule, read from the code: a stage imports ``pipelines/common/`` and never
another stage (nor ``dev/``) except by an entry of :data:`ALLOWED`; nothing in ``pipelines/``
imports ``flows/`` or the root command line ``mathembed/``, nothing in ``flows/`` imports
``mathembed/``; and no module imports itself back through others.

Stages are the folders under ``pipelines/`` but ``common/`` and ``dev/``. Every import
counts, wherever it sits (inside a function, under ``if TYPE_CHECKING:``): each is a
dependency of the design (:func:`pipelines.dev.imports.imported_names`).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

from pipelines.dev.imports import REPO, imported_names

#: The three top-level packages, lowest first: each may import the ones before it only.
PACKAGES = ("pipelines", "flows", "mathembed")
#: Folders of pipelines/ that are no stage: what stages share, and the developer's tools.
NOT_STAGES = ("common", "dev")
#: The imports from one stage into another part of pipelines/ (but common/) that are allowed,
#: each with why. Exactly these: an entry the code no longer needs fails too, so the list
#: stays the short true one.
ALLOWED: Mapping[str, Mapping[str, str]] = {
    "promote": {
        # Promotion scores the candidate, the base model and the champion with evaluate's
        # public scoring, so its numbers are the ones metrics/eval.json reports.
        "pipelines.evaluate.eval_set": "the validated evaluation set, loaded as evaluate does",
        "pipelines.evaluate.scoring": "embedding, kNN scoring and the paired test",
        "pipelines.evaluate.sources": "the models to score (candidate, base, champion)",
    },
    "ingest": {
        # `mathembed sample` with sample.corpus: synthetic builds the mirror from the
        # synthetic generator, a developer's fixture that lives in dev/.
        "pipelines.dev.synthetic": "the synthetic sample's generator",
        "pipelines.dev.synthetic.manifest": "the synthetic sample's ground truth",
    },
}


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    """Every first-party module: ``pipelines.promote.scoring`` -> its file."""
    return {
        module_name(path): path
        for package in PACKAGES
        for path in sorted((REPO / package).rglob("*.py"))
    }


def import_graph() -> dict[str, set[str]]:
    """Module -> the first-party modules it imports (a name inside a module counts as that
    module; a package as its ``__init__``)."""
    known = modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        targets: set[str] = set()
        for imported in imported_names(path.read_text(encoding="utf-8"), name, type_checking=True):
            while imported and imported not in known:  # ``m.x``: x is a name in module m
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def part_of(module: str) -> str:
    """``pipelines.promote.scoring`` -> ``promote``; ``flows.nightly`` -> ``flows``."""
    parts = module.split(".")
    return parts[1] if parts[0] == "pipelines" and len(parts) > 2 else parts[0]


def is_stage(part: str) -> bool:
    return part not in (*PACKAGES, *NOT_STAGES)


def stage_arrows(graph: Mapping[str, set[str]]) -> dict[str, dict[str, set[str]]]:
    """Stage -> module of another part of pipelines/ (common/ aside) -> the stage's modules
    that import it."""
    arrows: dict[str, dict[str, set[str]]] = {}
    for module, targets in graph.items():
        stage = part_of(module)
        if not module.startswith("pipelines.") or not is_stage(stage):
            continue
        for target in targets:
            other = part_of(target)
            if target.startswith("pipelines.") and other not in (stage, "common", "pipelines"):
                arrows.setdefault(stage, {}).setdefault(target, set()).add(module)
    return arrows


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


def test_stages_import_another_stage_only_as_the_allow_list_says() -> None:
    arrows = stage_arrows(import_graph())
    found = {stage: set(targets) for stage, targets in arrows.items()}
    allowed = {stage: set(targets) for stage, targets in ALLOWED.items()}
    listing = "\n".join(
        f"  {stage} -> {target} (from {', '.join(sorted(importers))})"
        for stage, targets in sorted(arrows.items())
        for target, importers in sorted(targets.items())
    )
    print(f"stage -> stage imports:\n{listing}")
    assert found == allowed, (
        "a stage imports another part of pipelines/ (common/ aside) other than ALLOWED says, "
        f"or an ALLOWED entry is no longer used; found:\n{listing}"
    )


def upward_imports(graph: Mapping[str, set[str]]) -> list[str]:
    """``module -> target`` where the target's package stands above the module's."""
    order = {package: rank for rank, package in enumerate(PACKAGES)}
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if order[target.split(".")[0]] > order[module.split(".")[0]]
    )


def test_nothing_imports_upwards() -> None:
    upwards = upward_imports(import_graph())
    assert upwards == [], "pipelines/ imports flows/ or mathembed/, or flows/ imports mathembed/"


def test_no_import_is_hidden_from_these_checks() -> None:
    # importlib.import_module("flows.cli") is how pipelines/cli.py once reached up: an
    # import by name in a string is one no check above can see.
    dynamic = sorted(
        f"{name}:{node.lineno}"
        for name, path in modules().items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
            or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__"))
        )
    )
    assert dynamic == [], "import first-party modules with import statements"


def test_no_module_imports_itself_back_through_others() -> None:
    assert cycles(import_graph()) == []


def test_the_checks_see_what_they_look_for() -> None:
    # The reader finds imports in function bodies and under TYPE_CHECKING (or the tests
    # above would pass on nothing), and the cycle finder finds a planted circle.
    graph = import_graph()
    assert "pipelines.evaluate.scoring" in graph["pipelines.promote.decision"]  # in a function
    assert "pipelines.promote.scoring" in graph["pipelines.promote.tags"]  # TYPE_CHECKING
    assert "flows.cli" in graph["mathembed.cli"] and "pipelines.cli" in graph["mathembed.cli"]
    planted = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(planted) == [["a", "b", "c"]]
    # The two arrows this rule removed, planted back, are found.
    back = {"pipelines.dev.services": {"flows.pools"}, "flows.pools": set()}
    assert upward_imports(back) == ["pipelines.dev.services -> flows.pools"]
    across = {"pipelines.train.tracking": {"pipelines.promote.store", "pipelines.common.io"}}
    assert stage_arrows(across) == {
        "train": {"pipelines.promote.store": {"pipelines.train.tracking"}}
    }
