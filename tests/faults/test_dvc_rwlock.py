"""Issue 23, finding 10: a corrupt ``.dvc/tmp/rwlock`` made every ``dvc repro`` fail with
"JSON structure is corrupted", and nothing in the flow recovered or said what to do.

Now the flow's dvc calls (:func:`run_dvc`, :func:`stale_stages`) remove a corrupt rwlock
with a warning when no dvc process runs in the project, and otherwise fail with one line
naming the process and what to do. The project here is a DVC project without git and one
stage; the lock is one cut off mid-write.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from flows.orchestration import DvcSetupError, run_dvc, stale_stages
from flows.rwlock import RWLOCK, is_dvc_command, rwlock_problem

pytestmark = pytest.mark.usefixtures("bounded_in_time")

CUT_OFF = '{"write": {"out.txt": {"pid": 4'  # a write that stopped half-way
STAGE = "stages:\n  hello:\n    cmd: echo hello > out.txt\n    outs:\n      - out.txt\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".dvc" / "tmp").mkdir(parents=True)
    (tmp_path / ".dvc" / "config").write_text("[core]\n    no_scm = true\n", encoding="utf-8")
    (tmp_path / "dvc.yaml").write_text(STAGE, encoding="utf-8")
    (tmp_path / RWLOCK).write_text(CUT_OFF, encoding="utf-8")
    return tmp_path


def test_a_corrupt_rwlock_is_removed_with_a_warning_and_repro_runs(project: Path) -> None:
    lines: list[str] = []
    run_dvc(["repro"], project, log=lines.append, timeout_seconds=60)
    assert (project / "out.txt").read_text(encoding="utf-8").strip() == "hello"
    warnings = [line for line in lines if line.startswith("warning: removed")]
    assert len(warnings) == 1 and "not JSON" in warnings[0], lines


def test_the_status_check_recovers_too(project: Path) -> None:
    assert stale_stages(project, "hello", log=lambda line: None) == ["hello"]
    assert rwlock_problem((project / RWLOCK).read_text(encoding="utf-8")) is None  # DVC's own


def test_with_dvc_running_there_it_fails_in_one_line_saying_what_to_do(project: Path) -> None:
    # A process that looks like dvc to the check, working in the project, for the test only.
    stand_in = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "-m", "dvc", "repro"], cwd=project
    )
    try:
        with pytest.raises(DvcSetupError) as caught:
            run_dvc(["repro"], project, log=lambda line: None, timeout_seconds=60)
    finally:
        stand_in.kill()
        stand_in.wait()
    message = str(caught.value)
    assert "\n" not in message
    assert f"PID {stand_in.pid}" in message
    assert f"then delete {project / RWLOCK} and rerun" in message
    assert (project / RWLOCK).read_text(encoding="utf-8") == CUT_OFF  # left alone


def test_what_counts_as_corrupt_and_as_dvc() -> None:
    assert rwlock_problem("{}") is None
    assert rwlock_problem('{"read": {"data": [{"pid": 1, "cmd": "dvc repro"}]}}') is None
    assert rwlock_problem(CUT_OFF) is not None
    assert rwlock_problem("") is not None
    assert rwlock_problem('{"write": {"data": {"pid": "one"}}}') is not None  # not DVC's shape
    assert is_dvc_command(["/venv/bin/dvc", "repro"])
    assert is_dvc_command(["/venv/bin/python", "-m", "dvc", "push"])
    assert is_dvc_command(["/usr/bin/python3", "/venv/bin/dvc", "status"])
    assert not is_dvc_command(["python", "-m", "pytest", "tests/faults/test_dvc_rwlock.py"])
