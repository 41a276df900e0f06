"""sendMessage and regenerateMessage return the answer as the turn's own transaction read it back
when storing it (issue 16: no second read): exactly what a later message(id) query returns."""

from __future__ import annotations

from tests.fakes import FakeChatModel
from tests.graphql.client import Api
from tests.graphql.ops import ADD_DOC, CHAT, CREATE_PROJECT, CREATE_SESSION, MESSAGE_FIELDS, SEND

READ = "query($id: ID!) { message(id: $id) { __typename ... on ChatMessage { " + MESSAGE_FIELDS + " } } }"
REGENERATE = (
    "mutation($id: ID!) { regenerateMessage(messageId: $id) { __typename ... on ChatMessage { "
    + MESSAGE_FIELDS
    + " } } }"
)
LIGHT = """mutation($s: ID!, $c: String!) { sendMessage(sessionId: $s, content: $c) {
  ... on ChatMessage { id noContext degraded { reason } usage { prompt completion context } } } }"""


def _session(api: Api) -> str:
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    api.run(ADD_DOC, p=pid, name="penguins.md", text="Emperor penguins huddle together in the winter.")
    api.run(ADD_DOC, p=pid, name="seals.md", text="Weddell seals dive under the winter ice.")
    created = api.run(CREATE_SESSION, p=pid, input={"provider": "fake", "model": "scripted", "threshold": 0.0})
    return str(created["createChatSession"]["id"])


def test_the_answer_sent_back_is_the_one_stored(api: Api, model: FakeChatModel) -> None:
    sid = _session(api)
    model.enqueue("Emperor penguins huddle together in the winter [1]. Weddell seals dive under the ice [2].")
    sent = api.run(SEND, s=sid, c="What do penguins and seals do in winter?")["sendMessage"]
    assert sent["__typename"] == "ChatMessage" and sent["status"] == "COMPLETE", sent
    assert [c["marker"] for c in sent["citations"]] == [1, 2]
    assert sent == api.run(READ, id=sent["id"])["message"]

    model.enqueue("Weddell seals dive under the winter ice [2]. Emperor penguins huddle in the winter [1].")
    again = api.run(REGENERATE, id=sent["id"])["regenerateMessage"]
    assert again["id"] == sent["id"] and again["content"] != sent["content"]
    assert again == api.run(READ, id=sent["id"])["message"]


def test_an_answer_without_its_trace_selected_has_the_same_notices_and_usage(api: Api, model: FakeChatModel) -> None:
    sid = _session(api)
    model.enqueue("Emperor penguins huddle together in the winter [1].")
    light = api.run(LIGHT, s=sid, c="What do penguins do in winter?")["sendMessage"]
    full = api.run(READ, id=light["id"])["message"]
    assert light["usage"] == full["usage"] and light["usage"]["prompt"] > 0
    assert (light["noContext"], light["degraded"]) == (
        full["noContext"],
        [{"reason": d["reason"]} for d in full["degraded"]],
    )


REGENERATE_STREAM = (
    "subscription($id: ID!) { regenerate(messageId: $id) { __typename ... on ChatDone { answer { "
    + MESSAGE_FIELDS
    + " } } } }"
)


def test_a_regenerated_answer_on_the_same_websocket_has_its_new_citations(api: Api, model: FakeChatModel) -> None:
    # A websocket's DataLoaders live as long as it: the second ChatDone must not show the first's citations.
    sid = _session(api)
    model.enqueue("Emperor penguins huddle together in the winter [1].")
    model.enqueue("Emperor penguins huddle together in the winter [1]. Weddell seals dive under the ice [2].")
    with api.websocket() as ws:
        first = [e["data"]["chat"] for e in ws.subscribe(CHAT, s=sid, c="What do penguins and seals do in winter?")]
        answer = first[-1]["answer"]
        again = [e["data"]["regenerate"] for e in ws.subscribe(REGENERATE_STREAM, id=answer["id"])]
    assert [c["marker"] for c in answer["citations"]] == [1]
    assert [c["marker"] for c in again[-1]["answer"]["citations"]] == [1, 2]
    stored = api.run(READ, id=answer["id"])["message"]
    assert {"__typename": "ChatMessage", **again[-1]["answer"]} == stored
