"""Waiting for a generation slot, as clients see it: ChatQueued events on the websocket, BusyError
with its place and retry delay from sendMessage, the live counts in `providers`, and a client that
stops while it waits leaving the line with nothing stored."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import text

from app.container import Container
from tests.fakes import FakeChatModel
from tests.graphql.client import Api
from tests.graphql.ops import ADD_DOC, CHAT, CREATE_PROJECT, CREATE_SESSION
from tests.waiting import wait_until

LOAD = "{ providers { provider generations { model limit inUse waiting } } }"
SEND_BUSY = """mutation($s: ID!, $c: String!) { sendMessage(sessionId: $s, content: $c) {
  __typename ... on BusyError { message retryAfterSeconds position } ... on ChatMessage { id status } } }"""
SLOW = " ".join(["word"] * 30)


def _session(api: Api) -> str:
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    api.run(ADD_DOC, p=pid, name="penguins.md", text="# Penguins\n\nEmperor penguins huddle in the winter.")
    settings = {"provider": "fake", "model": "scripted", "threshold": 0.1}
    return api.run(CREATE_SESSION, p=pid, input=settings)["createChatSession"]["id"]


def _load(api: Api) -> dict[str, Any]:
    (fake,) = api.run(LOAD)["providers"]
    return dict(fake["generations"][0])


def _past_progress(stream: Iterator[dict[str, Any]]) -> str:
    """The kind of the first event after the search's progress events."""
    while (kind := next(stream)["data"]["chat"]["__typename"]) == "ChatSearchProgress":
        pass
    return kind


def _kinds(stream: Iterator[dict[str, Any]]) -> list[str]:
    return [event["data"]["chat"]["__typename"] for event in stream]


def _stored(container: Container, sid: str) -> list[str]:
    with container.store.read() as db:
        query = text("SELECT content FROM chat_messages WHERE session_id = :sid ORDER BY id")
        return [row[0] for row in db.execute(query, {"sid": int(sid)})]


def test_the_fourth_stream_waits_in_line_then_runs_when_a_slot_frees(
    api: Api, model: FakeChatModel, fake_container: Container
) -> None:
    sid = _session(api)  # the fake provider declares no cap: the server's 3
    model.token_delay = 0.02
    model.default_answer = SLOW
    assert _load(api) == {"model": None, "limit": 3, "inUse": 0, "waiting": 0}
    with api.websocket() as a, api.websocket() as b, api.websocket() as c, api.websocket() as d:
        running = [ws.subscribe(CHAT, s=sid, c=f"penguins {n}?") for n, ws in enumerate((a, b, c))]
        for stream in running:
            assert _past_progress(stream) == "ChatRetrieval"  # each holds a slot
        fourth = d.subscribe(CHAT, s=sid, c="penguins 4?")
        assert next(fourth)["data"]["chat"] == {"__typename": "ChatQueued", "position": 1}
        assert _load(api) == {"model": None, "limit": 3, "inUse": 3, "waiting": 1}
        assert len(_stored(fake_container, sid)) == 6  # the fourth question is not stored while it waits
        for stream in running:
            assert _kinds(stream)[-1] == "ChatDone"
        kinds = _kinds(fourth)
    assert kinds[0] == "ChatSearchProgress" and "ChatRetrieval" in kinds and kinds[-1] == "ChatDone"
    assert _load(api) == {"model": None, "limit": 3, "inUse": 0, "waiting": 0}


def test_busy_after_the_wait_says_the_place_and_when_to_retry(
    api: Api, model: FakeChatModel, fake_container: Container
) -> None:
    fake_container.settings.chat.max_concurrent_generations = 1
    fake_container.settings.chat.queue_timeout = 0.3
    sid = _session(api)
    model.token_delay = 0.05
    model.default_answer = SLOW
    with api.websocket() as ws:
        holder = ws.subscribe(CHAT, s=sid, c="penguins?")
        next(holder)
        busy = api.run(SEND_BUSY, s=sid, c="penguins again?")["sendMessage"]
        assert busy == {
            "__typename": "BusyError",
            "message": "all 1 generation slots of fake are taken (waited 0.3 s as number 1 in line); "
            "retry in about 2 s",
            "retryAfterSeconds": 2,
            "position": 1,
        }
        assert len(_stored(fake_container, sid)) == 2  # the refused question was never stored
        assert _kinds(holder)[-1] == "ChatDone"


def test_a_client_that_stops_while_waiting_leaves_the_line_and_nothing_is_stored(
    api: Api, model: FakeChatModel, fake_container: Container
) -> None:
    fake_container.settings.chat.max_concurrent_generations = 1
    sid = _session(api)
    model.token_delay = 0.05
    model.default_answer = SLOW
    with api.websocket() as first, api.websocket() as second:
        holder = first.subscribe(CHAT, s=sid, c="penguins?")
        next(holder)
        waiting = second.subscribe(CHAT, s=sid, c="never mind")
        assert next(waiting)["data"]["chat"] == {"__typename": "ChatQueued", "position": 1}
        second.stop("1")  # graphql-ws `complete` for the waiting operation
        wait_until(lambda: _load(api)["waiting"] == 0, 10, "the stopped client to leave the line")
        assert _load(api)["inUse"] == 1
        assert _kinds(holder)[-1] == "ChatDone"
    wait_until(lambda: _load(api)["inUse"] == 0, 10, "the slot to be freed")
    questions = _stored(fake_container, sid)[::2]
    assert questions == ["penguins?"]  # "never mind" was never stored

