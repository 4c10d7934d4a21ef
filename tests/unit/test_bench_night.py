"""The night-cost benchmark's arithmetic (``benchmarks/bench_night.py``): how a run's stage
records become table rows, what the target leaves out, the extrapolation rule, and the
replicated corpus. The benchmark itself is not run here."""

from __future__ import annotations

import sys

import pytest
from repo import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import bench_night  # noqa: E402  (a script beside machine.py, imported from its folder)


def _run(*, evaluate: float, candidate: float, base: float, promote: float, index: float) -> dict:
    """A run's stage records: 1 s for each data stage, the rest as given."""
    stages: dict = {stage: {"seconds": 1.0} for stage in bench_night.PIPELINE_STAGES}
    stages["evaluate"] = {
        "seconds": evaluate,
        "embedding": [
            {"model": "candidate", "seconds": candidate},
            {"model": "base", "seconds": base},
        ],
    }
    stages["promote"] = {"seconds": promote, "embedding": [{"model": "champion", "seconds": 0.5}]}
    stages["search"] = {"seconds": 2.0, "index": [{"seconds": index}]}
    return stages


def test_stage_rows_split_each_model_stage_into_its_parts() -> None:
    rows = bench_night.stage_rows(
        _run(evaluate=10.0, candidate=6.0, base=3.0, promote=4.0, index=0.5)
    )

    assert rows["evaluate.candidate"] == 6.0
    assert rows["evaluate.base"] == 3.0
    assert rows["evaluate.rest"] == pytest.approx(1.0)
    assert rows["promote.embedding"] == 0.5
    assert rows["promote.rest"] == pytest.approx(3.5)
    assert rows["search.index"] == 0.5
    assert rows["search.rest"] == pytest.approx(1.5)
    assert rows["ingest"] == 1.0
    assert set(rows) == set(bench_night.ROW_KEYS)


def test_a_stage_not_run_has_no_seconds() -> None:
    rows = bench_night.stage_rows(
        {"evaluate": _run(evaluate=2, candidate=1, base=1, promote=1, index=0)["evaluate"]}
    )

    assert rows["ingest"] is None
    assert rows["search.index"] is None
    assert rows["evaluate.rest"] == 0


def _rows(full: dict, night: dict) -> list[dict]:
    measured = dict.fromkeys(bench_night.ROW_KEYS, True)
    return bench_night.table_rows(full, night, measured)


def test_the_target_leaves_out_training_and_the_candidates_embedding() -> None:
    full = dict.fromkeys(bench_night.ROW_KEYS, 10.0)
    night = dict.fromkeys(bench_night.ROW_KEYS, 0.0)
    night["train"] = 1000.0  # fixed steps: never counted
    night["evaluate.candidate"] = 1000.0  # a new model embeds all: never counted
    night["pairs"] = 11.5  # of a full run's 120 s (train left out) or 110 s (both)

    target = bench_night.target_check(_rows(full, night))

    assert target["night_s_without_candidate_embedding_and_train"] == 11.5
    assert target["full_run_s_without_train"] == 10.0 * (len(bench_night.ROW_KEYS) - 1)
    assert target["percent_of_full_run"] == pytest.approx(100 * 11.5 / 120)
    assert target["percent_like_for_like"] == pytest.approx(100 * 11.5 / 110)
    assert target["passes"] is True
    assert target["passes_like_for_like"] is False
    assert target["largest_night_rows"][0]["row"] == "pairs"


def test_rows_say_the_nights_share_of_the_same_stage() -> None:
    full = dict.fromkeys(bench_night.ROW_KEYS, 20.0)
    night = dict.fromkeys(bench_night.ROW_KEYS, 1.0)
    full["ingest"] = None

    rows = {row["row"]: row for row in _rows(full, night)}

    assert rows["graph"]["night_percent_of_full"] == 5.0
    assert rows["ingest"]["night_percent_of_full"] is None
    assert rows["graph"]["grows_with"] == bench_night.WHOLE


def test_ingest_grows_with_the_copies_and_training_stays_fixed() -> None:
    measured = {"ingest": 2.0, "train": 7.0, "graph": 3.0}

    assert bench_night.extrapolate(measured, 10) == {"ingest": 20.0, "train": 7.0}
    assert bench_night.extrapolate({"ingest": None}, 10) == {"ingest": None, "train": None}


@pytest.mark.parametrize(
    ("small", "large", "exponent"), [(1.0, 10.0, 1.0), (3.0, 3.0, 0.0), (1.0, 100.0, 2.0)]
)
def test_growth_exponent(small: float, large: float, exponent: float) -> None:
    assert bench_night.growth_exponent(small, large, 10) == pytest.approx(exponent)


def test_growth_exponent_needs_two_positive_times() -> None:
    assert bench_night.growth_exponent(None, 1.0, 10) is None
    assert bench_night.growth_exponent(0.0, 1.0, 10) is None


def test_copies_of_a_paper_get_valid_distinct_ids_and_are_recognised() -> None:
    ids = [bench_night.replica_id("2401.00017", copy) for copy in range(10)]

    assert ids[0] == "2401.00017"
    assert ids[1] == "1101.00017"
    assert len(set(ids)) == 10
    assert [bench_night.copy_of(paper_id) for paper_id in ids] == list(range(10))


def test_an_old_style_id_is_copied_in_its_own_format() -> None:
    assert bench_night.replica_id("math/0501001", 3) == "math/1301001"
    assert bench_night.copy_of("math/1301001") == 3
    assert bench_night.copy_of("math/0501001") == 0


def test_a_copy_is_not_copied_again() -> None:
    with pytest.raises(ValueError, match="looks like a copy already"):
        bench_night.replica_id("1101.00017", 2)
    with pytest.raises(ValueError, match="copy must be in 0..9"):
        bench_night.replica_id("2401.00017", 10)


def test_each_copys_passages_are_new_texts() -> None:
    texts = bench_night.mark_copies(
        ["2401.00001", "1101.00001", "1201.00001", "1201.00001"],
        ["a ring", "a ring", "a ring", "a field"],
    )

    assert texts == ["a ring", "a ring [1]", "a ring [2]", "a field [2]"]


def test_embedding_rows_are_repriced_by_what_they_embedded() -> None:
    stages = _run(evaluate=10.0, candidate=6.0, base=3.0, promote=4.0, index=0.5)
    stages["evaluate"]["embedding"][0]["embedded"] = 1000  # candidate
    stages["evaluate"]["embedding"][1]["embedded"] = 10  # base
    stages["promote"]["embedding"][0]["embedded"] = 10  # champion
    stages["search"]["index"][0]["embedded"] = 0
    embedded = bench_night.embedded_by_row(stages)

    priced = bench_night.reprice(
        bench_night.stage_rows(stages), embedded, tiny_rate=1000.0, demo_rate=10.0
    )

    assert embedded == {
        "evaluate.candidate": 1000,
        "evaluate.base": 10,
        "promote.embedding": 10,
        "search.index": 0,
    }
    assert priced["evaluate.candidate"] == pytest.approx(6.0 + 1000 * (0.1 - 0.001))
    assert priced["evaluate.base"] == pytest.approx(3.0 + 10 * 0.099)
    assert priced["search.index"] == 0.5
    assert priced["pairs"] == 1.0  # not an embedding row
