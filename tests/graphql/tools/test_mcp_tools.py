"""Tools from MCP servers, against a real MCP server (the ``mcp`` SDK's MCPServer over Streamable
HTTP, under uvicorn on 127.0.0.1) and a live ragchat: import lists its tools with side effects from
their annotations; a chat turn calls a read-only one; a side-effecting one is previewed and, once
approved (twice, concurrently), runs exactly once on the remote server; secrets go by name only to
their origins; private addresses are refused without the allowance; a slow or trickling server
meets the deadline."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import ToolAnnotations

from app.container import Container
from app.db.enums import ToolKind
from app.db.models import Tool
from app.errors import ConflictError, FetchError, TooLargeError, ValidationError
from app.llm.base import ModelCapabilities
from app.services import projects
from app.services.tools import mcp as tool_mcp
from app.services.tools import mcp_import
from app.services.tools.selection import select_tools
from app.settings import Settings, ToolSettings
from tests.fakes import FakeChatModel, FakeEmbedder, FakeModels
from tests.graphql.client import Api, live_api
from tests.graphql.tools.test_chat import APPROVE, ERRORS, calls, chat, kinds, session
from tests.live import serve

SECRET = "mcp-tok-93b1"
IMPORT = f"""mutation($input: ImportMcpToolsInput!) {{ importMcpTools(input: $input) {{ __typename
  ... on McpToolImport {{ tools {{ id name kind urlTemplate remoteName sideEffects group
      headers {{ header secret }} }} }}
  ... on UrlRefusedError {{ reason }} {ERRORS} }} }}"""
UPDATE = f"""mutation($id: ID!, $input: UpdateToolInput!) {{ updateTool(id: $id, input: $input) {{ __typename
  ... on Tool {{ sideEffects }} {ERRORS} }} }}"""


class Remote:
    """An MCP server standing for a team's system: a read-only forecast, a ticket that changes the
    world (counted here, on the server's side), a slow tool; and the Authorization headers it saw."""

    def __init__(self) -> None:
        self.tickets = 0
        self.forecasts = 0
        self.auth: list[str | None] = []
        self.lock = threading.Lock()
        server = MCPServer("remote")
        outer = self

        @server.tool(description="The weather forecast for a city", annotations=ToolAnnotations(read_only_hint=True))
        def forecast(city: str) -> str:
            with outer.lock:
                outer.forecasts += 1
            return f"{city}: sunny, 21 C"

        @server.tool(description="Open a support ticket")
        async def open_ticket(title: str) -> str:
            await anyio.sleep(0.3)  # long enough for a second approval to arrive while the first runs
            with outer.lock:
                outer.tickets += 1
                number = outer.tickets
            return f"ticket {number}: {title}"

        @server.tool(description="Takes its time", annotations=ToolAnnotations(read_only_hint=True))
        async def slow() -> str:
            await anyio.sleep(5)
            return "late"

        @server.tool(description="Answers at length", annotations=ToolAnnotations(read_only_hint=True))
        def huge() -> str:
            return "x" * 5000

        app = server.streamable_http_app(
            json_response=True,
            stateless_http=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )

        async def recording(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                headers = dict(scope["headers"])
                with outer.lock:
                    outer.auth.append((headers.get(b"authorization") or b"").decode() or None)
            await app(scope, receive, send)

        self.app = recording


@pytest.fixture
def remote() -> Iterator[tuple[Remote, str]]:
    served = Remote()
    with serve(served.app) as base:  # type: ignore[arg-type]
        yield served, f"{base}/mcp"


@pytest.fixture
def model() -> FakeChatModel:
    return FakeChatModel("toolful", capabilities=ModelCapabilities(tool_calling=True))


def _container(migrated: Settings, model: FakeChatModel, url: str, **tools: Any) -> Container:
    origin = url.removesuffix("/mcp")
    settings = Settings(
        database_url=migrated.database_url,
        tools={
            "secrets": {"mcp_token": SECRET, "elsewhere": "not-for-this-server"},
            "secret_origins": {"mcp_token": [origin], "elsewhere": ["https://other.example.com"]},
            "allow_private": True,
            "max_calls": 4,
            **tools,
        },
    )
    return Container.build(settings, embedder=FakeEmbedder(), chat_models=FakeModels(model, FakeChatModel("plain")))


@pytest.fixture
def api(migrated: Settings, model: FakeChatModel, remote: tuple[Remote, str]) -> Iterator[Api]:
    container = _container(migrated, model, remote[1])
    with live_api(container) as client:
        yield client
    container.close()


def import_tools(api: Api, url: str, **more: Any) -> dict[str, Any]:
    given = {"url": url, "group": "ops", "headers": [{"header": "Authorization", "secret": "mcp_token"}], **more}
    return dict(api.run(IMPORT, input=given)["importMcpTools"])


def test_import_lists_the_tools_with_side_effects_from_their_annotations(api: Api, remote: tuple[Remote, str]) -> None:
    server, url = remote
    made = import_tools(api, url, prefix="team_")
    assert made["__typename"] == "McpToolImport", made
    tools = {t["name"]: t for t in made["tools"]}
    assert {name: t["sideEffects"] for name, t in tools.items()} == {
        "team_forecast": False, "team_open_ticket": True, "team_slow": False, "team_huge": False
    }  # fmt: skip
    assert all(t["kind"] == "MCP" and t["urlTemplate"] == url and t["group"] == "ops" for t in tools.values())
    assert tools["team_forecast"]["remoteName"] == "forecast"
    assert tools["team_forecast"]["headers"] == [{"header": "Authorization", "secret": "mcp_token"}]
    assert server.auth and all(seen == SECRET for seen in server.auth)  # the secret went, by name, to its origin
    assert server.forecasts == 0 and server.tickets == 0  # listing calls nothing

    # An owner marks a read-only tool side-effecting; importing again refreshes and keeps that.
    forecast_id = tools["team_forecast"]["id"]
    assert api.run(UPDATE, id=forecast_id, input={"sideEffects": True})["updateTool"]["sideEffects"] is True
    again = {t["name"]: t for t in import_tools(api, url, prefix="team_")["tools"]}
    assert again["team_forecast"]["id"] == forecast_id and again["team_forecast"]["sideEffects"] is True
    # What comes from the server is not the owner's to change.
    moved = api.run(UPDATE, id=forecast_id, input={"urlTemplate": "http://127.0.0.1:9/mcp"})["updateTool"]
    assert moved["__typename"] == "ValidationError"


def test_secrets_go_by_name_only_where_they_may(api: Api, remote: tuple[Remote, str]) -> None:
    server, url = remote
    for secret in ("no_such_secret", "elsewhere"):
        refused = import_tools(api, url, headers=[{"header": "Authorization", "secret": secret}])
        assert refused["__typename"] == "ValidationError", refused
        assert "may be sent to" in refused["message"]
    assert server.auth == []  # nothing reached the server


def test_a_private_address_is_refused_without_the_allowance(
    migrated: Settings, model: FakeChatModel, remote: tuple[Remote, str]
) -> None:
    server, url = remote
    container = _container(migrated, model, url, allow_private=False)
    try:
        with live_api(container) as api:
            refused = import_tools(api, url)
    finally:
        container.close()
    assert refused["__typename"] == "UrlRefusedError", refused
    assert refused["reason"] == "LOOPBACK" and server.auth == []


def test_a_chat_turn_calls_a_read_only_mcp_tool_and_reads_its_answer(
    api: Api, model: FakeChatModel, remote: tuple[Remote, str]
) -> None:
    server, url = remote
    assert import_tools(api, url)["__typename"] == "McpToolImport"
    sid = session(api, ["ops"])
    model.enqueue(calls(("forecast", {"city": "Lisbon"})), "In Lisbon it is sunny.")
    events = chat(api, sid, "What is the weather in Lisbon?")
    assert "ChatToolResult" in kinds(events)
    (result,) = [e for e in events if e["__typename"] == "ChatToolResult"]
    assert result["ok"] and "Lisbon: sunny, 21 C" in result["summary"]
    assert server.forecasts == 1
    done = events[-1]["answer"]
    assert [(c["toolName"], c["status"]) for c in done["toolCalls"]] == [("forecast", "EXECUTED")]
    assert SECRET not in json.dumps(done)
    # What the model read: the server's answer, fenced like an HTTP tool's.
    read = [m.content for m in model.history[1] if "Lisbon: sunny" in m.content]
    assert read and "<<<" in read[0]


def test_a_side_effecting_mcp_tool_is_previewed_and_runs_once_however_often_approved(
    api: Api, model: FakeChatModel, remote: tuple[Remote, str]
) -> None:
    server, url = remote
    assert import_tools(api, url)["__typename"] == "McpToolImport"
    sid = session(api, ["ops"])
    model.enqueue(calls(("open_ticket", {"title": "printer on fire"})), "I have asked to open a ticket.")
    events = chat(api, sid, "open a ticket: the printer is on fire")
    (preview,) = [e for e in events if e["__typename"] == "ChatToolPreview"]
    assert "open_ticket" in preview["preview"] and "printer on fire" in preview["preview"]
    assert server.tickets == 0  # previewing calls nothing

    with ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(lambda _: api.run(APPROVE, id=preview["toolCallId"])["approveToolCall"], range(3)))
    assert server.tickets == 1, answers  # counted on the remote server: exactly one call
    assert all(a["status"] == "APPROVED" for a in answers) and all(a == answers[0] for a in answers)
    assert answers[0]["ok"] is True and "ticket 1: printer on fire" in answers[0]["result"]
    assert api.run(APPROVE, id=preview["toolCallId"])["approveToolCall"] == answers[0]
    assert server.tickets == 1


# --- the deadline and the size limit, on the MCP client itself ----------------------------------


def _tool(url: str, remote_name: str, timeout: float) -> Tool:
    return Tool(
        name=remote_name, description="d", input_schema={"type": "object"}, examples=[], tool_group="ops",
        core=False, kind=ToolKind.MCP, url_template=url, header_secrets={}, timeout_seconds=timeout,
        side_effects=False, remote_name=remote_name,
    )  # fmt: skip


def test_a_slow_mcp_tool_meets_the_deadline(remote: tuple[Remote, str]) -> None:
    _, url = remote
    settings = ToolSettings(allow_private=True)
    with pytest.raises(FetchError, match=r"within 0\.5 s"):
        asyncio.run(tool_mcp.call(_tool(url, "slow", 0.5), {}, settings))


def test_an_answer_past_the_size_limit_is_cut_off(remote: tuple[Remote, str]) -> None:
    _, url = remote
    with pytest.raises(TooLargeError):
        asyncio.run(tool_mcp.call(_tool(url, "huge", 5), {}, ToolSettings(allow_private=True, max_response_bytes=4096)))


class Trickle:
    """A raw server on 127.0.0.1 that answers every request one byte every 50 ms, for ever (bounded:
    it stops when closed)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/mcp"
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(0.2)
                try:
                    conn.recv(65536)
                    for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + b" " * 10_000:
                        if self.stop.is_set():
                            return
                        conn.sendall(bytes([byte]))
                        time.sleep(0.05)
                except OSError:
                    continue

    def close(self) -> None:
        self.stop.set()
        self.sock.close()
        self.thread.join(5)


def test_a_server_trickling_bytes_meets_the_deadline() -> None:
    trickle = Trickle()
    try:
        with pytest.raises(FetchError, match=r"within 0\.5 s"):
            asyncio.run(tool_mcp.list_tools(trickle.url, {}, ToolSettings(allow_private=True), 0.5))
    finally:
        trickle.close()


# --- a knowledge base's MCP tools ---------------------------------------------------------------


def test_a_knowledge_bases_mcp_tools_are_offered_only_to_its_chats_and_send_only_lent_secrets(
    migrated: Settings, model: FakeChatModel, remote: tuple[Remote, str]
) -> None:
    _, url = remote
    origin = url.removesuffix("/mcp")
    settings = ToolSettings(
        secrets={"mcp_token": SECRET, "root_token": "kept"},  # type: ignore[dict-item]
        secret_origins={"mcp_token": [origin], "root_token": [origin]},
        knowledge_base_secrets=["mcp_token"],
        allow_private=True,
        top_k=10,
    )
    container = _container(migrated, model, url)
    store, embedder = container.store, FakeEmbedder()
    try:
        a, b = projects.create(store, "A").id, projects.create(store, "B").id

        def imported(kb: int, secret: str) -> list[Tool]:
            auth = {"Authorization": secret}
            return asyncio.run(
                mcp_import.import_mcp(
                    store, settings, lambda: embedder, url=url, headers=auth, group="ops", project_id=kb
                )
            )

        with pytest.raises(ValidationError, match="root_token"):  # not lent to knowledge bases' tools
            imported(a, "root_token")
        assert {t.name for t in imported(a, "mcp_token")} == {"forecast", "open_ticket", "slow", "huge"}

        def offered(kb: int) -> set[str]:
            return {c.tool.name for c in select_tools(store, lambda: embedder, settings, ["ops"], "weather", kb).chosen}

        assert offered(a) == {"forecast", "open_ticket", "slow", "huge"}
        assert offered(b) == set()
        with pytest.raises(ConflictError):  # B cannot take over A's tools by importing the same server
            imported(b, "mcp_token")
    finally:
        container.close()
