"""Benchmark training throughput: pairs/s of the train stage's own code on this machine.

Not a test: nothing here asserts. It answers "how many training pairs a second does this
machine fine-tune, for the demo model and (on a GPU) for a SPECTER2-sized one?" with
numbers recorded next to the machine they were measured on (``benchmarks/results/train.json``).

What runs is :func:`pipelines.train.stage.run_train`, the train stage itself (data -> model ->
loss -> ``SentenceTransformerTrainer``), on the repository's
``data/validated/pairs.parquet`` (``make repro`` writes it), copied into a scratch root so
the repository's ``models/`` and ``metrics/`` are never touched. Each configuration runs
once, for a fixed number of optimisation steps (``train.max_steps``), in a fresh child
process (multiprocessing "spawn"), so its memory figures are its own:

* **cpu-demo**: ``params.yaml``'s ``train`` section as the demo trains it (offline-minilm,
  mean pooling, batch 16, max_seq 128, MNRL in Matryoshka) on the CPU, fp32.
* **cpu-demo-attention-dropout**: the same with the model's own dropout on attention
  weights (0.1, all-MiniLM-L6-v2's and BERT's) in place of ``train.attention_dropout``'s,
  side by side: ``ratios`` records cpu-demo's pairs/s over this one's (dropout sends
  attention down its slow, unfused path).
* **gpu-specter2**, only where CUDA is present: ``allenai/specter2_base`` when it loads from
  the local Hugging Face cache, else a BERT-base-sized model built from scratch
  (``BertConfig`` defaults: 12 layers, 768 dims, 12 heads, random weights; the bundled
  MiniLM's uncased WordPiece tokenizer, the same 30,522-token vocabulary), as the method
  trains it: CLS pooling, max_seq 256, ``cached_mnrl`` at batch 128 (mini-batches of
  ``train.mini_batch_size``), bf16 (train's choice where the GPU supports it). Without
  CUDA it is skipped and the report says why.

Figures:

* **pairs/s** = pairs in the timed steps / their summed step time. A trainer callback
  times each optimisation step (forward, backward, optimiser; on CUDA between two
  ``torch.cuda.synchronize``); the first ``--warmup-steps`` (lazy allocations, kernel
  selection) are left out. ``metrics/train.json``'s own figure over all steps is kept as
  ``train_json_pairs_per_s``.
* **wall s**: ``run_train`` from call to return: model load, the steps, the validation
  loss, IR score and checkpoint every ``train.eval_steps``, publishing the candidate.
* **peak RSS**: the child's ``VmHWM``, reset (``/proc/self/clear_refs``) just before
  ``run_train``: interpreter, libraries, model and data included. On CUDA also
  ``torch.cuda.max_memory_allocated``.

Threads are pinned to ``os.cpu_count()`` through the environment before torch is imported
(and ``torch.set_num_threads`` in the child). The CPU model comes from
``benchmarks/machine.py``; the load average at start and end and the CPUs' busy share
before the start are recorded: other work on the machine skews every number here.

Run it from the repository root (after ``make repro``)::

    .venv/bin/python benchmarks/bench_train.py            # 40 CPU steps (+ 30 GPU steps)
    .venv/bin/python benchmarks/bench_train.py --quick    # 10 CPU steps, train-quick.json
    .venv/bin/python benchmarks/bench_train.py --gpu      # ask for the GPU run explicitly
"""

from __future__ import annotations

import os

# Pin every thread pool before torch or NumPy are imported (in this process and, through
# the environment, in every child): they read these variables once, at load time.
os.environ["OMP_NUM_THREADS"] = str(os.cpu_count() or 1)
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"]
os.environ["MKL_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"]

import argparse
import dataclasses
import datetime as dt
import gc
import json
import math
import multiprocessing
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from machine import (
    cpu_busy_fraction,
    cpu_facts,
    fmt,
    git_state,
    installed_versions,
    load_average,
    peak_rss_bytes,
    reset_peak_rss,
    rss_bytes,
    to_jsonable,
)

if TYPE_CHECKING:
    from pipelines.common.config import TrainParams

THREAD_ENV_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
N_THREADS = int(os.environ["OMP_NUM_THREADS"])
REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "benchmarks" / "results"
# The full run is the record kept in git; a --quick run goes to a git-ignored file so it
# never overwrites that record.
DEFAULT_OUT = RESULTS_DIR / "train.json"
QUICK_OUT = RESULTS_DIR / "train-quick.json"
PAIRS = REPO_ROOT / "data" / "validated" / "pairs.parquet"
MB = 1e6  # memory figures are in MB = 10^6 bytes
MODEL_ATTENTION_DROPOUT = 0.1  # all-MiniLM-L6-v2's config (BERT's default)

CPU_STEPS, CPU_STEPS_QUICK = 40, 10  # 40: half the demo's own train.max_steps
GPU_STEPS, GPU_STEPS_QUICK = 30, 10
WARMUP_STEPS = 3

SPECTER2 = "allenai/specter2_base"
# The method's GPU settings (params.yaml's comment on the train section).
GPU_SETTINGS: dict[str, Any] = {
    "pooling": "cls",
    "max_seq_length": 256,
    "batch_size": 128,
    "loss": "cached_mnrl",
}


# ------------------------------------------------------------------------------------ the child


@dataclass(frozen=True)
class TrainJob:
    """One configuration to train (picklable: it crosses the spawn boundary)."""

    name: str
    params: TrainParams
    pairs: str  # the validated pairs table to copy into the scratch root
    scratch: str  # an empty folder: the run's data/, models/ and metrics/
    warmup_steps: int
    build_specter2_sized: bool  # base_model: SPECTER2 if cached, else BERT-base from scratch


def specter2_sized_model(folder: Path) -> tuple[str, str]:
    """(``train.base_model``, what it is): SPECTER2 from the local cache, else BERT-base.

    The fallback has SPECTER2's shape (BERT-base: 12 layers, 768 dims, 12 heads, 3072
    intermediate, 512 positions) with random weights, so its step time is SPECTER2's; its
    tokenizer is the bundled MiniLM's, the same uncased 30,522-token WordPiece vocabulary
    as BERT-base (SPECTER2's own has 31,090: the embedding table differs by 2 %).
    """
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from pipelines.retrieval.models import (
        OFFLINE_MINILM,
        ModelLoadError,
        load_base_model,
        resolve_model_source,
    )

    try:
        load_base_model(SPECTER2, pooling="cls", max_seq_length=256, device="cpu")
    except ModelLoadError as error:
        why = str(error).split(". Fix:", 1)[0]
    else:
        return SPECTER2, f"{SPECTER2} (local Hugging Face cache)"
    tokenizer = AutoTokenizer.from_pretrained(resolve_model_source(OFFLINE_MINILM))
    config = BertConfig(vocab_size=tokenizer.vocab_size)
    torch.manual_seed(0)
    BertModel(config).save_pretrained(folder)  # with the pooler, as SPECTER2 has one
    tokenizer.save_pretrained(folder)
    return str(folder), (
        f"BERT-base config built from scratch ({config.num_hidden_layers} layers, "
        f"{config.hidden_size} dims, random weights, vocab {config.vocab_size}) because "
        f"{why}"
    )


def train_child(job: TrainJob) -> dict[str, Any]:
    """Runs in a fresh spawned process: one ``run_train`` call, its speed and memory."""
    from pipelines.common import offline

    offline.apply()  # before the Hugging Face libraries are first imported
    import torch
    from transformers import TrainerCallback

    from pipelines.common.paths import Paths
    from pipelines.train.stage import run_train

    torch.set_num_threads(N_THREADS)
    scratch = Path(job.scratch)
    paths = Paths(scratch)
    paths.validated.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(job.pairs, paths.validated / "pairs.parquet")
    params, model_note = job.params, f"{job.params.base_model} (params.yaml train.base_model)"
    if job.build_specter2_sized:
        base_model, model_note = specter2_sized_model(scratch / "specter2-sized")
        params = dataclasses.replace(params, base_model=base_model)
    cuda = params.device == "cuda"
    step_seconds: list[float] = []

    class StepTimer(TrainerCallback):
        """Wall time of each optimisation step; on CUDA the queued kernels are waited for."""

        def __init__(self) -> None:
            self.started = 0.0

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if cuda:
                torch.cuda.synchronize()
            self.started = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if cuda:
                torch.cuda.synchronize()
            step_seconds.append(time.perf_counter() - self.started)

    gc.collect()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    log_path = scratch / "train.log"
    how = reset_peak_rss()
    before = rss_bytes()
    started = time.perf_counter()
    # The trainer prints its log lines and progress bars; they go to a file, not the table.
    with log_path.open("w", encoding="utf-8") as log, redirect_stdout(log), redirect_stderr(log):
        try:
            report = run_train(params, paths, progress=False, callbacks=[StepTimer()])
        except Exception as error:
            log.flush()
            tail = "".join(log_path.read_text(encoding="utf-8").splitlines(True)[-30:])
            raise RuntimeError(f"{job.name}: run_train failed: {error}\n{tail}") from error
    wall_s = time.perf_counter() - started
    peak = peak_rss_bytes()

    timed = step_seconds[job.warmup_steps :]
    result: dict[str, Any] = {
        "model": model_note,
        "params": dataclasses.asdict(params),
        "device": report.device,
        "precision": report.precision,
        "torch_threads": torch.get_num_threads(),
        "n_train_pairs": report.n_train_pairs,
        "steps": len(step_seconds),
        "warmup_steps": min(job.warmup_steps, len(step_seconds)),
        "timed_steps": len(timed),
        "pairs_per_s": params.batch_size * len(timed) / sum(timed) if timed else None,
        "step_s_median": statistics.median(timed) if timed else None,
        "step_s_first": step_seconds[0] if step_seconds else None,
        "train_json_pairs_per_s": report.pairs_per_second,
        "wall_s": wall_s,
        "final_loss": report.final_loss,
        "peak_rss_mb": peak / MB,
        "rss_before_call_mb": before / MB,
        "peak_how": how,
        "matryoshka_dims": list(report.matryoshka_dims),
    }
    if cuda:
        result["gpu"] = torch.cuda.get_device_name(0)
        result["gpu_peak_allocated_mb"] = torch.cuda.max_memory_allocated() / MB
    return result


def run_in_child(job: TrainJob) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(train_child, job).result()


# ---------------------------------------------------------------------------- configurations


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    return None if not numerator or not denominator else round(numerator / denominator, 3)


def epochs_for(steps: int, batch_size: int, n_train_pairs: int) -> int:
    """Enough epochs that ``steps`` fit: run_train only ever shortens a run to max_steps."""
    steps_per_epoch = n_train_pairs // batch_size
    if steps_per_epoch < 1:
        raise SystemExit(
            f"{PAIRS} has {n_train_pairs} training pairs, fewer than one batch of "
            f"{batch_size}; rerun `make repro` on the sample (or a larger corpus)"
        )
    return max(1, math.ceil(steps / steps_per_epoch))


def cpu_demo_params(train: TrainParams, steps: int, n_train_pairs: int) -> TrainParams:
    """params.yaml's train section on the CPU, cut at ``steps`` optimisation steps."""
    return dataclasses.replace(
        train,
        device="cpu",
        max_steps=steps,
        epochs=max(train.epochs, epochs_for(steps, train.batch_size, n_train_pairs)),
    )


def gpu_specter2_params(train: TrainParams, steps: int, n_train_pairs: int) -> TrainParams:
    """The method's SPECTER2 settings on CUDA (base_model is set in the child)."""
    batch_size = int(GPU_SETTINGS["batch_size"])
    return dataclasses.replace(
        train,
        **GPU_SETTINGS,
        device="cuda",
        max_steps=steps,
        epochs=max(train.epochs, epochs_for(steps, batch_size, n_train_pairs)),
    )


def cuda_state() -> tuple[bool, str]:
    """(is CUDA usable, a sentence saying what torch sees)."""
    import torch

    if torch.cuda.is_available():
        names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        return True, f"CUDA {torch.version.cuda}: {', '.join(names)}"
    return False, (
        f"no CUDA device: torch {torch.__version__} (CUDA build {torch.version.cuda}) sees "
        f"none, so the SPECTER2-sized GPU run (bf16, cached_mnrl, batch 128) is skipped"
    )


# ------------------------------------------------------------------------------------- output


def print_summary(result: dict[str, Any]) -> None:
    machine, load = result["machine"], result["load_average"]
    print(
        f"\nmachine: {machine['cpu_model']}, {machine['cores']} cores, "
        f"{machine['memory_gb']:.0f} GB; torch threads {result['torch_threads']}; "
        f"load average at start {load['start']}, at end {load['end']}"
    )
    width = max(len(name) for name in ["run", *result["runs"]]) + 2
    print(
        f"  {'run':<{width}}{'device':<34}{'pairs/s':>9}{'step s':>8}{'steps':>7}"
        f"{'wall s':>8}{'peak RSS MB':>13}"
    )
    for name, run in result["runs"].items():
        if "skipped" in run:
            print(f"  {name:<{width}}skipped: {run['skipped']}")
            continue
        print(
            f"  {name:<{width}}{run['device'][:33]:<34}{fmt(run['pairs_per_s'], '.1f'):>9}"
            f"{fmt(run['step_s_median'], '.3f'):>8}{run['steps']:>7}{run['wall_s']:>8.1f}"
            f"{run['peak_rss_mb']:>13.0f}"
        )
        print(f"  {'':<{width}}model: {run['model']}")
    for what, value in result["ratios"].items():
        print(f"  ratio {what}: {fmt(value, '.3f')}")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Benchmark training pairs/s with the train stage's own code on "
        "data/validated/pairs.parquet: the demo model on the CPU, and a SPECTER2-sized model "
        "in bf16 with cached MNRL at batch 128 where CUDA is present; writes a JSON report.",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"{CPU_STEPS_QUICK} CPU / {GPU_STEPS_QUICK} GPU steps, written to "
        f"{QUICK_OUT.relative_to(REPO_ROOT)}",
    )
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "gpu"),
        default="auto",
        help="auto: the CPU run, plus the GPU run when CUDA is present; cpu: the CPU run "
        "only; gpu: the CPU run and ask for the GPU run (skipped, with the reason, without "
        "CUDA). Default: %(default)s",
    )
    parser.add_argument(
        "--gpu", dest="device", action="store_const", const="gpu", help="= --device gpu"
    )
    parser.add_argument("--steps", type=int, default=None, help="CPU optimisation steps")
    parser.add_argument("--gpu-steps", type=int, default=None, help="GPU optimisation steps")
    parser.add_argument(
        "--warmup-steps",
        type=int,
        default=WARMUP_STEPS,
        help="first steps left out of pairs/s (default: %(default)s)",
    )
    parser.add_argument(
        "--params",
        type=Path,
        default=REPO_ROOT / "params.yaml",
        help="params.yaml whose train section is the demo's (default: the repository's)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"JSON report path (default: {DEFAULT_OUT.relative_to(REPO_ROOT)}, "
        f"or {QUICK_OUT.relative_to(REPO_ROOT)} with --quick)",
    )
    args = parser.parse_args(argv)
    if args.steps is None:
        args.steps = CPU_STEPS_QUICK if args.quick else CPU_STEPS
    if args.gpu_steps is None:
        args.gpu_steps = GPU_STEPS_QUICK if args.quick else GPU_STEPS
    if args.out is None:
        args.out = QUICK_OUT if args.quick else DEFAULT_OUT
    if min(args.steps, args.gpu_steps) < 1 or args.warmup_steps < 0:
        parser.error("--steps and --gpu-steps must be >= 1, --warmup-steps >= 0")
    if args.warmup_steps >= min(args.steps, args.gpu_steps):
        parser.error("--warmup-steps must be below --steps and --gpu-steps: nothing to time")
    if not args.params.is_file():
        parser.error(f"--params {args.params} not found")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if not PAIRS.is_file():
        print(
            f"bench_train: {PAIRS} not found. The benchmark trains on the validated sample "
            "data; run `make repro` first (it builds data/validated/ offline), then rerun.",
            file=sys.stderr,
        )
        return 1
    import pandas as pd
    import torch

    from pipelines.common.config import load_params

    started, load_at_start, busy = dt.datetime.now(dt.UTC), load_average(), cpu_busy_fraction()
    if busy is not None and busy > 0.2:
        print(f"warning: the CPUs were {busy:.0%} busy before the start; timings will be skewed")
    train = load_params(args.params).train
    split = pd.read_parquet(PAIRS, columns=["split"])["split"]
    n_train_pairs = int((split == "train").sum())
    cpu = cpu_demo_params(train, args.steps, n_train_pairs)
    configs: dict[str, tuple[TrainParams, int, bool]] = {
        "cpu_demo": (cpu, args.steps, False),
        "cpu_demo_attention_dropout": (
            dataclasses.replace(cpu, attention_dropout=MODEL_ATTENTION_DROPOUT),
            args.steps,
            False,
        ),
    }
    skipped: dict[str, str] = {}
    cuda_ok, cuda_note = cuda_state()
    if args.device != "cpu":
        if cuda_ok:
            gpu = gpu_specter2_params(train, args.gpu_steps, n_train_pairs)
            configs["gpu_specter2"] = (gpu, args.gpu_steps, True)
        else:
            skipped["gpu_specter2"] = cuda_note
            print(f"bench_train: {cuda_note}", flush=True)

    runs: dict[str, dict[str, Any]] = {}
    for name, (params, steps, specter2_sized) in configs.items():
        print(f"  {name}: {steps} steps of batch {params.batch_size} ...", end=" ", flush=True)
        with tempfile.TemporaryDirectory(prefix=f"bench-train-{name}-") as scratch:
            job = TrainJob(name, params, str(PAIRS), scratch, args.warmup_steps, specter2_sized)
            runs[name] = run_in_child(job)
        print(f"{fmt(runs[name]['pairs_per_s'], '.1f')} pairs/s", flush=True)
    runs.update({name: {"skipped": why} for name, why in skipped.items()})

    result: dict[str, Any] = {
        "schema": 1,
        "timestamp": started.isoformat(timespec="seconds"),
        "wall_s": (dt.datetime.now(dt.UTC) - started).total_seconds(),
        "command": [sys.executable, *sys.argv],
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "machine": cpu_facts(),
        "cuda": cuda_note,
        "load_average": {"start": load_at_start, "end": load_average()},
        "cpu_busy_fraction_before_start": busy,
        "threads": {var: os.environ.get(var) for var in THREAD_ENV_VARS},
        "torch_threads": torch.get_num_threads(),
        "versions": installed_versions(
            "torch", "transformers", "sentence-transformers", "accelerate", "datasets"
        ),
        "git": git_state(),
        "data": {"pairs": str(PAIRS.relative_to(REPO_ROOT)), "n_train_pairs": n_train_pairs},
        "runs": runs,
        "ratios": {
            "pairs_per_s cpu_demo / cpu_demo_attention_dropout": ratio(
                runs["cpu_demo"]["pairs_per_s"], runs["cpu_demo_attention_dropout"]["pairs_per_s"]
            )
        },
        "notes": {
            "units": "seconds; MB = 1e6 bytes",
            "pairs_per_s": "batch_size x timed steps / their summed wall time; the first "
            "warmup_steps are not timed; each step timed by a trainer callback (on CUDA "
            "between torch.cuda.synchronize calls)",
            "train_json_pairs_per_s": "what metrics/train.json reports: all steps",
            "wall_s": "run_train from call to return, in its spawn child (after imports)",
            "peak_rss_mb": "child's VmHWM after resetting it (/proc/self/clear_refs) just "
            "before run_train; absolute (interpreter, libraries, model, data)",
        },
    }
    print_summary(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(to_jsonable(result), indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
