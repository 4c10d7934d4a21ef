"""Quiet libraries: the progress bars and INFO lines of other people's code, silenced.

Loading a model prints transformers' "Loading weights" bar, saving one its "Writing model
shards" bar, and MLflow logs INFO lines of its own (database migrations, "Created version
'3' of model"). None of it is the user's business: it hides the lines that are. The CLI
calls :func:`silence_library_noise` once at startup, before any heavy library is imported.

Our own progress (ingest, prepare, graph, the trainer's bar, ``encode``'s bar when a
command asks for it) is untouched: those use ``tqdm`` directly, not the libraries'
switches below, so ``TQDM_DISABLE`` (which would silence them too) is not set.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import MutableMapping

#: Read at import by huggingface_hub and by transformers (its ``logging.tqdm``, which
#: draws "Loading weights" and "Writing model shards"), and by MLflow for its loggers;
#: set only where unset, so ``HF_HUB_DISABLE_PROGRESS_BARS=0 mathembed ...`` brings the
#: bars back.
QUIET_ENVIRONMENT = {
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "MLFLOW_LOGGING_LEVEL": "WARNING",
    # MLflow prints "View run ... at: <url>" on stdout when a run ends against a server.
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "1",
}
#: Loggers whose INFO lines describe the library's own work, not ours.
QUIET_LOGGERS = (
    "mlflow",
    "alembic",
    "urllib3",
    "sentence_transformers",
    "transformers",
    "huggingface_hub",
)


def silence_library_noise(environ: MutableMapping[str, str] | None = None) -> None:
    """Silence the libraries' bars and INFO lines for this process and its children.

    Environment variables cover libraries not imported yet (and ``mathembed`` commands
    that ``dvc repro`` starts); libraries already imported (tests, a flow calling stages
    in process) are told through their own API. Imports nothing heavy.
    """
    target = os.environ if environ is None else environ
    for key, value in QUIET_ENVIRONMENT.items():
        target.setdefault(key, value)
    if target.get("HF_HUB_DISABLE_PROGRESS_BARS") == "1":
        _disable_loaded_progress_bars()
    for name in QUIET_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level < logging.WARNING:  # keep a level someone raised on purpose
            logger.setLevel(logging.WARNING)


def _disable_loaded_progress_bars() -> None:
    # Both read the switch once, at import: an already imported library must be told.
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if "transformers" in sys.modules:
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
