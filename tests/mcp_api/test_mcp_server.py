"""The MCP server at /mcp against a live server, spoken to by the official ``mcp`` SDK's own client
over Streamable HTTP: the tools and the document resources, a question a knowledge base cannot
answer, a bad key, and a person who sees only their knowledge bases."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from pydantic import SecretStr

from app.container import Container
from app.services import documents, projects
from app.services.people import keys, users
from app.settings import ApiSettings, ChatModelSettings, Settings
from tests.fakes import FakeChatModel, FakeEmbedder, FakeModels
from tests.graphql.client import live_api

KEY = "server-key-for-mcp"
PENGUINS = "# Penguins\n\nEmperor penguins huddle together to survive the Antarctic winter.\n"


@pytest.fixture
def model() -> FakeChatModel:
    return FakeChatModel()


@pytest.fixture
def threshold() -> float:
    return 0.0  # the fake embedder's vectors are hashes: any cosine passes


@pytest.fixture
def server(migrated: Settings, model: FakeChatModel, threshold: float) -> Iterator[tuple[str, Container, int]]:
    settings = migrated.model_copy(
        update={
            "llm": ChatModelSettings(provider="fake", model="scripted"),
            "api": ApiSettings(api_keys=[SecretStr(KEY)]),
            "rag": migrated.rag.model_copy(update={"threshold": threshold}),
        }
    )
    container = Container.build(settings, embedder=FakeEmbedder(), chat_models=FakeModels(model))
    kb = projects.create(container.store, "Field Notes").id
    documents.ingest_uploads(
        container.store, container.embedder, settings.ingest, 10_000, kb, [("penguins.md", PENGUINS.encode())]
    )
    try:
        with live_api(container) as api:
            yield api.base, container, kb
    finally:
        container.close()


@asynccontextmanager
async def session(base: str, key: str = KEY) -> AsyncIterator[Client]:
    """The SDK's client over Streamable HTTP, sending ``key`` (the HTTP client is ours to close)."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http,
        Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
    ):
        yield client


def payload(result: Any) -> Any:
    assert not result.is_error, result
    if result.structured_content is not None:
        content = result.structured_content
        return content.get("result", content) if isinstance(content, dict) else content
    return json.loads(result.content[0].text)


def test_tools_search_and_ask_through_a_live_server(server: tuple[str, Container, int], model: FakeChatModel) -> None:
    base, container, kb = server
    model.enqueue("Emperor penguins huddle together [1].")

    async def run() -> None:
        async with session(base) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"list_knowledge_bases", "search_knowledge_base", "ask"} <= names
            listed = payload(await client.call_tool("list_knowledge_bases", {}))
            assert listed == [{"id": str(kb), "name": "Field Notes", "description": ""}]
            hits = payload(
                await client.call_tool("search_knowledge_base", {"knowledge_base": "field notes", "query": "winter"})
            )
            assert hits[0]["document"] == "penguins.md" and hits[0]["location"]["line_start"] >= 1
            answer = payload(
                await client.call_tool("ask", {"knowledge_base": str(kb), "question": "How do penguins survive?"})
            )
            assert answer["answer"] == "Emperor penguins huddle together [1]."
            assert [(c["marker"], c["document"]) for c in answer["citations"]] == [(1, "penguins.md")]
            document_id = hits[0]["document_id"]
            read = await client.read_resource(f"ragchat://documents/{document_id}")
            assert "huddle together" in read.contents[0].text and "lines 1-" in read.contents[0].text

    anyio.run(run)
    with container.store.read() as db:  # the question's chat went once answered
        assert db.connection().exec_driver_sql("SELECT count(*) FROM chat_sessions").scalar_one() == 0


@pytest.mark.parametrize("threshold", [1.0])  # nothing passes: the turn has no grounding
def test_a_question_the_knowledge_base_cannot_answer_says_so(server: tuple[str, Container, int]) -> None:
    base, _, _ = server

    async def run() -> dict[str, Any]:
        async with session(base) as client:
            return payload(await client.call_tool("ask", {"knowledge_base": "Field Notes", "question": "Tax law?"}))

    answer = anyio.run(run)
    assert answer["citations"] == [] and answer["no_context"] is True


def test_a_bad_key_is_refused_and_a_person_sees_only_their_knowledge_bases(
    server: tuple[str, Container, int], model: FakeChatModel
) -> None:
    base, container, kb = server

    async def refused() -> None:
        async with session(base, "not-the-key") as client:
            await client.list_tools()

    # The SDK reports the refusal as an error response inside its task groups; the status is below.
    with pytest.raises(Exception, match="unhandled errors") as bad:
        anyio.run(refused)
    assert "Server returned an error response" in repr(bad.value)
    unkeyed = httpx2.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=10)
    assert unkeyed.status_code == 401

    with container.store.write() as db:
        eve = users.create(db, users.NewPerson("eve@example.org", "Eve"))
        _, secret = keys.create(db, eve, keys.NewKey("mcp"))

    async def as_eve() -> tuple[Any, Any]:
        async with session(base, secret) as client:
            listed = payload(await client.call_tool("list_knowledge_bases", {}))
            asked = await client.call_tool("ask", {"knowledge_base": str(kb), "question": "How do penguins survive?"})
            return listed, asked

    listed, asked = anyio.run(as_eve)
    assert listed == []
    assert asked.is_error and "no knowledge base" in asked.content[0].text
    assert model.history == []


def test_making_the_server_leaves_the_root_logger_as_it_was() -> None:
    import logging

    from app.mcp_api.server import build

    root = logging.getLogger()
    before = (list(root.handlers), root.level)
    try:
        root.handlers.clear()  # as in a process that has not configured logging yet
        root.setLevel(logging.WARNING)
        build()
        assert root.handlers == [] and root.level == logging.WARNING
    finally:
        root.handlers[:] = before[0]
        root.setLevel(before[1])
