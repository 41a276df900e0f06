"""Answer modes through the real HTTP endpoint: the setting, its default, and what a turn reports."""

from __future__ import annotations

from app.rag.answer.extractive import NO_ANSWER
from tests.fakes import FakeChatModel
from tests.graphql.client import Api
from tests.graphql.ops import ADD_DOC, CREATE_PROJECT

SESSION = """mutation($p: ID!, $input: CreateChatSessionInput) { createChatSession(projectId: $p, input: $input) {
  __typename ... on ChatSession { id answerMode } ... on ValidationError { fields { field message } } } }"""
UPDATE = """mutation($id: ID!, $input: UpdateChatSessionInput!) { updateChatSession(id: $id, input: $input) {
  __typename ... on ChatSession { answerMode } } }"""
SEND = """mutation($s: ID!, $c: String!) { sendMessage(sessionId: $s, content: $c) { __typename
  ... on ChatMessage { content status noContext citations { marker kind snippet location { charStart lineStart } }
    trace { answer { requestedMode mode reason sentences
      guard { decision reasons unsupportedSentences echoRemoved markersDropped stoppedEarly original } } } } } }"""
TEXT = "# Penguins\n\nEmperor penguins huddle in the winter. Emperor penguins breed on the sea ice."


def _project(api: Api) -> str:
    pid = str(api.run(CREATE_PROJECT, name="kb")["createProject"]["id"])
    api.run(ADD_DOC, p=pid, name="penguins.md", text=TEXT)
    return pid


def test_sessions_default_to_auto_and_can_be_switched(api: Api) -> None:
    assert api.run("{ sessionDefaults { answerMode } }")["sessionDefaults"]["answerMode"] == "AUTO"
    pid = _project(api)
    created = api.run(SESSION, p=pid, input={"provider": "fake", "model": "scripted"})["createChatSession"]
    assert created["answerMode"] == "AUTO"
    switched = api.run(UPDATE, id=created["id"], input={"answerMode": "EXTRACTIVE"})["updateChatSession"]
    assert switched == {"__typename": "ChatSession", "answerMode": "EXTRACTIVE"}
    bad = api.raw(UPDATE, {"id": created["id"], "input": {"answerMode": "CREATIVE"}}).json()
    assert "CREATIVE" in bad["errors"][0]["message"]


def test_an_extractive_turn_reports_its_mode_and_quoted_spans(api: Api, model: FakeChatModel) -> None:
    pid = _project(api)
    input_ = {"provider": "fake", "model": "scripted", "threshold": 0.0, "answerMode": "EXTRACTIVE"}
    sid = api.run(SESSION, p=pid, input=input_)["createChatSession"]["id"]
    sent = api.run(SEND, s=sid, c="Where do emperor penguins breed?")["sendMessage"]
    assert "Emperor penguins breed on the sea ice. [1]" in sent["content"] and model.history == []
    breeding = {
        "marker": 1,
        "kind": "EXTRACTED",
        "snippet": "Emperor penguins breed on the sea ice.",
        "location": {"charStart": TEXT.index("Emperor penguins breed"), "lineStart": 3},
    }
    assert breeding in sent["citations"] and {c["kind"] for c in sent["citations"]} == {"EXTRACTED"}
    answer = sent["trace"]["answer"]
    assert (answer["requestedMode"], answer["mode"], answer["guard"]) == ("EXTRACTIVE", "EXTRACTIVE", None)
    assert answer["sentences"] == len(sent["citations"])
    nothing = api.run(SEND, s=sid, c="What do tax auditors eat for lunch?")["sendMessage"]
    assert nothing["content"].startswith(NO_ANSWER) and nothing["citations"] == []


def test_a_generated_answer_carries_the_guards_verdict(api: Api, model: FakeChatModel) -> None:
    pid = _project(api)
    sid = api.run(SESSION, p=pid, input={"provider": "fake", "model": "scripted", "threshold": 0.0})[
        "createChatSession"
    ]["id"]
    model.enqueue("The source for the answer is [1].")
    sent = api.run(SEND, s=sid, c="Where do emperor penguins breed?")["sendMessage"]
    guard = sent["trace"]["answer"]["guard"]
    assert sent["trace"]["answer"]["mode"] == "GENERATIVE" and guard["decision"] == "FALLBACK"
    assert guard["original"] == "The source for the answer is [1]."
    assert sent["status"] == "COMPLETE" and "sea ice" in sent["content"]
    assert {c["kind"] for c in sent["citations"]} == {"EXTRACTED"}


def test_no_context_means_nothing_was_kept_and_no_answer_means_no_sentence_answered(api: Api) -> None:
    pid = _project(api)
    ask = """mutation($s: ID!, $c: String!) { sendMessage(sessionId: $s, content: $c) { __typename
      ... on ChatMessage { content noContext noAnswer
        trace { noContext answer { noAnswer bar considered { source score quoted reason } } } } } }"""
    base = {"provider": "fake", "model": "scripted", "answerMode": "EXTRACTIVE"}
    kept = api.run(SESSION, p=pid, input={**base, "threshold": 0.0})["createChatSession"]["id"]
    answer = api.run(ask, s=kept, c="What is the capital of Mongolia?")["sendMessage"]
    # A source was kept (threshold 0): not "no context", but no sentence of it answers.
    assert answer["content"].startswith(NO_ANSWER)
    assert (answer["noContext"], answer["noAnswer"], answer["trace"]["noContext"]) == (False, True, False)
    considered = answer["trace"]["answer"]["considered"]
    assert considered and all(not c["quoted"] and c["source"] == 1 for c in considered)
    assert all(c["score"] < answer["trace"]["answer"]["bar"] for c in considered)
    assert considered[0]["reason"].startswith("below the bar")
    nothing = api.run(SESSION, p=pid, input={**base, "threshold": 0.99})["createChatSession"]["id"]
    empty = api.run(ask, s=nothing, c="What is the capital of Mongolia?")["sendMessage"]
    assert (empty["noContext"], empty["noAnswer"]) == (True, True)
    assert empty["trace"]["answer"]["considered"] == []
    answered = api.run(ask, s=kept, c="Where do emperor penguins breed?")["sendMessage"]
    assert (answered["noContext"], answered["noAnswer"]) == (False, False)
    assert any(c["quoted"] and c["reason"] == "quoted" for c in answered["trace"]["answer"]["considered"])
