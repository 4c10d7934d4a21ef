"""Secrets out of the flows' logs: every record Prefect shows or stores passes :func:`redact`.

The flows' own lines are redacted where they are written, but Prefect logs too: a failed
task's exception and traceback, the final state's message ("Finished in state Failed(...)"),
prints captured by ``log_prints``. A filter on the handlers of Prefect's loggers (console
and API) redacts those records before any handler formats or sends them.
"""

from __future__ import annotations

import logging

from pipelines.common.redact import redact

#: The loggers whose handlers show or send flow logs (Prefect's logging.yml), root included.
FLOW_LOGGERS = ("", "prefect", "prefect.flow_runs", "prefect.task_runs", "prefect.extra")


class RedactingFilter(logging.Filter):
    """Hides URL credentials in a record's message and traceback; drops nothing."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:
            # Formatters reuse exc_text when it is set: format the traceback once, redacted.
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


def redact_flow_logs(logger_names: tuple[str, ...] = FLOW_LOGGERS) -> None:
    """Put a :class:`RedactingFilter` on every handler of ``logger_names`` (idempotent)."""
    for name in logger_names:
        for handler in logging.getLogger(name).handlers:
            if not any(isinstance(existing, RedactingFilter) for existing in handler.filters):
                handler.addFilter(RedactingFilter())
