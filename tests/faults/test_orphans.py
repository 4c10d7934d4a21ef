"""Nothing outlives the flow, and no two stages overlap on one root (issue 14, findings 6, 15).

The flow's children run in their own process group that ends with the flow: on a timeout,
on an exception, and when the flow process is SIGKILLed. Each stage command holds the
root's stage lock, so an orphan (or a second ``mathembed ingest``) cannot write beside it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from proc_table import running
from repo import REPO
from typer.testing import CliRunner

from flows import processes
from pipelines import cli
from pipelines.common.locks import StageBusyError, stage_lock, stage_lock_path

#: How long the group may take to go after its parent: the SIGTERM grace plus slack.
GONE_WITHIN_SECONDS = processes.GRACE_SECONDS + 7.0

# A command that starts a grandchild and prints both pids, then hangs (as a stuck stage).
HANGING_FAMILY = (
    "import os, subprocess, sys, time\n"
    "grandchild = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
    "print('family', os.getpid(), grandchild.pid, flush=True)\n"
    "time.sleep(600)\n"
)


def group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry.name))
    return members


def wait_until_gone(pids: list[int], seconds: float) -> float:
    began = time.monotonic()
    while any(running(pid) for pid in pids):
        assert time.monotonic() - began < seconds, f"still running: {pids}"
        time.sleep(0.05)
    return time.monotonic() - began


@pytest.fixture
def killed_at_end() -> Iterator[list[int]]:
    """Pids a failing test would leave behind: SIGKILLed at teardown whatever happened."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_a_sigkilled_flow_takes_dvc_and_the_stage_with_it(killed_at_end: list[int]) -> None:
    flow_like = (
        "import os, pathlib, sys\n"
        "from flows import processes\n"
        "command = [sys.executable, '-c', sys.argv[1]]\n"
        "processes.run_in_group(command, pathlib.Path('.'), dict(os.environ),"
        " log=lambda line: print(line, flush=True))\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", flow_like, HANGING_FAMILY],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    ) as parent:
        killed_at_end.append(parent.pid)
        assert parent.stdout is not None
        _, child, grandchild = parent.stdout.readline().split()
        family = [int(child), int(grandchild)]
        killed_at_end.extend(family)
        supervisor = os.getpgid(family[0])  # the group's leader
        assert supervisor != os.getpgid(parent.pid)  # its own group, not the flow's
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
    took = wait_until_gone([supervisor, *family], GONE_WITHIN_SECONDS)
    assert group_members(supervisor) == []
    print(f"group gone {took:.2f} s after SIGKILL")


def test_a_timed_out_command_ends_with_its_whole_group() -> None:
    lines: list[str] = []
    began = time.monotonic()
    finished = processes.run_in_group(
        [sys.executable, "-c", HANGING_FAMILY], REPO, dict(os.environ), lines.append, 1.0
    )
    took = time.monotonic() - began
    assert finished.timed_out and finished.code != 0
    assert took < 1.0 + GONE_WITHIN_SECONDS
    family = [int(pid) for pid in lines[0].split()[1:]]
    wait_until_gone(family, GONE_WITHIN_SECONDS)


def test_an_exception_in_the_flow_ends_the_group() -> None:
    # As a Prefect task timeout or Ctrl-C would raise inside the read loop.
    family: list[int] = []

    def log(line: str) -> None:
        family.extend(int(pid) for pid in line.split()[1:])
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        processes.run_in_group(
            [sys.executable, "-c", HANGING_FAMILY], REPO, dict(os.environ), log, 60.0
        )
    wait_until_gone(family, GONE_WITHIN_SECONDS)


def test_a_guarded_server_ends_when_the_flow_is_sigkilled(killed_at_end: list[int]) -> None:
    # Prefect's temporary server is started by Prefect, not by us: a guard watches it.
    flow_like = (
        "import subprocess, sys, time\n"
        "from flows import processes\n"
        "server = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        "processes.end_with_this_process([server.pid])\n"
        "print(server.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", flow_like], cwd=REPO, stdout=subprocess.PIPE, text=True
    ) as parent:
        killed_at_end.append(parent.pid)
        assert parent.stdout is not None
        server = int(parent.stdout.readline())
        killed_at_end.append(server)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
    wait_until_gone([server], GONE_WITHIN_SECONDS)


# --- the stage lock ---------------------------------------------------------------------


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding ``tmp_path``'s stage lock until it reads a line."""
    with subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, pathlib\n"
            "from pipelines.common.locks import stage_lock\n"
            "with stage_lock(pathlib.Path(sys.argv[1]), 'ingest'):\n"
            "    print('locked', flush=True); sys.stdin.readline()",
            str(tmp_path),
        ],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdout is not None and process.stdout.readline().strip() == "locked"
        yield process
        if process.poll() is None:
            process.communicate("\n", timeout=10)


@pytest.mark.parametrize("stage", ["sample", "ingest", "validate", "train"])
def test_a_second_stage_on_the_same_root_fails_naming_the_lock_and_holder(
    tmp_path: Path,
    holder: subprocess.Popen[str],
    monkeypatch: pytest.MonkeyPatch,
    stage: str,
) -> None:
    monkeypatch.setenv("MATHEMBED_STAGE_LOCK_WAIT_SECONDS", "0.3")
    params = tmp_path / "params.yaml"
    params.write_text("{}\n")
    result = CliRunner().invoke(cli.app, [stage, "--root", str(tmp_path), "--params", str(params)])
    assert result.exit_code == 1
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1 and message.startswith(f"{stage}: ")
    assert str(stage_lock_path(tmp_path).resolve()) in message
    assert f"pid {holder.pid}" in message


def test_a_stage_waits_for_the_one_before_it(tmp_path: Path, holder: subprocess.Popen[str]) -> None:
    with pytest.raises(StageBusyError), stage_lock(tmp_path, "prepare", wait_seconds=0.2):
        pass
    acquired = threading.Event()

    def second_stage() -> None:
        with stage_lock(tmp_path, "prepare", wait_seconds=20):
            acquired.set()

    waiter = threading.Thread(target=second_stage)
    waiter.start()
    assert not acquired.is_set()
    holder.communicate("\n", timeout=10)  # the first stage finishes
    waiter.join(timeout=20)
    assert acquired.is_set()


def test_a_killed_stage_leaves_no_stale_lock(tmp_path: Path, holder: subprocess.Popen[str]) -> None:
    holder.kill()
    holder.wait(timeout=10)
    with stage_lock(tmp_path, "ingest", wait_seconds=5):
        assert stage_lock_path(tmp_path).read_text().startswith(f"pid {os.getpid()}")
