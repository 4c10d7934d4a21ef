"""Registry faults (issue 14): a corrupt MLflow store, a corrupt ``dvc.lock``, a run killed
during ``log_model``, a rolled-back version promoted again, a non-UTF-8 search query, and
the parameters a promotion logs. Worlds from ``tests/promotion_worlds.py``."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from promotion_worlds import MODEL_NAME, Models, World, aliases, client_of
from typer.testing import CliRunner, Result

from pipelines import cli
from pipelines.promote import promotion
from pipelines.promote.aliases import rollback
from pipelines.promote.formatting import format_promotion
from pipelines.registry import mlflow_registry
from pipelines.registry.mlflow_registry import PromotionRefusedError
from pipelines.search.engine import search

pytestmark = pytest.mark.usefixtures("bounded_in_time")


def _invoke(world: World, *args: str) -> Result:
    params_file = world.root / "params.yaml"
    params_file.write_text("evaluate:\n  ks: [1, 5, 10]\n")
    argv = [*args, "--root", str(world.root), "--params", str(params_file)]
    return CliRunner().invoke(cli.app, argv)


# ----------------------------------------------------------------------------- finding 12


def _zero_bytes(db: Path) -> None:
    db.write_bytes(b"")


def _truncated(db: Path) -> None:
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2])


def _garbage(db: Path) -> None:
    db.write_bytes(b"this is not a database\n" * 100)


def _not_mlflow(db: Path) -> None:
    import sqlite3

    db.unlink()
    connection = sqlite3.connect(db)
    connection.execute("CREATE TABLE notes (text TEXT)")
    connection.commit()
    connection.close()


@pytest.mark.parametrize("damage", [_zero_bytes, _truncated, _garbage, _not_mlflow])
@pytest.mark.parametrize("command", [("status",), ("rollback",), ("search", "prime"), ("promote",)])
def test_a_corrupt_mlflow_db_is_reported_in_one_line_and_never_reinitialised(
    world: World, bow_models: Models, damage, command: tuple[str, ...]
) -> None:
    if command == ("promote",):
        world.install_candidate(bow_models.knows_4)
    db = world.root / "mlruns" / "mlflow.db"
    damage(db)
    before = db.read_bytes()
    result = _invoke(world, *command)
    assert result.exit_code == 1, result.output
    message = result.stderr.strip()
    assert "\n" not in message
    assert message.startswith(f"{command[0]}: ")
    assert str(db) in message and "restore" in message
    assert db.read_bytes() == before  # nothing created or migrated in its place


def test_the_sqlite_header_check_is_pure_and_names_the_problem() -> None:
    assert "empty" in (mlflow_registry.sqlite_store_problem(b"", 0) or "")
    assert "not a SQLite" in (mlflow_registry.sqlite_store_problem(b"garbage" * 20, 140) or "")
    header = bytearray(b"SQLite format 3\x00" + bytes(84))
    header[16:18] = (4096).to_bytes(2, "big")
    header[24:28] = header[92:96] = (7).to_bytes(4, "big")  # the size field is valid
    header[28:32] = (3).to_bytes(4, "big")  # 3 pages
    assert mlflow_registry.sqlite_store_problem(bytes(header), 3 * 4096) is None
    assert "truncated" in (mlflow_registry.sqlite_store_problem(bytes(header), 2 * 4096) or "")


def test_status_search_and_rollback_create_no_store(world: World) -> None:
    shutil.rmtree(world.root / "mlruns")
    for command in (("status",), ("search", "prime"), ("rollback",)):
        _invoke(world, *command)
        assert not (world.root / "mlruns" / "mlflow.db").exists(), command


# ----------------------------------------------------------------------------- finding 15


@pytest.mark.parametrize(
    "content",
    [b"stages: [unclosed\n", b"- just\n- a list\n", b"stages:\n  x: \xff\xfe\n"],
    ids=["bad-yaml", "not-a-mapping", "not-utf8"],
)
def test_a_corrupt_dvc_lock_is_refused_before_any_scoring(
    world: World, bow_models: Models, monkeypatch: pytest.MonkeyPatch, content: bytes
) -> None:
    def no_scoring(*args: object, **kwargs: object) -> None:
        raise AssertionError("scored before checking dvc.lock")

    monkeypatch.setattr(promotion, "score_for_promotion", no_scoring)
    (world.root / "dvc.lock").write_bytes(content)
    world.install_candidate(bow_models.knows_4)
    with pytest.raises(PromotionRefusedError, match=r"dvc\.lock .*dvc repro"):
        world.promote()
    result = _invoke(world, "promote")
    assert result.exit_code == 1
    assert "\n" not in result.stderr.strip() and "dvc.lock" in result.stderr


def test_a_non_utf8_search_query_is_one_clear_line(world: World) -> None:
    shutil.rmtree(world.root / "mlruns")  # refused before the registry is asked
    with pytest.raises(ValueError, match="not valid UTF-8"):
        search("prime \udcff", 3, world.paths, world.params.promote)
    result = _invoke(world, "search", "prime \udcff")
    assert result.exit_code == 1
    message = result.stderr.strip()
    assert "\n" not in message and message.startswith("search: ") and "UTF-8" in message


# ----------------------------------------------------------------------------- finding 11


@pytest.mark.slow
def test_rerunning_promote_for_a_rolled_back_version_does_not_claim_champion(
    world: World, bow_models: Models
) -> None:
    assert world.promote(world.install_candidate(bow_models.knows_4)).promoted
    assert world.promote(world.install_candidate(bow_models.knows_7)).promoted
    rollback(world.paths, world.params.promote, reason="bad answers", actor="alice")

    again = world.promote(world.install_candidate(bow_models.knows_7))
    assert again.version == "2" and again.already_registered
    assert not again.promoted
    assert again.as_json()["decision"] == "not promoted"
    assert "withdrawn by rollback" in again.decision.reason
    assert "PROMOTED" not in format_promotion(again)
    assert aliases(world)["champion"] == "1"
    record = (world.root / "metrics" / "promotion.json").read_text()
    assert '"decision": "not promoted"' in record


# ----------------------------------------------------------------------------- finding 9


def test_the_run_logs_the_parameters_the_model_was_trained_with(
    world: World, bow_models: Models
) -> None:
    other = dataclasses.replace(
        world.params, train=dataclasses.replace(world.params.train, epochs=99)
    )
    world.install_candidate(bow_models.knows_4)
    result = promotion.promote_candidate(other, world.paths)
    params = client_of(world).get_run(result.run_id).data.params
    assert params["train.epochs"] == "1"  # the candidate's mathembed.json, not other.train
    assert params["train.max_seq_length"] == "16"
    assert "train.learning_rate" not in params  # not in the candidate's record
    assert params["promote.metrics"] == '["mrr@10", "ndcg@10"]'  # what decided


# ----------------------------------------------------------------------------- finding 16


def test_a_run_killed_during_log_model_is_failed_and_its_artifacts_deleted(
    world: World, bow_models: Models
) -> None:
    from mlflow.entities import RunStatus

    from pipelines.retrieval.models import model_fingerprint

    candidate_dir = world.install_candidate(bow_models.knows_4)
    fingerprint = model_fingerprint(candidate_dir)
    client = client_of(world)
    artifacts = (world.root / "mlruns" / "artifacts").resolve()
    experiment_id = client.create_experiment(
        world.params.promote.experiment, artifact_location=artifacts.as_uri()
    )
    # What a SIGKILL in log_model leaves: a RUNNING run with artifacts, a pending model.
    killed = client.create_run(experiment_id, tags={"fingerprint": fingerprint})
    other = client.create_run(experiment_id, tags={"fingerprint": "someone-else"})
    payload = world.root / "payload"
    payload.mkdir()
    (payload / "weights.bin").write_bytes(b"\0" * 100_000)
    client.log_artifacts(killed.info.run_id, str(payload), "model")
    pending = client.create_logged_model(
        experiment_id, name="model", source_run_id=killed.info.run_id
    )
    client.log_model_artifacts(pending.model_id, str(payload))
    killed_dir = Path(killed.info.artifact_uri.removeprefix("file://"))
    model_dir = Path(pending.artifact_location.removeprefix("file://"))
    assert any(killed_dir.rglob("weights.bin")) and any(model_dir.rglob("weights.bin"))

    result = world.promote(candidate_dir)
    assert result.promoted and result.run_id != killed.info.run_id
    assert client.get_run(killed.info.run_id).info.status == RunStatus.to_string(RunStatus.FAILED)
    assert not any(killed_dir.rglob("*")) and not any(model_dir.rglob("*"))
    assert client.get_run(other.info.run_id).info.status == "RUNNING"  # not this candidate
    assert client.get_model_version(MODEL_NAME, "1").run_id == result.run_id
