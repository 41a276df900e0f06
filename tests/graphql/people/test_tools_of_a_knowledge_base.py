"""Tools of a knowledge base: its editors define them, its members see them, only its chats are
offered them, and they send only the secrets the server lends to knowledge bases' tools. The
server's tools stay the administrators'. Through the real HTTP app, people made through the services."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import SecretStr
from sqlalchemy import func, select

from app.db.enums import MemberRole
from app.db.models import Membership, Tool, ToolVector
from app.errors import ValidationError
from app.llm.base import ModelCapabilities
from app.services import projects, sessions
from app.services.sessions import SessionChanges
from app.services.tools import catalog
from app.services.tools.definitions import ToolChanges
from app.services.tools.selection import select_tools
from app.settings import ToolSettings
from tests.fakes import FakeChatModel, FakeEmbedder, FakeModels
from tests.graphql.people.conftest import gql, signed_in

CREATE = """mutation($input: CreateToolInput!) { createTool(input: $input) {
  __typename ... on Tool { id knowledgeBaseId } ... on Error { message }
  ... on ValidationError { fields { field message } } } }"""
TOOLS = "{ tools { name knowledgeBaseId } }"
TOOL = "query($id: ID!) { tool(id: $id) { __typename ... on Tool { name } } }"
DELETE = "mutation($id: ID!) { deleteTool(id: $id) { __typename } }"
SECRETS = ToolSettings(
    secrets={"crm_token": SecretStr("lent"), "root_token": SecretStr("kept")},
    secret_origins={"crm_token": ["https://crm.example.com"], "root_token": ["https://crm.example.com"]},
    knowledge_base_secrets=["crm_token"],
)


def tool_input(name: str, kb: int | None, secret: str | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "description": "Looks a customer up in the CRM.",
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
        "method": "GET",
        "urlTemplate": "https://crm.example.com/customers?q={q}",
        "group": "crm",
        "knowledgeBaseId": str(kb) if kb is not None else None,
        "headers": [{"header": "Authorization", "secret": secret}] if secret else [],
    }


def _member(server: Any, email: str, kb: int, role: MemberRole) -> None:
    user_id = server.person(email)
    with server.container.store.write() as db:
        db.add(Membership(user_id=user_id, project_id=kb, role=role))


def test_editors_define_their_knowledge_bases_tools_and_only_its_members_see_them(
    people_server: Callable[..., Any],
) -> None:
    with people_server(tools=SECRETS) as server:
        server.person("ada@example.org", admin=True)
        a, b = server.project("A"), server.project("B")
        _member(server, "ed@example.org", a, MemberRole.EDITOR)
        _member(server, "vi@example.org", a, MemberRole.VIEWER)
        _member(server, "bo@example.org", b, MemberRole.OWNER)
        ed, vi, bo = (signed_in(server, f"{n}@example.org") for n in ("ed", "vi", "bo"))
        ada = signed_in(server, "ada@example.org")

        made = gql(ed, CREATE, input=tool_input("crm_lookup", a, "crm_token"))["createTool"]
        assert made["__typename"] == "Tool" and made["knowledgeBaseId"] == str(a), made
        # Not the server's: an editor is not an operator. Nor another knowledge base's.
        assert gql(ed, CREATE, input=tool_input("server_wide", None))["createTool"]["__typename"] == "ForbiddenError"
        assert gql(ed, CREATE, input=tool_input("elsewhere", b))["createTool"]["__typename"] == "NotFoundError"
        assert gql(vi, CREATE, input=tool_input("viewers_tool", a))["createTool"]["__typename"] == "ForbiddenError"
        # A secret the server did not lend to knowledge bases' tools is refused, by name.
        kept = gql(ed, CREATE, input=tool_input("crm_root", a, "root_token"))["createTool"]
        assert kept["__typename"] == "ValidationError"
        assert any(f["field"] == "headers" and "root_token" in f["message"] for f in kept["fields"]), kept
        # The administrators' server tool, with the secret they keep.
        server_tool = gql(ada, CREATE, input=tool_input("crm_admin", None, "root_token"))["createTool"]
        assert server_tool["__typename"] == "Tool" and server_tool["knowledgeBaseId"] is None

        def names(client: Any) -> set[str]:
            return {t["name"] for t in gql(client, TOOLS)["tools"]}

        builtin = names(ada) - {"crm_lookup", "crm_admin"}
        assert names(vi) - builtin == {"crm_lookup", "crm_admin"}
        assert names(bo) - builtin == {"crm_admin"}  # A's tool does not exist for B's owner
        assert gql(bo, TOOL, id=made["id"])["tool"]["__typename"] == "NotFoundError"
        assert gql(vi, TOOL, id=made["id"])["tool"]["__typename"] == "Tool"
        assert gql(vi, DELETE, id=made["id"])["deleteTool"]["__typename"] == "ForbiddenError"
        assert gql(bo, DELETE, id=made["id"])["deleteTool"]["__typename"] == "NotFoundError"
        assert gql(ed, DELETE, id=server_tool["id"])["deleteTool"]["__typename"] == "ForbiddenError"
        assert gql(ed, DELETE, id=made["id"])["deleteTool"]["__typename"] == "ToolDeleted"


def test_a_chat_is_offered_the_servers_tools_and_its_own_knowledge_bases_only(
    people_server: Callable[..., Any],
) -> None:
    with people_server() as server:
        store = server.container.store
        a, b = projects.create(store, "A").id, projects.create(store, "B").id
        changes = ToolChanges(
            description="Looks a customer up in the CRM.",
            input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
            method="GET",
            url_template="https://crm.example.com/customers?q={q}",
            group="crm",
        )
        embedder = FakeEmbedder()
        made = {
            name: catalog.create(store, ToolSettings(), lambda: embedder, dataclasses.replace(changes, name=name),
                                 project_id=kb).id
            for name, kb in (("server_crm", None), ("a_crm", a), ("b_crm", b))
        }  # fmt: skip

        def offered(kb: int) -> set[str]:
            chosen = select_tools(store, lambda: embedder, ToolSettings(top_k=10), ["crm"], "customer", kb).chosen
            return {c.tool.name for c in chosen}

        assert offered(a) == {"server_crm", "a_crm"}
        assert offered(b) == {"server_crm", "b_crm"}
        # Deleting a knowledge base deletes its tools (and their vectors).
        projects.delete(store, a)
        with store.read() as db:
            left = set(db.scalars(select(Tool.name).where(Tool.tool_group == "crm")))
            vectors = db.scalar(select(func.count()).where(ToolVector.tool_id == made["a_crm"]))
        assert left == {"server_crm", "b_crm"} and vectors == 0


def test_a_chat_cannot_allow_another_knowledge_bases_tool_group(people_server: Callable[..., Any]) -> None:
    with people_server() as server:
        store, settings = server.container.store, server.container.settings
        models = FakeModels(FakeChatModel(capabilities=ModelCapabilities(tool_calling=True)))
        a, b = projects.create(store, "A").id, projects.create(store, "B").id
        changes = ToolChanges(
            name="a_only", description="A's lookup.", input_schema={"type": "object", "properties": {}},
            method="GET", url_template="https://crm.example.com/a", group="a-tools",
        )  # fmt: skip
        catalog.create(store, ToolSettings(), lambda: FakeEmbedder(), changes, project_id=a)
        fake = SessionChanges(provider="fake", model="scripted")
        in_a, in_b = (sessions.create(store, settings, models, kb, fake).id for kb in (a, b))
        assert catalog.set_session_groups(store, models, in_a, ["a-tools"]) == ["a-tools"]
        with pytest.raises(ValidationError, match="no tool is in group 'a-tools'"):
            catalog.set_session_groups(store, models, in_b, ["a-tools"])
