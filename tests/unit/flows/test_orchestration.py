"""The nightly flow's decisions and shells: what work a run has, DVC errors, the run lock, hooks."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
import yaml
from prefect.client.schemas.objects import FlowRun
from prefect.states import Failed
from repo import REPO
from webhook import Webhook, receiving_webhook

from flows import orchestration as orch
from flows.hooks import StepFailed, failure_report, post_webhook, run_step
from flows.steps import retry_unless_permanent
from pipelines.common.config import load_params
from pipelines.common.paths import Paths

SETTLED = {
    "stale": [],
    "candidate_fingerprint": "abc",
    "decided_fingerprint": "abc",
    "outputs_digest": "d1",
    "pushed_outputs_digest": "d1",
    "force": False,
}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({}, (False, False, False)),
        ({"force": True}, (True, True, True)),
        ({"stale": ["ingest", "prepare"]}, (True, True, True)),
        ({"candidate_fingerprint": None}, (True, True, True)),
        ({"decided_fingerprint": "old"}, (False, True, False)),
        ({"decided_fingerprint": None}, (False, True, False)),
        ({"pushed_outputs_digest": None}, (False, False, True)),
        ({"decided_fingerprint": None, "pushed_outputs_digest": "d0"}, (False, True, True)),
        ({"deferred": ["graph"]}, (True, True, True)),
    ],
)
def test_nightly_work_follows_the_state_after_ingest(
    change: dict[str, Any], expected: tuple[bool, bool, bool]
) -> None:
    work = orch.nightly_work(**{**SETTLED, **change})
    assert (work.reproduce, work.promote, work.push) == expected
    assert work.nothing_to_do == (expected == (False, False, False))
    assert work.reason


def test_nightly_work_says_why() -> None:
    assert "prepare" in orch.nightly_work(**{**SETTLED, "stale": ["prepare"]}).reason
    deferred = orch.nightly_work(**{**SETTLED, "stale": ["pairs"], "deferred": ["graph"]})
    assert deferred.reason == "stale stages: pairs; papers deferred to this night by: graph"
    assert deferred.rerun == ("graph",) and orch.nightly_work(**SETTLED).rerun == ()
    assert "no new papers" in orch.nightly_work(**SETTLED).reason
    pending = orch.nightly_work(**{**SETTLED, "decided_fingerprint": None})
    assert "no recorded promotion decision" in pending.reason


def test_a_stage_that_left_papers_for_the_next_night_is_rerun(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    paths.metrics.mkdir(parents=True)
    assert orch.deferred_stages(paths) == []  # no metrics yet
    paths.metric_file("prepare").write_text(json.dumps({"deferred": 0}))
    paths.metric_file("graph").write_text(json.dumps({"deferred": {"2401.00001": "budget"}}))
    assert orch.deferred_stages(paths) == ["graph"]
    paths.metric_file("prepare").write_text(json.dumps({"deferred": 3}))
    assert orch.deferred_stages(paths) == ["prepare", "graph"]


def test_outputs_digest_ignores_uncached_metrics_and_follows_cached_outputs(
    tmp_path: Path,
) -> None:
    (tmp_path / "dvc.yaml").write_text((REPO / "dvc.yaml").read_text())
    lock = {
        "schema": "2.0",
        "stages": {
            "ingest": {
                "outs": [
                    {"path": "data/raw", "md5": "raw1.dir"},
                    {"path": "metrics/ingest.json", "md5": "m1"},
                ]
            },
            "evaluate": {"outs": [{"path": "metrics/eval_per_query.parquet", "md5": "q1"}]},
        },
    }

    def digest_with(path: str, md5: str) -> str | None:
        changed = json.loads(json.dumps(lock))
        for stage in changed["stages"].values():
            for out in stage["outs"]:
                if out["path"] == path:
                    out["md5"] = md5
        (tmp_path / "dvc.lock").write_text(yaml.safe_dump(changed))
        return orch.cached_outputs_digest(tmp_path)

    assert orch.cached_outputs_digest(tmp_path) is None  # no dvc.lock yet
    first = digest_with("data/raw", "raw1.dir")
    assert first is not None
    assert digest_with("metrics/ingest.json", "m2") == first  # cache: false, in git
    assert digest_with("data/raw", "raw2.dir") != first
    assert digest_with("metrics/eval_per_query.parquet", "q2") != first  # cached output


def test_push_records_are_per_remote(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    assert orch.pushed_outputs_digest(paths, "") is None
    orch.record_push(paths, "", "d1")
    orch.record_push(paths, "s3", "d2")
    assert orch.pushed_outputs_digest(paths, "") == "d1"
    assert orch.pushed_outputs_digest(paths, "s3") == "d2"
    paths.nightly_state.write_text("{not json")
    assert orch.pushed_outputs_digest(paths, "s3") is None  # unreadable: push again


def test_decided_fingerprint_counts_only_this_registry(tmp_path: Path) -> None:
    record = tmp_path / "promotion.json"
    assert orch.decided_fingerprint(record, "sqlite:///a.db") is None
    record.write_text(json.dumps({"fingerprint": "abc", "tracking_uri": "sqlite:///a.db"}))
    assert orch.decided_fingerprint(record, "sqlite:///a.db") == "abc"
    assert orch.decided_fingerprint(record, "http://127.0.0.1:5000") is None
    # promotion.json stores a server's URI without its password; it is the same registry.
    record.write_text(json.dumps({"fingerprint": "abc", "tracking_uri": "http://***@h:5000"}))
    assert orch.decided_fingerprint(record, "http://user:secret@h:5000") == "abc"


def test_run_dvc_names_the_command_and_its_output_when_it_fails(tmp_path: Path) -> None:
    logged: list[str] = []
    with pytest.raises(orch.DvcError) as raised:
        orch.run_dvc(["repro", "no-such-stage"], tmp_path, log=logged.append)
    message = str(raised.value)
    assert "`dvc repro no-such-stage` exited with" in message
    assert logged and logged[-1] in message


def test_a_second_nightly_run_on_the_same_root_exits_at_once(tmp_path: Path) -> None:
    # The holder is another process, as it would be for two scheduled runs.
    with subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, pathlib; from flows.orchestration import nightly_lock\n"
            "with nightly_lock(pathlib.Path(sys.argv[1])):\n"
            "    print('locked', flush=True); sys.stdin.readline()",
            str(tmp_path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with (
            pytest.raises(orch.NightlyBusyError, match=f"pid {holder.pid}"),
            orch.nightly_lock(tmp_path),
        ):
            pass
        holder.communicate("\n", timeout=30)
    with orch.nightly_lock(tmp_path):  # released with its holder
        pass


def test_step_failures_name_their_steps() -> None:
    def broken() -> None:
        raise ValueError("bad input")

    with pytest.raises(StepFailed, match="step 'validate' failed: ValueError: bad input"):
        run_step("validate", broken)
    both = StepFailed.combine(
        [StepFailed("promote", OSError("mlflow down")), StepFailed("dvc-push", OSError("s3"))]
    )
    assert both.step == "promote and dvc-push"
    assert "mlflow down" in str(both) and "s3" in str(both)


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    with receiving_webhook() as receiver:
        yield receiver


def test_the_failure_report_names_the_step_and_reaches_the_webhook(webhook: Webhook) -> None:
    flow_run = FlowRun(id=uuid4(), name="brave-otter", flow_id=uuid4())
    state = Failed(message="Flow run encountered an exception: StepFailed: step 'train' failed: x")
    report = failure_report("nightly-retrain", flow_run, state)
    assert report["step"] == "train" and report["flow_run"] == "brave-otter"

    class Recorder:
        warnings: list[str] = []

        def warning(self, message: str) -> None:
            self.warnings.append(message)

    assert post_webhook(webhook.url, report, Recorder())
    assert webhook.reports == [json.loads(json.dumps(report))]
    webhook.status = 500
    recorder = Recorder()
    assert not post_webhook(webhook.url, report, recorder)  # logged, not raised
    assert "did not accept" in recorder.warnings[0]


def test_params_yaml_flow_section_loads() -> None:
    flow = load_params(REPO / "params.yaml").flow
    assert flow.schedule == "0 2 * * *" and flow.timezone == "UTC"
    assert flow.gpu_deployment == ""  # the embedded default trains in place


def test_no_dvc_project_fails_at_once_with_the_fix_and_is_not_retried(tmp_path: Path) -> None:
    with pytest.raises(orch.DvcSetupError) as raised:
        orch.run_dvc(["repro", "sample"], tmp_path, log=lambda _line: None)
    first_line = str(raised.value).splitlines()[0]
    assert str(tmp_path.resolve()) in first_line
    assert "pass --root" in first_line and "dvc init" in first_line
    assert not orch.worth_retrying(raised.value)
    assert not retry_unless_permanent(None, None, Failed(data=raised.value))
    # A network failure still is retried, as before.
    network = orch.DvcError("`dvc push` exited with 1:\nERROR: unexpected error - timed out")
    assert orch.worth_retrying(network)
    assert retry_unless_permanent(None, None, Failed(data=network))


def test_network_steps_keep_retrying_network_errors_only() -> None:
    from flows import nightly

    flow = load_params(REPO / "params.yaml").flow
    ingest = nightly._with_network_retries(nightly.ingest, flow)
    assert ingest.retries == flow.network_retries
    assert ingest.retry_condition_fn is retry_unless_permanent
    promote = nightly._with_network_retries(nightly.promote, flow)
    assert promote.retry_condition_fn is nightly._retry_on_registry_errors  # kept


def test_stale_stages_are_what_dvc_status_says(tmp_path: Path) -> None:
    # DVC's Python API in this process; the command's JSON is the reference answer.
    from projects import dvc, new_project

    root = new_project(tmp_path / "project")
    logged: list[str] = []
    stale = orch.stale_stages(root, "pairs", log=logged.append)
    by_command = json.loads(dvc("status", "--json", "--with-deps", "pairs", cwd=root))
    assert stale == sorted(by_command) == ["graph", "ingest", "pairs", "prepare", "sample"]
    assert logged == ["stale stages up to pairs: graph, ingest, pairs, prepare, sample"]


def test_stale_stages_outside_a_dvc_project_fail_at_once_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(orch.DvcSetupError, match="pass --root") as raised:
        orch.stale_stages(tmp_path, "evaluate", log=lambda _line: None)
    assert not orch.worth_retrying(raised.value)
