"""A chat turn's ranking stages with a scripted model and a loopback rerank endpoint: expansion and
the judge used, their failures falling back, AUTO deciding, and the trace showing all of it."""

from __future__ import annotations

import pytest

from app.container import Container
from app.errors import ProviderUnavailableError
from app.llm.base import ModelCapabilities
from app.llm.rerankers.http import HttpReranker
from app.services.chat.events import DoneEvent
from app.services.chat.service import ChatService
from app.settings import RerankSettings
from tests.fakes import FakeChatModel, FakeEmbedder
from tests.llm.wire.rerank_wire import RerankWire
from tests.services.chat.test_service import Rig

QUESTION = "How do penguins survive the winter?"


@pytest.fixture
def rig(container: Container) -> Rig:
    return Rig(container, FakeChatModel(capabilities=ModelCapabilities(grounded_writing=True)), FakeEmbedder())


async def _trace(rig: Rig, chat: int) -> dict:  # type: ignore[type-arg]
    events = await rig.ask(chat, QUESTION)
    assert isinstance(events[-1], DoneEvent)
    stored, _ = rig.message(events[-1].message_id)
    return stored.trace  # type: ignore[no-any-return]


async def test_expansion_and_the_judge_run_and_show_in_the_trace(rig: Rig) -> None:
    rig.model.enqueue("emperor penguin huddle\nantarctic cold survival", "[1] 0\n[2] 3\n[3] 1", "They huddle [1].")
    trace = await _trace(rig, rig.new_chat(expansion="on", rerank="judge", top_k=3))

    assert trace["ranking"] == {
        "expansions": ["emperor penguin huddle", "antarctic cold survival"],
        "expansionFailed": None,
        "reranker": "judge:fake/scripted",
        "reranked": 3,
        "rerankFailed": None,
    }
    assert {"expansion", "rerank"} <= set(trace["timingsMs"])
    scored = [c["rerankScore"] for c in trace["candidates"][:3]]
    assert scored[0] == 3.0  # the judge's favourite (fused second) now leads
    assert sorted(scored) == [0.0, 1.0, 3.0]
    expand_prompt, judge_prompt, _ = rig.model.history
    assert QUESTION in expand_prompt[0].content and "[3]" in judge_prompt[0].content


async def test_a_failing_expansion_searches_the_question_alone(rig: Rig) -> None:
    rig.model.enqueue(ProviderUnavailableError("down"), "They huddle [1].")
    trace = await _trace(rig, rig.new_chat(expansion="on"))
    assert trace["ranking"]["expansions"] == [] and trace["ranking"]["expansionFailed"] == "down"
    assert [d["reason"] for d in trace["degraded"]] == ["expansion_failed"]
    assert len(rig.model.history) == 2  # the answer was still written


async def test_defaults_call_no_helper(rig: Rig) -> None:
    rig.model.enqueue("They huddle [1].")
    trace = await _trace(rig, rig.new_chat())  # rerank AUTO without an endpoint, expansion OFF
    assert trace.get("ranking") is None and len(rig.model.history) == 1


# A small model answers extractively: no model call at all.
@pytest.mark.parametrize(("reliable", "calls"), [(False, 0), (True, 2)])
async def test_expansion_auto_follows_what_the_model_declares(container: Container, reliable: bool, calls: int) -> None:
    model = FakeChatModel(capabilities=ModelCapabilities(grounded_writing=reliable))
    rig = Rig(container, model, FakeEmbedder())
    model.enqueue(*(["penguin huddle"] if reliable else []), "They huddle [1].")
    trace = await _trace(rig, rig.new_chat(expansion="auto"))
    assert len(model.history) == calls
    assert (trace.get("ranking") or {}).get("expansions", []) == (["penguin huddle"] if reliable else [])


async def test_the_rerank_endpoint_reranks_when_configured(rig: Rig) -> None:
    with RerankWire() as server:
        endpoint = HttpReranker(RerankSettings(url=f"{server.url}/rerank", protocol="tei"))
        rig.service = ChatService(
            rig.container.store, rig.container.settings, lambda: rig.embedder, rig.models, reranker=endpoint
        )
        rig.model.enqueue("They huddle [1].")
        trace = await _trace(rig, rig.new_chat())  # AUTO: the endpoint
        await endpoint.aclose()
    assert trace["ranking"]["reranker"].startswith("http:") and trace["ranking"]["rerankFailed"] is None
    (request,) = server.history
    assert request.body["query"] == QUESTION and len(request.body["texts"]) == trace["ranking"]["reranked"]
    assert all(c["rerankScore"] is not None for c in trace["candidates"][: trace["ranking"]["reranked"]])
