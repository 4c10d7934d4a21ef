"""A night stopped during training ends within seconds, recorded, in one line (issue 29,
finding 9).

``mathembed nightly`` on Prefect's temporary server (no ``PREFECT_API_URL``), on a DVC
project whose stages are stand-ins: each writes what the flow reads, and ``train`` starts
and then runs for ever, as a long training does. Once it has started, the command's
process group gets SIGTERM (``timeout``, ``kill -- -PGID``) or SIGINT (Ctrl-C on a
terminal). It must exit within 30 s with 128 + the signal's number, print no traceback
and no "Error logging to API", say in one line that it was stopped and in which step,
leave the flow run CRASHED (or CANCELLED) in Prefect's database, not RUNNING, and leave
nothing running: neither the training nor the temporary server. A watchdog kills the
group if the command outlives it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from proc_table import running
from repo import REPO

#: The finding's bound: from the signal to the command's exit.
STOPS_WITHIN_SECONDS = 30.0
#: A command that outlives this is killed with its group (the test then fails).
WATCHDOG_SECONDS = 180.0
TRAINING_STARTED = "train: step 1/1000"

# Each stage writes its output (and the metrics file the flow reads after it); train
# prints that it started, with its pid, and runs for ever.
STAGE = """\
import json, os, pathlib, sys, time
name = sys.argv[1]
if name == "train":
    print(f"train: step 1/1000 (pid {os.getpid()})", flush=True)
    time.sleep(600)
pathlib.Path("out").mkdir(exist_ok=True)
pathlib.Path("out", name).write_text(name)
metrics = {"ingest": "ingest", "validate": "data_quality"}
if name in metrics:
    pathlib.Path("metrics").mkdir(exist_ok=True)
    pathlib.Path("metrics", f"{metrics[name]}.json").write_text(json.dumps({"stage": name}))
"""
STAGES = ("sample", "ingest", "prepare", "graph", "pairs", "validate", "train", "evaluate")


@pytest.fixture
def stand_in_project(tmp_path: Path) -> Path:
    """A DVC project with the nightly flow's stages, each a stand-in (:data:`STAGE`)."""
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run([sys.executable, "-m", "dvc", "init", "--no-scm", "-q"], cwd=root, check=True)
    (root / "stage.py").write_text(STAGE, encoding="utf-8")
    lines = ["stages:"]
    for before, name in zip((None, *STAGES), STAGES, strict=False):
        deps = ["stage.py", *([f"out/{before}"] if before else [])]
        lines += [
            f"  {name}:",
            f"    cmd: {sys.executable} stage.py {name}",
            f"    deps: [{', '.join(deps)}]",
            f"    outs: [out/{name}]",
        ]
    (root / "dvc.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "params.yaml").write_text("{}\n", encoding="utf-8")
    return root


def processes_with(marker: str) -> list[int]:
    """The processes whose environment holds ``marker`` (this test's PREFECT_HOME)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            if marker.encode() in environ.split(b"\0") and running(int(entry.name)):
                found.append(int(entry.name))
    return found


@contextlib.contextmanager
def nightly(root: Path, prefect_home: Path) -> Iterator[subprocess.Popen[str]]:
    """``mathembed nightly`` on ``root`` in a process group of its own, on a temporary
    Prefect server whose database is in ``prefect_home``; killed with its group if it
    outlives the watchdog or the test."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PREFECT_")}
    env.pop("MLFLOW_TRACKING_URI", None)  # the night's record goes to the project's mlruns/
    env["PREFECT_HOME"] = str(prefect_home)
    with subprocess.Popen(
        [sys.executable, "-m", "mathembed", "nightly", "--root", str(root)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    ) as command:
        watchdog = threading.Timer(WATCHDOG_SECONDS, os.killpg, (command.pid, signal.SIGKILL))
        watchdog.start()
        try:
            yield command
        finally:
            watchdog.cancel()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(command.pid, signal.SIGKILL)


def flow_run_states(prefect_home: Path) -> list[str]:
    """The state of every flow run in the temporary server's database."""
    with contextlib.closing(sqlite3.connect(prefect_home / "prefect.db")) as database:
        return [row[0] for row in database.execute("SELECT state_type FROM flow_run")]


@pytest.mark.slow  # a whole night up to training on stand-in stages: about half a minute
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl-c"])
def test_a_night_stopped_during_training_is_recorded_and_one_line(
    stand_in_project: Path, tmp_path: Path, stop: signal.Signals
) -> None:
    prefect_home = tmp_path / "prefect"
    with nightly(stand_in_project, prefect_home) as command:
        assert command.stdout is not None
        output: list[str] = []
        training = None
        for line in command.stdout:
            output.append(line)
            if TRAINING_STARTED in line:
                training = int(line.rsplit("(pid ", 1)[1].split(")")[0])
                os.killpg(command.pid, stop)  # the whole group, as a terminal or `timeout`
                break
        stopped_at = time.monotonic()
        output.append(command.stdout.read())
        code = command.wait()
        took = time.monotonic() - stopped_at
    text = "".join(output)
    assert training is not None, f"training never started:\n{text[-4000:]}"

    assert took < STOPS_WITHIN_SECONDS, text[-4000:]
    assert code == 128 + stop, text[-4000:]
    for noise in ("Traceback", "Error logging to API", "ConnectError"):
        assert noise not in text, text[-4000:]
    said = [line for line in text.splitlines() if line.startswith("nightly-retrain:")]
    assert said == [
        f"nightly-retrain: Crashed: stopped by {stop.name} during step 'train'; the "
        "processes it started were ended"
    ], text[-4000:]
    # Recorded as ended, not left RUNNING.
    assert flow_run_states(prefect_home) in (["CRASHED"], ["CANCELLED"])
    # Nothing left running: the training, the temporary server, the guards.
    deadline = time.monotonic() + 10
    while running(training) or processes_with(f"PREFECT_HOME={prefect_home}"):
        assert time.monotonic() < deadline, processes_with(f"PREFECT_HOME={prefect_home}")
        time.sleep(0.1)
    print(f"exited {took:.1f} s after {stop.name}")


def test_the_line_names_the_step_the_signal_stopped() -> None:
    from prefect.exceptions import TerminationSignal

    from flows.hooks import run_step
    from flows.stopping import Stopped, stopped_line

    def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as ctrl_c:
        run_step("train", interrupted)
    assert stopped_line("nightly-retrain", ctrl_c.value) == (
        "nightly-retrain: Crashed: stopped by SIGINT during step 'train'; the processes it "
        "started were ended"
    )

    def terminated() -> None:
        raise TerminationSignal(signal.SIGTERM)

    # Prefect hands SIGTERM on while it handles its TerminationSignal: the step is on that.
    with pytest.raises(Stopped) as sigterm:
        try:
            run_step("evaluate", terminated)
        except TerminationSignal:
            raise Stopped(signal.SIGTERM) from None
    assert "stopped by SIGTERM during step 'evaluate';" in stopped_line("n", sigterm.value)
    # Outside every step (the server starting, the report printing): the signal alone.
    assert stopped_line("nightly-retrain", Stopped(signal.SIGTERM)) == (
        "nightly-retrain: stopped by SIGTERM"
    )
