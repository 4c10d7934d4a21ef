"""Why promotion (or status, rollback, search) cannot go on; each message says how to fix it."""

from __future__ import annotations

#: How a message about an interrupted or refused promotion ends.
RERUN_HINT = "rerun `mathembed promote` (it is safe to repeat)"


class PromotionError(RuntimeError):
    """Promotion (or status, rollback, search) cannot go on; the message says how to fix it."""


class PromotionRefusedError(PromotionError):
    """The candidate may not be promoted (failed validation, no candidate, stale metadata)."""


class RegistryError(PromotionError):
    """MLflow is unreachable or failed; nothing was promoted and a rerun is safe."""


class PromotionLockedError(PromotionError):
    """Another promotion held the lock for longer than ``promote.lock_timeout_seconds``."""


class NoChampionError(PromotionError):
    """The registry has no ``@champion`` yet."""


class ModelFilesMissingError(PromotionError):
    """A registered version whose model files are gone (deleted, or a store moved)."""
