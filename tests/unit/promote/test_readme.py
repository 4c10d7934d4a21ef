"""The registered model's README: sentence-transformers' own card, as train writes it with
masked training pairs in its widget, comes out with examples from the evaluation set and
its limitation sections written from the run's facts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from pipelines.common.paths import Paths
from pipelines.promote.readme import (
    Example,
    RunFacts,
    finish_readme,
    pick_examples,
    read_run_facts,
)

MASKED_PASSAGE = "We say the action is it if the map is an isomorphism."
QUERIES = pd.DataFrame(
    {
        "query_id": ["n1", "n2", "d1", "d2"],
        "text": ["free action", "group scheme", "flat maps of finite presentation are open", "x"],
        "set": ["named", "named", "described", "described"],
    }
)
QRELS = pd.DataFrame(
    {
        "query_id": ["n1", "n1", "n2", "d1", "d2"],
        "chunk_id": ["c9", "c1", "c2", "c3", "c4"],
        "grade": [1, 2, 2, 2, 2],
    }
)
CHUNKS = pd.DataFrame(
    {
        "chunk_id": ["c1", "c2", "c3", "c4", "c9"],
        "text": [
            "We say the action is free if the map is an isomorphism.",
            "A group scheme over S is a scheme G over S with a group law.",
            "Lemma. A flat morphism locally of finite presentation is universally open.",
            "A much longer passage " * 40,
            "A passage citing it that does not name it.",
        ],
    }
)


@pytest.fixture(scope="module")
def library_readme(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The card sentence-transformers writes for a model whose widget came from training
    pairs with masked passages (as train's does)."""
    from datasets import Dataset
    from fixtures_models import build_tiny_sentence_transformer
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.model_card import generate_model_card

    folder = build_tiny_sentence_transformer(tmp_path_factory.mktemp("card") / "model")
    model = SentenceTransformer(str(folder), device="cpu")
    model.model_card_data.local_files_only = True
    model.model_card_data.generate_widget_examples = False
    pairs = {"anchor": [f"concept {i}" for i in range(8)], "positive": [MASKED_PASSAGE] * 8}
    model.model_card_data.set_widget_examples(Dataset.from_dict(pairs))
    text = generate_model_card(model)
    assert MASKED_PASSAGE in text and "## Bias, Risks and Limitations" in text
    return text


def facts(examples: list[Example]) -> RunFacts:
    return RunFacts(
        base_model="sentence-transformers/all-MiniLM-L6-v2",
        examples=examples,
        papers=16,
        categories=["math.AG"],
        passages=4200,
        pairs_by_kind={"citing": 1055, "name": 431, "masked_name": 392, "edge": 0},
        steps=100,
        epochs=0.77,
        device="cpu (2 threads)",
        queries_by_set={"named": 194, "masked": 194, "described": 198},
    )


def test_examples_are_a_described_and_a_named_query_with_a_passage_that_answers_them() -> None:
    examples = pick_examples(QUERIES, QRELS, CHUNKS)
    assert [example.query_set for example in examples] == ["described", "named", "described"]
    assert examples[0].passage == CHUNKS["text"][2]
    # a named query's passage names it: its best-graded one, never a passage without its name
    named = examples[1]
    assert named.query in ("free action", "group scheme")
    assert re.search(named.query.split()[-1], named.passage)
    assert "does not name it" not in " ".join(example.passage for example in examples)


def test_readme_has_clean_examples_and_written_limitations(library_readme: str) -> None:
    examples = pick_examples(QUERIES, QRELS, CHUNKS)
    finished = finish_readme(library_readme, facts(examples))
    assert MASKED_PASSAGE not in finished
    front = yaml.safe_load(finished.split("---\n")[1])
    assert [entry["source_sentence"] for entry in front["widget"]] == [
        example.query for example in examples
    ]
    assert front["widget"][0]["sentences"][0] == examples[0].passage
    assert front["library_name"] == "sentence-transformers"  # the rest of it kept
    assert json.dumps(examples[0].query) in finished  # the usage snippet's texts
    # the library's empty, commented-out sections are written
    for heading in ("Out-of-Scope Use", "Bias, Risks and Limitations", "Recommendations"):
        assert not re.search(rf"<!--\n#+ {heading}", finished), heading
        assert re.search(rf"\n#+ {heading}\n\n\S", finished), heading
    limitations = finished.split("## Bias, Risks and Limitations")[1].split("\n#")[0]
    assert "16 papers and 4,200 passages, all in one arXiv category (math.AG)" in limitations
    assert "Trained 100 steps (0.77 passes over the pairs) on cpu (2 threads)" in limitations
    assert "392 pairs (21%)" in limitations  # masked_name of 1,878
    assert "no set from papers or text outside it" in limitations
    assert "(named 194, masked 194, described 198 queries)" in limitations
    assert "sentence-transformers/all-MiniLM-L6-v2" in finished.split("### Recommendations")[1]


def test_a_transfer_set_is_said_when_there_is_one(library_readme: str) -> None:
    with_transfer = RunFacts(base_model="b", queries_by_set={"named": 3, "transfer": 5})
    finished = finish_readme(library_readme, with_transfer)
    assert "a transfer set among them" in finished
    assert "no set from papers" not in finished


def test_run_facts_from_the_projects_files(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    paths.metrics.mkdir(parents=True)
    (paths.metrics / "data.json").write_text(
        json.dumps({"papers": 2, "chunks": 5, "pairs": {"by_kind": {"name": 3}}})
    )
    (paths.metrics / "train.json").write_text(
        json.dumps({"steps": 7, "epochs": 1.5, "device": "cpu (2 threads)"})
    )
    (paths.metrics / "eval.json").write_text(
        json.dumps({"sets": {"described": {"n_queries": 2}, "named": {"n_queries": 4}}})
    )
    read = read_run_facts(paths, "base")
    assert (read.papers, read.passages, read.steps, read.epochs) == (2, 5, 7, 1.5)
    assert read.pairs_by_kind == {"name": 3}
    assert list(read.queries_by_set) == ["named", "described"]  # the sets' own order
    assert read.examples == []  # no validated tables: none, not made up
