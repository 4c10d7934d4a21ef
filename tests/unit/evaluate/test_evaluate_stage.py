"""The evaluate stage (pipelines.evaluate) on tiny BERT models and a tiny synthetic corpus.

Metrics are checked against an independent NumPy ranking scored by ``metrics_rs.evaluate``
(the one definition of the metrics), for the candidate and the base model at every
Matryoshka dimension and for the unseen-papers subset.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from fixtures_models import (  # noqa: F401  (session fixtures)
    build_tiny_sentence_transformer,
    tiny_bert_dir,
)
from typer.testing import CliRunner

import metrics_rs
from pipelines import cli
from pipelines.common.config import EvaluateParams
from pipelines.common.paths import Paths
from pipelines.common.tables import QUERY_SETS, STATEMENTS_SCHEMA
from pipelines.evaluate import eval_set as evaluation_set
from pipelines.evaluate import reports, scoring, sources
from pipelines.evaluate import stage as evaluate
from pipelines.evaluate.headline import PairedTest, per_query_scores
from pipelines.evaluate.stage import EvalOutputs, run_evaluate
from pipelines.registry import candidate_metadata
from pipelines.registry.candidate_metadata import BaseModelSpec
from pipelines.registry.reporting import round_score
from pipelines.retrieval.lexical import LexicalIndex, corpus_digest, load_lexical_index

DIMS = [32, 16, 8]
KS = [1, 5, 10, 100]  # 100 is above the 36-passage corpus: dropped
TOPICS = {
    "algebra": "group ring ideal module algebra field polynomial matrix",
    "graphs": "graph vertex edge color tree path cycle",
    "numbers": "prime number integer series partition identity sum product",
    "topology": "topology homology manifold surface space map",
    "categories": "category functor sheaf set function",
    "probability": "random walk measure hash code lattice order",
}
UNSEEN_PAPERS = {"2401.00002", "2401.00006"}  # the second paper of "algebra" and "numbers"


# --------------------------------------------------------------------------- data


def synthetic_tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """36 passages (6 topics x 2 papers x 3 chunks), 10 queries, qrels = the topic's chunks."""
    rng = np.random.default_rng(5)
    filler = ["the", "a", "of", "and", "in", "is", "to", "for", "with", "on", "by", "that"]
    chunk_rows: list[dict[str, str]] = []
    topic_chunks: dict[str, list[tuple[str, str]]] = {}
    for topic_index, (topic, topic_words) in enumerate(TOPICS.items()):
        topic_chunks[topic] = []
        for paper in range(2):
            paper_id = f"2401.{topic_index * 2 + paper + 1:05d}"
            for index in range(3):
                vocabulary = topic_words.split() * 3 + filler
                text = " ".join(rng.choice(vocabulary, size=18)) + f" {topic_index}{paper}{index}"
                chunk_id = f"{paper_id}v1#c{index:04d}"
                chunk_rows.append({"chunk_id": chunk_id, "paper_id": paper_id, "text": text})
                topic_chunks[topic].append((chunk_id, paper_id))
    chunks = pd.DataFrame(chunk_rows)
    query_rows, qrel_rows = [], []
    for number, topic in enumerate([*TOPICS, "algebra", "graphs", "numbers", "topology"]):
        query_id = f"q{number:02d}"
        words = TOPICS[topic].split()
        text = " ".join(words[number % 3 : number % 3 + 3])
        query_rows.append({"query_id": query_id, "concept": topic, "text": text})
        for position, (chunk_id, paper_id) in enumerate(topic_chunks[topic]):
            grade = 2 if position == 0 else 1
            unseen = paper_id in UNSEEN_PAPERS
            qrel_rows.append(
                {"query_id": query_id, "chunk_id": chunk_id, "grade": grade, "unseen": unseen}
            )
    return chunks, pd.DataFrame(query_rows), pd.DataFrame(qrel_rows)


def write_tables(
    root: Path, chunks: pd.DataFrame, queries: pd.DataFrame, qrels: pd.DataFrame
) -> None:
    folder = Paths(root).validated
    folder.mkdir(parents=True, exist_ok=True)
    chunks.to_parquet(folder / "chunks.parquet", index=False)
    queries.to_parquet(folder / "queries.parquet", index=False)
    qrels.to_parquet(folder / "qrels.parquet", index=False)
    # No statements: every passage is searched as its own text (the independent rankings
    # below read the chunks' text); tests/unit/evaluate/test_eval_set.py heads passages.
    STATEMENTS_SCHEMA.empty_table().to_pandas().to_parquet(
        folder / "statements.parquet", index=False
    )
    papers_of(chunks).to_parquet(folder / "papers.parquet", index=False)


def papers_of(chunks: pd.DataFrame) -> pd.DataFrame:
    """Each paper titled by its topic, its abstract two sentences of the topic's words (the
    transfer sets' paper-level queries)."""
    topic_of = {
        f"2401.{index * 2 + paper + 1:05d}": topic
        for index, topic in enumerate(TOPICS)
        for paper in range(2)
    }
    papers = sorted(set(chunks["paper_id"]))
    return pd.DataFrame(
        {
            "paper_id": papers,
            "title": [f"On {topic_of[paper]}" for paper in papers],
            "abstract": [
                f"We study the {TOPICS[topic_of[paper]]}. It is {paper}." for paper in papers
            ],
        }
    )


@dataclass(frozen=True)
class Models:
    candidate: Path
    champion: Path
    base: BaseModelSpec


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory, tiny_bert_dir: Path) -> Models:  # noqa: F811
    folder = tmp_path_factory.mktemp("eval-models")
    # Different seeds: three models that rank differently, so deltas are not all zero.
    candidate = build_tiny_sentence_transformer(folder / "candidate", seed=1)
    champion = build_tiny_sentence_transformer(folder / "champion", seed=2)
    return Models(candidate, champion, BaseModelSpec(str(tiny_bert_dir), "mean", 64))


def install_candidate(root: Path, models: Models, metadata: dict[str, Any] | None = None) -> Path:
    target = root / "models" / "candidate"
    shutil.copytree(models.candidate, target)
    if metadata is None:
        metadata = {
            "fingerprint": "recorded-by-train",
            "base_model": models.base.name_or_path,
            "params": {"pooling": "mean", "max_seq_length": 64},
            "matryoshka_dims": DIMS,
            "data_hash": "test",
        }
    (target / "mathembed.json").write_text(json.dumps(metadata), encoding="utf-8")
    return target


def make_root(root: Path, models: Models) -> Path:
    write_tables(root, *synthetic_tables())
    install_candidate(root, models)
    return root


#: These projects hold no foreign corpus (tests/unit/evaluate/test_foreign.py has one).
NO_FOREIGN: tuple[str, ...] = ()
PARAMS = EvaluateParams(ks=tuple(KS), batch_size=8, foreign_corpora=NO_FOREIGN)
PAIRED_TEST = PairedTest("randomization", 2000, 7, "mrr@10")


def no_figures(root: Path) -> EvalOutputs:
    """The default outputs without the PNGs: drawing them is the slow part of a tiny run."""
    return EvalOutputs.default(Paths(root), figures=False)


@pytest.fixture(scope="module")
def evaluated(
    tmp_path_factory: pytest.TempPathFactory, models: Models
) -> tuple[Path, evaluate.EvalReport]:
    """One run with a champion, shared by the tests that only read its outputs."""
    root = make_root(tmp_path_factory.mktemp("evaluated"), models)
    report = run_evaluate(
        PARAMS,
        Paths(root),
        extra_models={"champion": models.champion},
        paired_test=PAIRED_TEST,
        progress=False,
    )
    return root, report


# --------------------------------------------------------------------------- independent scoring


def st_model(path: Path) -> Any:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(path), device="cpu")


@pytest.fixture(scope="module")
def loaded(models: Models) -> dict[str, Any]:
    """The three models, loaded here independently of pipelines.evaluate and .models."""
    return {
        "candidate": st_model(models.candidate),
        "base": base_model(models.base),
        "champion": st_model(models.champion),
    }


def base_model(spec: BaseModelSpec) -> Any:
    """The base model built here by hand, not through pipelines.retrieval.models."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    transformer = Transformer(spec.name_or_path, max_seq_length=spec.max_seq_length)
    pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode=spec.pooling)
    return SentenceTransformer(modules=[transformer, pooling], device="cpu")


def numpy_ranking(model: Any, queries: list[str], corpus: list[str], dim: int) -> np.ndarray:
    def unit(texts: list[str]) -> np.ndarray:
        matrix = np.asarray(model.encode(texts, convert_to_numpy=True), dtype=np.float64)[:, :dim]
        unit_rows: np.ndarray = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
        return unit_rows

    scores = unit(queries) @ unit(corpus).T
    # Stable sort on -score: ties go to the lower corpus index, as metrics_rs documents.
    ranking: np.ndarray = np.argsort(-scores, axis=1, kind="stable")
    return ranking


def independent_metrics(
    model: Any, dim: int, subset: str = "all"
) -> tuple[dict[str, float], np.ndarray]:
    chunks, queries, qrels = synthetic_tables()
    row_of = {chunk_id: row for row, chunk_id in enumerate(chunks["chunk_id"])}
    ranking = numpy_ranking(model, queries["text"].tolist(), chunks["text"].tolist(), dim)
    judged, rankings = [], []
    for row, query_id in enumerate(queries["query_id"]):
        mine = qrels[qrels["query_id"] == query_id]
        if subset == "unseen":
            inside, outside = mine[mine["unseen"]], mine[~mine["unseen"]]
        else:
            inside, outside = mine, mine.iloc[0:0]
        if inside.empty:
            continue
        dropped = {row_of[c] for c in outside["chunk_id"]}
        judged.append(
            {row_of[c]: int(g) for c, g in zip(inside["chunk_id"], inside["grade"], strict=True)}
        )
        kept = [doc for doc in ranking[row] if doc not in dropped]
        rankings.append(kept)
    width = min(len(r) for r in rankings)
    ks = [k for k in KS if k <= width]
    matrix = np.asarray([r[:width] for r in rankings], dtype=np.int64)
    result = metrics_rs.evaluate(matrix, judged, ks, per_query=True)
    return result["means"], result["per_query"]["mrr@10"]


# --------------------------------------------------------------------------- correctness


@pytest.mark.parametrize("dim", DIMS)
def test_metrics_equal_an_independent_numpy_ranking(
    evaluated: tuple[Path, evaluate.EvalReport], loaded: dict[str, Any], dim: int
) -> None:
    root, _report = evaluated
    summary = json.loads((root / "metrics" / "eval.json").read_text())
    for name, model in loaded.items():
        expected, _ = independent_metrics(model, dim)
        got = summary[name][f"dim_{dim}"]
        assert set(got) == set(expected)
        for metric, value in expected.items():
            assert got[metric] == round_score(value), (name, dim, metric)


def test_unseen_subset_matches_independent_scoring(
    evaluated: tuple[Path, evaluate.EvalReport], loaded: dict[str, Any]
) -> None:
    root, _ = evaluated
    unseen = json.loads((root / "metrics" / "eval.json").read_text())["subsets"]["unseen"]
    _, _, qrels = synthetic_tables()
    assert unseen["n_queries"] == qrels.loc[qrels["unseen"], "query_id"].nunique() == 4
    expected, _ = independent_metrics(loaded["candidate"], 16, subset="unseen")
    for metric, value in expected.items():
        assert unseen["candidate"]["dim_16"][metric] == round_score(value)
    assert set(unseen) >= {"candidate", "base", "champion", "delta", "ks"}
    seen = json.loads((root / "metrics" / "eval.json").read_text())["subsets"]["seen"]
    assert seen["n_queries"] == 10


def test_eval_json_has_both_models_every_dim_and_the_deltas(
    evaluated: tuple[Path, evaluate.EvalReport], models: Models
) -> None:
    root, report = evaluated
    summary = json.loads((root / "metrics" / "eval.json").read_text())
    assert summary == json.loads(json.dumps(report.summary))
    assert summary["corpus_size"] == 36 and summary["n_queries"] == 10
    assert summary["ks"] == [1, 5, 10]  # 100 > corpus size: dropped
    assert summary["dims"] == DIMS and summary["primary_dim"] == 32
    for model in ("candidate", "base", "champion"):
        assert sorted(summary[model]) == sorted(f"dim_{d}" for d in DIMS)
        assert {"mrr@10", "ndcg@10", "recall@5", "precision@1", "map@10", "hit@5"} <= set(
            summary[model]["dim_8"]
        )
    for reference in ("base", "champion"):
        for dim_key, metrics in summary["delta"][reference].items():
            for metric, delta in metrics.items():
                expected = (
                    summary["candidate"][dim_key][metric] - summary[reference][dim_key][metric]
                )
                assert delta == round_score(expected)  # of the numbers the file shows
    # Truncation changes the ranking: the three dims do not all score the same.
    assert len({summary["candidate"][f"dim_{d}"]["ndcg@10"] for d in DIMS}) > 1
    assert set(summary["timing_seconds"]) == {"embedding", "knn", "metrics", "reports", "total"}
    assert summary["models"]["base"]["source"] == models.base.name_or_path
    assert summary["models"]["champion"]["source"] == str(models.champion)


def test_each_sets_headline_is_its_rounded_primary_dim_with_its_paired_p_value(
    evaluated: tuple[Path, evaluate.EvalReport],
) -> None:
    root, report = evaluated
    sets_dir = root / "metrics"
    assert [found.query_set for found in report.headlines] == list(QUERY_SETS)
    # described has no queries here: its file is there (a DVC output), its scores null
    assert json.loads((sets_dir / "described.json").read_text()) == {
        "queries": 0,
        **dict.fromkeys(["mrr@10", "ndcg@10", "base_mrr@10", "base_ndcg@10", "p_mrr@10"]),
    }
    per_query = report.per_query
    for found in report.headlines[:2]:
        text = (sets_dir / f"{found.query_set}.json").read_text()
        written = json.loads(text)
        assert written == found.to_json()
        # The same keys for every set (the file names the set): one dvc row per set.
        assert list(written) == [
            "queries",
            *("mrr@10", "ndcg@10"),
            *("base_mrr@10", "base_ndcg@10"),
            "p_mrr@10",
        ]
        assert written["queries"] == 10
        block = report.summary["sets"][found.query_set]
        for metric in ("mrr@10", "ndcg@10"):
            assert written[metric] == block["scores"]["candidate"][metric]
            assert written[f"base_{metric}"] == block["scores"]["base"][metric]
        expected = metrics_rs.paired_test(
            per_query_scores(per_query, "candidate", 32, "mrr@10", found.query_set),
            per_query_scores(per_query, "base", 32, "mrr@10", found.query_set),
            method="randomization",
            n_resamples=2000,
            seed=7,
        )["p_value"]
        assert written["p_mrr@10"] == float(f"{expected:.2g}")
        assert len(text) < 200  # a DVC metric a person reads whole
    named = json.loads((sets_dir / "named.json").read_text())
    summary = report.summary
    for metric in ("mrr@10", "ndcg@10"):  # the named set is eval.json's top-level block
        assert named[metric] == summary["candidate"]["dim_32"][metric]
        assert named[f"base_{metric}"] == summary["base"]["dim_32"][metric]


def test_metrics_csv_is_every_score_of_eval_json_as_a_tidy_table(
    evaluated: tuple[Path, evaluate.EvalReport],
) -> None:
    root, report = evaluated
    table = pd.read_csv(root / "reports" / "eval" / "metrics.csv")
    assert list(table.columns) == ["subset", "model", "dim", "metric", "k", "value"]
    summary = report.summary
    # all + seen + unseen, 3 models, 3 dims, 6 families x 3 ks
    assert len(table) == 3 * 3 * len(DIMS) * 18
    assert not table.duplicated(["subset", "model", "dim", "metric", "k"]).any()
    for row in table.itertuples():
        block = summary if row.subset == "named" else summary["subsets"][row.subset]
        expected = block[row.model][f"dim_{row.dim}"][f"{row.metric}@{row.k}"]
        assert row.value == pytest.approx(expected, abs=1e-12)
    # Cut-offs sort as numbers: @1, @5, @10 (not the text order @1, @10, @5).
    candidate_mrr = table[
        (table["subset"] == "named")
        & (table["model"] == "candidate")
        & (table["dim"] == 32)
        & (table["metric"] == "mrr")
    ]
    assert candidate_mrr["k"].tolist() == [1, 5, 10]


def test_per_query_table_is_aligned_with_the_queries(
    evaluated: tuple[Path, evaluate.EvalReport], loaded: dict[str, Any]
) -> None:
    root, report = evaluated
    table = pd.read_parquet(root / "metrics" / "eval_per_query.parquet")
    assert list(table.columns) == ["set", "query_id", "model", "dim", "metric", "value"]
    # named queries only here; masked asks the same ones against the masked corpus, the
    # transfer sets them and the papers' titles and abstracts against the plain windows
    assert set(table["set"]) == {"named", "masked", "transfer_papers", "transfer_named"}
    table = table[table["set"] == "named"]
    assert str(table["dim"].dtype) == "int64" and str(table["value"].dtype) == "float64"
    query_ids = synthetic_tables()[1]["query_id"].tolist()
    summary = report.summary
    groups = table.groupby(["model", "dim", "metric"], sort=False)
    assert len(groups) == 3 * len(DIMS) * 18  # models x dims x (6 families x 3 ks)
    for (model, dim, metric), rows in groups:
        assert rows["query_id"].tolist() == query_ids
        expected = summary[str(model)][f"dim_{dim}"][metric]
        assert round_score(rows["value"].mean()) == expected
    _, expected_mrr = independent_metrics(loaded["candidate"], 32)
    np.testing.assert_allclose(
        per_query_scores(table, "candidate", 32, "mrr@10"), expected_mrr, atol=1e-9
    )
    with pytest.raises(KeyError, match="no per-query"):
        per_query_scores(table, "candidate", 7, "mrr@10")


def test_plot_data_for_dvc(evaluated: tuple[Path, evaluate.EvalReport]) -> None:
    root, report = evaluated
    reports = root / "reports" / "eval"
    compare = pd.read_csv(reports / "compare.csv")
    assert list(compare.columns) == ["set", "metric", "candidate", "base", "champion"]
    named = compare[compare["set"] == "named"]
    assert len(named) == 18
    mrr = named.set_index("metric").loc["mrr@10"]
    # eval.json's scores are rounded; the figures' data is not
    assert mrr["base"] == pytest.approx(report.summary["base"]["dim_32"]["mrr@10"], abs=1e-4)
    dims = pd.read_csv(reports / "dims.csv")
    assert dims[dims["set"] == "named"]["dim"].tolist() == DIMS
    assert "champion_ndcg@10" in dims.columns
    all_wins = pd.read_csv(reports / "per_query.csv")
    wins = all_wins[all_wins["set"] == "named"]
    assert wins["query_id"].tolist() == synthetic_tables()[1]["query_id"].tolist()
    for metric in ("mrr@10", "ndcg@10"):
        for reference in ("base", "champion"):
            np.testing.assert_allclose(
                wins[f"delta_{reference}_{metric}"],
                wins[f"candidate_{metric}"] - wins[f"{reference}_{metric}"],
                atol=2e-6,
            )
        assert wins[f"base_{metric}"].mean() == pytest.approx(
            report.summary["base"]["dim_32"][metric], abs=1e-4
        )


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_figures_are_real_pictures(evaluated: tuple[Path, evaluate.EvalReport]) -> None:
    import matplotlib.image

    root, report = evaluated
    names = {path.name for path in report.figures}
    assert names == {"compare.png", "dims.png", "wins_losses.png"}
    for path in report.figures:
        assert path.parent == root / "reports" / "eval"
        width, height = png_size(path)
        assert width >= 800 and height >= 400
        pixels = (matplotlib.image.imread(path) * 255).astype(np.uint8)
        assert pixels.shape[-1] == 4  # RGBA: one uint32 per pixel
        colours = np.unique(pixels.view(np.uint32))
        assert len(colours) > 50, f"{path.name} looks blank"
    # A row of wins/losses panels per reference model (base, champion) and headline metric.
    assert png_size(root / "reports" / "eval" / "wins_losses.png")[1] > 4 * 300
    assert all(png_size(path)[0] <= 1440 for path in report.figures)


# --------------------------------------------------------------------------- cache


@pytest.fixture
def encode_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    from sentence_transformers import SentenceTransformer

    counts = {"encode": 0, "load": 0}
    original_encode = SentenceTransformer.encode
    original_init = SentenceTransformer.__init__

    def encode(self: Any, *args: Any, **kwargs: Any) -> Any:
        counts["encode"] += 1
        return original_encode(self, *args, **kwargs)

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        counts["load"] += 1
        original_init(self, *args, **kwargs)

    monkeypatch.setattr(SentenceTransformer, "encode", encode)
    monkeypatch.setattr(SentenceTransformer, "__init__", init)
    yield counts


def test_the_store_prevents_re_embedding_across_runs(
    tmp_path: Path, models: Models, encode_calls: dict[str, int]
) -> None:
    root = make_root(tmp_path, models)
    first = run_evaluate(PARAMS, Paths(root), outputs=no_figures(root), progress=False)
    # 2 models x (queries, corpus, masked passages, the papers' questions, plain windows)
    assert encode_calls["encode"] == 10
    first_use = first.summary["embedding_store"]
    assert first_use["reused"] == 0 and first_use["embedded"] > 0
    assert all(use["new_model"] for use in first_use["models"].values())  # says so

    encode_calls.update(encode=0, load=0)
    second = run_evaluate(PARAMS, Paths(root), outputs=no_figures(root), progress=False)
    assert encode_calls == {"encode": 0, "load": 0}  # all stored: no model even loaded
    second_use = second.summary["embedding_store"]
    assert second_use["embedded"] == 0 and second_use["reused"] >= first_use["embedded"]
    assert not any(use["new_model"] for use in second_use["models"].values())
    for model in ("candidate", "base"):
        assert second.summary[model] == first.summary[model]

    # One passage changes: that passage alone is embedded again (per model), not the corpus.
    chunks, queries, qrels = synthetic_tables()
    chunks.loc[0, "text"] = "a changed passage about a prime number"
    write_tables(root, chunks, queries, qrels)
    encode_calls.update(encode=0, load=0)
    third = run_evaluate(PARAMS, Paths(root), outputs=no_figures(root), progress=False)
    assert encode_calls["encode"] == 4  # per model: the passage and its paper's window
    third_use = third.summary["embedding_store"]
    assert third_use["models"]["candidate"]["embedded"] == 2
    assert third_use["models"]["base"]["embedded"] == 2


def test_without_the_store_every_run_embeds(
    tmp_path: Path, models: Models, encode_calls: dict[str, int]
) -> None:
    root = make_root(tmp_path, models)
    params = EvaluateParams(
        ks=(1, 5), dims=(16,), batch_size=8, cache=False, foreign_corpora=NO_FOREIGN
    )
    run_evaluate(params, Paths(root), outputs=no_figures(root), progress=False)
    run_evaluate(params, Paths(root), outputs=no_figures(root), progress=False)
    # 2 runs x 2 models x (queries, corpus, masked, the papers' questions, plain windows)
    assert encode_calls["encode"] == 20
    assert not (root / "data" / "embeddings").exists()


def test_the_embedding_progress_reaches_the_flow_log(tmp_path: Path, models: Models) -> None:
    """The nightly flow logs each output line of ``dvc repro evaluate``, which runs
    ``mathembed evaluate`` (``flows.processes.run_in_group``, the flow's ``dvc`` step): the
    embedding's progress and what the store reused must be among those lines, not only
    drawn on a terminal."""
    from flows.orchestration import dvc_environment
    from flows.processes import run_in_group

    root = make_root(tmp_path, models)
    # Two texts a batch: the 36 passages are embedded in chunks of 16, with progress lines.
    (root / "params.yaml").write_text(
        "evaluate:\n  ks: [1, 5]\n  batch_size: 2\n  foreign_corpora: []\n"
    )
    lines: list[str] = []
    command = [sys.executable, "-m", "pipelines", "evaluate", "--root", str(root)]
    finished = run_in_group(
        [*command, "--no-figures"], root, dvc_environment(), lines.append, timeout_seconds=300
    )
    assert finished.code == 0, lines[-20:]
    assert "embedded 16/36 passages (candidate) (44 %)" in "\n".join(lines)
    assert any(line.startswith("embedded 36 passages (candidate) in ") for line in lines)
    assert "evaluate: candidate is a new model: all " in "\n".join(lines)


# --------------------------------------------------------------------------- options


def test_dims_from_params_override_and_the_full_dim_is_always_scored(
    tmp_path: Path, models: Models
) -> None:
    root = make_root(tmp_path, models)
    params = EvaluateParams(ks=(1, 10), dims=(4,), batch_size=8, foreign_corpora=NO_FOREIGN)
    report = run_evaluate(params, Paths(root), outputs=no_figures(root), progress=False)
    assert report.figures == [] and not (root / "reports" / "eval" / "dims.png").exists()
    assert (root / "reports" / "eval" / "dims.csv").is_file()
    assert report.summary["dims"] == [32, 4]
    assert sorted(report.summary["base"]) == ["dim_32", "dim_4"]


def test_dims_default_to_the_full_dim_without_matryoshka_metadata(
    tmp_path: Path, models: Models
) -> None:
    write_tables(tmp_path, *synthetic_tables())
    install_candidate(tmp_path, models, metadata={})
    params = EvaluateParams(ks=(1, 10), batch_size=8, foreign_corpora=NO_FOREIGN)
    report = run_evaluate(
        params,
        Paths(tmp_path),
        base_model=models.base,
        outputs=no_figures(tmp_path),
        progress=False,
    )
    assert report.summary["dims"] == [32]


def test_outputs_can_go_elsewhere(tmp_path: Path, models: Models) -> None:
    root = make_root(tmp_path / "root", models)
    elsewhere = EvalOutputs(
        metrics_file=tmp_path / "out" / "eval.json",
        metrics_dir=tmp_path / "out",
        per_query_file=tmp_path / "out" / "per_query.parquet",
        reports_dir=tmp_path / "out" / "reports",
        figures=False,
    )
    params = EvaluateParams(ks=(1, 10), dims=(16,), batch_size=8, foreign_corpora=NO_FOREIGN)
    run_evaluate(params, Paths(root), outputs=elsewhere, progress=False)
    assert elsewhere.metrics_file.is_file() and elsewhere.per_query_file.is_file()
    assert (tmp_path / "out" / "named.json").is_file()
    assert (elsewhere.reports_dir / "compare.csv").is_file()
    assert (elsewhere.reports_dir / "metrics.csv").is_file()
    assert not (root / "metrics").exists() and not (root / "reports").exists()


def test_matryoshka_dims_are_read_from_top_level_or_params() -> None:
    assert candidate_metadata.matryoshka_dims_of({"matryoshka_dims": [32, 16]}) == [32, 16]
    assert candidate_metadata.matryoshka_dims_of({"params": {"matryoshka_dims": [8]}}) == [8]
    assert candidate_metadata.matryoshka_dims_of({}) == []
    with pytest.raises(ValueError, match="positive ints"):
        candidate_metadata.matryoshka_dims_of({"matryoshka_dims": [16, "8"]})


def test_headline_metrics_fall_back_on_a_small_corpus() -> None:
    assert reports.headline_metrics([1, 5, 10, 100]) == ["mrr@10", "ndcg@10"]
    assert reports.headline_metrics([1, 5]) == ["mrr@5", "ndcg@5"]


def test_effective_ks_drop_cut_offs_above_the_corpus() -> None:
    assert scoring.effective_ks([100, 1, 10, 5], 36) == [1, 5, 10]
    assert scoring.effective_ks([100], 36) == [36]
    with pytest.raises(ValueError, match="evaluate.ks"):
        scoring.effective_ks([0, 5], 36)


# --------------------------------------------------------------------------- subsets (pure)


def test_subset_removes_the_other_side_s_relevant_chunks_from_the_ranking() -> None:
    # Corpus rows: 0 seen-relevant, 1 unseen-relevant, 2-4 irrelevant; the query is closest
    # to row 0, then row 1.
    corpus = np.eye(5, dtype=np.float32)
    query = np.array([[1.0, 0.9, 0.1, 0.05, 0.0]], dtype=np.float32)
    eval_set = evaluation_set.EvalSet(
        corpus_ids=[f"c{i}" for i in range(5)],
        corpus_texts=[""] * 5,
        query_ids=["q"],
        query_texts=[""],
        qrels=[{0: 1, 1: 1, 2: 0}],
        unseen_docs=[frozenset({1})],
        queries_without_relevant=[],
    )
    subsets = [eval_set.subset(name) for name in ("named", "seen", "unseen")]
    scores = scoring.score_model(query, corpus, subsets, ks=[1, 2], dims=[5])
    assert scores["named"].means[5]["mrr@2"] == 1.0
    assert scores["named"].means[5]["recall@2"] == 1.0
    # Unseen: row 0 is relevant (just not from an unseen paper), so it is dropped from the
    # ranking rather than counted as a miss; row 1 comes first.
    assert scores["unseen"].means[5]["mrr@1"] == 1.0
    assert scores["seen"].means[5]["mrr@1"] == 1.0
    assert scores["unseen"].n_queries == scores["seen"].n_queries == 1
    # Judged-irrelevant chunks (grade 0) are kept in both subsets.
    assert eval_set.subset("unseen").qrels == [{1: 1, 2: 0}]
    assert eval_set.subset("unseen").excluded == [frozenset({0})]


def test_a_subset_with_no_queries_is_reported_empty() -> None:
    eval_set = evaluation_set.EvalSet(
        corpus_ids=["a", "b"],
        corpus_texts=["", ""],
        query_ids=["q"],
        query_texts=[""],
        qrels=[{0: 1}],
        unseen_docs=[frozenset()],
        queries_without_relevant=[],
    )
    unseen = eval_set.subset("unseen")
    assert unseen.rows.tolist() == [] and unseen.qrels == []
    with pytest.raises(ValueError, match="unknown subset"):
        eval_set.subset("everything")


# --------------------------------------------------------------------------- bad inputs


def tables_with(**changes: pd.DataFrame) -> dict[str, pd.DataFrame]:
    chunks, queries, qrels = synthetic_tables()
    tables = {"chunks": chunks, "queries": queries, "qrels": qrels}
    tables.update(changes)
    return tables


def test_queries_without_a_relevant_chunk_are_left_out_and_counted() -> None:
    chunks, queries, qrels = synthetic_tables()
    # q00: only judged non-relevant; q01: no qrels at all.
    qrels.loc[qrels["query_id"] == "q00", "grade"] = 0
    qrels = qrels[qrels["query_id"] != "q01"]
    eval_set = evaluation_set.build_eval_set(chunks, queries, qrels)
    assert eval_set.queries_without_relevant == ["q00", "q01"]
    assert len(eval_set.query_ids) + len(eval_set.queries_without_relevant) == len(queries)
    assert "q00" not in eval_set.query_ids and len(eval_set.qrels) == len(eval_set.query_ids)


@pytest.mark.parametrize(
    ("case", "pattern"),
    [
        (
            "unknown_chunk",
            r"qrels\.parquet: 1 chunk_id\(s\) not in .*chunks\.parquet: "
            r"'2499\.99999v1#c0000'.*make repro",
        ),
        ("unknown_query", r"qrels\.parquet: 1 query_id\(s\) not in .*queries\.parquet.*'q99'"),
        ("duplicate_qrel", r"qrels\.parquet: \(query_id, chunk_id\) judged more than once"),
        ("duplicate_chunk", r"chunks\.parquet: duplicate chunk_id"),
        ("duplicate_query", r"queries\.parquet: duplicate query_id 'q00'"),
        ("empty_queries", r"queries\.parquet: no evaluation queries.*make repro"),
        ("empty_corpus", r"chunks\.parquet: the corpus is empty"),
        ("missing_column", r"qrels\.parquet: missing column\(s\) \['unseen'\]"),
        ("nothing_relevant", r"qrels\.parquet: none of the 10 queries .* relevant"),
    ],
)
def test_bad_tables_name_the_file_and_the_fix(tmp_path: Path, case: str, pattern: str) -> None:
    chunks, queries, qrels = synthetic_tables()
    if case == "unknown_chunk":
        extra = {"query_id": "q03", "chunk_id": "2499.99999v1#c0000", "grade": 1, "unseen": False}
        qrels = pd.concat([qrels, pd.DataFrame([extra])], ignore_index=True)
    elif case == "unknown_query":
        extra = {"query_id": "q99", "chunk_id": chunks["chunk_id"][0], "grade": 1, "unseen": False}
        qrels = pd.concat([qrels, pd.DataFrame([extra])], ignore_index=True)
    elif case == "duplicate_qrel":
        qrels = pd.concat([qrels, qrels.iloc[[3]]], ignore_index=True)
    elif case == "duplicate_chunk":
        chunks = pd.concat([chunks, chunks.iloc[[0]]], ignore_index=True)
    elif case == "duplicate_query":
        queries = pd.concat([queries, queries.iloc[[0]]], ignore_index=True)
    elif case == "empty_queries":
        queries, qrels = queries.iloc[0:0], qrels.iloc[0:0]
    elif case == "empty_corpus":
        chunks, qrels = chunks.iloc[0:0], qrels.iloc[0:0]
    elif case == "missing_column":
        qrels = qrels.drop(columns=["unseen"])
    elif case == "nothing_relevant":
        qrels = qrels.assign(grade=0)
    write_tables(tmp_path, chunks, queries, qrels)
    # The tables are checked before any model is looked at: no candidate needed here.
    with pytest.raises(ValueError, match=pattern):
        run_evaluate(PARAMS, Paths(tmp_path), progress=False)


def test_a_missing_validated_table_names_the_file(tmp_path: Path, models: Models) -> None:
    make_root(tmp_path, models)
    (Paths(tmp_path).validated / "qrels.parquet").unlink()
    with pytest.raises(FileNotFoundError, match=r"data/validated/qrels\.parquet not found.*repro"):
        run_evaluate(PARAMS, Paths(tmp_path), progress=False)


def test_a_missing_candidate_says_how_to_train_one(tmp_path: Path) -> None:
    write_tables(tmp_path, *synthetic_tables())
    with pytest.raises(
        FileNotFoundError, match=r"candidate model .*models/candidate not found.*dvc repro train"
    ):
        run_evaluate(PARAMS, Paths(tmp_path), progress=False)
    (tmp_path / "models" / "candidate").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="is not a sentence-transformers model"):
        run_evaluate(PARAMS, Paths(tmp_path), progress=False)


def test_a_candidate_without_a_base_model_is_refused(tmp_path: Path, models: Models) -> None:
    write_tables(tmp_path, *synthetic_tables())
    install_candidate(tmp_path, models, metadata={"matryoshka_dims": DIMS})
    with pytest.raises(ValueError, match=r"mathembed\.json does not name the base model"):
        run_evaluate(PARAMS, Paths(tmp_path), progress=False)


def test_dims_above_the_model_s_dimension_are_refused(tmp_path: Path, models: Models) -> None:
    root = make_root(tmp_path, models)
    with pytest.raises(ValueError, match=r"dims \[64\] exceed the candidate's dimension 32"):
        run_evaluate(
            EvaluateParams(dims=(64, 16), foreign_corpora=NO_FOREIGN), Paths(root), progress=False
        )


@pytest.mark.parametrize("name", ["candidate", "base", "delta", "subsets", "bad name"])
def test_extra_model_names_may_not_clash(tmp_path: Path, models: Models, name: str) -> None:
    with pytest.raises(ValueError, match="is not allowed"):
        run_evaluate(PARAMS, Paths(tmp_path), extra_models={name: models.champion}, progress=False)


def test_a_diverged_model_is_reported_not_scored(tmp_path: Path, models: Models) -> None:
    import torch

    root = make_root(tmp_path, models)
    candidate_dir = root / "models" / "candidate"
    model = st_model(candidate_dir)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.fill_(float("nan"))
    model.save(str(candidate_dir))
    with pytest.raises(ValueError, match=r"candidate model \(.*candidate\): .*NaN.*retrain"):
        run_evaluate(PARAMS, Paths(root), progress=False)
    assert not (root / "metrics" / "eval.json").exists()


# --------------------------------------------------------------------------- CLI


def write_params(root: Path) -> Path:
    path = root / "params.yaml"
    path.write_text(
        "evaluate:\n  ks: [1, 10]\n  dims: [16]\n  batch_size: 8\n  foreign_corpora: []\n",
        encoding="utf-8",
    )
    return path


def test_main_runs_the_stage_and_prints_the_headline(tmp_path: Path, models: Models) -> None:
    root = make_root(tmp_path, models)
    argv = ["--root", str(root), "--params", str(write_params(root)), "--no-figures"]
    result = CliRunner().invoke(cli.app, ["evaluate", *argv])
    out = result.stdout
    assert result.exit_code == 0, result.output
    named = json.loads((root / "metrics" / "named.json").read_text())
    masked = json.loads((root / "metrics" / "masked.json").read_text())
    assert "36 passages" in out
    assert (
        f"named (10 queries): mrr@10 {named['mrr@10']:.4f} vs {named['base_mrr@10']:.4f}, "
        f"ndcg@10 {named['ndcg@10']:.4f} vs {named['base_ndcg@10']:.4f}"
    ) in out
    assert f"masked (10 queries): mrr@10 {masked['mrr@10']:.4f}" in out
    # The CLI runs promote's paired test (params.yaml defaults): a p-value per set with
    # queries (named, masked and the two transfer sets), once.
    assert isinstance(named["p_mrr@10"], float) and out.count("p = ") + out.count("p < ") == 4
    assert json.loads((root / "metrics" / "eval.json").read_text())["dims"] == [32, 16]
    assert not (root / "reports" / "eval" / "compare.png").exists()


def test_main_reports_a_missing_candidate_and_exits_1(tmp_path: Path) -> None:
    write_tables(tmp_path, *synthetic_tables())
    argv = ["--root", str(tmp_path), "--params", str(write_params(tmp_path))]
    result = CliRunner().invoke(cli.app, ["evaluate", *argv])
    assert result.exit_code == 1
    assert "evaluate: candidate model" in result.stderr


def test_main_falls_back_to_params_train_when_the_candidate_names_no_base(
    tmp_path: Path, models: Models
) -> None:
    write_tables(tmp_path, *synthetic_tables())
    install_candidate(tmp_path, models, metadata={})
    params = write_params(tmp_path)
    with params.open("a", encoding="utf-8") as handle:
        handle.write(
            f"train:\n  base_model: {models.base.name_or_path}\n  pooling: mean\n"
            "  max_seq_length: 64\n"
        )
    argv = ["--root", str(tmp_path), "--params", str(params), "--no-figures"]
    result = CliRunner().invoke(cli.app, ["evaluate", *argv])
    assert result.exit_code == 0, result.stderr
    summary = json.loads((tmp_path / "metrics" / "eval.json").read_text())
    assert summary["models"]["base"]["source"] == models.base.name_or_path
    assert summary["models"]["base"]["pooling"] == "mean"


def test_a_base_model_that_is_not_available_offline_is_named() -> None:
    from pipelines.retrieval.models import ModelLoadError

    spec = BaseModelSpec("no-such-org/no-such-model", "cls", 64)
    with pytest.raises(ModelLoadError, match=r"'no-such-org/no-such-model'.*snapshot_download"):
        sources.base_model_source(spec)


def test_a_recorded_pooling_must_be_one_train_knows() -> None:
    metadata = {"base_model": "x", "params": {"pooling": "max", "max_seq_length": 64}}
    with pytest.raises(ValueError, match=r"params.pooling 'max' is not one of \['cls', 'mean'\]"):
        candidate_metadata.base_spec_from_metadata(metadata)
    assert candidate_metadata.base_spec_from_metadata({"base_model": "x"}) is None


# --------------------------------------------------------------------------- BM25's indexes

NAMES = ["prime number", "chromatic polynomial", "abelian group", "lattice", "sheaf"]


def masked_eval_set() -> evaluation_set.EvalSet:
    """40 passages; each name's three relevant passages say it, so masking changes them."""
    rng = np.random.default_rng(11)
    filler = [
        "the",
        "of",
        "a",
        "group",
        "ring",
        "graph",
        "vertex",
        "number",
        "field",
        "space",
        "map",
        "order",
        "set",
        "prime",
    ]
    texts, qrel_rows = [], []
    for row in range(40):
        words = list(rng.choice(filler, size=12))
        name = NAMES[row % len(NAMES)]
        if row < 3 * len(NAMES):  # the first 15 passages are relevant to a name
            words.insert(int(rng.integers(0, 12)), name)
            qrel_rows.append({"query_id": f"q{row % len(NAMES)}", "chunk_id": f"c{row}"})
        texts.append(" ".join(words))
    chunks = pd.DataFrame({"chunk_id": [f"c{row}" for row in range(40)], "text": texts})
    queries = pd.DataFrame(
        {"query_id": [f"q{i}" for i in range(len(NAMES))], "text": NAMES, "set": "named"}
    )
    qrels = pd.DataFrame(qrel_rows).assign(grade=1, unseen=False)
    return evaluation_set.build_eval_set(chunks, queries, qrels)


def test_bm25_from_the_reused_tokens_equals_indexing_each_corpus_whole() -> None:
    eval_set = masked_eval_set()
    assert len(eval_set.masked_texts) == 15  # the masking changed rows: the case under test
    masked_corpus = [
        eval_set.masked_texts.get(row, text) for row, text in enumerate(eval_set.corpus_texts)
    ]
    rebuilt = scoring.LexicalIndexes(
        LexicalIndex(eval_set.corpus_texts), LexicalIndex(masked_corpus)
    )
    reused = scoring.lexical_indexes(eval_set)
    n_docs = len(eval_set.corpus_texts)
    for query in [*eval_set.query_texts, "group ring field", "vertex"]:
        assert reused.corpus.top(query, n_docs) == rebuilt.corpus.top(query, n_docs)
        assert reused.masked.top(query, n_docs) == rebuilt.masked.top(query, n_docs)
    # Masking moved BM25's ranking: the two indexes differ, and the test can tell them apart.
    assert reused.masked.top("lattice", n_docs) != reused.corpus.top("lattice", n_docs)

    ours = scoring.score_lexical(eval_set, ks=KS)
    theirs = scoring.score_lexical(eval_set, ks=KS, indexes=rebuilt)
    assert ours.keys() == theirs.keys() and ours["masked"].n_queries == len(NAMES)
    for name, expected in theirs.items():
        assert ours[name].means == expected.means  # exactly, not approximately
        for dim, metrics in expected.per_query.items():
            for metric, values in metrics.items():
                np.testing.assert_array_equal(ours[name].per_query[dim][metric], values)


def test_evaluate_keeps_the_corpus_s_bm25_index_for_search_and_not_without_the_cache(
    evaluated: tuple[Path, evaluate.EvalReport], tmp_path: Path, models: Models
) -> None:
    root, _ = evaluated
    texts = pd.read_parquet(Paths(root).validated / "chunks.parquet")["text"].tolist()
    kept = Paths(root).lexical_index
    assert [path.name for path in kept.iterdir()] == [corpus_digest(texts)]
    loaded = load_lexical_index(kept, texts)
    assert loaded is not None
    assert loaded.top("group ring", 36) == LexicalIndex(texts).top("group ring", 36)

    uncached = make_root(tmp_path / "uncached", models)
    params = dataclasses.replace(PARAMS, cache=False)
    run_evaluate(params, Paths(uncached), outputs=no_figures(uncached), progress=False)
    assert not Paths(uncached).lexical_index.exists()


def test_the_corpus_is_scored_as_search_reads_it_and_masking_covers_the_header() -> None:
    lemma = "Given an exact sequence of complexes, there is a long exact sequence."
    chunks = pd.DataFrame(
        {
            "chunk_id": ["p#c0", "p#c1"],
            "paper_id": ["p", "p"],
            "chunk_index": [0, 1],
            "section": ["Homological algebra", "Homological algebra"],
            "text": ["Complexes form an abelian category.", lemma],
        }
    )
    statements = pd.DataFrame(
        {
            "statement_id": ["p#s0"],
            "paper_id": ["p"],
            "kind": ["lemma"],
            "name": [""],
            "label": ["lemma-snake"],
            "text": [lemma],
            "proof": [""],
        }
    )
    queries = pd.DataFrame({"query_id": ["q0"], "text": ["snake lemma"], "set": ["named"]})
    qrels = pd.DataFrame([{"query_id": "q0", "chunk_id": "p#c1", "grade": 2, "unseen": False}])
    eval_set = evaluation_set.build_eval_set(chunks, queries, qrels, statements=statements)
    headed = f"Lemma (snake lemma). Homological algebra.\n\n{lemma}"
    assert eval_set.corpus_texts == ["Complexes form an abelian category.", headed]
    # the name a named query asks for is in the header alone: string matching finds it,
    # and the masked set hides it there too
    assert eval_set.words_in_relevant("named") == 1.0
    assert "snake" not in eval_set.masked_texts[1] and lemma in eval_set.masked_texts[1]
    assert eval_set.words_in_relevant("masked") == 0.0
    # without the statements table the passages are their own text
    plain = evaluation_set.build_eval_set(chunks, queries, qrels)
    assert plain.corpus_texts == chunks["text"].tolist() and plain.masked_texts == {}


def test_a_statements_table_without_its_columns_names_the_fix() -> None:
    chunks, queries, qrels = synthetic_tables()
    with pytest.raises(ValueError, match=r"statements table lacks column\(s\).*make repro"):
        evaluation_set.build_eval_set(
            chunks, queries, qrels, statements=pd.DataFrame({"statement_id": ["s"]})
        )


def test_a_foreign_corpus_is_scored_as_the_transfer_corpus_set(
    tmp_path: Path, models: Models
) -> None:
    """``evaluate.foreign_corpora`` (relative to the root): its queries are scored for every
    model and BM25 among its passages and the windows, with a headline file and p."""
    root = make_root(tmp_path, models)
    folder = root / "corpora" / "foreign"
    folder.mkdir(parents=True)
    topics = list(TOPICS.items())[:3]
    tables = {
        "passages": pd.DataFrame(
            {
                "passage_id": [f"f#c{i}" for i in range(len(topics))],
                "paper_id": ["f"] * len(topics),
                "text": [f"Theorem. On the {words}." for _, words in topics],
            }
        ),
        "queries": pd.DataFrame(
            {
                "query_id": [f"fq{i}" for i in range(len(topics))],
                "text": [words.split()[0] for _, words in topics],
                "set": ["masked"] * len(topics),
                "exclude": [[] for _ in topics],
            }
        ),
        "qrels": pd.DataFrame(
            {
                "query_id": [f"fq{i}" for i in range(len(topics))],
                "passage_id": [f"f#c{i}" for i in range(len(topics))],
                "grade": [1] * len(topics),
            }
        ),
        "papers": pd.DataFrame({"paper_id": ["f"], "content_hash": ["not-the-night's"]}),
    }
    for name, frame in tables.items():
        frame.to_parquet(folder / f"{name}.parquet", index=False)
    params = dataclasses.replace(PARAMS, foreign_corpora=("corpora/foreign",))
    report = run_evaluate(
        params, Paths(root), outputs=no_figures(root), paired_test=PAIRED_TEST, progress=False
    )
    found = report.summary["sets"]["transfer_corpus"]
    assert found["n_queries"] == len(topics)
    assert set(found["scores"]) == {"candidate", "base", "bm25"}
    assert found["p_value"]["base"] is not None
    headline = json.loads((root / "metrics" / "transfer_corpus.json").read_text())
    assert headline["queries"] == len(topics)
    record = report.summary["transfer"]
    assert record["foreign_corpus"]["passages"] == len(topics)
    table = pd.read_parquet(root / "metrics" / "eval_per_query.parquet")
    asked = table[table["set"] == "transfer_corpus"]["query_id"].unique().tolist()
    assert asked == [f"foreign:fq{i}" for i in range(len(topics))]
    # A foreign corpus that is not there stops the stage with the fix, before any model runs.
    missing = dataclasses.replace(PARAMS, foreign_corpora=("corpora/elsewhere",))
    with pytest.raises(ValueError, match="corpora/elsewhere is not a folder"):
        run_evaluate(missing, Paths(root), outputs=no_figures(root), progress=False)
