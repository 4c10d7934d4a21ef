"""The webhook's key never reaches the log, however the URL is spelled (issue 23, finding 9).

A webhook's path is its key. ``requests`` quotes a URL as it sends it, not as it was given
(``%41`` becomes ``A``, a space ``%20``), and a redirect's target is a URL the hook never
saw; in 3 of these 9 variants the failure warning used to quote the key. Each variant is
POSTed to a real endpoint on 127.0.0.1 that refuses it (or to a port nobody listens on).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from webhook import Webhook, receiving_webhook

from flows import hooks

#: In every variant's path; its letters are unreserved, so every quoting keeps them as is.
KEY = "s3cr3t"
REPORT = {"flow": "nightly-retrain", "outcome": "failed", "message": "step 'train' failed"}


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    with receiving_webhook() as receiver:
        receiver.status = 500
        yield receiver


def warning_for(url: str, caplog: pytest.LogCaptureFixture) -> str:
    logger = logging.getLogger("test.webhook_redaction")
    with caplog.at_level(logging.WARNING, logger=logger.name):
        assert not hooks.post_webhook(url, REPORT, logger)
    assert "did not accept the report" in caplog.text and "127.0.0.1" in caplog.text
    return caplog.text


@pytest.mark.parametrize(
    "path",
    [
        f"/{KEY}-plain",
        f"/{KEY}-query?token={KEY}",
        f"/{KEY}-%41bc",  # requests unquotes %41 to A
        f"/{KEY} spaced",  # requests quotes the space to %20
        f"/{KEY}-cl\u00e9",  # and a non-ASCII letter to %C3%A9
        f"/{KEY}-fragment#{KEY}",
        f"/x/../{KEY}-dots",  # dot segments resolved before sending
    ],
)
def test_a_refused_post_s_warning_hides_every_form_of_the_key(
    bounded_in_time: None, webhook: Webhook, caplog: pytest.LogCaptureFixture, path: str
) -> None:
    text = warning_for(webhook.url + path, caplog)
    assert "500" in text  # what went wrong is still said
    assert KEY not in text


def test_a_redirect_is_not_followed_and_its_target_not_logged(
    bounded_in_time: None, webhook: Webhook, caplog: pytest.LogCaptureFixture
) -> None:
    webhook.location = f"/elsewhere/{KEY}-moved"  # answered 500 there
    text = warning_for(f"{webhook.url}/{KEY}-first", caplog)
    assert "307" in text and "redirect" in text
    assert KEY not in text
    assert len(webhook.reports) == 1  # the report went to the given URL only


def test_an_unreachable_webhook_s_warning_hides_the_rewritten_key(
    bounded_in_time: None, caplog: pytest.LogCaptureFixture
) -> None:
    text = warning_for(f"http://127.0.0.1:9/hook/{KEY}-%41 b", caplog)  # discard port
    assert KEY not in text
