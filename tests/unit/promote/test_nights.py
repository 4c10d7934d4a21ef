"""Every night leaves one MLflow run with its outcome (pipelines.promote.nights), on the
real SQLite store of a promotion world, and the trend figure across nights."""

from __future__ import annotations

import logging

import pytest
from promotion_worlds import World, client_of

from pipelines.promote.nights import record_night, trend_path, trend_points

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_each_outcome_leaves_one_run_listed_with_its_reason(world: World) -> None:
    outcomes = {
        "nothing to do": "no new papers; params and code unchanged",
        "failed": "train failed: CUDA out of memory",
        "not promoted": "not promoted over the champion: mrr@10 0.5 is not higher",
        "promoted": "promoted over the champion",
    }
    ids = {
        outcome: record_night(world.paths, world.params, outcome, reason)
        for outcome, reason in outcomes.items()
    }
    assert all(ids.values())

    client = client_of(world)
    experiment = client.get_experiment_by_name(world.params.promote.experiment)
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"
    runs = client.search_runs([experiment.experiment_id])
    listed = {run.data.tags["mathembed.outcome"]: run for run in runs}
    assert set(listed) == set(outcomes)
    for outcome, reason in outcomes.items():
        run = listed[outcome]
        assert run.info.run_id == ids[outcome]
        assert run.data.tags["mathembed.reason"] == reason
        assert run.info.run_name.startswith("night ") and run.info.run_name.endswith(" UTC")
        assert run.data.tags["mlflow.note.content"] == f"**{outcome}**: {reason}"
    assert listed["failed"].info.status == "FAILED"
    assert listed["nothing to do"].info.status == "FINISHED"
    # The filter a person would type lists the failures alone.
    failed = client.search_runs([experiment.experiment_id], "tags.`mathembed.outcome` = 'failed'")
    assert [run.info.run_id for run in failed] == [ids["failed"]]


def test_the_trend_follows_the_champion_across_nights(world: World) -> None:
    gate = world.params.promote.gate  # the set every night scores: the nights compare
    first = record_night(
        world.paths,
        world.params,
        "promoted",
        "first champion",
        {f"{gate}.candidate_mrr_at_10": 0.5, f"{gate}.candidate_ndcg_at_10": 0.45},
    )
    record_night(world.paths, world.params, "nothing to do", "no new papers")
    last = record_night(
        world.paths,
        world.params,
        "not promoted",
        "lost to the champion",
        {
            f"{gate}.candidate_mrr_at_10": 0.4,
            f"{gate}.champion_mrr_at_10": 0.55,
            f"{gate}.champion_ndcg_at_10": 0.5,
            # another set's figure is not the trend's
            f"{'masked' if gate == 'named' else 'named'}.champion_mrr_at_10": 0.9,
        },
    )
    assert first and last

    client = client_of(world)
    experiment = client.get_experiment_by_name(world.params.promote.experiment)
    points = trend_points(
        client.search_runs([experiment.experiment_id]), gate, ("mrr@10", "ndcg@10")
    )
    assert [point.outcome for point in points] == ["promoted", "nothing to do", "not promoted"]
    assert [point.champion.get("mrr@10") for point in points] == [0.5, None, 0.55]
    assert points[2].champion["ndcg@10"] == 0.5

    figure = trend_path(world.paths)
    assert figure.read_bytes().startswith(PNG_MAGIC)
    logged = [artifact.path for artifact in client.list_artifacts(last)]
    assert logged == ["trend.png"]


def test_a_night_is_not_recorded_but_goes_on_when_mlflow_is_broken(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    (world.root / "mlruns" / "mlflow.db").write_bytes(b"not a database at all" * 10)
    with caplog.at_level(logging.WARNING, logger="pipelines.promote.nights"):
        assert record_night(world.paths, world.params, "failed", "harvest failed") is None
    assert "could not record tonight's outcome (failed) in MLflow" in caplog.text
    assert "is corrupt" in caplog.text
    with pytest.raises(ValueError, match="outcome 'maybe' is not one of promoted"):
        record_night(world.paths, world.params, "maybe", "?")
