"""Each DVC stage lists exactly the code it runs: editing a helper reruns only the stages
that import it (:mod:`tooling.imports` derives the lists from the imports)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from tooling.imports import (
    REPO,
    STAGE_ENTRIES,
    closure,
    collapse,
    imported_names,
    module_file,
    stage_code_deps,
)

CODE_ROOTS = ("pipelines/", "flows/", "metrics_rs/")
STAGES = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))["stages"]


def listed_code(stage: str) -> list[str]:
    """The code among ``stage``'s deps in dvc.yaml (data, configs and expectations aside)."""
    deps = [dep if isinstance(dep, str) else next(iter(dep)) for dep in STAGES[stage]["deps"]]
    return sorted(dep for dep in deps if dep.startswith(CODE_ROOTS))


def test_every_dvc_stage_has_an_entry_module_that_defines_its_command() -> None:
    assert set(STAGE_ENTRIES) == set(STAGES)
    for stage, module in STAGE_ENTRIES.items():
        command = STAGES[stage]["cmd"].split()[1]
        path = module_file(module)
        assert path is not None, module
        assert f'"{command}"' in path.read_text(encoding="utf-8") or (
            f"def {command}(" in path.read_text(encoding="utf-8")
        ), f"{module} does not register `mathembed {command}`"


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_dvc_yaml_lists_exactly_the_code_the_stage_imports(stage: str) -> None:
    derived = sorted(stage_code_deps(stage))
    assert listed_code(stage) == derived, (
        f"dvc.yaml's {stage} deps differ from its imports; "
        "`python -m tooling.imports` prints the lists to paste"
    )


def test_a_helper_used_by_one_stage_is_a_dependency_of_that_stage_only() -> None:
    # mathtext/masking.py: the pairs stage masks names in training anchors and evaluate in
    # the masked query set; ingest, prepare and train never import it.
    # (A stage that imports every module of mathtext/ lists the folder.)
    masking = "pipelines/mathtext/masking.py"
    users = {
        stage
        for stage in STAGES
        if any(masking == dep or masking.startswith(f"{dep}/") for dep in listed_code(stage))
    }
    assert users == {"pairs", "evaluate"}
    assert "pipelines/common" not in {dep for stage in STAGES for dep in listed_code(stage)}


def test_imports_are_read_in_function_bodies_but_not_under_type_checking() -> None:
    source = textwrap.dedent(
        """
        from typing import TYPE_CHECKING
        import numpy as np
        from pipelines.common import io
        from . import sibling
        from .inner import thing

        if TYPE_CHECKING:
            from pipelines.search.engine import SearchEngine
        else:
            from pipelines.common import paths

        def command():
            from pipelines.pairs.stage import run_pairs
        """
    )
    names = imported_names(source, "pipelines.pairs.cli")
    assert {"numpy", "pipelines.common", "pipelines.common.io", "pipelines.common.paths"} <= names
    assert {"pipelines.pairs.sibling", "pipelines.pairs.inner.thing"} <= names
    assert "pipelines.pairs.stage.run_pairs" in names
    assert not any(name.startswith("pipelines.search") for name in names)


def test_closure_runs_the_packages_and_names_the_extension() -> None:
    modules, external = closure(["pipelines.evaluate.scoring"])
    assert {"pipelines", "pipelines.evaluate", "pipelines.evaluate.scoring"} <= modules
    assert "metrics_rs" in external
    assert "metrics_rs/src" in stage_code_deps("evaluate")
    assert "metrics_rs/src" not in stage_code_deps("pairs")


def test_collapse_names_a_folder_only_when_all_its_files_are_used(tmp_path: Path) -> None:
    for name in ("pkg/__init__.py", "pkg/a.py", "pkg/b.py", "other/__init__.py", "other/c.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("", encoding="utf-8")
    used = [tmp_path / "pkg/__init__.py", tmp_path / "pkg/a.py", tmp_path / "pkg/b.py"]
    assert collapse([*used, tmp_path / "other/c.py"], tmp_path) == ["other/c.py", "pkg"]
