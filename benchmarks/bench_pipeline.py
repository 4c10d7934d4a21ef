"""Benchmark the data pipeline (sample -> ingest -> prepare -> graph -> pairs) end to end.

Not a test: nothing here asserts. It answers "how fast are the data stages on a corpus the
size of a real harvest, how much memory do they take, and is the nightly run cheap?" with
numbers recorded next to the machine they were measured on
(``benchmarks/results/pipeline.json``).

What is run, in a scratch data root (``--workdir``, default a temporary folder; never the
repository's ``data/``), with the repository's ``params.yaml`` (``--params``):

1. **sample**: :func:`pipelines.mirror.corpora.synthetic.generate_mirror` writes a mirror of
   ``--papers`` papers plus ``--new-fraction`` (1 %) more, once.
2. **full run** at a cut-off time: the mirror server (:class:`MirrorServer`, 127.0.0.1)
   is told ``now`` = the first-submission time of the last paper of the ``--papers``
   oldest, so exactly ``--papers`` papers are visible; then ``ingest`` (over HTTP through
   :class:`ArxivClient`, no delay between requests: the mirror is local; the per-run cap
   ``ingest.max_papers`` is lifted), ``prepare``, ``graph`` and ``pairs`` run once each.
3. **nightly run**: the cut-off is lifted, which reveals the 1 % new papers plus whatever
   revisions and withdrawals of older papers fall after it (counted in the report), and
   the four data stages run again on the same data root, as the nightly flow would:
   ingest from its watermark, prepare reusing what is prepared, graph and pairs as they
   are. Its cost is reported as a percentage of the full run, stage by stage.

Each stage runs once (the stages keep state, so there is no best-of-N) in a fresh child
process (multiprocessing "spawn"), like ``mathembed <stage>`` would:

* **stage s** is the wall time of the stage function alone (``time.perf_counter`` around
  the call, in the child, after imports and params loading); the targets use it.
  **process s** is measured by the parent from starting the child to its exit: it adds
  interpreter start, imports and teardown, what each ``dvc repro`` stage also pays.
* **papers/s** = papers the stage handled / stage s: sample: papers generated; ingest:
  entries listed; prepare: latest paper versions in the raw store (``papers_in``); graph
  and pairs: papers in the processed corpus.
* **CPU s**: user + system time of the child and of the worker processes it waited for
  (prepare and graph use a spawn pool of ``--workers`` processes, default one per CPU).
* **peak RSS**: the child resets the kernel's peak-RSS mark (``/proc/self/clear_refs``)
  right before the call and reads ``VmHWM`` after it: the stage process's own peak,
  interpreter and libraries included (for ingest, the in-process mirror server too).
  **worker peak** is ``ru_maxrss`` of the child's reaped children (the largest single
  pool worker). **tree peak** is sampled by the parent every ``--rss-interval`` s: the sum
  of ``VmRSS`` over the child and all its descendants (shared pages counted once per
  process, so an upper bound of the true footprint, and sampling may miss a short spike).

Targets (from the issue) are printed with PASS/FAIL: prepare >= 100 papers/s; graph + pairs
together >= 200 papers/s; nightly rerun (1 % new papers) <= 10 % of the full run (judged on
stage s; the same ratio on process s is printed beside it). Threads are pinned to
``os.cpu_count()`` through the environment before anything numeric is imported. The load
average at start and end and the CPUs' busy share before the start are recorded: other work
on the machine skews every number here.

Run it from the repository root::

    .venv/bin/python benchmarks/bench_pipeline.py           # 10,000 papers, several minutes
    .venv/bin/python benchmarks/bench_pipeline.py --quick   # 1,000 papers, about a minute
"""

from __future__ import annotations

import os

# Pin every thread pool before NumPy, pandas or pyarrow are imported (in this process and,
# through the environment, in every child): they read these variables once, at load time.
os.environ["OMP_NUM_THREADS"] = str(os.cpu_count() or 1)
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"]
os.environ["MKL_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"]

import argparse
import dataclasses
import datetime as dt
import gc
import json
import multiprocessing
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from machine import (
    cpu_busy_fraction,
    cpu_facts,
    fmt,
    git_state,
    installed_versions,
    load_average,
    peak_rss_bytes,
    proc_status_kb,
    reset_peak_rss,
    to_jsonable,
)

from pipelines.common.parts import stages_from  # no side effects: names only

THREAD_ENV_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "benchmarks" / "results"
# The full run is the record kept in git; a --quick run goes to a git-ignored file so it
# never overwrites that record.
DEFAULT_OUT = RESULTS_DIR / "pipeline.json"
QUICK_OUT = RESULTS_DIR / "pipeline-quick.json"
DEFAULT_PAPERS = 10_000
QUICK_PAPERS = 1_000
MB = 1e6  # memory figures are in MB = 10^6 bytes
DATA_STAGES = stages_from("ingest", "pairs")
STAGES = ("sample", *DATA_STAGES)
RUNS = ("full", "nightly")

# The issue's targets.
PREPARE_MIN_PAPERS_PER_S = 100.0
GRAPH_PAIRS_MIN_PAPERS_PER_S = 200.0
NIGHTLY_MAX_PERCENT = 10.0


# ------------------------------------------------------------------------------------ the child


@dataclass(frozen=True)
class StageJob:
    """Everything a stage child needs (picklable: it crosses the spawn boundary)."""

    stage: str
    root: str
    params_file: str
    n_papers: int  # sample: papers to generate
    now: str | None  # ingest: the mirror server's "now" (None: everything visible)
    workers: int | None  # prepare/graph pool size (None: one per CPU)


def _stage_call(job: StageJob) -> Callable[[], dict[str, Any]]:
    """Import what ``job.stage`` needs and load its params; return the call to measure."""
    from pipelines.common.config import load_params
    from pipelines.common.paths import Paths

    params = load_params(Path(job.params_file))
    paths = Paths(Path(job.root))
    if job.stage == "sample":
        from pipelines.mirror.corpora.synthetic import generate_mirror

        start = dt.date.fromisoformat(params.sample.start_date)
        end = dt.date.fromisoformat(params.sample.end_date)

        def sample() -> dict[str, Any]:
            manifest = generate_mirror(
                paths.mirror, job.n_papers, params.sample.seed, start=start, end=end
            )
            return dict(manifest.counts)

        return sample
    if job.stage == "ingest":
        from pipelines.ingest.arxiv.client import ArxivClient
        from pipelines.ingest.stage import run_ingest
        from pipelines.mirror.server import MirrorServer

        # The benchmark harvests the whole visible mirror in one run, as a first run would.
        ingest_params = dataclasses.replace(params.ingest, max_papers=10**9)
        until = None if job.now is None else dt.datetime.fromisoformat(job.now)

        def ingest() -> dict[str, Any]:
            # As pipelines.ingest.stage wires it for the sample source (server start included).
            with (
                MirrorServer(paths.mirror, now=job.now) as server,
                ArxivClient.from_params(
                    ingest_params, base_url=server.base_url, delay_seconds=0.0
                ) as client,
            ):
                report = run_ingest(ingest_params, paths, client=client, now=until, progress=False)
            return report.metrics()

        return ingest
    if job.stage == "prepare":
        from pipelines.prepare.stage import run_prepare

        return lambda: run_prepare(
            params.prepare, paths, progress=False, workers=job.workers
        ).as_dict()
    if job.stage == "graph":
        from pipelines.graph.stage import run_graph

        return lambda: run_graph(params.graph, paths, workers=job.workers).as_dict()
    if job.stage == "pairs":
        from pipelines.pairs.stage import run_pairs

        def pairs() -> dict[str, Any]:
            report = run_pairs(params.pairs, paths)
            return {k: v for k, v in dataclasses.asdict(report).items() if k != "counts"} | {
                "counts": report.counts
            }

        return pairs
    raise ValueError(f"unknown stage {job.stage!r}; known: {list(STAGES)}")


def _cpu_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def stage_child(job: StageJob) -> dict[str, Any]:
    """Runs in a fresh spawned process: one call of ``job.stage``, its time, CPU and memory."""
    call = _stage_call(job)
    gc.collect()
    how = reset_peak_rss()
    before = (proc_status_kb("VmRSS") or 0) * 1024
    cpu_self = _cpu_seconds(resource.RUSAGE_SELF)
    cpu_children = _cpu_seconds(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    report = call()
    seconds = time.perf_counter() - start
    cpu_s = (_cpu_seconds(resource.RUSAGE_SELF) - cpu_self) + (
        _cpu_seconds(resource.RUSAGE_CHILDREN) - cpu_children
    )
    peak = peak_rss_bytes()
    # ru_maxrss of RUSAGE_CHILDREN: the largest reaped child (kB on Linux); 0 when none.
    worker_peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {
        "stage_s": seconds,
        "cpu_s": cpu_s,
        "peak_rss_mb": peak / MB,
        "rss_before_call_mb": before / MB,
        "delta_mb": (peak - before) / MB,
        "worker_peak_rss_mb": worker_peak_kb * 1024 / MB if worker_peak_kb else None,
        "peak_how": how,
        "report": report,
    }


def _child_main(connection: Connection, job: StageJob) -> None:
    """Entry point of a stage child: the result or the traceback goes back on the pipe."""
    try:
        connection.send(("ok", stage_child(job)))
    except BaseException:
        connection.send(("error", traceback.format_exc()))
        raise
    finally:
        connection.close()


# ---------------------------------------------------------------------------- the parent side


def _children_of() -> dict[int, list[int]]:
    """ppid -> pids, from ``/proc/<pid>/stat`` (empty off Linux)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return children
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                text = stat.read()
        except OSError:
            continue  # the process ended meanwhile
        # The command name (field 2) may hold spaces and parentheses: split after the last ")".
        fields = text.rpartition(")")[2].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def tree_rss_bytes(root_pid: int) -> int:
    """Sum of ``VmRSS`` over ``root_pid`` and all its descendants (0 when unreadable)."""
    children = _children_of()
    total, pending = 0, [root_pid]
    while pending:
        pid = pending.pop()
        total += (proc_status_kb("VmRSS", pid) or 0) * 1024
        pending.extend(children.get(pid, ()))
    return total


def run_stage(job: StageJob, rss_interval_s: float) -> dict[str, Any]:
    """Run one stage in a fresh spawn child; sample its process tree's RSS meanwhile."""
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    started = time.perf_counter()
    process = context.Process(target=_child_main, args=(sender, job), name=f"bench-{job.stage}")
    process.start()
    sender.close()  # the child holds the only writer: EOF on the pipe means it died
    assert process.pid is not None
    tree_peak = 0
    message: tuple[str, Any] | None = None
    try:
        while message is None:
            tree_peak = max(tree_peak, tree_rss_bytes(process.pid))
            if receiver.poll(rss_interval_s):
                try:
                    message = receiver.recv()
                except EOFError:
                    message = ("error", f"the {job.stage} child exited with {process.exitcode}")
        process.join()
    finally:
        if process.is_alive():  # interrupted: do not leave the stage running behind us
            process.terminate()
            process.join()
        receiver.close()
    process_s = time.perf_counter() - started
    status, payload = message
    if status != "ok":
        raise RuntimeError(f"stage {job.stage} failed in its child process:\n{payload}")
    result: dict[str, Any] = payload
    result["process_s"] = process_s
    result["tree_peak_rss_mb"] = tree_peak / MB if tree_peak else None
    return result


# ------------------------------------------------------------------------------- the corpus


@dataclass(frozen=True)
class Cutoff:
    """The "now" that shows the ``n_base`` oldest papers and hides the newest ones."""

    now: str
    base_papers: int
    new_papers: int
    base_versions: int  # every version updated at or before ``now``
    delta_versions: int  # versions updated after ``now``: new papers' and older papers'
    revisions_of_base_papers: int  # of those, versions of papers already visible


def choose_cutoff(entries_file: Path, n_base: int) -> Cutoff:
    """A cut-off that leaves exactly the ``n_base`` first-submitted papers visible.

    A paper becomes visible with its version 1, whose ``updated`` is its submission time,
    so the cut-off is the submission time of the ``n_base``-th paper in submission order.
    """
    versions: list[tuple[str, str, int]] = []  # (updated, paper_id, version)
    with entries_file.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                entry = json.loads(line)
                versions.append((entry["updated"], entry["paper_id"], int(entry["version"])))
    first_seen: dict[str, str] = {}
    for updated, paper_id, _version in versions:
        if paper_id not in first_seen or updated < first_seen[paper_id]:
            first_seen[paper_id] = updated
    order = sorted(first_seen.values())
    if not 0 < n_base < len(order):
        raise ValueError(f"cannot show {n_base} of {len(order)} papers: need 0 < n < total")
    now = order[n_base - 1]
    visible = {paper for paper, first in first_seen.items() if first <= now}
    delta = [(paper, version) for updated, paper, version in versions if updated > now]
    return Cutoff(
        now=now,
        base_papers=len(visible),
        new_papers=len(first_seen) - len(visible),
        base_versions=len(versions) - len(delta),
        delta_versions=len(delta),
        revisions_of_base_papers=sum(1 for paper, _version in delta if paper in visible),
    )


# ------------------------------------------------------------------------------- the analysis


def papers_handled(stage: str, result: dict[str, Any]) -> int | None:
    """The papers a stage handled, from its own report (see the module docstring)."""
    report = result["report"]
    if stage == "sample":
        return int(report["papers"])
    if stage == "ingest":
        return int(report["listed"])
    if stage == "prepare":
        return int(report["papers_in"])
    if stage == "graph":
        return int(report["papers"])
    return None  # pairs: filled in from graph's count by add_rates


def add_rates(run: dict[str, dict[str, Any]]) -> None:
    """Papers and papers/s of every stage of one run, in place."""
    for stage, result in run.items():
        papers = papers_handled(stage, result)
        if papers is None and "graph" in run:
            papers = papers_handled("graph", run["graph"])
        result["papers"] = papers
        result["papers_per_s"] = papers / result["stage_s"] if papers else None


def run_total(run: dict[str, dict[str, Any]], key: str) -> float:
    return sum(float(run[stage][key]) for stage in DATA_STAGES)


def _percent(part: float, whole: float) -> float | None:
    return 100.0 * part / whole if whole > 0 else None


def nightly_shares(full: dict[str, Any], nightly: dict[str, Any]) -> dict[str, Any]:
    """The nightly run's cost as a share of the full run's, overall and per stage."""
    shares: dict[str, Any] = {}
    for key in ("stage_s", "process_s"):
        full_total, nightly_total = run_total(full, key), run_total(nightly, key)
        shares[key] = {
            "full_total_s": full_total,
            "nightly_total_s": nightly_total,
            "percent_of_full": _percent(nightly_total, full_total),
            "by_stage": {
                stage: {
                    "nightly_s": nightly[stage][key],
                    "percent_of_full_total": _percent(nightly[stage][key], full_total),
                    "percent_of_same_stage": _percent(nightly[stage][key], full[stage][key]),
                    "share_of_nightly": _percent(nightly[stage][key], nightly_total),
                }
                for stage in DATA_STAGES
            },
        }
    by_stage = shares["stage_s"]["by_stage"]
    shares["dominant_stages"] = sorted(
        DATA_STAGES, key=lambda stage: -float(by_stage[stage]["nightly_s"])
    )
    return shares


def judge(full: dict[str, Any], shares: dict[str, Any]) -> list[dict[str, Any]]:
    """PASS/FAIL of the issue's targets."""
    graph_pairs_s = full["graph"]["stage_s"] + full["pairs"]["stage_s"]
    graph_papers = full["graph"]["papers"] or 0
    rows = [
        ("prepare papers/s", full["prepare"]["papers_per_s"], ">=", PREPARE_MIN_PAPERS_PER_S),
        (
            "graph + pairs papers/s",
            graph_papers / graph_pairs_s if graph_pairs_s > 0 else None,
            ">=",
            GRAPH_PAIRS_MIN_PAPERS_PER_S,
        ),
        (
            "nightly rerun, % of full run (stage s)",
            shares["stage_s"]["percent_of_full"],
            "<=",
            NIGHTLY_MAX_PERCENT,
        ),
    ]
    verdicts = []
    for label, value, op, goal in rows:
        if value is None:
            status = "SKIP"
        elif op == ">=":
            status = "PASS" if value >= goal else "FAIL"
        else:
            status = "PASS" if value <= goal else "FAIL"
        verdicts.append(
            {"label": label, "value": value, "goal": f"{op} {goal:g}", "status": status}
        )
    return verdicts


# ------------------------------------------------------------------------------------- output


def outputs_line(run: dict[str, dict[str, Any]]) -> str:
    """What a run produced, from the stages' own reports."""
    wanted = {
        "prepare": ("chunks", "statements"),
        "graph": ("concepts", "edges", "mentions"),
        "pairs": ("pairs", "queries", "qrels"),
    }
    return ", ".join(
        f"{run[stage]['report'][key]} {key}" for stage, keys in wanted.items() for key in keys
    )


def print_run_table(title: str, run: dict[str, dict[str, Any]]) -> None:
    print(f"\n{title}")
    print(
        f"  {'stage':<9}{'papers':>8}{'stage s':>10}{'papers/s':>10}{'process s':>11}"
        f"{'CPU s':>8}{'peak RSS MB':>13}{'worker MB':>11}{'tree MB':>9}"
    )
    for stage, result in run.items():
        print(
            f"  {stage:<9}{fmt(result['papers'], 'd'):>8}{result['stage_s']:>10.2f}"
            f"{fmt(result['papers_per_s'], '.1f'):>10}{result['process_s']:>11.2f}"
            f"{result['cpu_s']:>8.1f}{result['peak_rss_mb']:>13.0f}"
            f"{fmt(result['worker_peak_rss_mb'], '.0f'):>11}"
            f"{fmt(result['tree_peak_rss_mb'], '.0f'):>9}"
        )
    if all(stage in run for stage in DATA_STAGES):
        print(
            f"  {'data':<9}{'':>8}{run_total(run, 'stage_s'):>10.2f}{'':>10}"
            f"{run_total(run, 'process_s'):>11.2f}   (ingest + prepare + graph + pairs)"
        )


def print_summary(result: dict[str, Any]) -> None:
    machine, load = result["machine"], result["load_average"]
    print(
        f"\nmachine: {machine['cpu_model']}, {machine['cores']} cores, "
        f"{machine['memory_gb']:.0f} GB; load average at start {load['start']}, "
        f"at end {load['end']}; workers {result['config']['workers'] or machine['cores']}"
    )
    cutoff = result["corpus"]["cutoff"]
    print(
        f"corpus: {cutoff['base_papers']} papers in the full run, then {cutoff['new_papers']} "
        f"new papers + {cutoff['revisions_of_base_papers']} new versions of older ones "
        f"({cutoff['delta_versions']} versions) in the nightly run; cut-off {cutoff['now']}"
    )
    print_run_table("setup (mirror generation)", {"sample": result["sample"]})
    for name in RUNS:
        print_run_table(f"{name} run", result["runs"][name])
        print(f"  outputs: {outputs_line(result['runs'][name])}")
    shares = result["nightly"]
    print("\nnightly run as a share of the full run")
    print(f"  {'stage':<9}{'nightly s':>10}{'% of full':>11}{'% of stage':>12}{'share':>8}")
    for stage in shares["dominant_stages"]:
        row = shares["stage_s"]["by_stage"][stage]
        of_full = fmt(row["percent_of_full_total"], ".1f")
        of_stage = fmt(row["percent_of_same_stage"], ".1f")
        share = fmt(row["share_of_nightly"], ".0f")
        print(f"  {stage:<9}{row['nightly_s']:>10.2f}{of_full:>11}{of_stage:>12}{share:>7}%")
    for key, label in (("stage_s", "stage s"), ("process_s", "process s")):
        totals = shares[key]
        print(
            f"  total ({label}): {totals['nightly_total_s']:.2f} of "
            f"{totals['full_total_s']:.2f} s = {fmt(totals['percent_of_full'], '.1f')} %"
        )
    print(f"  dominant: {', '.join(shares['dominant_stages'])} (largest first)")
    print(f"\n  {'target':<42}{'value':>10}  {'goal':<10}status")
    for verdict in result["targets"]:
        print(
            f"  {verdict['label']:<42}{fmt(verdict['value'], '.4g'):>10}  "
            f"{verdict['goal']:<10}{verdict['status']}"
        )


# ---------------------------------------------------------------------------------------- main


@dataclass
class Workdir:
    """The scratch data root; a temporary one is removed at the end unless ``--keep``."""

    root: Path
    temporary: bool
    notes: list[str] = field(default_factory=list)


def make_workdir(requested: Path | None) -> Workdir:
    if requested is None:
        return Workdir(Path(tempfile.mkdtemp(prefix="bench_pipeline_")), temporary=True)
    root = requested.resolve()
    if root == REPO_ROOT or REPO_ROOT / "data" in (root, *root.parents):
        raise SystemExit(f"--workdir {root}: use a scratch folder, not the repository's data")
    if root.exists() and any(root.iterdir()):
        raise SystemExit(f"--workdir {root} is not empty; give a new or empty folder")
    root.mkdir(parents=True, exist_ok=True)
    return Workdir(root, temporary=False)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Benchmark the data pipeline (sample, ingest over HTTP, prepare, graph, "
        "pairs) on generated papers, then a nightly run after 1% new papers; prints "
        "PASS/FAIL per target and writes a JSON report.",
    )
    parser.add_argument(
        "--papers",
        type=int,
        default=None,
        help=f"papers in the full run (default {DEFAULT_PAPERS}; {QUICK_PAPERS} with --quick)",
    )
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_PAPERS} papers")
    parser.add_argument(
        "--new-fraction",
        type=float,
        default=0.01,
        help="new papers revealed for the nightly run, as a fraction of --papers "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--params",
        type=Path,
        default=REPO_ROOT / "params.yaml",
        help="params.yaml the stages read (default: the repository's)",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="new or empty folder for the run's data/ and metrics/ (kept); "
        "default: a temporary folder, removed at the end",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary data root")
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="prepare/graph worker processes (default: one per CPU, as the stages do)",
    )
    parser.add_argument(
        "--rss-interval",
        type=float,
        default=0.1,
        help="seconds between samples of the stage process tree's RSS (default: %(default)s)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"JSON report path (default: {DEFAULT_OUT.relative_to(REPO_ROOT)}, "
        f"or {QUICK_OUT.relative_to(REPO_ROOT)} with --quick)",
    )
    args = parser.parse_args(argv)
    if args.papers is None:
        args.papers = QUICK_PAPERS if args.quick else DEFAULT_PAPERS
    if args.out is None:
        args.out = QUICK_OUT if args.quick else DEFAULT_OUT
    if not 0 < args.new_fraction <= 1:
        parser.error("--new-fraction must be in (0, 1]")
    if not args.params.is_file():
        parser.error(f"--params {args.params} not found")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    # A plain `kill` unwinds like Ctrl-C: the stage child is stopped, the scratch root removed.
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(128 + signal.SIGTERM))
    started, load_at_start, busy = dt.datetime.now(dt.UTC), load_average(), cpu_busy_fraction()
    if busy is not None and busy > 0.2:
        print(f"warning: the CPUs were {busy:.0%} busy before the start; timings will be skewed")
    n_new = max(1, round(args.papers * args.new_fraction))
    workdir = make_workdir(args.workdir)
    print(
        f"bench_pipeline: {args.papers} papers + {n_new} new, data root {workdir.root}",
        flush=True,
    )

    def job(stage: str, *, now: str | None = None) -> StageJob:
        return StageJob(
            stage=stage,
            root=str(workdir.root),
            params_file=str(args.params.resolve()),
            n_papers=args.papers + n_new,
            now=now,
            workers=args.workers,
        )

    def stage(name: str, label: str, *, now: str | None = None) -> dict[str, Any]:
        print(f"  [{label}] {name} ...", end=" ", flush=True)
        result = run_stage(job(name, now=now), args.rss_interval)
        print(f"{result['stage_s']:.1f} s", flush=True)
        return result

    try:
        sample = stage("sample", "setup")
        add_rates({"sample": sample})
        from pipelines.common.paths import Paths

        cutoff = choose_cutoff(Paths(workdir.root).mirror / "entries.jsonl", args.papers)
        # Only ingest sees the cut-off (through the mirror server); the others read data/.
        runs: dict[str, dict[str, dict[str, Any]]] = {
            "full": {name: stage(name, "full", now=cutoff.now) for name in DATA_STAGES},
            "nightly": {name: stage(name, "nightly") for name in DATA_STAGES},
        }
    finally:
        if workdir.temporary and not args.keep:
            shutil.rmtree(workdir.root, ignore_errors=True)
    for run in runs.values():
        add_rates(run)
    shares = nightly_shares(runs["full"], runs["nightly"])
    result: dict[str, Any] = {
        "schema": 1,
        "timestamp": started.isoformat(timespec="seconds"),
        "wall_s": (dt.datetime.now(dt.UTC) - started).total_seconds(),
        "command": [sys.executable, *sys.argv],
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "machine": cpu_facts(),
        "load_average": {"start": load_at_start, "end": load_average()},
        "cpu_busy_fraction_before_start": busy,
        "threads": {var: os.environ.get(var) for var in THREAD_ENV_VARS},
        "versions": installed_versions("numpy", "pandas", "pyarrow", "requests", "pyyaml", "tqdm"),
        "git": git_state(),
        "data_root": str(workdir.root) if not workdir.temporary or args.keep else None,
        "corpus": {"generated_papers": args.papers + n_new, "cutoff": dataclasses.asdict(cutoff)},
        "sample": sample,
        "runs": runs,
        "nightly": shares,
        "targets": judge(runs["full"], shares),
        "main_process_peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / MB,
        "notes": {
            "units": "seconds; MB = 1e6 bytes; papers/s = papers the stage handled / stage_s",
            "stage_s": "perf_counter around the stage function in its child (after imports)",
            "process_s": "parent's wall time from starting the spawn child to its exit",
            "cpu_s": "user+sys of the child and of the pool workers it reaped",
            "peak_rss_mb": "child's VmHWM after resetting it (/proc/self/clear_refs) just "
            "before the call; absolute (interpreter, libraries, ingest's mirror server)",
            "worker_peak_rss_mb": "ru_maxrss of RUSAGE_CHILDREN in the child: the largest "
            "single pool worker (None: the stage started no process)",
            "tree_peak_rss_mb": "max over samples every rss_interval s of the summed VmRSS "
            "of the child and its descendants; shared pages counted per process",
            "nightly": "same data root after the full run; cut-off lifted, revealing the "
            "new papers and later versions of older ones",
        },
    }
    print_summary(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(to_jsonable(result), indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
