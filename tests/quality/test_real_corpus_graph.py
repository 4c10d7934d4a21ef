"""The concept graph on the whole real corpus (the Stacks Project beside the checkout):
precision against the hand labels, recall of the terms the corpus marks as defined, and no
discourse words anywhere. Measures, not mechanics: the figures go in the failure message,
and benchmarks/bench_quality.py records them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from benchmarks.real_corpus import (
    LABEL_SAMPLE_SIZE,
    LABELS_FILE,
    SHARED_CORPUS,
    build_graph,
    label_sample,
    precision,
    read_labels,
    recall,
    write_raw_store,
)
from pipelines.mathtext.concept_phrases import is_discourse

MIN_PRECISION = 0.90
MIN_RECALL = 0.80

pytestmark = pytest.mark.skipif(
    not SHARED_CORPUS.is_dir(), reason=f"no real corpus beside the checkout ({SHARED_CORPUS})"
)


@pytest.fixture(scope="module")
def concepts(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    root: Path = tmp_path_factory.mktemp("real-corpus")
    assert write_raw_store(root) >= 100
    return build_graph(root)


def test_precision_on_the_hand_labelled_sample(concepts: pd.DataFrame) -> None:
    measured = precision(label_sample(concepts["name"]), read_labels())
    assert not measured.unlabelled, (
        f"{len(measured.unlabelled)} concepts of the sample have no label in {LABELS_FILE}: "
        f"label them (the rule is at the top of the file): {measured.unlabelled}"
    )
    assert measured.labelled == LABEL_SAMPLE_SIZE
    assert measured.value >= MIN_PRECISION, (
        f"precision {measured.value:.1%} < {MIN_PRECISION:.0%}; not concepts: {measured.wrong}"
    )


def test_recall_of_the_terms_the_corpus_marks_as_defined(concepts: pd.DataFrame) -> None:
    measured = recall(SHARED_CORPUS, concepts)
    assert measured.defined > 1000
    assert measured.value >= MIN_RECALL, (
        f"recall {measured.value:.1%} < {MIN_RECALL:.0%}; missed, e.g.: {measured.missed[:40]}"
    )


def test_no_concept_is_a_discourse_phrase(concepts: pd.DataFrame) -> None:
    prose = [name for name in concepts["display_name"] if is_discourse(name)]
    assert not prose
    for phrase in ("there", "now", "our assumption", "computation above", "result now"):
        assert phrase not in set(concepts["name"])
