"""A server at ``search.engine_url`` that answers, but not as Qdrant does (issue 29): an
answer that is not JSON, or JSON of another shape, is one line naming the server (its
password hidden) and the knob, not ``Expecting value: line 1 column 1`` or pydantic's
dump of what it expected."""

from __future__ import annotations

import pytest
from canned_http import answering

from pipelines.search.remote_index import EngineUnreachableError, QdrantServer

SECRET = "s3cret"

pytestmark = pytest.mark.usefixtures("bounded_in_time")


@pytest.mark.parametrize(
    ("body", "content_type", "what"),
    [
        (b"<html><body>It works!</body></html>", "text/html", "something that is not JSON"),
        (b"", "application/json", "something that is not JSON"),
        (
            b'{"result": {"collections": 7}, "status": "ok"}',
            "application/json",
            "JSON of another shape",
        ),
        (b"[1, 2, 3]", "application/json", "JSON of another shape"),
    ],
    ids=["html", "empty", "wrong-result", "a-list"],
)
def test_an_answer_that_is_not_qdrant_s_is_one_line_naming_the_server_and_the_knob(
    body: bytes, content_type: str, what: str
) -> None:
    with answering(200, body, content_type) as url:
        secret_url = url.replace("http://", f"http://reader:{SECRET}@")
        with pytest.raises(EngineUnreachableError) as raised:
            QdrantServer(secret_url)
    message = str(raised.value)
    where = url.replace("http://", "http://***@")
    assert message.startswith(f"the server at {where} (search.engine_url) answered {what}")
    assert "not as a Qdrant server" in message and "search.engine: embedded" in message
    assert "\n" not in message and len(message) < 300  # no dump of the expected schema
    assert SECRET not in message and "reader" not in message
