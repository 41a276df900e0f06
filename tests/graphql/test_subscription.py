"""The chat subscription over a real websocket speaking graphql-transport-ws."""

from __future__ import annotations

from sqlalchemy import text

from app.container import Container
from app.settings import Settings
from tests.fakes import FakeChatModel, FakeEmbedder, FakeModels
from tests.graphql.client import Api, live_api
from tests.graphql.ops import ADD_DOC, CHAT, CREATE_PROJECT, CREATE_SESSION
from tests.waiting import wait_until


def _session(api: Api, **settings: object) -> str:
    pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
    api.run(ADD_DOC, p=pid, name="penguins.md", text="# Penguins\n\nEmperor penguins huddle in the winter.")
    base = {"provider": "fake", "model": "scripted", "threshold": 0.1, **settings}
    return api.run(CREATE_SESSION, p=pid, input=base)["createChatSession"]["id"]


def test_sources_arrive_before_tokens_then_the_stored_message(api: Api, model: FakeChatModel) -> None:
    sid = _session(api)
    model.enqueue("Penguins huddle together [1].")
    with api.websocket() as ws:
        events = [e["data"]["chat"] for e in ws.subscribe(CHAT, s=sid, c="How do penguins keep warm?")]
    passes = [e for e in events if e["__typename"] == "ChatSearchProgress"]
    assert events[: len(passes)] == passes and passes, "a progress event per retrieval pass comes first"
    events = events[len(passes) :]
    assert [p["number"] for p in passes] == list(range(1, len(passes) + 1)) and len(passes) <= passes[0]["budget"]
    assert {p["query"] for p in passes} == {"How do penguins keep warm?"} and not passes[0]["rewritten"]
    assert [p["decision"] for p in passes[:-1]] == ["WIDEN"] * (len(passes) - 1)
    progress = passes[-1]
    kinds = [e["__typename"] for e in events]
    assert kinds[0] == "ChatRetrieval" and kinds[-1] == "ChatDone"
    assert set(kinds[1:-1]) == {"ChatToken"} and len(kinds) > 3
    assert events[0]["sources"][0]["documentName"] == "penguins.md" and events[0]["noContext"] is False
    assert progress["messageId"] == events[0]["messageId"] and progress["kept"] == len(events[0]["sources"])
    assert "".join(e["text"] for e in events[1:-1]) == "Penguins huddle together [1]."
    done = events[-1]["answer"]
    assert done["status"] == "COMPLETE" and done["citations"][0]["marker"] == 1
    assert done["trace"]["candidates"][0]["documentName"] == "penguins.md"


def test_start_errors_and_model_failures_are_events(api: Api, model: FakeChatModel, fake_container: Container) -> None:
    with api.websocket() as ws:
        (missing,) = [e["data"]["chat"] for e in ws.subscribe(CHAT, s="404", c="hi")]
        assert missing == {
            "__typename": "ChatError",
            "code": "NOT_FOUND",
            "message": "chat session 404 not found",
            "partial": "",
            "failedMessageId": None,
        }
        sid = _session(api)
        model.enqueue("Penguins <FAIL> more")
        events = [e["data"]["chat"] for e in ws.subscribe(CHAT, s=sid, c="penguins?")]
        assert events[-1]["__typename"] == "ChatError" and events[-1]["partial"] == "Penguins "
        assert events[-1]["failedMessageId"] is not None


def test_busy_is_reported_at_once_when_the_server_does_not_queue(
    api: Api, model: FakeChatModel, fake_container: Container
) -> None:
    fake_container.settings.chat.max_concurrent_generations = 1
    fake_container.settings.chat.queue_timeout = 0
    sid = _session(api)
    model.token_delay = 0.05
    model.enqueue("a b c d e f g h i j k l m n o p")
    with api.websocket() as first, api.websocket() as second:
        slow = first.subscribe(CHAT, s=sid, c="penguins one")
        next(slow)  # retrieval: the slot is taken
        (busy,) = [e["data"]["chat"] for e in second.subscribe(CHAT, s=sid, c="penguins two")]
        assert busy["__typename"] == "ChatError" and busy["code"] == "BUSY"
        assert [e["data"]["chat"]["__typename"] for e in slow][-1] == "ChatDone"


def test_disconnecting_mid_stream_cancels_and_stores_a_failure(
    api: Api, model: FakeChatModel, fake_container: Container
) -> None:
    sid = _session(api)
    model.token_delay = 0.05
    model.enqueue(" ".join(["word"] * 200))
    with api.websocket() as ws:
        stream = ws.subscribe(CHAT, s=sid, c="penguins?")
        retrieval = next(stream)["data"]["chat"]
        next(stream)
    message_id = int(retrieval["messageId"])

    def ended() -> tuple[str, str] | None:
        with fake_container.store.read() as db:
            query = text("SELECT status, error FROM chat_messages WHERE id = :id")
            status, error = db.execute(query, {"id": message_id}).one()
        return (status, error) if status != "streaming" else None

    status, error = wait_until(ended, 10, "the message to stop streaming")
    assert status == "failed" and "disconnected" in error
    # the slot is freed just after the write
    wait_until(lambda: fake_container.chat.generations_in_flight == 0, 10, "the generation slot to be freed")


def test_tokens_come_in_batches_with_the_same_text(migrated: Settings, model: FakeChatModel) -> None:
    # A window far longer than the model's pace: batches however busy the machine is.
    chat = migrated.chat.model_copy(update={"stream_coalesce_ms": 200.0})
    container = Container.build(
        migrated.model_copy(update={"chat": chat}), embedder=FakeEmbedder(), chat_models=FakeModels(model)
    )
    answer = "Emperor penguins huddle together in tight groups and take turns at the cold edge of the huddle [1]."
    model.token_delay = 0.01
    try:
        with live_api(container) as api:
            sid = _session(api)
            model.enqueue(answer)
            with api.websocket() as ws:
                events = [e["data"]["chat"] for e in ws.subscribe(CHAT, s=sid, c="How do penguins keep warm?")]
    finally:
        container.close()
    tokens = [e["text"] for e in events if e["__typename"] == "ChatToken"]
    assert "".join(tokens) == answer and events[-1]["__typename"] == "ChatDone"
    written = len(answer.split())  # the fake model writes a word at a time
    assert 1 < len(tokens) < written / 3, tokens


def _stream(api: Api, sid: str, question: str) -> list[dict[str, object]]:
    with api.websocket() as ws:
        return [e["data"]["chat"] for e in ws.subscribe(CHAT, s=sid, c=question)]


def _tokens(events: list[dict[str, object]]) -> list[str]:
    return [str(e["text"]) for e in events if e["__typename"] == "ChatToken"]


def test_tokens_of_a_window_come_as_one_event_with_the_same_text(
    api: Api, model: FakeChatModel, fake_container: Container
) -> None:
    sid = _session(api)
    words = " ".join(f"w{i}" for i in range(12)) + "."
    model.token_delay = 0.05
    fake_container.settings.chat.stream_coalesce_ms = 0
    model.enqueue(words)
    each = _tokens(_stream(api, sid, "penguins one?"))
    fake_container.settings.chat.stream_coalesce_ms = 1000  # wider than the whole answer
    model.enqueue(words)
    events = _stream(api, sid, "penguins two?")
    joined = _tokens(events)
    assert "".join(each) == "".join(joined) == words
    assert len(each) > 6, "without a window a token goes out as it comes (a listener that fell behind joins some)"
    # the first token is sent alone, at once, not held for the window; the rest follow in few events
    assert joined[0] == "w0 " and 2 <= len(joined) < len(each)
    assert [e["__typename"] for e in events][-1] == "ChatDone"


def test_a_failure_mid_window_comes_after_every_token_before_it(
    api: Api, model: FakeChatModel, fake_container: Container
) -> None:
    fake_container.settings.chat.stream_coalesce_ms = 1000
    sid = _session(api)
    model.token_delay = 0.02
    model.enqueue("Penguins huddle in the cold <FAIL> more")
    events = _stream(api, sid, "penguins?")
    error = events[-1]
    assert error["__typename"] == "ChatError" and error["partial"] == "Penguins huddle in the cold "
    assert "".join(_tokens(events)) == error["partial"], "the window's tokens go out before the error"


def test_a_stopped_stream_stores_every_token_it_was_sent(
    api: Api, model: FakeChatModel, fake_container: Container
) -> None:
    fake_container.settings.chat.stream_coalesce_ms = 1000
    sid = _session(api)
    model.token_delay = 0.02
    model.enqueue(" ".join(f"w{i}" for i in range(200)))
    with api.websocket() as ws:
        stream = ws.subscribe(CHAT, s=sid, c="penguins?")
        events = [next(stream)["data"]["chat"]]
        while len(_tokens(events)) < 2:
            events.append(next(stream)["data"]["chat"])
        ws.stop("1")
    received = "".join(_tokens(events))
    message_id = int(next(e for e in events if e["__typename"] == "ChatRetrieval")["messageId"])

    def ended() -> tuple[str, str] | None:
        with fake_container.store.read() as db:
            query = text("SELECT status, content FROM chat_messages WHERE id = :id")
            status, content = db.execute(query, {"id": message_id}).one()
        return (status, content) if status != "streaming" else None

    status, content = wait_until(ended, 10, "the message to stop streaming")
    assert status == "failed" and content.startswith(received)


def test_a_stream_the_guard_stops_sends_the_same_tokens_with_and_without_coalescing(
    api: Api, model: FakeChatModel, fake_container: Container
) -> None:
    sid = _session(api)
    model.token_delay = 0.005
    texts = []
    for window in (0, 1000):
        fake_container.settings.chat.stream_coalesce_ms = window
        model.enqueue("Penguins huddle. " + " ".join(["again"] * 300))  # a loop: the guard stops it
        events = _stream(api, sid, f"penguins {window}?")
        assert events[-1]["__typename"] == "ChatDone"
        texts.append("".join(_tokens(events)))
    assert texts[0] == texts[1] and texts[0].startswith("Penguins huddle. again")
    assert len(texts[0]) < len("Penguins huddle. " + " ".join(["again"] * 300)), "the guard stopped the model"
