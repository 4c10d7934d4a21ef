"""pipelines.common.redact: credentials (and secret paths) out of URLs and texts."""

from __future__ import annotations

import pytest

from pipelines.common.redact import HIDDEN, redact, redact_url


def test_a_password_in_a_url_is_hidden_and_the_place_kept() -> None:
    redacted = redact_url("http://alice:s3cret@mlflow.example:5000/api?token=abc")
    assert "s3cret" not in redacted and "alice" not in redacted and "abc" not in redacted
    assert redacted == f"http://{HIDDEN}@mlflow.example:5000/api?{HIDDEN}"


def test_a_secret_path_is_hidden_when_asked() -> None:
    url = "https://hooks.example.com/services/T000/B000/XXXX?key=1"
    assert redact_url(url, keep_path=False) == f"https://hooks.example.com/{HIDDEN}"
    assert redact_url("https://hooks.example.com", keep_path=False) == "https://hooks.example.com"


@pytest.mark.parametrize(
    "url", ["sqlite:////abs/mlruns/mlflow.db", "http://127.0.0.1:5000", "file:///tmp/x"]
)
def test_a_url_without_secrets_is_unchanged(url: str) -> None:
    assert redact_url(url) == url


def test_an_unparseable_url_shows_nothing_of_itself() -> None:
    assert redact_url("http://user:pw@[::1") == HIDDEN  # an unclosed IPv6 bracket


def test_every_url_inside_a_text_is_redacted() -> None:
    text = (
        "MLflow at http://bob:hunter2@10.0.0.1:5000 failed: "
        "'https://x:y@backup.example/api' too; sqlite:////tmp/m.db is fine"
    )
    redacted = redact(text)
    assert "hunter2" not in redacted and ":y@" not in redacted
    assert f"http://{HIDDEN}@10.0.0.1:5000 failed" in redacted
    assert "sqlite:////tmp/m.db is fine" in redacted
