"""Attacks on tools through the GraphQL API of a live server: a hostile pattern or deeply nested
arguments against argument checking, secrets aimed at a host of the client's choosing (a loopback
server that echoes the headers it got stands for that host), and dot segments in path arguments."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from app.container import Container
from app.settings import Settings
from tests.fakes import FakeEmbedder, FakeModels
from tests.graphql.client import Api, live_api

SECRET = "echo-me-not-7c1e"
ERRORS = "... on Error { message } ... on ValidationError { fields { field message } }"
CREATE = f"""mutation($input: CreateToolInput!) {{ createTool(input: $input) {{ __typename
  ... on Tool {{ id headers {{ header secret }} }} {ERRORS} }} }}"""
UPDATE = f"""mutation($id: ID!, $input: UpdateToolInput!) {{ updateTool(id: $id, input: $input) {{ __typename
  ... on Tool {{ id urlTemplate headers {{ header secret }} }} {ERRORS} }} }}"""
TEST_TOOL = f"""mutation($id: ID!, $a: JSON!) {{ testTool(id: $id, arguments: $a) {{ __typename
  ... on ToolTest {{ ok output error }} {ERRORS} }} }}"""


class Echo:
    """A loopback HTTP server answering every request with the path and headers it received."""

    def __init__(self, host: str) -> None:
        seen: list[dict[str, Any]] = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                got = {"path": self.path, "headers": dict(self.headers.items())}
                seen.append(got)
                body = json.dumps(got).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_PUT = do_GET

        self.seen = seen
        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        self.base = f"http://{host}:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def partner() -> Iterator[Echo]:
    served = Echo("127.0.0.1")  # the host the operator bound the secret to
    yield served
    served.close()


@pytest.fixture
def attacker() -> Iterator[Echo]:
    served = Echo("127.0.0.2")  # any other host
    yield served
    served.close()


@pytest.fixture
def api(migrated: Settings, partner: Echo) -> Iterator[Api]:
    tools = {
        "secrets": {"crm_token": SECRET, "other_token": "unused-2b9d"},
        "secret_origins": {"crm_token": [partner.base], "other_token": ["https://elsewhere.example"]},
        "allow_private": True,
    }
    built = Container.build(
        Settings(database_url=migrated.database_url, tools=tools), embedder=FakeEmbedder(), chat_models=FakeModels()
    )
    try:
        with live_api(built) as client:
            yield client
    finally:
        built.close()


def tool(base: str, **more: Any) -> dict[str, Any]:
    return {
        "name": "lookup",
        "description": "Look a customer up",
        "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
        "group": "crm",
        "method": "GET",
        "urlTemplate": base + "/users/{id}/profile",
        "headers": [{"header": "Authorization", "secret": "crm_token"}],
        **more,
    }


def created(api: Api, definition: dict[str, Any]) -> str:
    made = api.run(CREATE, input=definition)["createTool"]
    assert made["__typename"] == "Tool", made
    return str(made["id"])


def test_a_backtracking_pattern_is_checked_in_linear_time_and_answers_with_a_validation_error(
    api: Api, partner: Echo
) -> None:
    schema = {"type": "object", "properties": {"id": {"type": "string", "pattern": "^(a+)+$"}}, "required": ["id"]}
    tool_id = created(api, tool(partner.base, inputSchema=schema))
    # Python's re takes minutes on this (it doubles with each "a"); RE2 answers at once.
    tested = api.run(TEST_TOOL, id=tool_id, a={"id": "a" * 40 + "!"})["testTool"]
    assert tested["__typename"] == "ValidationError" and tested["fields"][0]["field"] == "arguments.id"
    assert "does not match" in tested["message"]
    assert api.run(TEST_TOOL, id=tool_id, a={"id": "aaaa"})["testTool"]["ok"] is True
    assert partner.seen[-1]["path"] == "/users/aaaa/profile"


def test_patterns_re2_cannot_run_and_oversized_schemas_are_refused_naming_the_limit(api: Api, partner: Echo) -> None:
    backref = {"type": "object", "properties": {"id": {"type": "string", "pattern": "^(a)\\1$"}}}
    refused = api.run(CREATE, input=tool(partner.base, inputSchema=backref))["createTool"]
    assert refused["__typename"] == "ValidationError" and refused["fields"][0]["field"] == "inputSchema"
    assert "the pattern at /properties/id/pattern is not one RE2 runs" in refused["message"]
    deep: dict[str, Any] = {"type": "object"}
    for _ in range(40):
        deep = {"type": "object", "properties": {"id": {"type": "string"}, "x": deep}}
    refused = api.run(CREATE, input=tool(partner.base, inputSchema=deep))["createTool"]
    assert "nests objects and arrays at most 32 deep" in refused["message"]
    many = {"type": "object", "properties": {f"p{i}": {"type": "string", "pattern": "^a"} for i in range(60)}}
    many["properties"]["id"] = {"type": "string"}
    refused = api.run(CREATE, input=tool(partner.base, inputSchema=many))["createTool"]
    assert "at most 50 patterns" in refused["message"]


def test_deeply_nested_or_self_multiplying_arguments_end_in_a_validation_error(api: Api, partner: Echo) -> None:
    tool_id = created(api, tool(partner.base))
    nested: Any = "x"
    for _ in range(200):
        nested = [nested]
    tested = api.run(TEST_TOOL, id=tool_id, a={"id": "1", "more": nested})["testTool"]
    assert tested["__typename"] == "ValidationError" and "at most 32 deep" in tested["message"]
    # Each level of the schema applies its root twice: 2^30 applications if nothing stopped it.
    multiplying = {
        "type": "object",
        "properties": {"id": {"type": "string"}, "x": {"$ref": "#"}},
        "allOf": [{"properties": {"x": {"$ref": "#"}}}],
    }
    bomb_id = created(api, tool(partner.base, name="bomb", inputSchema=multiplying))
    chain: dict[str, Any] = {"id": "1"}
    for _ in range(30):
        chain = {"id": "1", "x": chain}
    tested = api.run(TEST_TOOL, id=bomb_id, a=chain)["testTool"]
    assert tested["__typename"] == "ValidationError" and "too much work" in tested["message"]
    assert partner.seen == []


def test_a_secret_goes_only_to_its_origins_and_never_comes_back(api: Api, partner: Echo, attacker: Echo) -> None:
    planted = api.run(CREATE, input=tool(attacker.base))["createTool"]
    unknown = api.run(CREATE, input=tool(attacker.base, headers=[{"header": "X", "secret": "no_such"}]))["createTool"]
    assert planted["__typename"] == unknown["__typename"] == "ValidationError"
    # A secret bound elsewhere and one that does not exist read the same: no name is confirmed.
    assert planted["message"].replace("crm_token", "NAME") == unknown["message"].replace("no_such", "NAME").replace(
        "headers.X", "headers.Authorization"
    )
    tool_id = created(api, tool(partner.base))
    tested = api.run(TEST_TOOL, id=tool_id, a={"id": "7"})["testTool"]
    assert tested["ok"] is True and partner.seen[-1]["headers"]["Authorization"] == SECRET
    assert SECRET not in tested["output"] and "[secret]" in tested["output"]  # the echo is redacted
    moved = api.run(UPDATE, id=tool_id, input={"urlTemplate": attacker.base + "/users/{id}/profile"})["updateTool"]
    assert moved["__typename"] == "Tool" and moved["headers"] == []  # a new destination loses its secrets
    api.run(TEST_TOOL, id=tool_id, a={"id": "7"})
    assert attacker.seen and all("Authorization" not in hit["headers"] for hit in attacker.seen)
    regrant = api.run(UPDATE, id=tool_id, input={"headers": [{"header": "Authorization", "secret": "crm_token"}]})
    assert regrant["updateTool"]["__typename"] == "ValidationError"
    assert SECRET not in json.dumps(attacker.seen)


def test_a_path_argument_cannot_leave_its_segment(api: Api, partner: Echo) -> None:
    tool_id = created(api, tool(partner.base))
    for value in ("..", ".", "%2e%2e", "%252E%252e", "a/b", "..%2f..%2fadmin", "a\\b"):
        tested = api.run(TEST_TOOL, id=tool_id, a={"id": value})["testTool"]
        assert tested["ok"] is False and "fills a path segment" in tested["error"], (value, tested)
    assert partner.seen == []
    assert api.run(TEST_TOOL, id=tool_id, a={"id": "a..b"})["testTool"]["ok"] is True
    assert partner.seen[-1]["path"] == "/users/a..b/profile"
