"""retrievalPreview that calls the chat model (expansion, the judge) takes a generation slot as a
chat turn does, through the live GraphQL API: it shows in `inUse`, and with the cap taken another
such preview is refused with BusyError instead of generating past the cap."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from app.container import Container
from app.llm.base import GenerationOptions, Message, StreamEvent
from app.settings import Settings
from tests.fakes import FakeChatModel, FakeEmbedder, FakeModels
from tests.graphql.client import Api, live_api
from tests.graphql.ops import ADD_DOC, CREATE_PROJECT
from tests.waiting import wait_until

SESSION = """mutation($p: ID!, $input: CreateChatSessionInput) { createChatSession(projectId: $p, input: $input) {
  __typename ... on ChatSession { id } } }"""
PREVIEW = """query($s: ID!, $m: String!) { retrievalPreview(sessionId: $s, message: $m) { __typename
  ... on SearchResults { ranking { expansions } } ... on BusyError { message retryAfterSeconds } } }"""
IN_USE = "{ providers { provider generations { inUse limit } } }"


class GatedModel(FakeChatModel):
    """The fake model, held before it answers until the test opens ``gate`` (at most 20 s)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    async def stream(self, messages: Sequence[Message], options: GenerationOptions) -> AsyncIterator[StreamEvent]:
        for _ in range(2000):
            if self.gate.is_set():
                break
            await asyncio.sleep(0.01)
        async for event in super().stream(messages, options):
            yield event


@pytest.fixture
def held(migrated: Settings) -> Iterator[tuple[Api, GatedModel]]:
    model = GatedModel()
    settings = migrated.model_copy(
        update={"chat": migrated.chat.model_copy(update={"max_concurrent_generations": 1, "queue_timeout": 0.0})}
    )
    expansion = settings.expansion.model_copy(update={"timeout": 30.0})
    settings = settings.model_copy(update={"expansion": expansion})
    container = Container.build(settings, embedder=FakeEmbedder(), chat_models=FakeModels(model))
    try:
        with live_api(container) as api:
            try:
                yield api, model
            finally:
                model.gate.set()
    finally:
        container.close()


def _in_use(api: Api) -> int:
    (fake,) = [p for p in api.run(IN_USE)["providers"] if p["provider"] == "fake"]
    return int(sum(g["inUse"] for g in fake["generations"]))


def test_a_preview_that_expands_holds_a_generation_slot(held: tuple[Api, GatedModel]) -> None:
    api, model = held
    pid = str(api.run(CREATE_PROJECT, name="kb")["createProject"]["id"])
    api.run(ADD_DOC, p=pid, name="a.md", text="penguins huddle in winter")
    inputs = {"provider": "fake", "model": "scripted", "threshold": 0.0, "expansion": "ON"}
    sid = api.run(SESSION, p=pid, input=inputs)["createChatSession"]["id"]
    model.enqueue("penguin colonies in the cold")
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(lambda: api.run(PREVIEW, s=sid, m="penguins winter")["retrievalPreview"])
        wait_until(lambda: _in_use(api) == 1, 20, "the expanding preview to hold the one slot")
        refused: dict[str, Any] = api.run(PREVIEW, s=sid, m="penguins winter")["retrievalPreview"]
        assert refused["__typename"] == "BusyError", refused
        # A preview that calls no model needs no slot: it runs while the cap is taken.
        plain = {"provider": "fake", "model": "scripted", "threshold": 0.0}
        quiet_sid = api.run(SESSION, p=pid, input=plain)["createChatSession"]["id"]
        quiet = api.run(PREVIEW, s=quiet_sid, m="penguins winter")["retrievalPreview"]
        assert quiet["__typename"] == "SearchResults" and quiet["ranking"] is None
        model.gate.set()
        done = first.result(timeout=30)
    assert done["__typename"] == "SearchResults" and done["ranking"]["expansions"] == ["penguin colonies in the cold"]
    assert _in_use(api) == 0
