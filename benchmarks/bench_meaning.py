"""Every evaluation set of one project, four rankings side by side, with intervals (issue 20).

Not a test: nothing here asserts. Given a project where validate has run
(``data/validated/{chunks,queries,qrels}.parquet``) and a candidate model folder, it scores
each set (``named``, ``masked``, ``described``; :mod:`pipelines.evaluate.eval_set`) four ways:

* **base**: the candidate's base model (the one its ``mathembed.json`` names, else
  ``params.yaml`` ``train.base_model``: ``offline-minilm`` is the bundled MiniLM);
* **candidate**: the model folder;
* **bm25**: word matching alone (:func:`~pipelines.evaluate.scoring.score_lexical`);
* **hybrid**: the candidate's ranking fused with BM25's by reciprocal rank, as
  ``pipelines/search`` ranks (:func:`~pipelines.retrieval.lexical.fuse` of the two top
  :data:`~pipelines.retrieval.lexical.FUSION_DEPTH` lists, ``RRF_K``), the passages a query
  does not rank (a described query's own passage) left out of both lists first.

The models are embedded and scored by the evaluate stage's own functions
(:func:`embed_eval_set` through the project's embedding store, :func:`score_eval_set`,
:func:`sets_block`), at each model's full dimension; every metric comes from
``metrics_rs.evaluate``. Per set the record holds its size, the share of its queries whose
words stand in a relevant passage, MRR@10 / NDCG@10 / Recall@10 of each row with a
bootstrap 95 % interval of the mean, and three paired comparisons (candidate − base,
candidate − BM25, hybrid − candidate) with the interval of the difference and the p of
``metrics_rs.paired_test`` (promote's method, resamples and seed: params.yaml ``promote``).
A few described queries are shown with what each row ranks first, to read by eye.
``--trained-on`` (the chunks of the corpus the candidate was trained from) also scores each
set on the queries none of whose relevant passages that corpus holds: the demo's candidate
was trained on 16 chapters of the book whose held-out statements are drawn by paper id, and
the whole book's paper ids are not the demo's. ``--extra NAME=DIR`` adds a model row
(compared with the base); ``--render`` prints a record's tables as Markdown.

    .venv/bin/python benchmarks/bench_meaning.py --project /tmp/stacks \\
        --candidate /tmp/stacks/models/candidate --out benchmarks/results/meaning_stacks.json
    .venv/bin/python benchmarks/bench_meaning.py --project /tmp/stacks --max-passages 300 \\
        --out /tmp/smoke.json     # a smoke run on a slice: its figures mean nothing
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import metrics_rs  # noqa: E402 -- after the path is set
from benchmarks.machine import (  # noqa: E402
    git_state,
    installed_versions,
    load_average,
    to_jsonable,
)
from pipelines.common import io, offline, quiet  # noqa: E402
from pipelines.common.config import Params, load_params  # noqa: E402
from pipelines.common.paths import Paths  # noqa: E402
from pipelines.common.tables import QUERY_SETS, TABLES  # noqa: E402
from pipelines.evaluate.eval_set import (  # noqa: E402
    DESCRIBED,
    EVAL_TABLES,
    MASKED,
    EvalSet,
    Subset,
    build_eval_set,
    load_eval_set,
)
from pipelines.evaluate.headline import PairedTest  # noqa: E402
from pipelines.evaluate.scoring import (  # noqa: E402
    LEXICAL_DIM,
    EvalEmbeddings,
    SubsetScores,
    effective_ks,
    embed_eval_set,
    score_eval_set,
    score_lexical,
)
from pipelines.evaluate.sources import (  # noqa: E402
    BASE,
    CANDIDATE,
    base_model_source,
    local_model_source,
)
from pipelines.evaluate.stage import LEXICAL, SET_METRICS, sets_block  # noqa: E402
from pipelines.registry.candidate_metadata import BaseModelSpec, recorded_base_model  # noqa: E402
from pipelines.registry.reporting import round_p_value  # noqa: E402
from pipelines.retrieval.embeddings import matryoshka  # noqa: E402
from pipelines.retrieval.lexical import FUSION_DEPTH, RRF_K, LexicalIndex, fuse  # noqa: E402
from pipelines.retrieval.vector_store import open_store  # noqa: E402
from pipelines.search.index import PassageIndex  # noqa: E402

HYBRID = "hybrid"
ROWS = (BASE, CANDIDATE, LEXICAL, HYBRID)
#: (name, a, b): the paired comparisons reported, each as a − b.
COMPARISONS = (
    ("candidate_vs_base", CANDIDATE, BASE),
    ("candidate_vs_bm25", CANDIDATE, LEXICAL),
    ("hybrid_vs_candidate", HYBRID, CANDIDATE),
)
CONFIDENCE = 0.95
#: Rows that are none of :data:`ROWS` (``--extra`` models) are compared with the base.
EXTRA_AGAINST = BASE
SHOWN_CHARS = 400
Lists = list[list[int]]


# -- the eval set, whole or a slice ---------------------------------------------------


def slice_tables(
    tables: Mapping[str, pd.DataFrame], *, max_passages: int, max_queries: int, seed: int
) -> dict[str, pd.DataFrame]:
    """A smaller eval set for smoke runs: at most ``max_queries`` queries of each stored set
    (a seeded draw), their judged and excluded passages, and other passages drawn with
    ``seed`` up to ``max_passages`` in all (more when the kept queries' passages need it)."""
    chunks, queries, qrels = tables["chunks"], tables["queries"], tables["qrels"]
    sets = queries["set"] if "set" in queries else pd.Series("named", index=queries.index)
    kept_queries = pd.concat(
        [
            group.sample(min(max_queries, len(group)), random_state=seed)
            for _, group in queries.groupby(sets, sort=True)
        ]
    )
    kept_qrels = qrels[qrels["query_id"].isin(kept_queries["query_id"])]
    needed = set(kept_qrels["chunk_id"])
    if "exclude" in kept_queries:
        needed |= {chunk for ids in kept_queries["exclude"] for chunk in ids}
    others = chunks[~chunks["chunk_id"].isin(needed)]
    room = max(0, max_passages - len(needed))
    drawn = others.sample(min(room, len(others)), random_state=seed)["chunk_id"]
    kept_chunks = chunks[chunks["chunk_id"].isin(needed | set(drawn))]
    return {"chunks": kept_chunks, "queries": kept_queries, "qrels": kept_qrels}


def read_eval_set(
    paths: Paths, *, max_passages: int | None, max_queries: int | None, seed: int
) -> EvalSet:
    """The validated eval set, as evaluate reads it, or a slice of it."""
    if max_passages is None and max_queries is None:
        return load_eval_set(paths)
    sources = {name: TABLES[name].validated_path(paths) for name in EVAL_TABLES}
    tables = {name: io.read_parquet(path) for name, path in sources.items()}
    sliced = slice_tables(
        tables,
        max_passages=max_passages or len(tables["chunks"]),
        max_queries=max_queries or len(tables["queries"]),
        seed=seed,
    )
    return build_eval_set(sliced["chunks"], sliced["queries"], sliced["qrels"], sources=sources)


def base_spec(candidate_dir: Path, params: Params, base: str | None) -> BaseModelSpec:
    """The candidate's recorded base model (``base`` overrides its name), else params.yaml's."""
    recorded = recorded_base_model(candidate_dir)
    if recorded is None:
        train = params.train
        recorded = BaseModelSpec(train.base_model, train.pooling, train.max_seq_length)
    if base is not None:
        recorded = BaseModelSpec(base, recorded.pooling, recorded.max_seq_length)
    return recorded


# -- rankings: dense, lexical, fused ---------------------------------------------------


def corpus_texts_of(eval_set: EvalSet, query_set: str) -> list[str]:
    """The passages a set is ranked over (``masked``: its names masked out)."""
    texts = list(eval_set.corpus_texts)
    if query_set == MASKED:
        for row, text in eval_set.masked_texts.items():
            texts[row] = text
    return texts


def dense_lists(embeddings: EvalEmbeddings, eval_set: EvalSet, subset: Subset, depth: int) -> Lists:
    """Each query's best ``depth`` passages by the model, as the search index ranks them
    (:meth:`PassageIndex.top`), its excluded passages left out."""
    corpus = embeddings.masked_corpus if subset.name == MASKED else embeddings.corpus
    index = PassageIndex(matryoshka(corpus, None, normalize=True))
    queries = matryoshka(embeddings.queries, None, normalize=True)
    lists = []
    for row, excluded in zip(subset.rows.tolist(), subset.excluded, strict=True):
        ranked, _ = index.top(queries[row], depth + len(excluded))
        lists.append([doc for doc in ranked if doc not in excluded][:depth])
    return lists


def lexical_lists(index: LexicalIndex, eval_set: EvalSet, subset: Subset, depth: int) -> Lists:
    """Each query's best ``depth`` BM25 matches (maybe fewer), its excluded passages left out."""
    lists = []
    for row, excluded in zip(subset.rows.tolist(), subset.excluded, strict=True):
        ranked, _ = index.top(eval_set.query_texts[row], depth + len(excluded))
        lists.append([doc for doc in ranked if doc not in excluded][:depth])
    return lists


def score_hybrid(
    embeddings: EvalEmbeddings, eval_set: EvalSet, *, ks: Sequence[int], dim: int
) -> tuple[dict[str, SubsetScores], dict[str, Lists]]:
    """The candidate fused with BM25 on each set, scored like a model at ``dim``; and each
    set's fused lists."""
    n_docs = len(eval_set.corpus_texts)
    indexes: dict[str, LexicalIndex] = {}
    scores: dict[str, SubsetScores] = {}
    fused_lists: dict[str, Lists] = {}
    for query_set in QUERY_SETS:
        subset = eval_set.subset(query_set)
        if len(subset.rows) == 0:
            scores[query_set], fused_lists[query_set] = SubsetScores(0, [], {}, {}), []
            continue
        room = n_docs - max(len(excluded) for excluded in subset.excluded)
        subset_ks = [k for k in effective_ks(ks, n_docs) if k <= room] or [room]
        limit = max(subset_ks)
        depth = max(limit, FUSION_DEPTH)  # as the search: max(k, FUSION_DEPTH)
        key = MASKED if query_set == MASKED else "plain"
        if key not in indexes:
            indexes[key] = LexicalIndex(corpus_texts_of(eval_set, query_set))
        dense = dense_lists(embeddings, eval_set, subset, depth)
        lexical = lexical_lists(indexes[key], eval_set, subset, depth)
        fused = [fuse([d, w], limit)[0] for d, w in zip(dense, lexical, strict=True)]
        result = metrics_rs.evaluate(
            np.asarray(fused, dtype=np.int64),
            subset.qrels,
            subset_ks,
            per_query=True,
            n_docs=n_docs,
        )
        per_query = dict(result.get("per_query", {}))
        means = dict(result["means"])
        scores[query_set] = SubsetScores(
            len(subset.rows), subset_ks, {dim: means}, {dim: per_query}
        )
        fused_lists[query_set] = fused
    return scores, fused_lists


# -- intervals and paired comparisons ----------------------------------------------------


def _finite_pair(
    a: npt.ArrayLike, b: npt.ArrayLike
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    left, right = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    scored = np.isfinite(left) & np.isfinite(right)
    return left[scored], right[scored]


def paired(a: npt.ArrayLike, b: npt.ArrayLike, test: PairedTest) -> dict[str, Any]:
    """``metrics_rs.paired_test`` of a − b: the mean difference, its bootstrap interval and
    the test's p (the p :func:`paired_test_p_value` gives for the same settings)."""
    left, right = _finite_pair(a, b)
    if not len(left):
        return {"delta": None, "ci": None, "p": None}
    result = metrics_rs.paired_test(
        left,
        right,
        method=test.method,
        n_resamples=test.n_resamples,
        seed=test.seed,
        confidence=CONFIDENCE,
    )
    return {
        "delta": round(result["delta"], 6),
        "ci": [round(result["ci_low"], 6), round(result["ci_high"], 6)],
        "p": round_p_value(result["p_value"]),
    }


def mean_interval(values: npt.ArrayLike, test: PairedTest) -> list[float] | None:
    """The bootstrap interval of a mean: ``metrics_rs.paired_test``'s interval of the
    difference from zero (its bootstrap of the paired mean)."""
    left, zero = _finite_pair(values, np.zeros_like(np.asarray(values, dtype=np.float64)))
    if not len(left):
        return None
    result = metrics_rs.paired_test(
        left,
        zero,
        method="bootstrap",
        n_resamples=test.n_resamples,
        seed=test.seed,
        confidence=CONFIDENCE,
    )
    return [round(result["ci_low"], 6), round(result["ci_high"], 6)]


def per_query_rows(
    query_set: str,
    scores: Mapping[str, dict[str, SubsetScores]],
    lexical: Mapping[str, SubsetScores],
    dims_of: Mapping[str, list[int]],
) -> dict[str, dict[str, npt.NDArray[np.float64]]]:
    """Each row's per-query values of one set (a model at its one scored dim)."""
    rows = {
        model: by_set[query_set].per_query[dims_of[model][0]]
        for model, by_set in scores.items()
        if by_set[query_set].n_queries
    }
    if lexical[query_set].n_queries:
        rows[LEXICAL] = lexical[query_set].per_query[LEXICAL_DIM]
    return rows


def comparisons(rows: Iterable[str]) -> list[tuple[str, str, str]]:
    """:data:`COMPARISONS`, and each ``--extra`` model against the base."""
    extra = [row for row in rows if row not in ROWS]
    return [*COMPARISONS, *((f"{row}_vs_{EXTRA_AGAINST}", row, EXTRA_AGAINST) for row in extra)]


def intervals_block(
    per_query: Mapping[str, Mapping[str, npt.NDArray[np.float64]]], test: PairedTest
) -> dict[str, Any]:
    return {
        "mean_ci": {
            row: {metric: mean_interval(values[metric], test) for metric in SET_METRICS}
            for row, values in per_query.items()
        },
        "comparisons": {
            name: {
                metric: paired(per_query[a][metric], per_query[b][metric], test)
                for metric in SET_METRICS
            }
            for name, a, b in comparisons(per_query)
            if a in per_query and b in per_query
        },
    }


def outside_training(eval_set: EvalSet, query_set: str, training_texts: set[str]) -> list[bool]:
    """Per query of a set: True when none of its relevant passages is, word for word, a
    passage of the corpus the candidate was trained on (its pairs could not have held it)."""
    return [
        not any(
            eval_set.corpus_texts[doc] in training_texts
            for doc, grade in eval_set.qrels[row].items()
            if grade >= 1
        )
        for row in eval_set.rows_of(query_set)
    ]


def part_block(
    per_query: Mapping[str, Mapping[str, npt.NDArray[np.float64]]],
    keep: Sequence[bool],
    test: PairedTest,
) -> dict[str, Any]:
    """The rows' means, intervals and comparisons on the kept queries of a set."""
    mask = np.asarray(keep, dtype=bool)
    kept = {
        row: {metric: np.asarray(values[metric])[mask] for metric in SET_METRICS}
        for row, values in per_query.items()
    }
    return {
        "n_queries": int(mask.sum()),
        "scores": {
            row: {metric: round(float(np.nanmean(v)), 6) for metric, v in values.items()}
            for row, values in kept.items()
        }
        if mask.any()
        else {},
        **intervals_block(kept, test),
    }


# -- what each row ranks first, for reading ----------------------------------------------


def sample_rows(eval_set: EvalSet, query_set: str, count: int) -> list[int]:
    """``count`` query rows of a set, drawn by a stable hash of their ids."""
    rows = eval_set.rows_of(query_set)
    digest = {row: hashlib.sha256(eval_set.query_ids[row].encode()).hexdigest() for row in rows}
    return sorted(rows, key=digest.__getitem__)[:count]


def first_ranked(
    eval_set: EvalSet,
    rows: list[int],
    embeddings: Mapping[str, EvalEmbeddings],
    fused: Lists,
    fused_rows: list[int],
) -> list[dict[str, Any]]:
    """For each query row (a described query): its text, its relevant passages, and the
    passage each row ranks first, with the rank of the first relevant one (None past
    :data:`FUSION_DEPTH`)."""
    subset = Subset(
        DESCRIBED,
        np.asarray(rows, dtype=np.int64),
        [eval_set.qrels[row] for row in rows],
        [eval_set.excluded[row] for row in rows],
    )
    lists: dict[str, Lists] = {
        model: dense_lists(embedded, eval_set, subset, FUSION_DEPTH)
        for model, embedded in embeddings.items()
    }
    lists[LEXICAL] = lexical_lists(
        LexicalIndex(eval_set.corpus_texts), eval_set, subset, FUSION_DEPTH
    )
    position = {row: i for i, row in enumerate(fused_rows)}
    lists[HYBRID] = [fused[position[row]] for row in rows]
    shown = []
    for i, row in enumerate(rows):
        relevant = [doc for doc, grade in eval_set.qrels[row].items() if grade >= 1]
        entry: dict[str, Any] = {
            "query_id": eval_set.query_ids[row],
            "query": eval_set.query_texts[row],
            "relevant": [
                {
                    "chunk_id": eval_set.corpus_ids[doc],
                    "text": eval_set.corpus_texts[doc][:SHOWN_CHARS],
                }
                for doc in relevant
            ],
            "first": {},
        }
        for name in ROWS:
            ranked = lists[name][i]
            hit = next((rank for rank, doc in enumerate(ranked, 1) if doc in relevant), None)
            top = ranked[0] if ranked else None
            entry["first"][name] = {
                "chunk_id": None if top is None else eval_set.corpus_ids[top],
                "relevant": top in relevant,
                "first_relevant_rank": hit,
                "text": None if top is None else eval_set.corpus_texts[top][:SHOWN_CHARS],
            }
        shown.append(entry)
    return shown


# -- the run ------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    started_total = time.perf_counter()
    paths = Paths(args.project)
    params = load_params(args.params or args.project / "params.yaml")
    test = PairedTest(params.promote.test_method, params.promote.n_resamples, params.promote.seed)
    eval_set = read_eval_set(
        paths, max_passages=args.max_passages, max_queries=args.max_queries, seed=args.seed
    )
    candidate_dir = args.candidate or paths.candidate
    sources = [
        local_model_source(CANDIDATE, candidate_dir),
        base_model_source(base_spec(candidate_dir, params, args.base)),
    ]
    sources += [local_model_source(name, folder) for name, folder in args.extra]
    store = open_store(paths) if params.evaluate.cache else None
    ks = params.evaluate.ks
    seconds: dict[str, float] = {}
    embeddings: dict[str, EvalEmbeddings] = {}
    scores: dict[str, dict[str, SubsetScores]] = {}
    dims_of: dict[str, list[int]] = {}
    for source in sources:
        started = time.perf_counter()
        embeddings[source.name] = embed_eval_set(
            source,
            eval_set,
            store=store,
            batch_size=params.evaluate.batch_size,
            progress=args.progress,
        )
        seconds[f"embed_{source.name}"] = round(time.perf_counter() - started, 2)
        dims_of[source.name] = [int(embeddings[source.name].corpus.shape[1])]
        scores[source.name] = score_eval_set(
            embeddings[source.name], eval_set, ks=ks, dims=dims_of[source.name]
        )
    started = time.perf_counter()
    lexical = score_lexical(eval_set, ks=ks)
    seconds["bm25"] = round(time.perf_counter() - started, 2)
    started = time.perf_counter()
    primary_dim = dims_of[CANDIDATE][0]
    scores[HYBRID], fused = score_hybrid(embeddings[CANDIDATE], eval_set, ks=ks, dim=primary_dim)
    dims_of[HYBRID] = [primary_dim]
    seconds["hybrid"] = round(time.perf_counter() - started, 2)

    started = time.perf_counter()
    sets = sets_block(eval_set, scores, lexical, dims_of, primary_dim=primary_dim, test=test)
    training_texts = (
        set(io.read_parquet(args.trained_on)["text"].astype(str)) if args.trained_on else None
    )
    for query_set, block in sets.items():
        per_query = per_query_rows(query_set, scores, lexical, dims_of)
        block |= intervals_block(per_query, test)
        if training_texts is not None:
            keep = outside_training(eval_set, query_set, training_texts)
            block["outside_training_corpus"] = part_block(per_query, keep, test)
        if query_set == DESCRIBED:
            # A citing sentence's own passage is never ranked; a slogan has none.
            keep = [not eval_set.excluded[row] for row in eval_set.rows_of(query_set)]
            block["slogans"] = part_block(per_query, keep, test)
    seconds["intervals"] = round(time.perf_counter() - started, 2)
    shown_rows = sample_rows(eval_set, DESCRIBED, args.samples)
    samples = first_ranked(
        eval_set,
        shown_rows,
        {name: embeddings[name] for name in (BASE, CANDIDATE)},
        fused[DESCRIBED],
        eval_set.rows_of(DESCRIBED),
    )
    seconds["total"] = round(time.perf_counter() - started_total, 2)
    return {
        "what": "every eval set: base, candidate, BM25 and hybrid (candidate + BM25, RRF)",
        "command": sys.argv,
        "project": str(args.project),
        "slice": (
            None
            if args.max_passages is None and args.max_queries is None
            else {
                "max_passages": args.max_passages,
                "max_queries": args.max_queries,
                "seed": args.seed,
                "note": "a smoke slice: its figures say nothing of quality",
            }
        ),
        "corpus_size": len(eval_set.corpus_ids),
        "masked_passages": len(eval_set.masked_texts),
        "queries_without_relevant": len(eval_set.queries_without_relevant),
        "models": {source.name: source.info for source in sources},
        "dims": dims_of,
        "hybrid": {"dense": CANDIDATE, "rrf_k": RRF_K, "fusion_depth": FUSION_DEPTH},
        "paired_test": {
            "method": test.method,
            "n_resamples": test.n_resamples,
            "seed": test.seed,
            "metric_of_p_value": "mrr@10 (sets_block); comparisons: each metric",
        },
        "intervals": {
            "method": "bootstrap percentile (metrics_rs.paired_test)",
            "confidence": CONFIDENCE,
            "n_resamples": test.n_resamples,
        },
        "sets": sets,
        "described_samples": samples,
        "timing_seconds": seconds,
        "load_average": load_average(),
        "versions": installed_versions("sentence-transformers", "torch", "bm25s", "numpy"),
        "git": git_state(),
    }


def _cell(value: float | None, ci: Sequence[float] | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    shown = f"{value:+.3f}" if signed else f"{value:.3f}"
    return shown if ci is None else f"{shown} [{ci[0]:.3f}, {ci[1]:.3f}]"


def _tables(part: Mapping[str, Any]) -> list[str]:
    """One part's rows (means with intervals) and comparisons as Markdown."""
    head = " | ".join(SET_METRICS)
    lines = [f"| row | {head} |", "|---|" + "---|" * len(SET_METRICS)]
    order = [row for row in ROWS if row in part["scores"]]
    order += [row for row in part["scores"] if row not in ROWS]
    for row in order:
        values = part["scores"][row]
        cells = [_cell(values.get(m), part["mean_ci"][row][m]) for m in SET_METRICS]
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    for name, by_metric in part["comparisons"].items():
        cells = [
            f"{_cell(c['delta'], c['ci'], signed=True)} p={c['p']}"
            for c in (by_metric[m] for m in SET_METRICS)
        ]
        lines.append(f"| {name.replace('_vs_', ' − ')} | " + " | ".join(cells) + " |")
    return lines


def markdown(result: Mapping[str, Any]) -> str:
    """The record's tables: per set, each row's mean [95 % interval] and each comparison's
    difference [interval] with its p; then the set's parts (outside the training corpus,
    slogans)."""
    lines = []
    for query_set, block in result["sets"].items():
        lines += [
            "",
            f"**{query_set}**: {block['n_queries']} queries, query words in a relevant "
            f"passage {block['words_in_relevant']:.1%}",
            "",
            *_tables(block),
        ]
        for part in ("outside_training_corpus", "slogans"):
            # A part holding every query of the set (or none) says nothing new.
            if part in block and 0 < block[part]["n_queries"] < block["n_queries"]:
                label = part.replace("_", " ")
                lines += ["", f"{query_set}, {label}: {block[part]['n_queries']} queries", ""]
                lines += _tables(block[part])
    return "\n".join(lines).lstrip("\n")


def extra_model(value: str) -> tuple[str, Path]:
    """``NAME=DIR`` of ``--extra``."""
    name, sep, folder = value.partition("=")
    if not sep or not name.isidentifier() or name in (*ROWS, "delta", "scores"):
        raise argparse.ArgumentTypeError(f"expected NAME=DIR with a new identifier, got {value!r}")
    return name, Path(folder)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument(
        "--project", type=Path, help="a project where validate has run (data/validated/; required)"
    )
    parser.add_argument("--out", type=Path, help="the JSON record to write (required)")
    parser.add_argument(
        "--render",
        type=Path,
        default=None,
        metavar="JSON",
        help="print a record's tables as Markdown and stop (no scoring)",
    )
    parser.add_argument(
        "--candidate",
        type=Path,
        default=None,
        help="the candidate model folder (default: <project>/models/candidate)",
    )
    parser.add_argument(
        "--base",
        default=None,
        help="the base model (default: the one the candidate's mathembed.json "
        "names, else params.yaml train.base_model)",
    )
    parser.add_argument(
        "--params", type=Path, default=None, help="params.yaml (default: <project>/params.yaml)"
    )
    parser.add_argument(
        "--trained-on",
        type=Path,
        default=None,
        help="the chunks.parquet of the corpus the candidate was trained on: each set is "
        "also scored on the queries none of whose relevant passages is one of its passages",
    )
    parser.add_argument(
        "--extra",
        type=extra_model,
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="another saved model folder to score as a row (compared with the base)",
    )
    parser.add_argument(
        "--max-passages",
        type=int,
        default=None,
        help="score a seeded slice of the corpus this large (a smoke run)",
    )
    parser.add_argument(
        "--max-queries",
        type=int,
        default=None,
        help="at most this many queries of each stored set (a smoke run)",
    )
    parser.add_argument("--seed", type=int, default=0, help="of the slice (default: 0)")
    parser.add_argument(
        "--samples",
        type=int,
        default=10,
        help="described queries shown with what each row ranks first (default: 10)",
    )
    parser.add_argument("--progress", action="store_true", help="show embedding progress")
    args = parser.parse_args()
    if args.render is not None:
        print(markdown(json.loads(args.render.read_text(encoding="utf-8"))))
        return
    if args.project is None or args.out is None:
        parser.error("--project and --out are required (unless --render)")
    offline.apply()
    quiet.silence_library_noise()
    result = run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(to_jsonable(result), indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(markdown(result))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
