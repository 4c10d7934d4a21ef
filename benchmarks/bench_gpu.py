"""Benchmark the method's training on a GPU: cached MNRL at batch 128 in bf16 against plain
MNRL training of the same model at the largest batch that fits, in one run (issue 21).

Not a test: nothing here asserts. It answers "how many training pairs, and passages, a
second does the method's set-up fine-tune on this GPU, against plain
``SentenceTransformer.fit``-style training?" with the device named beside the numbers
(``benchmarks/results/gpu.json``).

* **Model**: SPECTER2's shape (BERT-base: 12 layers, 768 dims, 110 M parameters) built
  from a config with random weights (``bench_train.specter2_sized_model``; SPECTER2 itself
  only if it is already in the local Hugging Face cache), CLS pooling, 256 tokens.
* **Data**: the demo's training pairs (``data/validated/pairs.parquet``, else
  ``data/training/pairs.parquet``, split ``train``); without them, generated pairs.
* **Runs**, each from the same freshly loaded weights, for ``--steps`` timed optimiser
  steps after ``--warmup-steps`` (lazy allocations, kernel selection):

  - ``method``: the product's ``train.loss: cached_mnrl`` (CachedMultipleNegativesRankingLoss
    inside MatryoshkaLoss, :func:`pipelines.train.setup.build_loss`) at batch 128 in
    mini-batches of 32, bf16 (fp16 where the GPU lacks bf16);
  - ``plain``: ``train.loss: mnrl`` (MNRL inside Matryoshka) in the method's precision,
    at the largest batch of 128, 64, 32, 16, 8 that trains without running out of memory;
  - ``fit-style``: what ``SentenceTransformer.fit`` does by default: MNRL alone, fp32, at
    the largest batch that fits likewise.

  Figures: **pairs/s** (pairs in the timed steps / their time, between two
  ``torch.cuda.synchronize``), **texts/s** (anchors and positives embedded per second of
  training; cached MNRL embeds each twice, once without gradients: counted once),
  **peak GPU memory**, and **passages/s embedded** by the model (``encode`` at batch 128 in
  the run's precision, after training).

``--smoke`` checks the script on a CPU in seconds: a 2-layer BERT, batch 16 (mini-batches
of 4), 2 timed steps, fp32 everywhere, written to ``gpu-smoke.json``; its numbers say the
script works, nothing about a GPU. Without CUDA and without ``--smoke`` it stops and says so.

    .venv/bin/python benchmarks/bench_gpu.py            # a GPU machine: a few minutes
    .venv/bin/python benchmarks/bench_gpu.py --smoke    # any machine: under a minute
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench_train import specter2_sized_model
from machine import REPO_ROOT, cpu_facts, git_state, installed_versions, to_jsonable

sys.path.insert(0, str(REPO_ROOT))

RESULTS_DIR = REPO_ROOT / "benchmarks" / "results"
PAIRS_FILES = [
    REPO_ROOT / "data" / "validated" / "pairs.parquet",
    REPO_ROOT / "data" / "training" / "pairs.parquet",
]
METHOD_BATCH = 128
METHOD_MINI_BATCH = 32
FALLBACK_BATCHES = (128, 64, 32, 16, 8)
ENCODE_PASSAGES = 2048


@dataclasses.dataclass(frozen=True)
class Setting:
    """What one invocation measures: the full GPU run or the CPU smoke."""

    name: str
    batch: int
    mini_batch: int
    fallback_batches: tuple[int, ...]
    max_seq_length: int
    steps: int
    warmup_steps: int
    encode_passages: int


FULL = Setting("gpu", METHOD_BATCH, METHOD_MINI_BATCH, FALLBACK_BATCHES, 256, 30, 3, 2048)
SMOKE = Setting("gpu-smoke", 16, 4, (16, 8), 32, 2, 1, 64)


def training_pairs(needed: int) -> tuple[list[dict[str, str]], str]:
    """(distinct anchor/positive pairs, where they came from): the demo's or generated."""
    import pandas as pd

    for path in PAIRS_FILES:
        if path.is_file():
            frame = pd.read_parquet(path, columns=["anchor", "positive", "split"])
            frame = frame.loc[frame["split"] == "train", ["anchor", "positive"]]
            frame = frame.drop_duplicates("anchor").drop_duplicates("positive")
            if len(frame) >= needed:
                return frame.to_dict("records"), f"{path.relative_to(REPO_ROOT)} (train split)"
    words = [
        "group",
        "ring",
        "field",
        "prime",
        "lattice",
        "sheaf",
        "module",
        "ideal",
        "curve",
        "graph",
    ]
    pairs = [
        {
            "anchor": f"{words[i % 10]} {words[i // 10 % 10]} number {i}",
            "positive": f"a {words[i % 10]} with {words[i // 10 % 10]} structure indexed {i} "
            + " ".join(words[(i + j) % 10] for j in range(40)),
        }
        for i in range(max(needed, 1024))
    ]
    return pairs, "generated (no demo pairs found; run `make repro`)"


def tiny_model(folder: Path) -> tuple[str, str]:
    """A 2-layer BERT with the bundled MiniLM's tokenizer, for the smoke run."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from pipelines.retrieval.models import OFFLINE_MINILM, resolve_model_source

    tokenizer = AutoTokenizer.from_pretrained(resolve_model_source(OFFLINE_MINILM))
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
    )
    torch.manual_seed(0)
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder), "2-layer BERT, 64 dims, random weights (smoke)"


def count_parameters(model: Any) -> int:
    return sum(parameter.numel() for parameter in model.parameters())


def train_once(
    model_path: str,
    pairs: list[dict[str, str]],
    *,
    loss: str,
    matryoshka: bool,
    batch: int,
    precision: str,
    setting: Setting,
    device: str,
    scratch: Path,
) -> dict[str, Any]:
    """Train ``setting.warmup_steps + setting.steps`` steps; time the last ``steps``."""
    import torch
    from datasets import Dataset  # type: ignore[import-untyped]
    from sentence_transformers import (
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.base.sampler import BatchSamplers
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from transformers import TrainerCallback, set_seed

    from pipelines.common.config import TrainParams
    from pipelines.retrieval.models import load_base_model
    from pipelines.train.setup import build_loss, derive_matryoshka_dims

    set_seed(0)
    model = load_base_model(
        model_path, pooling="cls", max_seq_length=setting.max_seq_length, device=device
    )
    params = dataclasses.replace(
        TrainParams(),
        base_model=model_path,
        pooling="cls",
        loss=loss,  # type: ignore[arg-type]  # "mnrl" | "cached_mnrl"
        batch_size=batch,
        mini_batch_size=setting.mini_batch,
        max_seq_length=setting.max_seq_length,
    )
    dimension = model.get_embedding_dimension() or 768
    objective = (
        build_loss(model, params, derive_matryoshka_dims(dimension))
        if matryoshka
        else MultipleNegativesRankingLoss(model)
    )
    timed: list[float] = []

    class StepTimer(TrainerCallback):
        started = 0.0

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if device == "cuda":
                torch.cuda.synchronize()
            self.started = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if device == "cuda":
                torch.cuda.synchronize()
            if state.global_step > setting.warmup_steps:
                timed.append(time.perf_counter() - self.started)

    arguments = SentenceTransformerTrainingArguments(
        output_dir=str(scratch),
        max_steps=setting.warmup_steps + setting.steps,
        per_device_train_batch_size=batch,
        learning_rate=2e-5,
        bf16=precision == "bf16",
        fp16=precision == "fp16",
        use_cpu=device == "cpu",
        batch_sampler=BatchSamplers.NO_DUPLICATES,
        dataloader_drop_last=True,
        save_strategy="no",
        eval_strategy="no",
        logging_strategy="no",
        report_to="none",
        disable_tqdm=True,
        seed=0,
    )
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    trainer = SentenceTransformerTrainer(
        model=model,
        args=arguments,
        train_dataset=Dataset.from_list(pairs),
        loss=objective,
        callbacks=[StepTimer()],
    )
    trainer.train()
    seconds = sum(timed)
    pairs_per_s = batch * len(timed) / seconds if seconds > 0 else 0.0
    result: dict[str, Any] = {
        "loss": ("Matryoshka(" if matryoshka else "") + loss + (")" if matryoshka else ""),
        "batch": batch,
        "mini_batch": setting.mini_batch if loss == "cached_mnrl" else None,
        "precision": precision,
        "timed_steps": len(timed),
        "step_s": round(seconds / max(len(timed), 1), 4),
        "pairs_per_s": round(pairs_per_s, 2),
        "texts_per_s": round(2 * pairs_per_s, 2),
        "peak_gpu_mb": round(torch.cuda.max_memory_allocated() / 1e6) if device == "cuda" else None,
    }
    result["encode_passages_per_s"] = encode_rate(model, pairs, precision, setting, device)
    del trainer, model
    if device == "cuda":
        torch.cuda.empty_cache()
    return result


def encode_rate(
    model: Any, pairs: list[dict[str, str]], precision: str, setting: Setting, device: str
) -> float:
    """Passages a second the trained model embeds (``encode`` at the method's batch)."""
    import torch

    passages = [pair["positive"] for pair in pairs[: setting.encode_passages]]
    model.eval()
    if precision in ("bf16", "fp16"):
        model.to(torch.bfloat16 if precision == "bf16" else torch.float16)
    model.encode(passages[: setting.batch], batch_size=setting.batch)  # warm-up
    if device == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    model.encode(passages, batch_size=setting.batch)
    if device == "cuda":
        torch.cuda.synchronize()
    return round(len(passages) / (time.perf_counter() - started), 1)


def largest_fitting(try_batch: Any, batches: Sequence[int]) -> dict[str, Any]:
    """The first of ``batches`` (largest first) whose run does not run out of GPU memory."""
    import torch

    refused: list[int] = []
    for batch in batches:
        try:
            result: dict[str, Any] = try_batch(batch)
        except torch.OutOfMemoryError:
            refused.append(batch)
            torch.cuda.empty_cache()
            continue
        return {**result, "out_of_memory_at": refused}
    raise RuntimeError(f"no batch of {list(batches)} fits in GPU memory")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="a tiny CPU run of the script")
    parser.add_argument("--steps", type=int, help="timed steps per run (default 30; smoke 2)")
    parser.add_argument("--out", type=Path, help="result file (default results/<name>.json)")
    args = parser.parse_args(argv)

    from pipelines.common import offline

    offline.apply()  # no hub access: the model is built here
    import torch

    setting = SMOKE if args.smoke else FULL
    if args.steps:
        setting = dataclasses.replace(setting, steps=args.steps)
    cuda = torch.cuda.is_available()
    if not cuda and not args.smoke:
        print("bench_gpu: no CUDA device here; run with --smoke to check the script on a CPU")
        return 2
    device = "cuda" if cuda and not args.smoke else "cpu"
    fast = "bf16" if device == "cuda" and torch.cuda.is_bf16_supported() else "fp16"
    fast = fast if device == "cuda" else "fp32"
    needed = (setting.warmup_steps + setting.steps) * setting.batch + setting.encode_passages
    pairs, pairs_source = training_pairs(needed)

    with tempfile.TemporaryDirectory(prefix="bench-gpu-") as scratch_name:
        scratch = Path(scratch_name)
        build = tiny_model if args.smoke else specter2_sized_model
        model_path, model_description = build(scratch / "model")

        def run(name: str, **options: Any) -> dict[str, Any]:
            started = time.perf_counter()
            kwargs = {"setting": setting, "device": device, "scratch": scratch / name}
            batch = options.pop("batch", None)
            if batch is not None:
                result = train_once(model_path, pairs, batch=batch, **options, **kwargs)
            else:

                def at(size: int) -> dict[str, Any]:
                    return train_once(model_path, pairs, batch=size, **options, **kwargs)

                result = largest_fitting(at, setting.fallback_batches)
            print(f"{name}: {json.dumps(result)}", flush=True)
            return {"name": name, **result, "wall_s": round(time.perf_counter() - started, 1)}

        runs = [
            run("method", loss="cached_mnrl", matryoshka=True, batch=setting.batch, precision=fast),
            run("plain", loss="mnrl", matryoshka=True, precision=fast),
            run("fit-style", loss="mnrl", matryoshka=False, precision="fp32"),
        ]
        from sentence_transformers import SentenceTransformer

        parameters = count_parameters(SentenceTransformer(model_path, device="cpu"))

    by_name = {run["name"]: run for run in runs}
    method, fit_style = by_name["method"], by_name["fit-style"]
    report = {
        "benchmark": "bench_gpu",
        "setting": dataclasses.asdict(setting),
        "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu (smoke)",
        "cuda": torch.version.cuda,
        "cpu": cpu_facts(),
        "model": model_description,
        "parameters": parameters,
        "pairs": {"source": pairs_source, "available": len(pairs)},
        "runs": runs,
        "method_vs_fit_style": {
            "pairs_per_s": round(method["pairs_per_s"] / max(fit_style["pairs_per_s"], 1e-9), 2),
            "encode_passages_per_s": round(
                method["encode_passages_per_s"] / max(fit_style["encode_passages_per_s"], 1e-9), 2
            ),
            "target": ">= 2x pairs/s on the GPU (issue 21)",
        },
        "versions": installed_versions("torch", "transformers", "sentence-transformers"),
        "git": git_state(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    out = args.out or RESULTS_DIR / f"{setting.name}.json"
    out.write_text(json.dumps(to_jsonable(report), indent=2) + "\n", encoding="utf-8")
    print(
        f"bench_gpu: {report['device']}: method {method['pairs_per_s']} pairs/s vs fit-style "
        f"{fit_style['pairs_per_s']} ({report['method_vs_fit_style']['pairs_per_s']}x); {out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
