"""Tools through the GraphQL HTTP API of a live server over a real migrated store: definitions CRUD
with typed errors, secrets only by reference (never stored or returned), session tool groups checked
against the model's capability, the selection preview, and API keys guarding changes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import inspect, text

from app.container import Container
from app.errors import ProviderUnavailableError
from app.llm.base import ModelCapabilities
from app.settings import Settings
from tests.fakes import FakeChatModel, FakeEmbedder, FakeModels
from tests.graphql.client import Api, live_api
from tests.graphql.ops import CREATE_PROJECT

SECRET_VALUE = "s3cr3t-value-9f2c"
KEY = "test-key-81d0"
OPERATOR = "operator-key-5e1a"
TOOL_FIELDS = """id name description inputSchema examples group core kind method urlTemplate
  headers { header secret } timeoutSeconds sideEffects dryRun { method urlTemplate }"""
ERRORS = "... on Error { message } ... on ValidationError { fields { field message } }"
CREATE = f"mutation($input: CreateToolInput!) {{ createTool(input: $input) {{ __typename ... on Tool {{ {TOOL_FIELDS} }} {ERRORS} }} }}"
UPDATE = f"mutation($id: ID!, $input: UpdateToolInput!) {{ updateTool(id: $id, input: $input) {{ __typename ... on Tool {{ {TOOL_FIELDS} }} {ERRORS} }} }}"
DELETE = f"mutation($id: ID!) {{ deleteTool(id: $id) {{ __typename ... on ToolDeleted {{ id }} {ERRORS} }} }}"
TOOLS = f"query($group: String) {{ tools(group: $group) {{ {TOOL_FIELDS} }} }}"
SET_GROUPS = f"""mutation($s: ID!, $groups: [String!]!) {{ setChatSessionToolGroups(sessionId: $s, groups: $groups) {{
  __typename ... on SessionToolGroups {{ sessionId groups }} {ERRORS} }} }}"""
SESSION = """mutation($p: ID!, $model: String!) { createChatSession(projectId: $p, input: {provider: "fake", model: $model}) {
  ... on ChatSession { id toolGroups } } }"""
CHANGE_MODEL = f"""mutation($id: ID!, $model: String!) {{ updateChatSession(id: $id, input: {{model: $model}}) {{
  __typename ... on ChatSession {{ model toolGroups }} {ERRORS} }} }}"""
SELECTION = f"""query($s: ID!, $m: String!) {{ toolSelection(sessionId: $s, message: $m) {{ __typename
  ... on ToolSelection {{ groups topK minScore degraded candidates {{ tool {{ name }} score }}
      selected {{ tool {{ name }} score reason }} }} {ERRORS} }} }}"""

ORDER_SCHEMA = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}, "reason": {"type": "string"}},
    "required": ["order_id"],
}


def order_tool(**more: Any) -> dict[str, Any]:
    return {
        "name": "refund_order",
        "description": "Refund a customer's order",
        "inputSchema": ORDER_SCHEMA,
        "examples": ["refund order 1234", "give the customer their money back"],
        "group": "shop",
        "method": "POST",
        "urlTemplate": "https://shop.example.com/orders/{order_id}/refund",
        "headers": [{"header": "Authorization", "secret": "crm_token"}],
        "sideEffects": True,
        "dryRun": {"method": "GET", "urlTemplate": "https://shop.example.com/orders/{order_id}/refund-preview"},
        **more,
    }


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def tools_container(migrated: Settings, embedder: FakeEmbedder) -> Iterator[Container]:
    secrets = {"secrets": {"crm_token": SECRET_VALUE}, "secret_origins": {"crm_token": ["https://shop.example.com"]}}
    settings = Settings(database_url=migrated.database_url, tools=secrets)
    models = FakeModels(
        FakeChatModel("toolful", capabilities=ModelCapabilities(tool_calling=True)), FakeChatModel("plain")
    )
    built = Container.build(settings, embedder=embedder, chat_models=models)
    yield built
    built.close()


@pytest.fixture
def api(tools_container: Container) -> Iterator[Api]:
    with live_api(tools_container) as client:
        yield client


def fields(result: dict[str, Any]) -> list[str]:
    return [f["field"] for f in result["fields"]]


def test_create_returns_secret_names_only_and_stores_no_secret(api: Api, tools_container: Container) -> None:
    created = api.run(CREATE, input=order_tool())["createTool"]
    assert created["__typename"] == "Tool", created
    assert created["headers"] == [{"header": "Authorization", "secret": "crm_token"}]
    assert (created["kind"], created["method"], created["group"], created["timeoutSeconds"]) == (
        "HTTP",
        "POST",
        "shop",
        10.0,
    )
    assert created["dryRun"] == {
        "method": "GET",
        "urlTemplate": "https://shop.example.com/orders/{order_id}/refund-preview",
    }
    assert created["inputSchema"] == ORDER_SCHEMA
    listed = api.run(TOOLS)["tools"]
    assert [t["name"] for t in listed] == ["list_documents", "read_document", "search_knowledge_base", "refund_order"]
    assert SECRET_VALUE not in str(listed)
    with tools_container.store.read() as db:  # nowhere in the store, in any table
        conn = db.connection()
        tables = inspect(conn).get_table_names()
        dump = "\n".join(str(tuple(row)) for t in tables for row in conn.execute(text(f'SELECT * FROM "{t}"')))
    assert "refund_order" in dump and SECRET_VALUE not in dump


def test_every_bad_field_is_named_at_once(api: Api) -> None:
    bad = order_tool(
        name="9 lives",
        group="Shop!",
        inputSchema={"type": "object", "properties": {"order_id": {"type": "strng"}}},
        urlTemplate="https://{host}/orders",
        headers=[{"header": "X-Key", "secret": "not_configured"}, {"header": "Host", "secret": "crm_token"}],
        timeoutSeconds=0,
    )
    result = api.run(CREATE, input=bad)["createTool"]
    assert result["__typename"] == "ValidationError"
    assert fields(result) == [
        "name", "group", "inputSchema", "urlTemplate", "headers.X-Key", "headers.Host", "timeoutSeconds"
    ]  # fmt: skip
    result = api.run(CREATE, input=order_tool(inputSchema={"type": "object", "properties": {"x": {"type": "strng"}}}))
    assert result["createTool"]["__typename"] == "ValidationError"
    assert "not a valid JSON Schema at properties/x/type" in result["createTool"]["message"]
    result = api.run(CREATE, input=order_tool(inputSchema={"type": "array"}))["createTool"]
    assert fields(result)[0] == "inputSchema" and "must describe an object" in result["message"]
    http = order_tool(
        urlTemplate="https://{host}/orders",
        headers=[{"header": "X-Key", "secret": "not_configured"}, {"header": "Host", "secret": "crm_token"}],
        timeoutSeconds=0,
    )
    result = api.run(CREATE, input=http)["createTool"]
    assert fields(result) == ["urlTemplate", "headers.X-Key", "headers.Host", "timeoutSeconds"]
    assert "host cannot be a placeholder" in result["message"]
    assert "no secret 'not_configured' may be sent to" in result["message"]
    result = api.run(CREATE, input=order_tool(urlTemplate="https://shop.example.com/{customer}"))["createTool"]
    assert "['customer'] are not properties of inputSchema" in result["message"]
    result = api.run(CREATE, input=order_tool(sideEffects=False))["createTool"]
    assert fields(result) == ["dryRun"]
    assert api.run(TOOLS, group="shop")["tools"] == []  # nothing was written


def test_duplicate_names_conflict_and_updates_and_deletes_are_typed(api: Api) -> None:
    tool_id = api.run(CREATE, input=order_tool())["createTool"]["id"]
    assert api.run(CREATE, input=order_tool())["createTool"]["__typename"] == "ConflictError"
    changed = api.run(UPDATE, id=tool_id, input={"description": "Refund an order in full", "core": True})["updateTool"]
    assert (changed["description"], changed["core"], changed["urlTemplate"]) == (
        "Refund an order in full",
        True,
        "https://shop.example.com/orders/{order_id}/refund",
    )
    refused = api.run(UPDATE, id=tool_id, input={"headers": [{"header": "X-Key", "secret": "nope"}]})["updateTool"]
    assert fields(refused) == ["headers.X-Key"]
    builtin = next(t for t in api.run(TOOLS)["tools"] if t["name"] == "read_document")
    refused = api.run(UPDATE, id=builtin["id"], input={"name": "reader", "method": "GET"})["updateTool"]
    assert fields(refused) == ["name", "method"] and "built-in" in refused["message"]
    regrouped = api.run(UPDATE, id=builtin["id"], input={"group": "reading"})["updateTool"]
    assert regrouped["group"] == "reading"
    assert api.run(DELETE, id=builtin["id"])["deleteTool"]["__typename"] == "ValidationError"
    assert api.run(DELETE, id=tool_id)["deleteTool"] == {"__typename": "ToolDeleted", "id": tool_id}
    assert api.run(DELETE, id=tool_id)["deleteTool"]["__typename"] == "NotFoundError"
    assert api.run(UPDATE, id="999", input={"core": False})["updateTool"]["__typename"] == "NotFoundError"


def test_session_tool_groups_need_a_tool_capable_model(api: Api) -> None:
    project = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    plain = api.run(SESSION, p=project, model="plain")["createChatSession"]
    assert plain["toolGroups"] == []  # none by default
    refused = api.run(SET_GROUPS, s=plain["id"], groups=["knowledge_base"])["setChatSessionToolGroups"]
    assert refused["__typename"] == "ValidationError" and fields(refused) == ["groups"]
    assert "the chat model fake/plain cannot call tools" in refused["message"]
    assert api.run(SET_GROUPS, s=plain["id"], groups=[])["setChatSessionToolGroups"]["groups"] == []
    toolful = api.run(SESSION, p=project, model="toolful")["createChatSession"]["id"]
    unknown = api.run(SET_GROUPS, s=toolful, groups=["knowledge_base", "nope"])["setChatSessionToolGroups"]
    assert unknown["__typename"] == "ValidationError" and "no tool is in group 'nope'" in unknown["message"]
    api.run(CREATE, input=order_tool())
    done = api.run(SET_GROUPS, s=toolful, groups=["shop", "knowledge_base", "shop"])["setChatSessionToolGroups"]
    assert done == {"__typename": "SessionToolGroups", "sessionId": toolful, "groups": ["knowledge_base", "shop"]}
    downgrade = api.run(CHANGE_MODEL, id=toolful, model="plain")["updateChatSession"]
    assert downgrade["__typename"] == "ValidationError" and fields(downgrade) == ["model"]
    missing = api.run(SET_GROUPS, s="12345", groups=[])["setChatSessionToolGroups"]
    assert missing["__typename"] == "NotFoundError"


def test_selection_preview_shows_each_stage_and_degrades_visibly(api: Api, embedder: FakeEmbedder) -> None:
    project = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    session = api.run(SESSION, p=project, model="toolful")["createChatSession"]["id"]
    none = api.run(SELECTION, s=session, m="refund order 1234")["toolSelection"]
    assert (none["groups"], none["selected"], none["topK"], none["minScore"]) == ([], [], 6, None)
    api.run(CREATE, input=order_tool())
    api.run(SET_GROUPS, s=session, groups=["shop", "knowledge_base"])
    got = api.run(SELECTION, s=session, m="please refund order 1234")["toolSelection"]
    assert got["groups"] == ["knowledge_base", "shop"] and got["degraded"] is None
    assert got["candidates"][0]["tool"]["name"] == "refund_order"  # shares "refund", "order", "1234"
    scores = [c["score"] for c in got["candidates"]]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    assert [s["reason"] for s in got["selected"]] == ["RANKED"] * 4  # 4 allowed tools, top 6
    embedder.fail_with = ProviderUnavailableError("down", provider="fake")
    degraded = api.run(SELECTION, s=session, m="please refund order 1234")["toolSelection"]
    assert "the embedder failed" in degraded["degraded"]
    assert {s["reason"] for s in degraded["selected"]} == {"ALL"} and len(degraded["selected"]) == 4
    empty = api.run(SELECTION, s=session, m="   ")["toolSelection"]
    assert empty["__typename"] == "ValidationError" and fields(empty) == ["message"]


def test_defining_tools_needs_an_operator_key_and_asking_keys_cannot(migrated: Settings) -> None:
    settings = Settings(database_url=migrated.database_url, api={"api_keys": [KEY], "operator_keys": [OPERATOR]})
    container = Container.build(settings, embedder=FakeEmbedder(), chat_models=FakeModels())
    try:
        with live_api(container) as anonymous:
            response = anonymous.raw(CREATE, {"input": order_tool(headers=[])})
            assert response.status_code == 401
            assert anonymous.raw(DELETE, {"id": "1"}).status_code == 401
        with live_api(container, {"Authorization": f"Bearer {OPERATOR}"}) as operator:
            created = operator.run(CREATE, input=order_tool(headers=[]))["createTool"]
            assert created["__typename"] == "Tool"
        with live_api(container, {"Authorization": f"Bearer {KEY}"}) as asker:
            refused = asker.run(CREATE, input=order_tool(headers=[], name="other"))["createTool"]
            assert refused["__typename"] == "ForbiddenError" and "RAGCHAT_API__OPERATOR_KEYS" in refused["message"]
            changed = asker.run(UPDATE, id=created["id"], input={"urlTemplate": "https://evil.example/x"})["updateTool"]
            assert changed["__typename"] == "ForbiddenError"
            assert asker.run(DELETE, id=created["id"])["deleteTool"]["__typename"] == "ForbiddenError"
            assert [t["name"] for t in asker.run(TOOLS, group="shop")["tools"]] == ["refund_order"]  # still readable
            assert asker.run(TOOLS, group="shop")["tools"][0]["urlTemplate"] == order_tool()["urlTemplate"]
    finally:
        container.close()


def test_the_built_in_group_is_reserved_for_built_in_tools(api: Api) -> None:
    planted = api.run(CREATE, input=order_tool(group="knowledge_base", core=True, headers=[]))["createTool"]
    assert planted["__typename"] == "ValidationError" and fields(planted) == ["group"]
    assert "reserved for built-in tools" in planted["message"]
    tool_id = api.run(CREATE, input=order_tool(headers=[]))["createTool"]["id"]
    moved = api.run(UPDATE, id=tool_id, input={"group": "knowledge_base"})["updateTool"]
    assert moved["__typename"] == "ValidationError" and fields(moved) == ["group"]
    builtin = next(t for t in api.run(TOOLS)["tools"] if t["name"] == "read_document")
    api.run(UPDATE, id=builtin["id"], input={"group": "reading"})  # a group holding a built-in is reserved,
    assert fields(api.run(UPDATE, id=tool_id, input={"group": "reading"})["updateTool"]) == ["group"]  # and its new one
    joined = api.run(UPDATE, id=builtin["id"], input={"group": "shop"})["updateTool"]  # nor joins an HTTP tool's
    assert joined["__typename"] == "ValidationError" and fields(joined) == ["group"]
    assert [t["name"] for t in api.run(TOOLS, group="knowledge_base")["tools"]] == [
        "list_documents",
        "search_knowledge_base",
    ]
