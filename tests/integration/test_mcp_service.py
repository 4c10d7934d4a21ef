"""``mathembed mcp`` as an assistant runs it, through the MCP SDK's own clients.

Over stdio the client launches ``python -m mathembed mcp --root <world>`` itself; over
streamable HTTP the command runs as its own process on a free port of 127.0.0.1 (``--port
0``; it prints its URL). Each transport is asked what an assistant asks (the tools, a
search that finds the planted passage first, the statement a hit names) and what a careless
one does (an unknown tool, an unknown argument, an id no hit gave), and must go on
answering. A client that goes away mid-call, over stdio (stdin closed under a call) or HTTP
(the connection dropped as the answer starts), leaves no traceback and no stuck worker: the
stdio server ends by itself, the HTTP one answers the next client and stops on SIGTERM.
Every wait is bounded; a server still running at the end is killed.
"""

from __future__ import annotations

import http.client
import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from launched import ready_address
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_worlds import PLANTED_PASSAGE, PLANTED_STATEMENT, QUERY, searchable_world
from promotion_worlds import Models, World

#: Seconds a server may take to load its model and answer (a loaded 2-core machine).
STARTUP_SECONDS = 240
#: What the HTTP server prints once it answers.
ADDRESS = re.compile(r"mathembed mcp: (http://127\.0\.0\.1:\S+)")
MCP = [sys.executable, "-m", "mathembed", "mcp"]
#: A protocol version of the initialize handshake, for the raw clients below.
PROTOCOL = "2025-06-18"
#: The first message of a raw client (one that then leaves mid-call).
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": PROTOCOL,
        "capabilities": {},
        "clientInfo": {"name": "leaver", "version": "0"},
    },
}


@pytest.fixture(scope="module")
def searchable(
    tmp_path_factory: pytest.TempPathFactory, bow_models: Models, empty_mlflow_db: Path
) -> World:
    return searchable_world(tmp_path_factory.mktemp("mcp") / "project", bow_models, empty_mlflow_db)


async def ask(client: Client) -> dict[str, Any]:
    """What an assistant asks, then a careless one, then the assistant again: the answers
    as plain data."""
    listed = await client.list_tools()
    found = await client.call_tool("search_statements", {"query": QUERY, "k": 3})
    assert found.structured_content is not None, found.content
    hit = found.structured_content["hits"][0]
    statement = await client.call_tool(
        "get_statement", {"id": hit["statements"][0]["statement_id"]}
    )
    mistakes = [
        await client.call_tool("search_everything", {"query": QUERY}),
        await client.call_tool("search_statements", {"query": QUERY, "top_k": 3}),
        await client.call_tool("get_statement", {"id": "no-such-passage"}),
    ]
    again = await client.call_tool("search_statements", {"query": QUERY, "k": 1})
    return {
        "tools": sorted(tool.name for tool in listed.tools),
        "first": hit["chunk_id"],
        "statement": statement.structured_content,
        "mistakes": [(wrong.is_error, getattr(wrong.content[0], "text", "")) for wrong in mistakes],
        "again": again.structured_content,
    }


def check_answers(answers: dict[str, Any]) -> None:
    assert answers["tools"] == ["get_statement", "search_statements"]
    assert answers["first"] == PLANTED_PASSAGE
    assert answers["statement"]["id"] == PLANTED_STATEMENT
    assert answers["statement"]["type"] == "statement"
    unknown_tool, unknown_argument, unknown_id = answers["mistakes"]
    assert unknown_tool == (True, "Unknown tool: search_everything")
    assert unknown_argument[0] and "takes no argument 'top_k'" in unknown_argument[1]
    assert unknown_id[0] and "no passage or statement has the id 'no-such-passage'" in unknown_id[1]
    assert answers["again"]["hits"][0]["chunk_id"] == PLANTED_PASSAGE


def test_over_stdio_the_sdk_client_searches_and_fetches(searchable: World, tmp_path: Path) -> None:
    launch = StdioServerParameters(command=MCP[0], args=[*MCP[1:], "--root", str(searchable.root)])
    stderr = tmp_path / "stderr.txt"

    async def run() -> dict[str, Any]:
        with stderr.open("w") as errlog, anyio.fail_after(STARTUP_SECONDS):
            async with Client(stdio_client(launch, errlog=errlog)) as client:
                return await ask(client)

    check_answers(anyio.run(run))
    assert "Traceback" not in stderr.read_text()


def test_over_stdio_a_client_leaving_mid_call_ends_the_server_cleanly(searchable: World) -> None:
    messages = [
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "search_statements", "arguments": {"query": QUERY, "k": 100}},
        },
    ]
    sent = "".join(json.dumps(message) + "\n" for message in messages)
    with subprocess.Popen(
        [*MCP, "--root", str(searchable.root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            # The call and then end of input at once: the client is gone before it is answered.
            stdout, stderr = process.communicate(sent, timeout=STARTUP_SECONDS)
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == 0, stderr[-3000:]
    assert "Traceback" not in stderr
    replies = [json.loads(line) for line in stdout.splitlines()]  # nothing but protocol
    assert replies and replies[0]["id"] == 1 and "result" in replies[0]


@pytest.fixture
def http_server(searchable: World) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    command = [*MCP, "--transport", "http", "--port", "0", "--root", str(searchable.root)]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            yield ready_address(process, ADDRESS, timeout=STARTUP_SECONDS), process
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)


def leave_mid_call(url: str) -> None:
    """Open a session, send a search, and drop the connection as its answer starts."""
    address = url.removeprefix("http://").split("/", 1)[0]
    host, port = address.rsplit(":", 1)
    path = "/" + url.split("/", 3)[3]
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    def post(connection: http.client.HTTPConnection, message: dict[str, Any]) -> None:
        connection.request("POST", path, json.dumps(message), headers)

    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    post(
        connection,
        INITIALIZE,
    )
    response = connection.getresponse()
    assert response.status == 200, response.read()
    headers["Mcp-Session-Id"] = response.headers["Mcp-Session-Id"]
    headers["MCP-Protocol-Version"] = PROTOCOL
    response.read()
    post(connection, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    accepted = connection.getresponse()
    assert accepted.status == 202
    accepted.read()
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "search_statements", "arguments": {"query": QUERY, "k": 100}},
    }
    post(connection, call)
    assert connection.sock is not None
    assert connection.sock.recv(8)  # the answer has started ...
    connection.close()  # ... and the client is gone


def test_over_http_the_sdk_client_searches_and_a_client_leaving_stops_nothing(
    http_server: tuple[str, subprocess.Popen[str]],
) -> None:
    url, process = http_server

    async def one_client() -> dict[str, Any]:
        with anyio.fail_after(120):
            async with Client(url) as client:
                return await ask(client)

    check_answers(anyio.run(one_client))
    leave_mid_call(url)
    check_answers(anyio.run(one_client))  # the next client is answered as the first was

    process.send_signal(signal.SIGTERM)  # how a service manager stops it
    assert process.wait(timeout=30) == 0
    assert process.stdout is not None and "mathembed mcp: stopped" in process.stdout.read()
    assert process.stderr is not None and "Traceback" not in process.stderr.read()
