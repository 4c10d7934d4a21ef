"""Promotion in a real MLflow registry (pipelines.promote) on SQLite stores in
tmp_path, with the promotion worlds of ``tests/promotion_worlds.py``."""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import subprocess
import threading
from pathlib import Path

import pandas as pd
import pytest
from promotion_worlds import (
    MODEL_NAME,
    TOPICS,
    Models,
    World,
    aliases,
    client_of,
    folder_digest,
    write_eval_data,
)

from pipelines.common.io import write_json, write_parquet
from pipelines.common.paths import Paths
from pipelines.promote import promotion, run_log
from pipelines.promote import scoring as promote_scoring
from pipelines.promote.aliases import rollback, status
from pipelines.promote.formatting import format_promotion
from pipelines.promote.promotion import PromotionResult
from pipelines.promote.tags import recorded_decision
from pipelines.registry.mlflow_registry import (
    PromotionError,
    PromotionLockedError,
    PromotionRefusedError,
    Registry,
    promotion_lock,
    tracking_uri,
)
from pipelines.registry.reporting import round_score
from pipelines.retrieval.models import data_hash, model_fingerprint

# ----------------------------------------------------------------------------- tests


def test_the_tiny_models_rank_by_what_they_know(world: World, bow_models: Models) -> None:
    """The premise of the other tests, checked with the real scoring."""
    from pipelines.promote.candidate import load_candidate
    from pipelines.promote.scoring import score_for_promotion

    means = {}
    for name in ("knows_2", "knows_4", "knows_4_variant", "knows_7"):
        candidate = load_candidate(world.install_candidate(getattr(bow_models, name), name))
        scored = score_for_promotion(world.params, world.paths, candidate, None)
        means[name] = (scored.candidate.means["mrr@10"], scored.candidate.means["ndcg@10"])
    base = (scored.base.means["mrr@10"], scored.base.means["ndcg@10"])
    for metric in (0, 1):
        assert base[metric] < means["knows_2"][metric] < means["knows_4"][metric]
        assert means["knows_4"][metric] < means["knows_7"][metric]
        assert means["knows_4"][metric] == means["knows_4_variant"][metric]
    assert model_fingerprint(world.root / "models" / "knows_4") != model_fingerprint(
        world.root / "models" / "knows_4_variant"
    )


def test_first_promotion_beats_the_base_and_becomes_champion(
    world: World, bow_models: Models
) -> None:
    subprocess.run(["git", "init", "-q"], cwd=world.root, check=True)
    subprocess.run(
        [
            "git",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
        cwd=world.root,
        check=True,
    )
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=world.root, capture_output=True, text=True, check=True
    ).stdout.strip()
    candidate_dir = world.install_candidate(bow_models.knows_4)
    before = folder_digest(candidate_dir)

    result = world.promote()

    assert result.promoted and not result.already_registered
    assert result.decision.compared_against == "base"
    assert result.version == "1"
    assert result.aliases == {"champion": "1", "challenger": None, "previous": None}
    assert folder_digest(candidate_dir) == before  # promotion never touches the candidate

    recorded = json.loads((world.root / "metrics" / "promotion.json").read_text())
    assert recorded["decision"] == "promoted"
    assert recorded["version"] == "1"
    assert recorded["compared_against"] == "base"
    assert recorded["fingerprint"] == model_fingerprint(candidate_dir)

    # The gate's set decided (this world's gate: named); its figures lead, its own.
    assert recorded["decided_on"] == "named" and next(iter(recorded["sets"])) == "named"
    named = recorded["sets"]["named"]
    assert named["candidate"]["mrr@10"] > named["base"]["mrr@10"]
    assert named["candidate"]["mrr@10"] == round_score(result.decision.candidate["mrr@10"])
    assert named["base"]["mrr@10"] == round_score(result.decision.other["mrr@10"])
    assert named["champion"] is None

    client = client_of(world)
    version = client.get_model_version(MODEL_NAME, "1")
    tags = version.tags
    assert tags["decision"] == "promoted"
    assert tags["compared_against"] == "base"
    assert tags["fingerprint"] == result.fingerprint
    assert tags["settled"] == "true"
    record = json.loads(tags["decision_record"])
    assert record["reason"].startswith("promoted over the base")
    assert record["candidate"]["mrr@10"] == pytest.approx(result.decision.candidate["mrr@10"])
    assert record["other"]["ndcg@10"] == pytest.approx(result.decision.other["ndcg@10"])
    assert record["deltas"]["mrr@10"] > 0
    assert 0 < record["p_value"] <= 1
    assert record["data_version"] == data_hash(world.paths.validated / "pairs.parquet")
    assert record["git_commit"] == commit
    # A few short tags a person can read; the rest is the description (the model card).
    assert len(tags) <= 9, sorted(tags)
    assert version.description.startswith("**Promoted math-embed v1 to @champion")

    run = client.get_run(result.run_id)
    assert run.data.tags["git_commit"] == commit
    assert run.data.tags["data_version"] == data_hash(world.paths.validated / "pairs.parquet")
    provenance = world.root / "mlruns" / "artifacts"
    [hashes] = provenance.rglob(f"{run.info.run_id}/artifacts/provenance/dvc_lock_hashes.json")
    assert json.loads(hashes.read_text()) == {
        "data/validated": "0123456789abcdef0123456789abcdef.dir"  # data hashes only
    }
    [counts] = provenance.rglob(f"{run.info.run_id}/artifacts/provenance/data.json")
    assert json.loads(counts.read_text())["pairs"] == {"by_split": {"train": 2}}
    assert run.data.params["promote.metrics"] == '["mrr@10", "ndcg@10"]'
    assert run.data.params["evaluate.ks"] == "[1, 5, 10]"
    history = client.get_metric_history(run.info.run_id, "train.loss")
    assert [(point.step, point.value) for point in history] == [(5, 0.75), (10, 0.25)]
    assert run.data.metrics["named.candidate_mrr_at_10"] == pytest.approx(
        result.decision.candidate["mrr@10"]
    )
    artifacts = world.root / "mlruns" / "artifacts"
    run_artifacts = {p.relative_to(artifacts).as_posix() for p in artifacts.rglob("*")}
    prefix = f"{run.info.run_id}/artifacts"
    for expected in (
        "model_card.md",
        "eval_report/compare.csv",
        "data_quality_report/index.html",
        "mathembed.json",
        "data_quality.json",
    ):
        assert any(path.endswith(f"{prefix}/{expected}") for path in run_artifacts), expected
    card = next(artifacts.rglob("model_card.md")).read_text()
    assert "Promoted math-embed to @champion" in card and result.fingerprint in card
    requirements = next(artifacts.rglob("requirements.txt")).read_text().split()
    # Exactly the pinned list we passed, plus the mlflow pin MLflow always adds.
    assert sorted(requirements) == sorted(
        [*run_log.pip_requirements(), f"mlflow=={importlib.metadata.version('mlflow')}"]
    )
    assert all("==" in line for line in requirements)


def test_worse_candidate_is_challenger_better_one_takes_over_and_rollback_restores(
    world: World, bow_models: Models
) -> None:
    assert world.promote(world.install_candidate(bow_models.knows_4)).promoted

    worse = world.promote(world.install_candidate(bow_models.knows_2))
    assert not worse.promoted
    assert worse.decision.compared_against == "champion"
    assert worse.compared_version == "1"
    assert "is not higher than the champion's" in worse.decision.reason
    assert worse.aliases == {"champion": "1", "challenger": "2", "previous": None}
    client = client_of(world)
    worse_tags = client.get_model_version(MODEL_NAME, "2").tags
    assert worse_tags["decision"] == "rejected"
    worse_record = json.loads(worse_tags["decision_record"])
    assert worse_record["other"]["mrr@10"] > worse_record["candidate"]["mrr@10"]
    worse_run = client.get_run(worse.run_id)
    assert worse_run.data.tags["mathembed.outcome"] == "not promoted"
    assert worse_run.data.metrics["named.champion_mrr_at_10"] == pytest.approx(
        worse.decision.other["mrr@10"]
    )
    assert (
        worse_run.data.metrics["named.candidate_mrr_at_10"]
        < worse_run.data.metrics["named.champion_mrr_at_10"]
    )
    assert worse_tags["compared_version"] == "1"

    better = world.promote(world.install_candidate(bow_models.knows_7))
    assert better.promoted
    assert better.decision.compared_against == "champion"
    assert better.aliases == {"champion": "3", "challenger": "2", "previous": "1"}
    assert "promoted over the champion" in better.decision.reason

    entries = {entry.alias: entry for entry in status(world.paths, world.params.promote)}
    assert entries["champion"].metrics["mrr@10"] == pytest.approx(
        better.decision.candidate["mrr@10"]
    )
    assert entries["previous"].metrics["mrr@10"] < entries["champion"].metrics["mrr@10"]
    assert entries["challenger"].version == "2"

    undone = rollback(world.paths, world.params.promote, reason="bad answers", actor="alice")
    assert (undone.restored, undone.demoted) == ("1", "3")
    assert aliases(world) == {"champion": "1", "challenger": "2", "previous": None}
    demoted = client.get_model_version(MODEL_NAME, "3").tags
    assert demoted["rolled_back_by"] == "alice"
    assert demoted["rolled_back_reason"] == "bad answers"
    assert demoted["rolled_back_at"] == undone.at
    assert client.get_model_version(MODEL_NAME, "1").tags["restored_by"] == "alice"

    with pytest.raises(PromotionError, match="no @previous version"):
        rollback(world.paths, world.params.promote)
    assert aliases(world)["champion"] == "1"


def test_an_equally_good_candidate_is_not_promoted(world: World, bow_models: Models) -> None:
    world.promote(world.install_candidate(bow_models.knows_4))
    tie = world.promote(world.install_candidate(bow_models.knows_4_variant))
    assert not tie.promoted
    assert tie.decision.deltas == {"mrr@10": 0.0, "ndcg@10": 0.0}
    assert tie.aliases == {"champion": "1", "challenger": "2", "previous": None}


def test_the_significance_gate_from_params_can_hold_back_a_better_candidate(
    world: World, bow_models: Models
) -> None:
    world.promote(world.install_candidate(bow_models.knows_4))
    # knows_7 is better on a few of the 10 queries and ties on the rest: too few to be
    # significant at 0.05 (the exact sign-flip test gives 2/2^5 with 5 differing queries).
    gated = world.promote(world.install_candidate(bow_models.knows_7), significance=True)
    assert not gated.promoted
    assert gated.decision.deltas["mrr@10"] > 0 and gated.decision.deltas["ndcg@10"] > 0
    assert gated.decision.p_value is not None and gated.decision.p_value > 0.05
    assert "not significant" in gated.decision.reason
    tags = client_of(world).get_model_version(MODEL_NAME, "2").tags
    gated_record = json.loads(tags["decision_record"])
    assert gated_record["p_value"] == gated.decision.p_value
    assert gated_record["test_method"] == "randomization"
    assert gated.aliases == {"champion": "1", "challenger": "2", "previous": None}


def test_promoting_the_same_candidate_twice_registers_it_once(
    world: World, bow_models: Models
) -> None:
    candidate = world.install_candidate(bow_models.knows_4)
    first = world.promote()
    (world.root / "metrics" / "promotion.json").unlink()
    again = world.promote()
    assert again.already_registered and not again.redecided
    assert (again.version, again.run_id, again.promoted) == (first.version, first.run_id, True)
    assert again.decision.reason == first.decision.reason
    assert again.decision.candidate == pytest.approx(first.decision.candidate)
    assert json.loads((world.root / "metrics" / "promotion.json").read_text())["already_registered"]
    # The same weights copied elsewhere are the same candidate.
    copy = world.install_candidate(candidate, "copy")
    assert world.promote(copy).version == first.version
    client = client_of(world)
    assert len(client.search_model_versions(f"name = '{MODEL_NAME}'")) == 1
    experiment = client.get_experiment_by_name("mathembed")
    assert len(client.search_runs([experiment.experiment_id])) == 1


def test_a_rerun_after_a_crash_finishes_the_promotion_without_a_second_version(
    world: World, bow_models: Models, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.promote(world.install_candidate(bow_models.knows_4))
    world.install_candidate(bow_models.knows_7)
    real_move = promotion.move_aliases

    def crash(*args: object) -> None:
        raise KeyboardInterrupt("killed between registering and moving the aliases")

    monkeypatch.setattr(promotion, "move_aliases", crash)
    with pytest.raises(KeyboardInterrupt):
        world.promote()
    # Registered but not settled; the aliases are untouched: still a valid registry.
    assert aliases(world) == {"champion": "1", "challenger": None, "previous": None}
    client = client_of(world)
    assert "settled" not in client.get_model_version(MODEL_NAME, "2").tags

    monkeypatch.setattr(promotion, "move_aliases", real_move)
    finished = world.promote()
    assert finished.promoted and finished.version == "2" and not finished.already_registered
    assert aliases(world) == {"champion": "2", "challenger": None, "previous": "1"}
    assert len(client.search_model_versions(f"name = '{MODEL_NAME}'")) == 2
    assert client.get_model_version(MODEL_NAME, "2").tags["settled"] == "true"


def history_of(world: World, version: str) -> list[dict[str, str]]:
    history = client_of(world).get_model_version(MODEL_NAME, version).tags.get("decision_history")
    return json.loads(history) if history else []


def test_a_version_is_decided_again_when_the_eval_data_changes_and_registered_once(
    world: World, bow_models: Models
) -> None:
    # On the first four topics knows_4 and knows_7 both rank perfectly: a tie.
    first_data = write_eval_data(world, TOPICS[:4])
    assert world.promote(world.install_candidate(bow_models.knows_4)).promoted
    tied = world.promote(world.install_candidate(bow_models.knows_7))
    assert not tied.promoted and tied.version == "2"
    same = world.promote()
    assert same.already_registered and not same.redecided  # same data: recorded decision
    assert same.decision.reason == tied.decision.reason

    # All ten topics: knows_7 now knows more of them than the champion.
    new_data = write_eval_data(world, TOPICS)
    assert new_data != first_data
    again = world.promote()
    assert again.redecided and not again.already_registered
    assert "decided again on new evaluation data" in format_promotion(again)
    assert "recorded decision" in format_promotion(same)
    assert again.promoted and again.version == "2" and again.run_id == tied.run_id
    assert again.decision.compared_against == "champion" and again.compared_version == "1"
    assert again.decision.deltas["mrr@10"] > 0
    # Promoted out of @challenger: the alias does not stay on the champion.
    assert again.aliases == {"champion": "2", "challenger": None, "previous": "1"}
    client = client_of(world)
    assert len(client.search_model_versions(f"name = '{MODEL_NAME}'")) == 2
    experiment = client.get_experiment_by_name("mathembed")
    runs = client.search_runs([experiment.experiment_id])
    assert len([run for run in runs if "model_uri" in run.data.tags]) == 2  # no new model run
    # ... but tonight's re-decision has its record, like every night.
    [night] = [run for run in runs if run.info.run_name.startswith("night ")]
    assert night.data.tags["mathembed.outcome"] == "promoted"
    tags = client.get_model_version(MODEL_NAME, "2").tags
    assert tags["decision"] == "promoted" and tags["settled"] == "true"
    assert tags["eval_data_hash"] == new_data
    assert recorded_decision(tags).candidate["mrr@10"] == pytest.approx(
        again.decision.candidate["mrr@10"]
    )
    assert client.get_model_version(MODEL_NAME, "2").description.startswith(
        "**Promoted math-embed v2 to @champion over champion v1"
    )
    [superseded] = history_of(world, "2")
    assert superseded["decision"] == "rejected"
    assert superseded["eval_data_hash"] == first_data
    assert superseded["decided_at"] == tied.decided_at
    recorded = json.loads((world.root / "metrics" / "promotion.json").read_text())
    assert recorded["redecided"] is True and recorded["decision"] == "promoted"

    settled = world.promote()  # and on this data it is recorded again
    assert settled.already_registered and settled.promoted and not settled.redecided
    assert len(history_of(world, "2")) == 1


def test_the_champion_on_new_eval_data_stays_champion_and_is_not_compared_with_itself(
    world: World, bow_models: Models, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_eval_data(world, TOPICS[:4])
    first = world.promote(world.install_candidate(bow_models.knows_4))
    assert first.promoted and first.decision.candidate["mrr@10"] == pytest.approx(1.0)
    loads: list[object] = []
    monkeypatch.setattr(promote_scoring, "load_registered_model", lambda *args: loads.append(args))
    shutil.rmtree(world.paths.embedding_store)  # would force a champion load

    new_data = write_eval_data(world, TOPICS)
    kept = world.promote()
    assert loads == []  # the champion was not scored as its own opponent
    assert kept.redecided and kept.promoted and kept.version == "1"
    assert kept.decision.compared_against == "base" and kept.compared_version is None
    assert "not compared with itself" in kept.decision.reason
    assert "still beats the base model" in kept.decision.reason
    # knows_4 misses six of the ten topics: its scores on the new data are recorded.
    assert kept.decision.candidate["mrr@10"] < first.decision.candidate["mrr@10"]
    assert kept.aliases == {"champion": "1", "challenger": None, "previous": None}
    tags = client_of(world).get_model_version(MODEL_NAME, "1").tags
    assert tags["eval_data_hash"] == new_data and tags["settled"] == "true"
    assert recorded_decision(tags).candidate["mrr@10"] == pytest.approx(
        kept.decision.candidate["mrr@10"]
    )
    assert [entry["decision"] for entry in history_of(world, "1")] == ["promoted"]
    assert world.promote().already_registered
    assert len(client_of(world).search_model_versions(f"name = '{MODEL_NAME}'")) == 1


def test_a_crash_during_a_redecision_is_finished_by_the_rerun(
    world: World, bow_models: Models, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_eval_data(world, TOPICS[:4])
    world.promote(world.install_candidate(bow_models.knows_4))
    assert not world.promote(world.install_candidate(bow_models.knows_7)).promoted
    new_data = write_eval_data(world, TOPICS)
    real_move = promotion.move_aliases

    def crash(*args: object) -> None:
        raise KeyboardInterrupt("killed between rewriting the decision and moving the aliases")

    monkeypatch.setattr(promotion, "move_aliases", crash)
    with pytest.raises(KeyboardInterrupt):
        world.promote()
    client = client_of(world)
    tags = client.get_model_version(MODEL_NAME, "2").tags
    assert tags["settled"] == "false"  # not mistaken for a recorded decision on this data
    assert aliases(world) == {"champion": "1", "challenger": "2", "previous": None}

    monkeypatch.setattr(promotion, "move_aliases", real_move)
    finished = world.promote()
    assert finished.redecided and finished.promoted and finished.version == "2"
    assert aliases(world) == {"champion": "2", "challenger": None, "previous": "1"}
    assert client.get_model_version(MODEL_NAME, "2").tags["settled"] == "true"
    assert len(history_of(world, "2")) == 1  # the superseded decision recorded once
    assert len(client.search_model_versions(f"name = '{MODEL_NAME}'")) == 2

    # The champion's own re-decision killed after its tags were rewritten: settled by the rerun.
    write_eval_data(world, TOPICS[2:])
    real_rewrite = promotion.rewrite_decision

    def rewrite_then_crash(*args: object) -> None:
        real_rewrite(*args)  # type: ignore[arg-type]
        raise KeyboardInterrupt("killed before settling")

    monkeypatch.setattr(promotion, "rewrite_decision", rewrite_then_crash)
    with pytest.raises(KeyboardInterrupt):
        world.promote()
    monkeypatch.setattr(promotion, "rewrite_decision", real_rewrite)
    resumed = world.promote()
    assert resumed.redecided and resumed.version == "2" and resumed.promoted
    assert resumed.decision.compared_against == "base"
    tags = client.get_model_version(MODEL_NAME, "2").tags
    assert tags["settled"] == "true" and tags["eval_data_hash"] != new_data
    assert aliases(world) == {"champion": "2", "challenger": None, "previous": "1"}
    # Compared with the base now: the champion-side numbers of the last decision are gone.
    assert not any(key.startswith("champion.") for key in tags)


def test_concurrent_redecisions_of_one_version_decide_once(
    world: World, bow_models: Models
) -> None:
    write_eval_data(world, TOPICS[:4])
    world.promote(world.install_candidate(bow_models.knows_4))
    world.promote(world.install_candidate(bow_models.knows_7))
    write_eval_data(world, TOPICS)
    results: list[PromotionResult] = []
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def promote() -> None:
        try:
            start.wait()
            results.append(world.promote())
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=promote) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted((r.redecided, r.already_registered) for r in results) == [
        (False, True),
        (True, False),
    ]
    assert {(r.version, r.promoted) for r in results} == {("2", True)}
    assert len(history_of(world, "2")) == 1
    assert aliases(world) == {"champion": "2", "challenger": None, "previous": "1"}


def test_a_rolled_back_version_is_not_given_an_alias_back_on_new_eval_data(
    world: World, bow_models: Models
) -> None:
    world.promote(world.install_candidate(bow_models.knows_4))
    assert world.promote(world.install_candidate(bow_models.knows_7)).promoted
    rollback(world.paths, world.params.promote, reason="bad answers", actor="alice")
    assert aliases(world) == {"champion": "1", "challenger": None, "previous": None}

    write_eval_data(world, TOPICS[1:])  # knows_7 would still beat the champion here
    held = world.promote()
    assert held.redecided and not held.promoted
    assert held.decision.deltas["mrr@10"] > 0
    assert "withdrawn by rollback" in held.decision.reason and "alice" in held.decision.reason
    assert aliases(world) == {"champion": "1", "challenger": None, "previous": None}
    assert client_of(world).get_model_version(MODEL_NAME, "2").tags["decision"] == "rejected"


def test_the_champion_is_rescored_from_the_registry_when_its_embeddings_are_not_cached(
    world: World, bow_models: Models, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = world.promote(world.install_candidate(bow_models.knows_4))
    loads: list[str] = []
    real_load = promote_scoring.load_registered_model

    def counting_load(reg: Registry, version: object) -> object:
        loads.append(str(getattr(version, "version", "")))
        return real_load(reg, version)  # type: ignore[arg-type]

    monkeypatch.setattr(promote_scoring, "load_registered_model", counting_load)
    world.promote(world.install_candidate(bow_models.knows_2))
    assert loads == []  # the champion's embeddings were cached when it was the candidate

    shutil.rmtree(world.paths.embedding_store)
    third = world.promote(world.install_candidate(bow_models.knows_7))
    assert loads == ["1"]  # loaded from models:/math-embed/1, scored in this run
    assert third.decision.other == pytest.approx(first.decision.candidate)


def test_concurrent_promotions_are_serialised(world: World, bow_models: Models) -> None:
    candidates = {
        "weaker": world.install_candidate(bow_models.knows_2, "weaker"),
        "stronger": world.install_candidate(bow_models.knows_4, "stronger"),
    }
    results: dict[str, PromotionResult] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(len(candidates))

    def promote(name: str) -> None:
        try:
            start.wait()
            results[name] = world.promote(candidates[name])
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=promote, args=(name,)) for name in candidates]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    # Whichever went first was compared with the base; the second saw its outcome.
    sides = sorted(result.decision.compared_against for result in results.values())
    assert sides == ["base", "champion"]
    assert sorted(result.version for result in results.values()) == ["1", "2"]
    final = aliases(world)
    assert final["champion"] == results["stronger"].version
    weaker = results["weaker"]
    if weaker.decision.compared_against == "base":  # weaker first: promoted, then replaced
        assert final == {
            "champion": results["stronger"].version,
            "challenger": None,
            "previous": weaker.version,
        }
    else:
        assert final == {
            "champion": results["stronger"].version,
            "challenger": weaker.version,
            "previous": None,
        }


def test_a_promotion_waits_for_the_lock_and_gives_up_with_a_clear_message(
    world: World, bow_models: Models
) -> None:
    world.install_candidate(bow_models.knows_4)
    expected = r"another promotion holds .*promote\.lock \(pid \d+ since .*\).*lock_timeout_seconds"
    with promotion_lock(world.paths, 1.0), pytest.raises(PromotionLockedError, match=expected):
        world.promote(lock_timeout_seconds=0.2)
    assert aliases(world) == {"champion": None, "challenger": None, "previous": None}
    assert world.promote().promoted  # the lock is free again


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (None, r"data_quality.json not found: the candidate's data was never validated"),
        ({"passed": False}, r"did not pass validation \(passed = False\)"),
        ({"tables": {}}, r"did not pass validation \(passed = None\)"),
        ({"passed": "true"}, r"did not pass validation \(passed = 'true'\)"),
        ({"passed": True, "data_hash": "f" * 64}, r"the validated data \(.*data_quality.json\)"),
    ],
)
def test_a_candidate_whose_data_failed_validation_is_never_promoted(
    world: World, bow_models: Models, record: dict[str, object] | None, message: str
) -> None:
    shutil.rmtree(world.root / "mlruns")
    world.install_candidate(bow_models.knows_7)
    quality = world.root / "metrics" / "data_quality.json"
    if record is None:
        quality.unlink()
    else:
        write_json(quality, record)
    with pytest.raises(PromotionRefusedError, match=message):
        world.promote()
    assert not (world.root / "mlruns").exists()  # refused before MLflow was touched
    assert not (world.root / "metrics" / "promotion.json").exists()


def test_a_candidate_trained_on_other_data_than_the_validated_is_refused(
    world: World, bow_models: Models
) -> None:
    world.install_candidate(bow_models.knows_7)
    pairs = world.paths.validated / "pairs.parquet"
    write_parquet(pairs, pd.read_parquet(pairs).head(1))  # validation rewrote the data since
    with pytest.raises(PromotionRefusedError, match=r"trained on data .* validated data \(.*pairs"):
        world.promote()
    assert aliases(world)["champion"] is None


def test_a_candidate_changed_after_training_or_without_metadata_is_refused(
    world: World, bow_models: Models
) -> None:
    candidate = world.install_candidate(bow_models.knows_4)
    config = candidate / "config_sentence_transformers.json"
    config.write_text(config.read_text().replace("{", '{"tampered": 1, ', 1))
    with pytest.raises(PromotionRefusedError, match="was changed after training"):
        world.promote()
    (candidate / "mathembed.json").unlink()
    with pytest.raises(PromotionRefusedError, match=r"mathembed.json not found"):
        world.promote()
    shutil.rmtree(candidate)
    with pytest.raises(PromotionRefusedError, match="no candidate model in"):
        world.promote()


def test_missing_evaluation_data_is_refused_with_the_fix_even_for_a_registered_version(
    world: World, bow_models: Models
) -> None:
    world.promote(world.install_candidate(bow_models.knows_4))
    (world.paths.validated / "qrels.parquet").unlink()
    with pytest.raises(
        PromotionRefusedError, match=r"qrels.parquet does not exist.*run `dvc repro`"
    ):
        world.promote()
    assert aliases(world) == {"champion": "1", "challenger": None, "previous": None}


def test_a_missing_foreign_corpus_is_refused_with_the_fix(tmp_path: Path) -> None:
    """The eval data hash covers the foreign corpora: a folder that is not there stops the
    promotion before anything is scored, naming the file and the knob."""
    with pytest.raises(
        PromotionRefusedError,
        match=r"foreign corpus file .*elsewhere/passages.parquet not found; build it with "
        r".*evaluate.foreign_corpora",
    ):
        promote_scoring.eval_data_hash(Paths(tmp_path), ["corpora/elsewhere"])


def test_status_and_rollback_on_a_registry_that_does_not_exist_yet(world: World) -> None:
    shutil.rmtree(world.root / "mlruns")
    assert aliases(world) == {"champion": None, "challenger": None, "previous": None}
    assert not (world.root / "mlruns" / "mlflow.db").exists()  # status creates nothing
    with pytest.raises(PromotionError, match="nothing has been promoted yet"):
        rollback(world.paths, world.params.promote)


def test_rollback_needs_a_previous_champion(world: World, bow_models: Models) -> None:
    world.promote(world.install_candidate(bow_models.knows_4))
    with pytest.raises(PromotionError, match="no @previous version"):
        rollback(world.paths, world.params.promote)
    assert aliases(world)["champion"] == "1"


def test_the_default_store_is_sqlite_under_the_root_and_the_env_selects_a_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    uri = tracking_uri(Paths(tmp_path))
    assert uri == f"sqlite:///{tmp_path.resolve()}/mlruns/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000")
    assert tracking_uri(Paths(tmp_path)) == "http://127.0.0.1:5000"


def test_the_command_line_shell_prints_decisions_status_and_refusals(
    world: World, bow_models: Models
) -> None:
    from typer.testing import CliRunner, Result

    from pipelines import cli

    params_file = world.root / "params.yaml"
    # The world's few queries cannot reach p < promote.alpha; the metric rule decides here.
    params_file.write_text(
        "evaluate:\n  ks: [1, 5, 10]\n  foreign_corpora: []\n"
        "promote:\n  significance: false\n  gate: named\n"
    )
    common = ["--root", str(world.root), "--params", str(params_file)]

    def invoke(*args: str) -> Result:
        return CliRunner().invoke(cli.app, [*args, *common])

    result = invoke("status")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "champion   -",
        "challenger -",
        "previous   -",
        "embedding store: no tables yet",
    ]

    world.install_candidate(bow_models.knows_4)
    result = invoke("promote")
    assert result.exit_code == 0
    out = result.stdout
    assert out.startswith("math-embed v1 PROMOTED to @champion")
    assert "compared with the base model" in out and "@champion v1" in out

    result = invoke("promote")
    assert result.exit_code == 0
    assert "already registered; recorded decision" in result.stdout

    world.install_candidate(bow_models.knows_7)
    assert invoke("promote").exit_code == 0
    result = invoke("status")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()[-4:]
    assert lines[0].startswith("champion   v2") and " named: mrr@10 " in lines[0]  # its set
    assert lines[1].split() == ["challenger", "-"]
    assert lines[2].startswith("previous   v1")
    assert lines[3].startswith("embedding store: ") and lines[3].endswith(" vectors checked, sound")

    result = CliRunner().invoke(cli.app, ["rollback", *common, "--reason", "regression"])
    assert result.exit_code == 0
    assert "moved back to v1 (v2 demoted)" in result.stdout
    result = invoke("status")
    assert result.exit_code == 0
    after = result.stdout.splitlines()
    assert after[0].startswith("champion   v1") and "(restored " in after[0]
    assert after[2].split() == ["previous", "-"]

    (world.root / "metrics" / "data_quality.json").unlink()
    result = invoke("promote")
    assert result.exit_code == 1
    assert "promote: " in result.stderr
