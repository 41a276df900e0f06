"""Faults in a live server: the chat model failing before and during a stream, the embedder failing,
clients leaving mid-stream. Every accepted question ends with a stored answer or a stored failure,
the generation slot is released, and a refused request writes nothing."""

from __future__ import annotations

import json

import pytest

from app.container import Container
from app.errors import ProviderUnavailableError
from tests.fakes import FakeChatModel, FakeEmbedder
from tests.graphql.client import Api
from tests.graphql.ops import ADD_DOC, CHAT, CREATE_PROJECT, CREATE_SESSION, JOB, RETRY_JOB, SEND, UPLOAD
from tests.reliability.helpers import row_counts
from tests.waiting import wait_until

MESSAGE = """query($id: ID!) { message(id: $id) { __typename ... on ChatMessage { status content error degraded { reason message } } } }"""
REGENERATE = (
    """mutation($id: ID!) { regenerateMessage(messageId: $id) { __typename ... on ChatMessage { status content } } }"""
)
SEARCH = """query($p: ID!) { search(projectId: $p, query: "penguins") { __typename ... on ProviderError { code message } } }"""


def _session(api: Api) -> tuple[str, str]:
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    api.run(ADD_DOC, p=pid, name="penguins.md", text="# Penguins\n\nEmperor penguins huddle in the winter.")
    sid = api.run(CREATE_SESSION, p=pid, input={"provider": "fake", "model": "scripted", "threshold": 0.1})
    return pid, sid["createChatSession"]["id"]


def _stored(api: Api, message_id: str) -> dict[str, object]:
    return dict(api.run(MESSAGE, id=message_id)["message"])


def test_model_failing_before_the_first_token_stores_a_failure(api: Api, model: FakeChatModel, rig: Container) -> None:
    _, sid = _session(api)
    model.enqueue(ProviderUnavailableError("upstream is down", provider="fake"))
    with api.websocket() as ws:
        events = [e["data"]["chat"] for e in ws.subscribe(CHAT, s=sid, c="penguins?")]
    events = [e for e in events if e["__typename"] != "ChatSearchProgress"]  # the search's passes
    assert [e["__typename"] for e in events] == ["ChatRetrieval", "ChatError"]
    error = events[-1]
    assert (error["code"], error["message"], error["partial"]) == ("PROVIDER_UNAVAILABLE", "upstream is down", "")
    stored = _stored(api, error["failedMessageId"])
    assert stored == {
        "__typename": "ChatMessage",
        "status": "FAILED",
        "content": "",
        "error": "upstream is down",
        "degraded": [],
    }

    model.enqueue(ProviderUnavailableError("still down", provider="fake"))
    sent = api.run(SEND, s=sid, c="penguins again?")["sendMessage"]
    assert (sent["status"], sent["error"]) == ("FAILED", "still down")
    assert rig.chat.generations_in_flight == 0


def test_model_failing_mid_stream_keeps_what_streamed_and_can_be_regenerated(
    api: Api, model: FakeChatModel, rig: Container
) -> None:
    _, sid = _session(api)
    model.enqueue("Emperor penguins <FAIL> huddle", "Emperor penguins huddle [1].")
    with api.websocket() as ws:
        events = [e["data"]["chat"] for e in ws.subscribe(CHAT, s=sid, c="penguins?")]
    error = events[-1]
    events = [e for e in events if e["__typename"] != "ChatSearchProgress"]  # the search's passes
    assert [e["__typename"] for e in events] == ["ChatRetrieval", "ChatToken", "ChatToken", "ChatError"]
    assert (error["code"], error["partial"]) == ("PROVIDER", "Emperor penguins ")
    stored = _stored(api, error["failedMessageId"])
    assert (stored["status"], stored["content"], stored["error"]) == (
        "FAILED",
        "Emperor penguins ",
        "the fake model failed mid-stream",
    )

    again = api.run(REGENERATE, id=error["failedMessageId"])["regenerateMessage"]
    assert again == {"__typename": "ChatMessage", "status": "COMPLETE", "content": "Emperor penguins huddle [1]."}
    assert rig.chat.generations_in_flight == 0


def test_embedder_failing_fails_uploaded_files_retryably_and_degrades_chat(
    api: Api, model: FakeChatModel, embedder: FakeEmbedder, rig: Container
) -> None:
    pid, sid = _session(api)
    before = row_counts(rig.store)
    embedder.fail_with = ProviderUnavailableError("the embedding server is unreachable", provider="fake")

    added = api.run(ADD_DOC, p=pid, name="owls.md", text="Barn owls hunt at night.")["addDocument"]
    assert added == {"__typename": "ProviderError", "message": "the embedding server is unreachable"}
    uploaded = api.upload(
        UPLOAD,
        {
            "variables.files.0": ("tea.md", b"Green tea is steamed."),
            "variables.files.1": ("broken.pdf", b"%PDF-1.7 junk"),
        },
        {"p": pid},
    )["data"]["uploadDocuments"]
    # The upload is a job: each file fails on its own, with the reason, and can be retried.
    items = {i["name"]: i for i in uploaded["items"]}
    assert (items["tea.md"]["state"], items["tea.md"]["error"]) == ("FAILED", "the embedding server is unreachable")
    assert items["tea.md"]["document"] is None
    assert items["broken.pdf"]["state"] == "FAILED" and items["broken.pdf"]["document"]["status"] == "FAILED"
    after = row_counts(rig.store)
    assert after == before | {"documents": before["documents"] + 1}  # only the unreadable file's failure record
    assert api.run(SEARCH, p=pid)["search"]["code"] == "PROVIDER_UNAVAILABLE"
    assert row_counts(rig.store) == after  # nothing half-ingested

    # Chat still answers, without context, and says why.
    model.enqueue("I cannot see your documents right now.")
    sent = api.run(SEND, s=sid, c="penguins?")["sendMessage"]
    assert sent["status"] == "COMPLETE" and sent["citations"] == []
    assert sent["degraded"] == [
        {"reason": "RETRIEVAL_FAILED", "message": "no context: the embedding server is unreachable"}
    ]
    assert "<source" not in model.history[-1][-1].content

    embedder.fail_with = None
    assert api.run(ADD_DOC, p=pid, name="owls.md", text="Barn owls hunt at night.")["addDocument"]["added"] == 1
    retried = api.run(RETRY_JOB, id=uploaded["id"], items=[items["tea.md"]["id"]])["retryIngestionJob"]
    assert retried["__typename"] == "IngestionJob"
    wait_until(lambda: api.run(JOB, id=uploaded["id"])["ingestionJob"]["items"][0]["state"] == "READY", 20, "the retry")


@pytest.mark.parametrize("leave", ["close_after_retrieval", "complete_after_a_token", "close_at_once"])
def test_a_client_leaving_mid_stream_leaves_a_stored_failure_and_a_free_slot(
    api: Api, model: FakeChatModel, rig: Container, leave: str
) -> None:
    _, sid = _session(api)
    model.token_delay = 0.02
    model.enqueue(" ".join(["word"] * 300))
    with api.websocket() as ws:
        if leave == "close_at_once":
            payload = {"query": CHAT, "variables": {"s": sid, "c": "penguins?"}}
            ws.ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": payload}))
        else:
            stream = ws.subscribe(CHAT, s=sid, c="penguins?")
            while next(stream)["data"]["chat"]["__typename"] != "ChatRetrieval":  # the search's passes
                pass
            if leave == "complete_after_a_token":
                next(stream)
                ws.stop("1")

    # Whatever the timing, the turn ends: not started (nothing stored) or stored as failed. A free
    # slot alone proves nothing when the client left before the server began the turn.
    def ended() -> bool:
        with rig.store.read() as db:
            streaming = (
                db.connection()
                .exec_driver_sql("SELECT count(*) FROM chat_messages WHERE status = 'streaming'")
                .scalar_one()
            )
        return rig.chat.generations_in_flight == 0 and streaming == 0

    wait_until(ended, what="the turn to end and its slot to be released")
    with rig.store.read() as db:
        rows = db.connection().exec_driver_sql("SELECT status, error FROM chat_messages WHERE role = 'assistant'").all()
    assert all(status == "failed" and "cancelled" in error for status, error in rows), rows
    # Gone before the server began the turn: nothing stored. Gone while the question was being stored:
    # the question is kept and its answer stored as cancelled, the model never called. Later: one answer.
    assert len(rows) == 1 if model.history or leave != "close_at_once" else len(rows) <= 1
