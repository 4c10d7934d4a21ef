"""The MCP server's tools (pipelines.search.mcp_server), called in-process through the
SDK's own client: their names and schemas, a search that finds the planted passage first,
get_statement on the ids a hit gives, and every mistake a caller can make answered as a
tool error while the server goes on answering. The transports, stdio and streamable HTTP,
are tested end to end in tests/integration/test_mcp_service.py.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from mcp import Client
from mcp_types import CallToolResult
from mcp_worlds import (
    PLANTED_PAPER,
    PLANTED_PASSAGE,
    PLANTED_STATEMENT,
    PLANTED_TEXT,
    PLANTED_TITLE,
    QUERY,
    searchable_world,
)
from promotion_worlds import Models, World
from pydantic import BaseModel, ValidationError
from typer.testing import CliRunner

from pipelines import cli
from pipelines.search.engine import SearchEngine, open_engine
from pipelines.search.mcp_server import (
    SearchAnswer,
    SearchHit,
    SearchServer,
    argument_problems,
    http_address,
    open_server,
)
from pipelines.search.query import MAX_QUERY_CHARS

T = TypeVar("T")


@pytest.fixture(scope="module")
def searchable(
    tmp_path_factory: pytest.TempPathFactory, bow_models: Models, empty_mlflow_db: Path
) -> World:
    return searchable_world(tmp_path_factory.mktemp("mcp") / "project", bow_models, empty_mlflow_db)


@pytest.fixture(scope="module")
def engine(searchable: World) -> SearchEngine:
    return open_engine(searchable.paths, searchable.params.promote, ranking="hybrid")


@pytest.fixture(scope="module")
def server(searchable: World, engine: SearchEngine) -> SearchServer:
    return open_server(engine, searchable.paths)


def with_client(server: SearchServer, work: Callable[[Client], Awaitable[T]]) -> T:
    async def run() -> T:
        async with Client(server) as client:
            return await work(client)

    return anyio.run(run)


def call(server: SearchServer, name: str, arguments: dict[str, Any]) -> CallToolResult:
    return with_client(server, lambda client: client.call_tool(name, arguments))


def error_text(result: CallToolResult) -> str:
    assert result.is_error, result.structured_content
    assert result.structured_content is None
    (block,) = result.content
    text = getattr(block, "text", "")
    assert "Traceback" not in text
    return str(text)


def test_the_two_tools_are_listed_with_schemas_a_model_can_act_on(server: SearchServer) -> None:
    listed = with_client(server, lambda client: client.list_tools())
    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == {"search_statements", "get_statement"}

    search = tools["search_statements"]
    arguments = search.input_schema
    assert arguments["required"] == ["query"]
    assert arguments["properties"]["query"]["type"] == "string"
    assert arguments["properties"]["query"]["maxLength"] == MAX_QUERY_CHARS
    k = arguments["properties"]["k"]
    assert (k["type"], k["default"], k["minimum"], k["maximum"]) == ("integer", 10, 1, 100)
    assert search.output_schema is not None
    assert {"query", "model", "ranking", "hits"} <= set(search.output_schema["required"])
    assert "get_statement" in (search.description or "")  # says how to read more

    fetch = tools["get_statement"]
    assert fetch.input_schema["required"] == ["id"]
    assert set(fetch.input_schema["properties"]) == {"id"}
    assert fetch.output_schema is not None
    assert {"id", "type", "text"} <= set(fetch.output_schema["properties"])
    assert "chunk_id" in (fetch.description or "") and "statement_id" in (fetch.description or "")
    for tool in tools.values():
        assert tool.annotations is not None and tool.annotations.read_only_hint


def test_a_search_finds_the_planted_passage_first_and_its_ids_fetch_it_whole(
    server: SearchServer, engine: SearchEngine
) -> None:
    async def work(client: Client) -> tuple[CallToolResult, CallToolResult, CallToolResult]:
        found = await client.call_tool("search_statements", {"query": QUERY, "k": 3})
        assert found.structured_content is not None
        first = found.structured_content["hits"][0]
        passage = await client.call_tool("get_statement", {"id": first["chunk_id"]})
        statement_id = first["statements"][0]["statement_id"]
        statement = await client.call_tool("get_statement", {"id": statement_id})
        return found, passage, statement

    found, passage, statement = with_client(server, work)
    assert not found.is_error and found.structured_content is not None
    answer = found.structured_content
    assert answer["query"] == QUERY and answer["model"]["alias"] == "champion"
    hits = answer["hits"]
    assert [hit["rank"] for hit in hits] == [1, 2, 3]
    assert hits[0]["chunk_id"] == PLANTED_PASSAGE
    assert hits[0]["title"] == PLANTED_TITLE and hits[0]["text"] == PLANTED_TEXT
    assert hits[0]["statements"][0]["statement_id"] == PLANTED_STATEMENT
    assert hits[0]["score"] > hits[1]["score"]
    # What the engine answers, field for field: the tool passes every field through.
    direct = engine.answer(QUERY, 3)
    assert set(answer) == set(direct)
    assert [set(hit) for hit in hits] == [set(hit) for hit in direct["hits"]]
    assert [hit["chunk_id"] for hit in hits] == [hit["chunk_id"] for hit in direct["hits"]]

    assert passage.structured_content == {
        "id": PLANTED_PASSAGE,
        "type": "passage",
        "paper_id": PLANTED_PAPER,
        "title": PLANTED_TITLE,
        "url": hits[0]["url"],
        "text": PLANTED_TEXT,
        "section": "Main results",
        "statements": hits[0]["statements"],
        "kind": "",
        "name": "",
        "label": "",
        "proof": "",
        "slogan": "",
    }
    assert statement.structured_content is not None
    assert statement.structured_content["type"] == "statement"
    assert statement.structured_content["id"] == PLANTED_STATEMENT
    assert statement.structured_content["kind"] == "theorem"
    assert statement.structured_content["name"] == "Lattice prime theorem"
    assert statement.structured_content["label"] == "theorem-lattice-prime"
    assert statement.structured_content["text"] == PLANTED_TEXT
    assert statement.structured_content["title"] == PLANTED_TITLE
    assert statement.structured_content["slogan"] == "Lattices hold primes."


@pytest.mark.parametrize(
    ("name", "arguments", "says"),
    [
        ("search_everything", {"query": "prime"}, "Unknown tool: search_everything"),
        ("search_statements", {"query": "prime", "top_k": 3}, "takes no argument 'top_k'"),
        ("search_statements", {}, "argument query: Field required"),
        ("search_statements", {"query": "   "}, "the query is blank"),
        ("search_statements", {"query": ""}, "argument query: String should have at least 1"),
        ("search_statements", {"query": "p" * (MAX_QUERY_CHARS + 1)}, "at most 2000 characters"),
        ("search_statements", {"query": "prime", "k": 0}, "argument k: Input should be greater"),
        ("search_statements", {"query": "prime", "k": 101}, "less than or equal to 100 (got 101)"),
        ("search_statements", {"query": "prime", "k": "ten"}, "argument k: Input should be"),
        ("get_statement", {"id": "2401.00007v1#c9999"}, "no passage or statement has the id"),
        ("get_statement", {"chunk_id": PLANTED_PASSAGE}, "takes no argument 'chunk_id'"),
    ],
)
def test_a_mistake_is_a_tool_error_and_the_server_goes_on_answering(
    server: SearchServer, name: str, arguments: dict[str, Any], says: str
) -> None:
    async def work(client: Client) -> tuple[CallToolResult, CallToolResult]:
        wrong = await client.call_tool(name, arguments)
        right = await client.call_tool("search_statements", {"query": QUERY, "k": 1})
        return wrong, right

    wrong, right = with_client(server, work)
    assert says in error_text(wrong)
    assert len(error_text(wrong)) < 300  # one line to act on, not pydantic's whole report
    assert not right.is_error and right.structured_content is not None
    assert right.structured_content["hits"][0]["chunk_id"] == PLANTED_PASSAGE


def test_the_declared_answer_fields_are_the_engines() -> None:
    """The structured output declares what SearchEngine.answer and Hit.as_json give; a field
    they drop or rename fails here, one they add passes through undeclared."""
    from pipelines.search.engine import ModelRef
    from pipelines.search.mcp_server import ModelInfo
    from pipelines.search.query import Hit

    hit = Hit("p#c0", "p", "A title", 0.5, "text", None).as_json(1)
    assert set(SearchHit.model_fields) <= set(hit)
    assert set(ModelInfo.model_fields) == set(ModelRef("m", "1", None, "f").as_json())
    assert SearchHit.model_validate({**hit, "added": 1}).model_dump()["added"] == 1
    assert {"query", "model", "ranking", "took_ms", "hits"} == set(SearchAnswer.model_fields)


def test_argument_problems_name_each_argument_on_one_line() -> None:
    class Arguments(BaseModel):
        query: str
        k: int

    with pytest.raises(ValidationError) as raised:
        Arguments.model_validate({"k": "x" * 100})
    said = argument_problems(raised.value)
    assert said.startswith("argument query: Field required; argument k: ")
    assert "\n" not in said and "(got 'xxxx" in said and said.endswith("…)")


def test_the_http_address_brackets_an_ipv6_host() -> None:
    assert http_address("127.0.0.1", 8766) == "http://127.0.0.1:8766/mcp"
    assert http_address("::1", 80) == "http://[::1]:80/mcp"


def test_the_command_refuses_a_remote_address_or_transport_before_loading(tmp_path: Path) -> None:
    runner = CliRunner()
    argv = ["mcp", "--transport", "http", "--host", "0.0.0.0", "--root", str(tmp_path)]
    result = runner.invoke(cli.app, argv)
    assert result.exit_code == 2
    assert "mcp: --host '0.0.0.0' would serve all interfaces" in result.stderr
    assert "--allow-remote" in result.stderr

    result = runner.invoke(cli.app, ["mcp", "--transport", "pigeon", "--root", str(tmp_path)])
    said = " ".join(result.stderr.replace("│", " ").split())  # out of its box, unwrapped
    assert result.exit_code == 2 and "'pigeon' is not one of 'stdio', 'http'" in said

    result = runner.invoke(cli.app, ["mcp", "--root", str(tmp_path)])  # nothing to serve yet
    assert result.exit_code == 1
    assert "mcp: no corpus to search" in result.stderr and result.stdout == ""
