"""Behavioural checks of a trained model (the model tier): what a user asks of the candidate.

The train stage itself fine-tunes the bundled all-MiniLM-L6-v2 (offline) for a few CPU
steps on concept name -> defining passage pairs; the candidate it writes is then asked
the questions a researcher would type, over a small corpus of real mathematical passages,
ranked exactly as evaluation and search rank (``embed_texts`` + ``metrics_rs.knn``):

* minimum functionality: each concept's name finds its defining passage first;
* invariance: the other ways the same concept is written (an alias, ASCII hyphens for
  en dashes, singular for plural, lower case) find the same passage;
* no damage: a concept the model was never trained on still finds its passage.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import metrics_rs
from pipelines.common import io
from pipelines.common.config import TrainParams
from pipelines.common.paths import Paths
from pipelines.common.tables import PAIRS_SCHEMA, TABLES, write_table
from pipelines.retrieval.embeddings import embed_texts
from pipelines.train.stage import run_train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# concept -> its defining passage; the first five are trained on, the last one is not.
PASSAGES = {
    "Rogers–Ramanujan identities": (
        "For |q| < 1, the sum over n of q^(n^2) / (q;q)_n equals the product over n of "
        "1 / ((1 - q^(5n+1))(1 - q^(5n+4))); the second identity replaces n^2 by n^2 + n "
        "and the residues 1, 4 by 2, 3. Both follow from Bailey's lemma applied to the "
        "unit Bailey pair."
    ),
    "Bailey's lemma": (
        "If (alpha_n, beta_n) is a Bailey pair relative to a, then a new Bailey pair is "
        "obtained by inserting the factors (rho_1)_n (rho_2)_n (aq/rho_1 rho_2)^n; iterating "
        "this produces a Bailey chain of basic hypergeometric identities."
    ),
    "chromatic number": (
        "A proper colouring of a graph assigns colours to its vertices so that adjacent "
        "vertices receive different colours; the least number of colours for which a "
        "proper colouring exists is an invariant of the graph."
    ),
    "Euler characteristic": (
        "For a finite CW complex, the alternating sum of the numbers of cells in each "
        "dimension, V - E + F for a polyhedral surface, depends only on the homotopy type "
        "and equals the alternating sum of the Betti numbers."
    ),
    "Dirichlet's theorem on arithmetic progressions": (
        "If a and d are coprime positive integers then the progression a, a + d, a + 2d, "
        "... contains infinitely many primes; the proof uses characters modulo d and the "
        "non-vanishing of L(1, chi)."
    ),
    "group action": (
        "A group G acts on a set X when each element g gives a map x -> g.x with e.x = x "
        "and g.(h.x) = (gh).x; the orbits partition X and the stabiliser of x is a subgroup."
    ),
}
TRAINED = list(PASSAGES)[:5]
NOT_TRAINED = list(PASSAGES)[5]
# Other ways a researcher writes the same concepts.
VARIANTS = {
    "Rogers-Ramanujan identity": "Rogers–Ramanujan identities",
    "Bailey lemma": "Bailey's lemma",
    "chromatic numbers": "chromatic number",
    "euler characteristic": "Euler characteristic",
    "Dirichlet's theorem on primes in arithmetic progressions": (
        "Dirichlet's theorem on arithmetic progressions"
    ),
}


def training_pairs() -> pd.DataFrame:
    rows = [
        {
            "anchor": concept,
            "positive": PASSAGES[concept],
            "kind": "name",
            "concept": concept,
            "positive_id": f"2401.0000{index}v1#c0000",
            "negative": "",  # plain pairs: what these tests pin is the pairs' own signal
            "negative_id": "",
            "split": "train",
        }
        for index, concept in enumerate(TRAINED)
    ]
    return pd.DataFrame(rows, columns=PAIRS_SCHEMA.names)


@pytest.fixture(scope="module")
def candidate(tmp_path_factory: pytest.TempPathFactory) -> Path:
    paths = Paths(tmp_path_factory.mktemp("behaviour"))
    write_table(TABLES["pairs"].validated_path(paths), training_pairs(), PAIRS_SCHEMA)
    params = TrainParams(
        base_model="offline-minilm",
        pooling="mean",
        batch_size=4,
        max_seq_length=96,
        learning_rate=2e-5,
        epochs=2,
        max_steps=-1,
        logging_steps=1,
        seed=3,
        device="cpu",
        mined_negatives=False,
    )
    report = run_train(params, paths, progress=False)
    assert report.steps > 0 and io.read_json(paths.metric_file("train"))["steps"] == report.steps
    return report.candidate_dir


def top_passage(model_dir: Path, queries: list[str]) -> list[str]:
    """For each query, the concept whose defining passage ranks first."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(model_dir), device="cpu")
    concepts = list(PASSAGES)
    corpus = embed_texts(
        model, [PASSAGES[c] for c in concepts], batch_size=8, dim=None, normalize=True
    )
    asked = embed_texts(model, queries, batch_size=8, dim=None, normalize=True)
    ids, _scores = metrics_rs.knn(asked, corpus, 1)
    return [concepts[int(row[0])] for row in ids]


def test_each_trained_name_finds_its_defining_passage_first(candidate: Path) -> None:
    assert top_passage(candidate, TRAINED) == TRAINED


def test_other_spellings_of_a_concept_find_the_same_passage(candidate: Path) -> None:
    assert top_passage(candidate, list(VARIANTS)) == list(VARIANTS.values())


def test_a_concept_it_was_not_trained_on_still_finds_its_passage(candidate: Path) -> None:
    assert top_passage(candidate, [NOT_TRAINED, "orbits and stabilisers"]) == [NOT_TRAINED] * 2
