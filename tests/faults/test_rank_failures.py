"""A training launch that loses a rank, or is stopped, ends in one line (issue 29, finding 8).

``mathembed train`` with ``train.processes: 2`` (two CPU ranks on gloo, as CI runs DDP) is
the launcher of its ranks. Killing rank 1 with SIGKILL, or a Ctrl-C to the whole process
group as a terminal sends it, must end the command with exit 1 within seconds, the MLflow
run KILLED and nothing published, and say so in one line naming the rank and how it
ended (or the signal): no torchrun traceback or failure table on the terminal, which go
to the launcher's log the line names. Each launch is bounded by a watchdog that kills its
process group.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from fixtures_models import TINY_WORDS
from proc_table import rank_pid
from validated_pairs import write_validated_pairs

from pipelines.common.config import PromoteParams
from pipelines.common.paths import Paths
from pipelines.train.launcher import LAUNCH_LOG

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="finds the ranks in /proc"
)

#: A launch that has not ended this long after it started fails the test (and is killed).
WATCHDOG_SECONDS = 240
#: How long the launch may take to end once a rank died or the signal came.
ENDS_WITHIN_SECONDS = 60
PREVIOUS = "previous candidate"


def two_rank_project(root: Path, model_dir: Path) -> Path:
    """Pairs enough for hundreds of steps of two CPU ranks, a checkpoint every 2 steps,
    and a previous candidate that must survive."""
    words = TINY_WORDS[:40]
    rows = [
        {"anchor": word, "positive": f"the {word} is {word} {word}", "split": "train"}
        for word in words
    ] + [
        {"anchor": f"a {word}", "positive": f"{word} and {word} of {word}", "split": "validation"}
        for word in words[:16]
    ]
    pairs = pd.DataFrame(rows)
    pairs["kind"] = "name"
    pairs["concept"] = pairs["anchor"]
    pairs["positive_id"] = [f"2401.{i:05d}v1#c0000" for i in range(len(pairs))]
    paths = Paths(root)
    write_validated_pairs(paths, pairs)
    train = {
        "base_model": str(model_dir),
        "pooling": "mean",
        "batch_size": 8,
        "max_seq_length": 16,
        "epochs": 100,
        "logging_steps": 1,
        "eval_steps": 2,
        "max_validation_corpus": 40,
        "seed": 1,
        "device": "cpu",
        "processes": 2,
    }
    (root / "params.yaml").write_text(json.dumps({"train": train}), encoding="utf-8")
    paths.candidate.mkdir(parents=True)
    (paths.candidate / "marker").write_text(PREVIOUS, encoding="utf-8")
    return root


def launch_and_stop(root: Path, stop: str) -> tuple[int, str, float]:
    """Run ``mathembed train`` on ``root``; once it has trained 2 steps, ``stop`` it:
    ``"kill-rank"`` SIGKILLs rank 1, ``"ctrl-c"`` sends SIGINT to its process group.

    Returns the exit status, everything it wrote (stdout and stderr) and the seconds from
    the stop to its exit.
    """
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("MLFLOW_TRACKING_URI", None)  # the project's own mlruns/
    command = [sys.executable, "-m", "pipelines", "train", "--root", str(root), "--no-progress"]
    with subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own group: what a terminal's Ctrl-C reaches
    ) as launch:
        watchdog = threading.Timer(WATCHDOG_SECONDS, os.killpg, (launch.pid, signal.SIGKILL))
        watchdog.start()
        try:
            assert launch.stdout is not None
            seen: list[str] = []
            stopped_at = None
            for line in launch.stdout:
                seen.append(line)
                if line.startswith("train: step 2/"):
                    if stop == "kill-rank":
                        victim = rank_pid(launch.pid, rank=1)
                        assert victim is not None, "rank 1 not found"
                        os.kill(victim, signal.SIGKILL)
                    else:
                        os.killpg(launch.pid, signal.SIGINT)
                    stopped_at = time.monotonic()
                    break
            seen.append(launch.stdout.read())
            code = launch.wait(timeout=WATCHDOG_SECONDS)
            ended_at = time.monotonic()
        finally:
            watchdog.cancel()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(launch.pid, signal.SIGKILL)
    output = "".join(seen)
    assert stopped_at is not None, f"training never reached step 2:\n{output[-3000:]}"
    return code, output, ended_at - stopped_at


def only_run_status(root: Path) -> str:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlruns' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name(PromoteParams().experiment)
    assert experiment is not None
    (run,) = client.search_runs([experiment.experiment_id])
    return str(run.info.status)


def assert_one_line_and_nothing_published(root: Path, code: int, output: str) -> str:
    """The outcome every stopped launch shares; returns the one line."""
    assert code == 1, output[-3000:]
    # No torchrun traceback, failure table or log line of its own (glog style: "W1128 ...").
    assert "Traceback" not in output, output[-3000:]
    assert "ChildFailedError" not in output and "SignalException" not in output
    assert "Root Cause" not in output and "FAILED" not in output
    assert not re.search(r"^[IWE]\d{4} ", output, re.MULTILINE), output[-3000:]
    lines = [line for line in output.splitlines() if line.strip()]
    log_file = Paths(root).checkpoints / LAUNCH_LOG
    ending = [line for line in lines if f"torchrun's log: {log_file}" in line]
    assert ending == [lines[-1]], lines[-5:]  # one line, the last
    assert "nothing was published" in lines[-1]
    # Nothing published, the MLflow run ended KILLED.
    paths = Paths(root)
    assert (paths.candidate / "marker").read_text(encoding="utf-8") == PREVIOUS
    assert not list(paths.candidate.parent.glob(".candidate.*"))
    assert not paths.metric_file("train").exists()
    assert only_run_status(root) == "KILLED"
    return lines[-1]


@pytest.mark.slow  # trains a tiny model on two ranks: tens of seconds
def test_a_killed_rank_is_one_line_naming_it_and_nothing_is_published(
    tiny_bert_dir: Path, tmp_path: Path
) -> None:
    root = two_rank_project(tmp_path, tiny_bert_dir)
    code, output, took = launch_and_stop(root, "kill-rank")
    line = assert_one_line_and_nothing_published(root, code, output)
    assert re.fullmatch(
        r"train: rank 1 \(pid \d+\) was killed by SIGKILL, so every rank was stopped; "
        r"nothing was published .*",
        line,
    ), line
    assert took < ENDS_WITHIN_SECONDS
    # The detail is in the launcher's log: torchrun's failure table, rank 1 its root cause.
    log = (Paths(root).checkpoints / LAUNCH_LOG).read_text(encoding="utf-8")
    assert "Root Cause" in log and "(SIGKILL)" in log
    print(f"ended {took:.1f} s after rank 1 was killed: {line}")


@pytest.mark.slow  # trains a tiny model on two ranks: tens of seconds
def test_ctrl_c_on_the_launch_is_one_line_and_nothing_is_published(
    tiny_bert_dir: Path, tmp_path: Path
) -> None:
    root = two_rank_project(tmp_path, tiny_bert_dir)
    code, output, took = launch_and_stop(root, "ctrl-c")
    line = assert_one_line_and_nothing_published(root, code, output)
    assert line.startswith("train: stopped by SIGINT: every rank was stopped; "), line
    assert took < ENDS_WITHIN_SECONDS
    print(f"ended {took:.1f} s after Ctrl-C: {line}")


def test_the_line_names_the_rank_that_failed_first() -> None:
    from pipelines.train.launcher import RankExit, failure_line, first_failure

    # Rank 0 stopped by the launcher (exit 130) in the same second rank 1 failed.
    exits = [RankExit(0, 10, 130, timestamp=5), RankExit(1, 11, 1, timestamp=5)]
    assert first_failure(exits).rank == 1
    assert first_failure([RankExit(0, 10, -9, 4), RankExit(1, 11, 1, 5)]).rank == 0
    log = Path("models/checkpoints/torchrun.log")
    killed = failure_line(
        failed=RankExit(1, 11, -9), stopped_by=None, published=False, log_file=log
    )
    assert killed.startswith("rank 1 (pid 11) was killed by SIGKILL, so every rank was stopped")
    exited = failure_line(failed=RankExit(0, 10, 2), stopped_by=None, published=True, log_file=log)
    assert "rank 0 (pid 10) exited with code 2" in exited
    assert "the candidate had been published before it" in exited
    stopped = failure_line(failed=None, stopped_by="SIGTERM", published=False, log_file=log)
    assert stopped == (
        "stopped by SIGTERM: every rank was stopped; nothing was published "
        f"(models/candidate/ is as it was); torchrun's log: {log}"
    )
    for line in (killed, exited, stopped):
        assert "\n" not in line


def test_a_rank_that_loses_another_ends_as_a_stopped_one() -> None:
    # Rank 0 may meet rank 1's death at a collective before the launcher's SIGTERM.
    from pipelines.train.distributed import World, lost_another_rank, lost_rank_as_interrupt

    reset = RuntimeError(
        "[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:545] Read error "
        "[127.0.0.1]:26785: Connection reset by peer."
    )
    assert lost_another_rank(reset)
    assert not lost_another_rank(RuntimeError("CUDA out of memory"))
    two = World(rank=0, size=2)
    with (
        pytest.raises(KeyboardInterrupt, match=r"^rank 0 lost another rank: "),
        lost_rank_as_interrupt(two),
    ):
        raise reset
    # One process alone has no other rank to lose; any other failure stays what it is.
    with pytest.raises(RuntimeError, match="Connection reset"), lost_rank_as_interrupt(World()):
        raise reset
    with pytest.raises(ValueError, match="a bug"), lost_rank_as_interrupt(two):
        raise ValueError("a bug")
