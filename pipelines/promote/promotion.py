"""Champion/challenger promotion in the MLflow Model Registry: the I/O shell around decide.

:func:`promote_candidate` (``mathembed promote``; the nightly flow calls it too):

1. reads ``models/candidate/`` and its ``mathembed.json``, and refuses a candidate whose
   data did not pass validation (``metrics/data_quality.json``) or whose ``dvc.lock``
   cannot be read (the run records its hashes) — before touching MLflow or scoring;
2. takes the promotion lock (``mlruns/promote.lock``), so two promotions never interleave;
3. connects to MLflow: ``sqlite:///<root>/mlruns/mlflow.db`` with artifacts under
   ``<root>/mlruns/artifacts`` by default, or the server named by ``MLFLOW_TRACKING_URI``;
4. returns the recorded outcome if a version with the candidate's fingerprint is already
   registered and was decided on the current evaluation data (the hash of the validated
   chunks, queries and qrels): promoting the same candidate twice registers it once.
   When the evaluation data has changed since, that version is decided again on the new
   data — compared with the current ``@champion`` (or the base model with none), its tags
   and aliases updated, the superseded decision kept in its ``decision_history`` tag; no
   second version. The champion itself re-presented is not compared with itself: it stays
   champion and the record gets its scores against the base model on the new data
   (:func:`pipelines.promote.decision.decide_for_champion`). A version withdrawn by
   ``mathembed rollback`` is scored and recorded but gets no alias back automatically;
5. scores the candidate, the base model and the ``@champion`` on the same validated
   queries in this run (:mod:`pipelines.promote.scoring`);
6. decides with :func:`pipelines.promote.decision.decide` and the ``promote`` section of
   ``params.yaml``;
7. logs one MLflow run (:mod:`pipelines.promote.run_log`; into train's own run when train
   logged one), registers it as a version of ``math-embed`` carrying a few decision tags
   (:mod:`pipelines.promote.tags`) and the model card as its description
   (:mod:`pipelines.promote.card`), then moves the aliases: promoted → ``champion`` (the
   old champion becomes ``previous``); otherwise → ``challenger``;
8. records the night (the run above, or a run of its own for a re-decision) and draws the
   trend across nights (:mod:`pipelines.promote.nights`), best-effort;
9. writes ``metrics/promotion.json``
   (:class:`~pipelines.registry.metric_records.PromotionRecord`): the decision, the set it
   was decided on, and each set's figures, the deciding set first.

A crash anywhere leaves the registry consistent and a rerun finishes the job: the version
is tagged ``settled`` only after its aliases moved, and an unsettled version (or a
finished run with a logged model but no version) is picked up again instead of being
registered twice; a run of the candidate left RUNNING by a killed promotion is marked
FAILED and its artifacts deleted. A version withdrawn by rollback is never reported as
promoted, not even by its recorded decision. The tracking URI is stored and printed
without its credentials. A re-decision first sets ``settled`` to ``false`` and writes the
``eval_data_hash`` tag after the other decision tags, so a crash in the middle of one is
also finished by the rerun. If MLflow cannot be reached, nothing is written and
:class:`~pipelines.registry.mlflow_registry.RegistryError` says so; the candidate stays on disk,
untouched, for a rerun.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import requests

from pipelines.common import io
from pipelines.common.config import Params
from pipelines.common.paths import Paths
from pipelines.common.redact import redact, redact_url
from pipelines.common.tables import MEANING_SETS, PASSAGE_SETS, TABLES, TRANSFER_SETS
from pipelines.promote.candidate import Candidate, load_candidate, require_validated
from pipelines.promote.card import CardFacts, model_card
from pipelines.promote.decision import (
    Decision,
    Scores,
    decide,
    decide_for_champion,
    decide_on_meaning,
    describe_sets,
    guard_transfer,
    set_figures,
    transfer_caveats,
)
from pipelines.promote.headline import run_metrics
from pipelines.promote.nights import log_night, publish_trend
from pipelines.promote.provenance import dvc_lock_hashes, git_commit, now
from pipelines.promote.run_inputs import dvc_md5_of
from pipelines.promote.run_log import (
    NOTE_TAG,
    fail_orphaned_runs,
    find_logged_run,
    log_run,
    logged_model_id,
    training_run_id,
)
from pipelines.promote.scoring import (
    MEANING,
    ScoredModels,
    champion_source,
    eval_data_hash,
    score_for_promotion,
)
from pipelines.promote.tags import (
    TAG_COMPARED_VERSION,
    TAG_EVAL_DATA,
    TAG_ROLLED_BACK,
    TAG_SETTLED,
    decision_tags,
    held_back,
    recorded_decision,
    recorded_figures,
    rewrite_decision,
)
from pipelines.registry.metric_records import UNRECORDED, PromotionRecord, SetFigures
from pipelines.registry.mlflow_registry import (
    CHALLENGER,
    CHAMPION,
    PREVIOUS,
    TAG_FINGERPRINT,
    Registry,
    connect,
    fluent_uri,
    promotion_lock,
    registry_errors,
)
from pipelines.registry.reporting import NOT_PROMOTED, PROMOTED, promotion_file

if TYPE_CHECKING:
    from mlflow.entities.model_registry import ModelVersion

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PromotionResult:
    """What :func:`promote_candidate` did; ``as_json`` is ``metrics/promotion.json``.

    ``already_registered``: the version was found decided on this evaluation data and its
    recorded decision is returned. ``redecided``: the version was registered before, on
    other evaluation data, and this call decided it again (no new version).
    """

    registered_model: str
    version: str
    fingerprint: str
    run_id: str
    decision: Decision
    compared_version: str | None
    aliases: dict[str, str | None]
    already_registered: bool
    tracking_uri: str
    decided_at: str
    redecided: bool = False
    #: Each set's figures, the deciding set first (:func:`~pipelines.promote.decision.set_figures`).
    figures: tuple[SetFigures, ...] = ()
    #: The metric the p-values are on (``promote.significance_metric``).
    significance_metric: str = ""

    @property
    def promoted(self) -> bool:
        return self.decision.promote

    @property
    def record(self) -> PromotionRecord:
        """``metrics/promotion.json``."""
        return PromotionRecord(
            decision=PROMOTED if self.decision.promote else NOT_PROMOTED,
            reason=self.decision.reason,
            compared_against=self.decision.compared_against,
            decided_on=self.decision.query_set,
            sets=self.figures,
            significance_metric=self.significance_metric,
            registered_model=self.registered_model,
            version=self.version,
            fingerprint=self.fingerprint,
            run_id=self.run_id,
            compared_version=self.compared_version,
            aliases=dict(self.aliases),
            already_registered=self.already_registered,
            redecided=self.redecided,
            tracking_uri=redact_url(self.tracking_uri),
            decided_at=self.decided_at,
        )

    def as_json(self) -> dict[str, Any]:
        return self.record.to_json()


def promote_candidate(
    params: Params, paths: Paths, *, candidate_dir: Path | None = None
) -> PromotionResult:
    """Register the candidate and move the aliases by the promotion rule (module docstring).

    Raises :class:`PromotionRefusedError` (not eligible), :class:`PromotionLockedError`
    (another promotion is running), :class:`RegistryError` (MLflow unreachable or
    failing; nothing promoted, safe to rerun) and
    :class:`~pipelines.promote.decision.QueryMismatchError`.
    """
    candidate = load_candidate(candidate_dir or paths.candidate)
    data_quality = require_validated(paths, candidate)
    dvc_lock_hashes(paths)  # the run records them: a broken dvc.lock fails before scoring
    with promotion_lock(paths, params.promote.lock_timeout_seconds):
        registry = connect(paths, params.promote, create=True)
        assert registry is not None
        with registry_errors(registry.uri, candidate.directory), fluent_uri(registry.uri):
            result = _promote_locked(params, paths, candidate, registry, data_quality)
        result = dataclasses.replace(result, significance_metric=params.promote.significance_metric)
        io.write_json(promotion_file(paths), result.as_json(), sort_keys=False)
    return result


def _promote_locked(
    params: Params,
    paths: Paths,
    candidate: Candidate,
    registry: Registry,
    data_quality: Mapping[str, Any],
) -> PromotionResult:
    current_eval_data = eval_data_hash(paths, params.evaluate.foreign_corpora)
    existing = registry.version_by_fingerprint(candidate.fingerprint)
    # A "settled" tag at all means the version was decided and acted on once; "false" is
    # a re-decision under way (a fresh version has no such tag until it is settled).
    redecided = existing is not None and TAG_SETTLED in existing.tags
    decided_on_this_data = (
        existing is not None and existing.tags.get(TAG_EVAL_DATA) == current_eval_data
    )
    if existing is not None and existing.tags.get(TAG_SETTLED) == "true" and decided_on_this_data:
        return _recorded_result(registry, existing, already_registered=True)
    champion = registry.version_by_alias(CHAMPION)
    is_champion = (
        existing is not None
        and champion is not None
        and str(champion.version) == str(existing.version)
    )
    if existing is not None and is_champion and decided_on_this_data:
        # A rerun after a crash between moving `champion` and settling: only settle. (The
        # eval-data tag is written last, so the decision tags for this data are complete.)
        registry.client.set_model_version_tag(
            registry.model_name, existing.version, TAG_SETTLED, "true"
        )
        return _recorded_result(
            registry, registry.version(existing.version), False, redecided=redecided
        )

    # The champion re-presented on new data is scored against the base only.
    compared = None if is_champion else champion
    scored = score_for_promotion(
        params,
        paths,
        candidate,
        champion_source(registry, compared) if compared is not None else None,
    )
    if is_champion:
        decision = decide_for_champion(scored.candidate, scored.base, params.promote)
    else:
        if scored.gate == MEANING and scored.sets is not None:
            decision = decide_on_meaning(
                scored.sets["candidate"],
                scored.sets.get("champion"),
                scored.sets["base"],
                params.promote,
                meaning_sets=MEANING_SETS,
                guarded_sets=PASSAGE_SETS,
            )
        else:
            decision = decide(scored.candidate, scored.champion, scored.base, params.promote)
        if scored.sets is not None:
            decision = guard_transfer(decision, scored.sets, params.promote, TRANSFER_SETS)
    if decision.query_set == UNRECORDED:  # decide() sees scores only: the gate's set
        decision = dataclasses.replace(decision, query_set=scored.gate)
    if scored.sets is not None:
        side = "champion" if scored.champion is not None else "base"
        caveats = transfer_caveats(
            scored.sets["candidate"], TRANSFER_SETS, params.promote.min_transfer_queries
        )
        decision = dataclasses.replace(
            decision,
            reason=f"{decision.reason} [promote.gate: {scored.gate}; "
            f"{describe_sets(scored.sets, side, params.promote.significance_metric)}"
            + "".join(f"; {caveat}" for caveat in caveats)
            + "]",
        )
    withdrawn = existing is not None and TAG_ROLLED_BACK in existing.tags
    if withdrawn:
        assert existing is not None
        decision = held_back(decision, existing.tags)
    decided_at = now()
    figures = set_figures(
        decision,
        scored.sets or _gate_only(scored, decision.query_set),
        params.promote,
    )
    tags = decision_tags(
        decision, figures, scored, candidate, compared, params.promote, decided_at, paths.root
    )

    facts = _card_facts(params, paths, candidate, decision, figures, compared)
    if existing is None:
        # Under the lock, a RUNNING run of this candidate is one whose process died.
        training_run = training_run_id(registry, candidate)
        fail_orphaned_runs(registry, params.promote, candidate.fingerprint, keep=training_run)
        run_id, model_uri = find_logged_run(
            registry, params.promote, candidate.fingerprint, training_run
        )
        if run_id is None:
            run_id, model_uri = log_run(
                params,
                paths,
                candidate,
                registry,
                decision,
                figures,
                scored,
                data_quality,
                model_card(facts),
                resume_run_id=training_run,
            )
        _ensure_registered_model(registry)
        version = str(
            registry.client.create_model_version(
                registry.model_name,
                model_uri,
                run_id=run_id,
                tags=tags,
                model_id=logged_model_id(model_uri),
            ).version
        )
        card = model_card(facts, version)
        registry.client.update_model_version(registry.model_name, version, description=card)
        registry.client.set_tag(run_id, NOTE_TAG, card)
        night_run: str | None = run_id
    else:  # registered before: decided on other data, or by an attempt that crashed
        version, run_id = str(existing.version), existing.run_id or ""
        rewrite_decision(registry, existing, tags, model_card(facts, version))
        night_run = None  # no new run for this decision: tonight gets a record of its own

    if not is_champion and not withdrawn:
        move_aliases(registry, str(version), decision, champion)
    registry.client.set_model_version_tag(registry.model_name, str(version), TAG_SETTLED, "true")
    _record_the_night(registry, params, paths, decision, facts, night_run)
    return PromotionResult(
        registered_model=registry.model_name,
        version=str(version),
        fingerprint=candidate.fingerprint,
        run_id=run_id,
        decision=decision,
        compared_version=str(compared.version) if compared is not None else None,
        aliases=registry.aliases(),
        already_registered=False,
        tracking_uri=redact_url(registry.uri),
        decided_at=decided_at,
        redecided=redecided,
        figures=figures,
    )


def _gate_only(scored: ScoredModels, query_set: str) -> dict[str, dict[str, Scores]]:
    """``scored`` as side -> set -> scores when only the gate's set was scored."""
    sides = {"candidate": scored.candidate, "base": scored.base, "champion": scored.champion}
    return {side: {query_set: scores} for side, scores in sides.items() if scores is not None}


def _record_the_night(
    registry: Registry,
    params: Params,
    paths: Paths,
    decision: Decision,
    facts: CardFacts,
    night_run: str | None,
) -> None:
    """Tonight's record (a run of its own when the promotion logged none) and the trend.

    After the promotion has settled and best-effort: the record is for people, and a
    failure here must not report a promotion that happened as failed.
    """
    from mlflow.exceptions import MlflowException

    try:
        if night_run is None:
            night_run = log_night(
                registry,
                params.promote,
                PROMOTED if decision.promote else NOT_PROMOTED,
                decision.reason,
                run_metrics(facts.figures),
            )
        publish_trend(registry, params.promote, paths, night_run)
    except (MlflowException, requests.RequestException, OSError) as error:
        logger.warning(
            "the promotion is done, but tonight's record or trend figure could not be "
            "written to MLflow: %s",
            redact(f"{type(error).__name__}: {error}"),
        )


def _card_facts(
    params: Params,
    paths: Paths,
    candidate: Candidate,
    decision: Decision,
    figures: tuple[SetFigures, ...],
    compared: ModelVersion | None,
) -> CardFacts:
    """What the model card states, from the decision and the project's files."""
    hashes = dvc_lock_hashes(paths)
    return CardFacts(
        registered_model=params.promote.registered_model,
        fingerprint=candidate.fingerprint,
        decision=decision,
        figures=figures,
        compared_version=str(compared.version) if compared is not None else None,
        relevance_scope=params.pairs.qrels_scope,
        base_model=candidate.base_model,
        training_data_hash=candidate.data_hash,
        pairs=_row_count(TABLES["pairs"].validated_path(paths)),
        pairs_dvc_md5=dvc_md5_of("data/validated/pairs.parquet", hashes),
        eval_dvc_md5=dvc_md5_of("data/validated/queries.parquet", hashes),
        corpus_passages=_row_count(TABLES["chunks"].validated_path(paths)),
        test_method=params.promote.test_method,
        significance_metric=params.promote.significance_metric,
        git_commit=git_commit(paths.root),
        training_params=dict(candidate.metadata.train_params),
    )


def _row_count(table: Path) -> int | None:
    """Rows of a parquet file from its footer (the data is not read)."""
    import pyarrow.parquet as pq  # type: ignore[import-untyped]  # pyarrow ships no types

    return int(pq.read_metadata(table).num_rows) if table.is_file() else None


def move_aliases(
    registry: Registry, version: str, decision: Decision, champion: ModelVersion | None
) -> None:
    """Promoted: old champion → ``previous``, this version → ``champion``; else → ``challenger``.

    ``previous`` moves first, so a crash in between leaves both aliases on the old
    champion (still a valid registry) and the rerun completes the move. A version that
    is promoted while it holds ``challenger`` (re-decided on new data) loses that alias.
    """
    client, name = registry.client, registry.model_name
    if decision.promote:
        if champion is not None:
            client.set_registered_model_alias(name, PREVIOUS, str(champion.version))
        client.set_registered_model_alias(name, CHAMPION, version)
        # A challenger re-decided on new data and now promoted is no longer a challenger.
        challenger = registry.version_by_alias(CHALLENGER)
        if challenger is not None and str(challenger.version) == version:
            client.delete_registered_model_alias(name, CHALLENGER)
    else:
        client.set_registered_model_alias(name, CHALLENGER, version)


def _ensure_registered_model(registry: Registry) -> None:
    from mlflow.exceptions import MlflowException

    try:
        registry.client.get_registered_model(registry.model_name)
    except MlflowException as error:
        if error.error_code != "RESOURCE_DOES_NOT_EXIST":
            raise
        registry.client.create_registered_model(
            registry.model_name,
            description="mathembed: sentence embeddings for mathematical concept retrieval",
        )


def _recorded_result(
    registry: Registry, version: ModelVersion, already_registered: bool, *, redecided: bool = False
) -> PromotionResult:
    """The outcome a settled version records in its tags (idempotent re-promotion)."""
    tags = version.tags
    decision = recorded_decision(tags)
    if (
        TAG_ROLLED_BACK in tags and decision.promote
    ):  # its recorded "promoted" was withdrawn by a rollback since
        decision = held_back(decision, tags)
    return PromotionResult(
        registered_model=registry.model_name,
        version=str(version.version),
        fingerprint=tags.get(TAG_FINGERPRINT, ""),
        run_id=version.run_id or "",
        decision=decision,
        compared_version=tags.get(TAG_COMPARED_VERSION) or None,
        aliases=registry.aliases(),
        already_registered=already_registered,
        tracking_uri=redact_url(registry.uri),
        decided_at=tags.get("decided_at", ""),
        redecided=redecided,
        figures=recorded_figures(tags),
    )
