"""Chats and knowledge bases of people, through the API: a chat is its owner's until shared, then
readable and not writable by its knowledge base's members; a person's new knowledge base is theirs;
a nested knowledge base is never one the caller does not see."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from app.container import Container
from tests.graphql import matrix_world
from tests.graphql.client import Api, live_api
from tests.graphql.matrix_world import World

R = "__typename ... on Error { message }"
CHAT = "query($id: ID!) { chatSession(id: $id) { " + R + " ... on ChatSession { shared owner { email } } } }"
SHARE = "mutation($id: ID!, $s: Boolean!) { shareChatSession(id: $id, shared: $s) { " + R + " } }"
ASK = 'mutation($s: ID!) { sendMessage(sessionId: $s, content: "Mine now?") { ' + R + " } }"


@pytest.fixture
def world(fake_container: Container) -> Iterator[tuple[Api, World]]:
    built = matrix_world.build(fake_container)
    with live_api(fake_container) as api:
        yield api, built


def as_(api: Api, world: World, who: str, query: str, **variables: Any) -> dict[str, Any]:
    response = api.http.post("/graphql", json={"query": query, "variables": variables}, headers=world.headers[who])
    body = response.json()
    assert "errors" not in body, body
    return body["data"]


def test_a_shared_chat_is_readable_by_members_and_writable_only_by_its_owner(world: tuple[Api, World]) -> None:
    api, w = world
    assert as_(api, w, "viewer", CHAT, id=w.chat)["chatSession"] == {
        "__typename": "NotFoundError",
        "message": f"chat session {w.chat} not found",  # word for word what a missing chat answers
    }
    assert as_(api, w, "viewer", CHAT, id=10_000)["chatSession"]["message"] == "chat session 10000 not found"
    assert as_(api, w, "viewer", SHARE, id=w.chat, s=True)["shareChatSession"]["__typename"] == "NotFoundError"

    assert as_(api, w, "owner", SHARE, id=w.chat, s=True)["shareChatSession"]["__typename"] == "ChatSession"
    shared = as_(api, w, "viewer", CHAT, id=w.chat)["chatSession"]
    assert shared == {"__typename": "ChatSession", "shared": True, "owner": {"email": "owner@example.org"}}
    assert as_(api, w, "viewer", ASK, s=w.chat)["sendMessage"]["__typename"] == "ForbiddenError"
    assert as_(api, w, "member of another KB", CHAT, id=w.chat)["chatSession"]["__typename"] == "NotFoundError"

    assert as_(api, w, "owner", SHARE, id=w.chat, s=False)["shareChatSession"]["__typename"] == "ChatSession"
    assert as_(api, w, "viewer", CHAT, id=w.chat)["chatSession"]["__typename"] == "NotFoundError"


def test_a_persons_new_knowledge_base_and_chat_are_theirs(world: tuple[Api, World]) -> None:
    api, w = world
    created = as_(api, w, "member of another KB", "mutation { createProject(input: {name: \"Mine\"}) { "
                  + R + " ... on Project { id } } }")["createProject"]  # fmt: skip
    kb = created["id"]
    rename = 'mutation($id: ID!) { updateProject(id: $id, input: {description: "d"}) { ' + R + " } }"
    assert as_(api, w, "member of another KB", rename, id=kb)["updateProject"]["__typename"] == "Project"
    assert as_(api, w, "owner", rename, id=kb)["updateProject"]["__typename"] == "NotFoundError"
    chat = as_(api, w, "member of another KB", "mutation($p: ID!) { createChatSession(projectId: $p, input: "
               "{provider: \"fake\", model: \"scripted\"}) { ... on ChatSession { id owner { email } shared } } }",
               p=kb)["createChatSession"]  # fmt: skip
    assert chat["owner"] == {"email": "stranger@example.org"} and chat["shared"] is False


def test_a_nested_knowledge_base_is_only_ever_one_the_caller_sees(world: tuple[Api, World]) -> None:
    api, w = world
    nested = "query($id: ID!) { chatSession(id: $id) { ... on ChatSession { project { id name } } } }"
    assert as_(api, w, "owner", nested, id=w.chat)["chatSession"]["project"] == {"id": str(w.kb), "name": "A"}
    # The owner's key scoped to B reads nothing of A, nested or not.
    assert as_(api, w, "key scoped to another KB", nested, id=w.chat)["chatSession"] == {}
    projects = "{ projects { ... on ProjectConnection { edges { node { name } } } } }"
    names = [e["node"]["name"] for e in as_(api, w, "key scoped to another KB", projects)["projects"]["edges"]]
    assert names == ["B"]
