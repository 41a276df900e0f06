"""The browser test's setup, run by Python first: a real ``ragchat serve`` subprocess whose chat model
is the scripted one (``RAGCHAT_LLM__SCRIPT``, tests/providers.py) calls a side-effecting HTTP tool
served on loopback (``RAGCHAT_TOOLS__ALLOW_PRIVATE=true``); the preview streams, approval runs it
once, and the outcome joins the conversation. frontend/e2e uses the same script and tool."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.db import migrate
from benchmarks.load import Server
from tests.graphql.client import Api
from tests.graphql.ops import ADD_DOC, CREATE_PROJECT, CREATE_SESSION
from tests.graphql.tools.test_chat import (
    APPROVE,
    CHAT,
    MESSAGES,
    SECRET,
    SET_GROUPS,
    Endpoint,
    create,
    kinds,
    ticket_tool,
)
from tests.providers import scripted_env

SCRIPT = [
    {"calls": [{"name": "create_ticket", "arguments": {"title": "Printer on fire"}}]},
    "I have asked to open a ticket about the printer; approve it to go ahead.",
]


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    served = Endpoint()
    yield served
    served.close()


def test_the_scripted_model_previews_a_loopback_http_tool_and_approval_runs_it(
    tmp_path: Path, database_url: str, endpoint: Endpoint
) -> None:
    script = tmp_path / "tools-script.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    env = {
        **scripted_env(script),
        "RAGCHAT_TOOLS__ALLOW_PRIVATE": "true",
        "RAGCHAT_TOOLS__SECRETS__CRM_TOKEN": SECRET,
        "RAGCHAT_TOOLS__SECRET_ORIGINS__CRM_TOKEN": json.dumps([endpoint.base]),
        "RAGCHAT_DATABASE_URL": database_url,  # the server's own SQLite file otherwise
    }
    server = Server(tmp_path, env)
    migrate.upgrade(database_url)
    with server:
        api = Api(server.base)
        create(api, ticket_tool(endpoint.base, headers=[{"header": "Authorization", "secret": "crm_token"}]))
        pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
        api.run(ADD_DOC, p=pid, name="printers.md", text="# Printers\n\nThe office printer is on the second floor.")
        made = api.run(CREATE_SESSION, p=pid, input={"provider": "scripted", "model": "scripted"})
        sid = made["createChatSession"]["id"]
        assert api.run(SET_GROUPS, s=sid, g=["ops"])["setChatSessionToolGroups"]["__typename"] == "SessionToolGroups"
        with api.websocket() as ws:
            events = [e["data"]["chat"] for e in ws.subscribe(CHAT, s=sid, c="Open a ticket: the printer is on fire")]
        order = kinds(events)
        assert order[order.index("ChatRetrieval") :] == [
            "ChatRetrieval", "ChatToolCall", "ChatToolPreview", "ChatToken", "ChatDone"
        ], events  # fmt: skip
        preview = next(e for e in events if e["__typename"] == "ChatToolPreview")
        assert "would_create" in preview["preview"] and endpoint.created == 0
        assert events[-1]["answer"]["content"] == SCRIPT[1]
        approved = api.run(APPROVE, id=preview["toolCallId"])["approveToolCall"]
        assert approved["status"] == "APPROVED" and '"ticket": 1' in approved["result"]
        assert endpoint.created == 1 and endpoint.requests[-1]["auth"] == SECRET
        nodes = [e["node"] for e in api.run(MESSAGES, s=sid)["chatSession"]["messages"]["edges"]]
        assert nodes[-1]["content"].startswith("Approved: `create_ticket`")
        api.http.close()
